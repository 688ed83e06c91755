"""The lab's own tables on a server, in SQL: made before the load (the heartbeat's and every
workload's), counted while it runs (a ``when rows(NODE)`` trigger), read after it (the final
rows the checkers judge). ``lab/`` decides when and on which node; the statements are here.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import MySQLdb

from dsl.plan import PlannedWorkload
from runners import replication
from runners.mysql import Address, Credentials, connect
from runners.replication import SqlNode
from runners.txn_workloads import final_value
from runners.workloads import SCHEMA, table_ddl, table_name


def make_tables(addr: Address, creds: Credentials, workloads: Sequence[PlannedWorkload],
                gtid_domains: bool) -> None:
    """On the writer: the heartbeat table, every workload's table, and the ``sbtest`` schema
    when a workload is sysbench. ``gtid_domains`` (MariaDB): in the heartbeat's GTID domain,
    so the lab's own writes are told apart from the workloads'."""
    stmts = replication.heartbeat_statements(SCHEMA)
    for spec in workloads:
        stmts += table_ddl(spec)
    if any(s.kind == "sysbench" for s in workloads):
        stmts.append("CREATE DATABASE IF NOT EXISTS sbtest")
    conn = connect(addr, creds, timeout=30)
    try:
        cur = conn.cursor()
        if gtid_domains:  # MySQL, Percona: no GTID domains
            cur.execute(replication.HEARTBEAT_SESSION)
        for s in stmts:
            _execute_retrying(cur, s)
        cur.close()
    finally:
        conn.close()


# A lock wait timeout or a deadlock (a Galera certification conflict is reported as one) while
# the tables are made: every statement here is idempotent (IF NOT EXISTS, REPLACE), so it is run
# again, a few times, before the cell fails with the server's error (seen once on a busy
# machine: galera-conflicts' preparation ended in 1205 beside two other runs and a CPU-bound
# process).
RETRIED_ERRORS = (1205, 1213)
ATTEMPTS = 4


def _execute_retrying(cur: Any, statement: str, pause: float = 0.5) -> None:
    for attempt in range(1, ATTEMPTS + 1):
        try:
            cur.execute(statement)
            return
        except MySQLdb.OperationalError as e:
            if e.args[0] not in RETRIED_ERRORS or attempt == ATTEMPTS:
                raise MySQLdb.OperationalError(
                    e.args[0], f"{e.args[1]} (making the lab's tables, attempt {attempt} of "
                    f"{ATTEMPTS}: {statement[:80]})") from e
            time.sleep(pause * attempt)


def rows_statement(workloads: Sequence[str]) -> str | None:
    """One statement counting the rows of the named workloads' tables (None: no workload)."""
    if not workloads:
        return None
    return "SELECT " + " + ".join(f"(SELECT COUNT(*) FROM {table_name(w)})" for w in workloads)


def count_rows(node: SqlNode, workloads: Sequence[str], timeout: float = 2.0) -> float | None:
    """The rows of the named workloads' tables on ``node``, summed (None: no workload).
    Raises what the server raised."""
    stmt = rows_statement(workloads)
    if stmt is None:
        return None
    return float(node.scalar(stmt, timeout=timeout))


def final_rows(addr: Address, creds: Credentials, workload: str, kind: str
               ) -> dict[int, Any]:
    """A workload table's rows on one node: key -> value as the checkers read it."""
    conn = connect(addr, creds, timeout=30)
    try:
        cur = conn.cursor()
        cur.execute(f"SELECT k, v FROM {table_name(workload)}")
        rows = {int(k): final_value(kind, v) for k, v in cur.fetchall()}
        cur.close()
        return rows
    finally:
        conn.close()
