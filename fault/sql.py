"""SQL and configuration actions: ``set global`` on some nodes (lost at restart) and
``execute`` one statement on an endpoint.

Values from the experiment reach servers only as SQL literals checked here (``sql_literal``)
or as the statement the file wrote for ``execute``. Nothing to heal: a restart forgets a
``SET GLOBAL``; what a statement did stays.
"""

from __future__ import annotations

import contextlib
import re

import MySQLdb

from dsl.models import RunSql, SetGlobal
from fault.context import ActionFailed, Context, Detail, Handler, Needs
from runners import settings_in_force
from runners.mysql import connect

NUMBER = re.compile(r"^-?\d+(\.\d+)?$")
WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
NAME = re.compile(r"^[A-Za-z0-9_]+$")
SIZE = re.compile(r"^(\d+)([KMG])$", re.I)


def sql_literal(value: str) -> str:
    """A value for SET GLOBAL: a number or a word as is, a size like 64M in bytes, else a
    quoted string."""
    if NUMBER.match(value) or WORD.match(value):
        return value
    m = SIZE.match(value)
    if m:
        return str(int(m.group(1)) * 1024 ** "KMG".index(m.group(2).upper()) * 1024)
    escaped = value.replace("\\", "\\\\").replace("'", "\\'")
    return f"'{escaped}'"


def set_global(ctx: Context, a: SetGlobal) -> Detail:
    """``SET GLOBAL`` on each node, then what the server made of it: an error of the server
    (an unknown variable, a value it refuses) or a value it adjusted (it warns and sets
    another: ``innodb_flush_log_at_trx_commit = 7`` runs as 3, read back with
    ``runners.settings_in_force``) fails the action naming the node; nothing is silently
    changed."""
    if not NAME.match(a.name):
        raise ActionFailed(f"not a variable name: {a.name!r}")
    targets = [n.name for n in a.nodes] or [n for n in ctx.topo.nodes if n not in ctx.down]
    stmt = f"SET GLOBAL {a.name} = {sql_literal(a.value)}"
    for name in targets:
        n = ctx.node(name)
        try:
            conn = connect(n.addr, n.admin, timeout=10)
            try:
                cur = conn.cursor()
                cur.execute(stmt)
                cur.execute("SHOW WARNINGS")
                warnings = [f"{w[0]} {w[1]}: {w[2]}" for w in cur.fetchall()]
                cur.execute(f"SELECT @@GLOBAL.`{a.name}`")
                row = cur.fetchone()
                running = row[0] if row else None
            finally:
                with contextlib.suppress(Exception):
                    conn.close()
        except MySQLdb.Error as e:
            raise ActionFailed(f"{stmt} on {name}: the server answered {e}") from None
        if settings_in_force.differs(a.value, running):
            said = f" ({'; '.join(warnings)})" if warnings else ""
            raise ActionFailed(f"{stmt} on {name}: the server set {running}, not {a.value}"
                               f"{said}; use a value it takes")
    return {"nodes": targets, "statement": stmt}


SERVER_GONE = (2006, 2013)  # the server went away / lost the connection during the query


MAX_ROWS = 20  # rows of an ``execute``'s result kept in its detail


def run_sql(ctx: Context, a: RunSql) -> Detail:
    """Run the statement as the admin and record what it did: the node that answered, the
    rows it changed (``affected_rows``), the first ``MAX_ROWS`` rows of its result (``rows``,
    ``row_count``) and the server's warnings. The server going away during it (killed,
    OOM-killed: error 2013 or 2006) is what some experiments are about: recorded as
    ``connection_lost``, not a failure of the run; any other error fails the action."""
    conn = connect(ctx.topo.address(a.node.name), ctx.topo.admin, timeout=3600)
    detail: dict[str, object] = {"statement": a.statement[:200]}
    try:
        cur = conn.cursor()
        with contextlib.suppress(MySQLdb.Error):
            cur.execute("SELECT @@server_id")
            got = cur.fetchone()
            detail["node"] = ctx.topo.node_by_server_id(int(got[0])) if got else None
        try:
            cur.execute(a.statement)
        except MySQLdb.OperationalError as e:
            if e.args and e.args[0] in SERVER_GONE:
                return {**detail, "connection_lost": str(e)}
            raise
        detail["affected_rows"] = int(cur.rowcount) if cur.description is None else None
        if cur.description is not None:
            rows = cur.fetchall()
            detail["row_count"] = len(rows)
            detail["rows"] = [[None if v is None else str(v) for v in r]
                              for r in rows[:MAX_ROWS]]
        with contextlib.suppress(MySQLdb.Error):
            cur.execute("SHOW WARNINGS")
            warnings = [f"{w[0]} {w[1]}: {w[2]}" for w in cur.fetchall()]
            if warnings:
                detail["warnings"] = warnings[:MAX_ROWS]
        cur.close()
    finally:
        with contextlib.suppress(Exception):
            conn.close()
    return detail


HANDLERS: dict[type, Handler] = {SetGlobal: set_global, RunSql: run_sql}
NEEDS: dict[type, Needs] = {}  # through the servers: every back-end
