"""Data divergence: per table, the rows that differ between nodes, found the way
pt-table-checksum finds them (checksums of chunks of rows in primary-key order), then listed
row by row inside the chunks that differ.

Why not pt-table-checksum itself (it is installed): it writes its checksums *through the
primary* (``REPLACE INTO percona.checksums ... SELECT`` with ``binlog_format=STATEMENT``) and
reads them back on the replicas. That adds transactions to the primary's binary log after the
run (the lab's GTID figures, missing transactions and errant GTIDs, would count them), it can
only compare nodes that still replicate from the primary (a former primary left out of
replication, or a replica whose SQL thread stopped on an error, are exactly the nodes that
diverge and exactly the ones it cannot check: its checksums never arrive there), it finds
replicas on one host only with ``--recursion-method=dsn``, and it reports chunks, not rows
(``pt-table-sync --print`` would be needed for the rows). The lab reads instead, on every node
alone, without writing anything:

1. one connection per node, ``START TRANSACTION WITH CONSISTENT SNAPSHOT`` (REPEATABLE READ):
   every figure of a node comes from one point in time (after settling nothing writes);
2. per table with a primary key, per chunk of ``CHUNK`` consecutive values of the first
   primary-key column when it is an integer (else the whole table is one chunk):
   ``COUNT(*)`` and ``BIT_XOR`` of the first 64 bits of each row's ``MD5`` over
   ``CONCAT_WS('#', every column, ISNULL(every nullable column))`` (the expression
   pt-table-checksum uses, with a 64-bit hash instead of ``CRC32``);
3. the chunks whose count or checksum differ from the reference node's are read row by row
   (primary key and row hash) on both nodes: **missing** (on the reference, not on the
   node), **extra** (on the node, not on the reference), **different** (both, another row).

``compare_nodes`` does all of it for a cell's running nodes (``lab.run.cell_facts`` calls it). The
reference is the authoritative node (the primary after settling), else the first running
node by name. Equal chunks are equal up to a 64-bit hash collision (about 2^-64 per chunk).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from runners.mysql import Address, Credentials, connect
from runners.workloads import SCHEMA

CHUNK = 1000
MAX_KEYS = 20
Query = Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]]
INTEGER_TYPES = frozenset({"tinyint", "smallint", "mediumint", "int", "bigint"})


@dataclass(frozen=True)
class TableShape:
    schema: str
    table: str
    columns: tuple[str, ...]
    nullable: tuple[str, ...]
    key: tuple[str, ...]  # primary key columns, in order
    integer_key: bool  # the first key column is an integer: chunks are ranges of it

    @property
    def name(self) -> str:
        return f"{self.schema}.{self.table}"

    @property
    def quoted(self) -> str:
        return f"{_q(self.schema)}.{_q(self.table)}"


def _q(ident: str) -> str:
    return "`" + ident.replace("`", "``") + "`"


def row_hash_sql(t: TableShape) -> str:
    cols = [_q(c) for c in t.columns] + [f"ISNULL({_q(c)})" for c in t.nullable]
    return f"MD5(CONCAT_WS('#', {', '.join(cols)}))"


def chunk_expr(t: TableShape) -> str:
    return f"{_q(t.key[0])} DIV {CHUNK}" if t.integer_key else "0"


def chunk_sql(t: TableShape) -> str:
    return (f"SELECT {chunk_expr(t)} AS chunk, COUNT(*), "
            f"BIT_XOR(CAST(CONV(LEFT({row_hash_sql(t)}, 16), 16, 10) AS UNSIGNED)) "
            f"FROM {t.quoted} GROUP BY chunk")


def rows_sql(t: TableShape, chunks: Sequence[int]) -> str:
    keys = ", ".join(_q(c) for c in t.key)
    where = (f" WHERE {chunk_expr(t)} IN ({', '.join(str(int(c)) for c in chunks)})"
             if t.integer_key else "")
    return f"SELECT {keys}, {row_hash_sql(t)} FROM {t.quoted}{where}"


Chunks = dict[int, tuple[int, int]]  # chunk -> (rows, checksum)
Rows = dict[tuple[Any, ...], str]  # primary key -> row hash


def read_chunks(query: Query, t: TableShape) -> Chunks:
    return {int(c): (int(n), int(x or 0)) for c, n, x in query(chunk_sql(t), ())}


def read_rows(query: Query, t: TableShape, chunks: Sequence[int]) -> Rows:
    if t.integer_key and not chunks:
        return {}
    width = len(t.key)
    return {tuple(_norm(v) for v in r[:width]): str(r[width]) for r in
            query(rows_sql(t, chunks), ())}


def _norm(v: Any) -> Any:
    return v.decode() if isinstance(v, bytes | bytearray) else v


def differing_chunks(ref: Chunks, other: Chunks) -> list[int]:
    return sorted(c for c in set(ref) | set(other) if ref.get(c) != other.get(c))


@dataclass
class NodeDiff:
    missing: list[Any] = field(default_factory=list)
    extra: list[Any] = field(default_factory=list)
    different: list[Any] = field(default_factory=list)
    chunks: int = 0

    @property
    def rows(self) -> int:
        return len(self.missing) + len(self.extra) + len(self.different)

    def as_json(self) -> dict[str, Any]:
        keys = sorted(self.missing + self.extra + self.different, key=str)
        return {"rows": self.rows, "missing": len(self.missing), "extra": len(self.extra),
                "different": len(self.different), "chunks": self.chunks,
                "keys": [list(k) if len(k) > 1 else k[0] for k in keys[:MAX_KEYS]]}


def diff_rows(ref: Rows, other: Rows) -> NodeDiff:
    d = NodeDiff()
    for k, h in ref.items():
        got = other.get(k)
        if got is None:
            d.missing.append(k)
        elif got != h:
            d.different.append(k)
    d.extra = [k for k in other if k not in ref]
    return d


def table_shape(query: Query, schema: str, table: str) -> TableShape | None:
    """The table's columns and primary key (None: no such table)."""
    cols = query("SELECT COLUMN_NAME, IS_NULLABLE, DATA_TYPE FROM information_schema.COLUMNS "
                 "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
                 (schema, table))
    if not cols:
        return None
    key = [str(r[0]) for r in query(
        "SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = %s "
        "AND TABLE_NAME = %s AND CONSTRAINT_NAME = 'PRIMARY' ORDER BY ORDINAL_POSITION",
        (schema, table))]
    types = {str(c[0]): str(c[2]).lower() for c in cols}
    return TableShape(schema, table, tuple(str(c[0]) for c in cols),
                      tuple(str(c[0]) for c in cols if str(c[1]).upper() == "YES"),
                      tuple(key), bool(key) and types.get(key[0]) in INTEGER_TYPES)


@dataclass
class TableDiff:
    """One table on every node against the reference. ``nodes[n]`` None: not read there."""

    table: str
    reference: str
    nodes: dict[str, NodeDiff | None] = field(default_factory=dict)
    chunks_total: int = 0
    error: str = ""
    errors: dict[str, str] = field(default_factory=dict)

    def rows(self) -> int | None:
        """Distinct primary keys that differ on at least one node (None: a node could not be
        read, or no primary key)."""
        if self.error or any(v is None for v in self.nodes.values()):
            return None
        keys: set[Any] = set()
        for d in self.nodes.values():
            assert d is not None
            keys.update(d.missing + d.extra + d.different)
        return len(keys)

    def as_json(self) -> dict[str, Any]:
        total = {"missing": 0, "extra": 0, "different": 0, "chunks": 0}
        known = all(v is not None for v in self.nodes.values()) and not self.error
        for d in self.nodes.values():
            if d is not None:
                total["missing"] += len(d.missing)
                total["extra"] += len(d.extra)
                total["different"] += len(d.different)
                total["chunks"] = max(total["chunks"], d.chunks)
        return {"reference": self.reference, "rows": self.rows(),
                **{k: (v if known else None) for k, v in total.items()},
                "chunks_total": self.chunks_total, "error": self.error,
                "errors": self.errors,
                "nodes": {n: (d.as_json() if d is not None else None)
                          for n, d in sorted(self.nodes.items())}}


def compare_table(queries: Mapping[str, Query], reference: str, schema: str, table: str
                  ) -> TableDiff:
    """Compare one table on every node (``queries``: one snapshot per node) with the
    reference node's."""
    out = TableDiff(f"{schema}.{table}", reference)
    ref_q = queries[reference]
    shape = table_shape(ref_q, schema, table)
    if shape is None:
        out.error = f"no table {schema}.{table} on {reference}"
        return out
    if not shape.key:
        out.error = f"{shape.name} has no primary key: rows cannot be matched"
        return out
    ref_chunks = read_chunks(ref_q, shape)
    out.chunks_total = len(ref_chunks)
    for name, q in sorted(queries.items()):
        if name == reference:
            continue
        try:
            chunks = read_chunks(q, shape)
            bad = differing_chunks(ref_chunks, chunks)
            d = diff_rows(read_rows(ref_q, shape, bad), read_rows(q, shape, bad)) \
                if bad else NodeDiff()
            d.chunks = len(bad)
            out.nodes[name] = d
        except Exception as e:  # noqa: BLE001 - this node's figures are unknown, not 0
            out.nodes[name] = None
            out.errors[name] = f"{type(e).__name__}: {e}"[:300]
    return out


SYSTEM_SCHEMAS = ("mysql", "information_schema", "performance_schema", "sys")
HEARTBEAT_TABLE = (SCHEMA, "heartbeat")  # the lab's own heartbeat: not a user table


@dataclass
class NodesDiff:
    """Every compared table on every node against the reference. ``errors``: the nodes that
    could not be read (their figures are unknown in every table); ``reference_read`` False:
    the reference itself could not be read and nothing was compared."""

    reference: str
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)  # table -> as_json
    errors: dict[str, str] = field(default_factory=dict)
    reference_read: bool = True


def _query(conn: Any, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    cur = conn.cursor()
    try:
        cur.execute(sql, args or None)
        return list(cur.fetchall())
    finally:
        cur.close()


def _snapshot(addr: Address, creds: Credentials) -> Any:
    """A connection inside ``START TRANSACTION WITH CONSISTENT SNAPSHOT`` (REPEATABLE READ)."""
    conn = connect(addr, creds, timeout=30)
    try:
        cur = conn.cursor()
        cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        cur.close()
    except BaseException:
        with contextlib.suppress(Exception):
            conn.close()
        raise
    return conn


def user_tables(query: Query) -> set[str]:
    """Every base table (``schema.table``) but the server's own (``SYSTEM_SCHEMAS``) and the
    lab's heartbeat."""
    out: set[str] = set()
    for sch, t in query(
            "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE "
            "TABLE_TYPE = 'BASE TABLE' AND TABLE_SCHEMA NOT IN "
            "(%s, %s, %s, %s)", SYSTEM_SCHEMAS):
        if (str(sch), str(t)) != HEARTBEAT_TABLE:
            out.add(f"{sch}.{t}")
    return out


def compare_nodes(addrs: Mapping[str, Address], creds: Credentials, reference: str,
                  tables: Collection[str]) -> NodesDiff:
    """``tables`` (``schema.table``) and every user table of the reference (``user_tables``)
    compared on every node of ``addrs`` with ``reference``, each node read in one consistent
    snapshot."""
    out = NodesDiff(reference)
    conns: dict[str, Any] = {}
    queries: dict[str, Query] = {}
    try:
        for name, addr in sorted(addrs.items()):
            try:
                conns[name] = _snapshot(addr, creds)
                queries[name] = partial(_query, conns[name])
            except Exception as e:  # noqa: BLE001
                out.errors[name] = str(e)[:300]
        if reference not in queries:
            out.reference_read = False
            return out
        every = set(tables)
        with contextlib.suppress(Exception):  # and every user table: an execute's too
            every |= user_tables(queries[reference])
        for full in sorted(every):
            schema, table = full.split(".", 1)
            diff = compare_table(queries, reference, schema, table)
            for name, err in out.errors.items():
                diff.nodes[name] = None
                diff.errors[name] = err
            out.tables[full] = diff.as_json()
        return out
    finally:
        for conn in conns.values():
            with contextlib.suppress(Exception):
                conn.close()
