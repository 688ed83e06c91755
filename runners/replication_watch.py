"""Watch the replication threads of every node: when each one stops, and on which error.

``ReplicationWatcher`` reads ``SHOW ALL SLAVES STATUS`` (MariaDB multi-source; ``SHOW SLAVE
STATUS`` then ``SHOW REPLICA STATUS`` where that is not known) on every node every
``interval`` seconds, each node in its own thread with its own persistent connection (a paused
node that blocks its reads does not delay the others). Every tick it calls::

    emit("replication", node, time_ns, {"io_running": 1.0 | 0.0, "io_connecting": 1.0 | 0.0,
                                        "sql_running": 1.0 | 0.0,
                                        "sql_errno": float, "io_errno": float,
                                        "seconds_behind": float (NaN: unknown),
                                        "configured": 1.0,
                                        "read_only": 1.0 | 0.0})

``io_connecting`` is 1.0 when the IO thread is not running but ``Connecting``: its primary is
unreachable (down, restarting, cut off) and it retries by itself.
``read_only`` is the node's ``@@global.read_only``, read on the same connection right after
the status (the split-brain checker's evidence that a node takes writes); it is left out when
the server did not answer it. With ``semi_sync=True`` (the plan's ``semi_sync on``) the same
tick adds the primary side of semi-synchronous replication, from ``SHOW GLOBAL VARIABLES`` and
``SHOW GLOBAL STATUS`` (MariaDB's and MySQL's ``master`` names, MySQL 8.0.26's ``source``):
``semi_sync_enabled`` (``rpl_semi_sync_master_enabled``: 1.0 / 0.0), ``semi_sync_on``
(``Rpl_semi_sync_master_status``: operational now, 0.0 once it fell back to asynchronous),
``semi_sync_yes_tx`` and ``semi_sync_no_tx`` (the server's counters of commits a replica
acknowledged / that went on without one; they restart from 0 with the server); left out when
the server has no semi-sync (``lab.judge.checkers.semi_sync``). ``configured`` is 0.0 (and
the other figures 0 / NaN) when the node replicates from nothing.
A node that cannot be read (down, paused past the read timeout, refusing connections) gives
``{"unreadable": 1.0}`` for that tick and is reconnected on the next one. ``time_ns`` is
``time.monotonic_ns()`` half way through the status query.

An IO thread that is ``Connecting`` (its primary is gone) is not running (0.0). With several
replication sources on one node a thread counts as running only when it runs for every source,
and the first non-zero errno is reported. Sample values are numbers only: the error texts are
kept in ``messages[(node, errno)]`` (recorded when a node's state changes) and given as
``{node: {"1062": "Duplicate entry ..."}}`` by ``messages_by_node()``.

Nothing here imports ``lab``: the engine passes ``emit`` (and builds its own samples).
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import MySQLdb
import MySQLdb.cursors

from runners.mysql import Address, Credentials, error_code
from runners.node_sampler import Emit, NodeSampler, timed_rows

log = logging.getLogger(__name__)

SERIES = "replication"
STATEMENTS = ("SHOW ALL SLAVES STATUS", "SHOW SLAVE STATUS", "SHOW REPLICA STATUS")
UNKNOWN_STATEMENT = frozenset({1064, 1149})  # syntax error: the server does not know it


def _col(row: Mapping[str, Any], *names: str) -> Any:
    for n in names:
        if n in row:
            return row[n]
    return None


def _int(v: Any) -> int:
    try:
        return int(v or 0)
    except (TypeError, ValueError):
        return 0


def summarize(rows: list[Mapping[str, Any]]) -> tuple[dict[str, float], dict[int, str]]:
    """The sample values of one node's status rows, and the error text of each errno."""
    if not rows:
        return {"configured": 0.0, "io_running": 0.0, "io_connecting": 0.0, "sql_running": 0.0,
                "sql_errno": 0.0, "io_errno": 0.0, "seconds_behind": math.nan}, {}  # fmt: skip
    io_running = sql_running = True
    io_connecting, io_given_up = False, False
    sql_errno = io_errno = 0
    behind: list[float] = []
    texts: dict[int, str] = {}
    for r in rows:
        io = str(_col(r, "Slave_IO_Running", "Replica_IO_Running") or "")
        sql = str(_col(r, "Slave_SQL_Running", "Replica_SQL_Running") or "")
        io_running = io_running and io == "Yes"
        io_connecting = io_connecting or io == "Connecting"
        io_given_up = io_given_up or io not in ("Yes", "Connecting")
        sql_running = sql_running and sql == "Yes"
        s_err = _int(_col(r, "Last_SQL_Errno"))
        i_err = _int(_col(r, "Last_IO_Errno"))
        if s_err:
            sql_errno = sql_errno or s_err
            texts.setdefault(s_err, str(_col(r, "Last_SQL_Error") or ""))
        if i_err:
            io_errno = io_errno or i_err
            texts.setdefault(i_err, str(_col(r, "Last_IO_Error") or ""))
        sb = _col(r, "Seconds_Behind_Master", "Seconds_Behind_Source")
        if sb is not None:
            with contextlib.suppress(TypeError, ValueError):
                behind.append(float(sb))
    return {
        "configured": 1.0,
        "io_running": 1.0 if io_running else 0.0,
        # not running but retrying by itself (its primary unreachable: it reconnects)
        "io_connecting": 1.0 if io_connecting and not io_given_up else 0.0,
        "sql_running": 1.0 if sql_running else 0.0,
        "sql_errno": float(sql_errno),
        "io_errno": float(io_errno),
        "seconds_behind": max(behind) if behind and len(behind) == len(rows) else math.nan,
    }, texts


class ReplicationWatcher(NodeSampler):
    """Samples the replication status of ``nodes`` until ``stop`` is set.

    ``connect_fn(addr, creds)`` opens a connection (default: ``runners.mysql.connect`` with
    a 1 s timeout); tests pass a fake."""

    SERIES = SERIES

    def __init__(self, nodes: Mapping[str, Address], creds: Credentials, emit: Emit,
                 interval: float = 0.2, stop: threading.Event | None = None, *,
                 connect_fn: Callable[[Address, Credentials], Any] | None = None,
                 semi_sync: bool = False) -> None:
        super().__init__(nodes, creds, emit, interval, stop, connect_fn=connect_fn)
        self.semi_sync = semi_sync
        self.messages: dict[tuple[str, int], str] = {}
        self.unreadable: dict[str, int] = {}
        self._lock = threading.Lock()

    def messages_by_node(self) -> dict[str, dict[str, str]]:
        """``{node: {"1062": text}}``: the shape ``ctx.facts["replication_messages"]`` takes."""
        out: dict[str, dict[str, str]] = {}
        with self._lock:
            for (node, errno), text in self.messages.items():
                out.setdefault(node, {})[str(errno)] = text
        return out

    # --- one node ---------------------------------------------------------------------------
    def _run(self, name: str) -> None:
        addr = self.nodes[name]
        conn: Any = None
        statement = 0  # index in STATEMENTS: the first one this server knows
        state: tuple[float, ...] | None = None
        next_tick = time.monotonic()
        while not self.stop.is_set():
            rows: list[Mapping[str, Any]] | None = None
            t_ns = time.monotonic_ns()
            try:
                if conn is None:
                    conn = self._connect(addr, self.creds)
                while True:
                    try:
                        t_ns, rows = self._read(conn, STATEMENTS[statement])
                        break
                    except MySQLdb.Error as e:
                        if (error_code(e) in UNKNOWN_STATEMENT
                                and statement + 1 < len(STATEMENTS)):  # fmt: skip
                            statement += 1
                            continue
                        raise
            except Exception as e:  # noqa: BLE001 - down, paused, refused: unreadable
                log.debug("replication status of %s: %s", name, e)
                if conn is not None:
                    with contextlib.suppress(Exception):
                        conn.close()
                conn = None
            if rows is None:
                self.unreadable[name] = self.unreadable.get(name, 0) + 1
                self._emit(name, t_ns, {"unreadable": 1.0})
            else:
                values, texts = summarize(rows)
                ro = self._read_only(conn)
                if ro is not None:
                    values["read_only"] = ro
                if self.semi_sync:
                    values.update(self._semi_sync(conn))
                key = (values["io_running"], values["sql_running"], values["sql_errno"],
                       values["io_errno"])  # fmt: skip
                if key != state:
                    state = key
                    with self._lock:
                        for errno, text in texts.items():
                            self.messages[(name, errno)] = text[:2000]
                self._emit(name, t_ns, values)
            next_tick = self._next_tick(name, next_tick)
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    @staticmethod
    def _read(conn: Any, sql: str) -> tuple[int, list[Mapping[str, Any]]]:
        return timed_rows(conn, sql, MySQLdb.cursors.DictCursor)

    @staticmethod
    def _semi_sync(conn: Any) -> dict[str, float]:
        """The primary side of semi-sync (module doc); empty when it cannot be read."""
        out: dict[str, float] = {}
        try:
            cur = conn.cursor()
            try:
                cur.execute("SHOW GLOBAL VARIABLES WHERE Variable_name IN "
                            "('rpl_semi_sync_master_enabled', 'rpl_semi_sync_source_enabled')")
                variables = {str(k).lower(): str(v) for k, v in cur.fetchall()}
                cur.execute("SHOW GLOBAL STATUS WHERE Variable_name IN "
                            "('Rpl_semi_sync_master_status', 'Rpl_semi_sync_source_status', "
                            "'Rpl_semi_sync_master_yes_tx', 'Rpl_semi_sync_source_yes_tx', "
                            "'Rpl_semi_sync_master_no_tx', 'Rpl_semi_sync_source_no_tx')")
                status = {str(k).lower().replace("_source_", "_master_"): str(v)
                          for k, v in cur.fetchall()}
            finally:
                with contextlib.suppress(Exception):
                    cur.close()
        except Exception:  # noqa: BLE001 - the status was read; semi-sync is extra
            return out
        enabled = next(iter(variables.values()), None)
        if enabled is None or "rpl_semi_sync_master_status" not in status:
            return out
        out["semi_sync_enabled"] = 1.0 if enabled.upper() in ("ON", "1") else 0.0
        out["semi_sync_on"] = 1.0 if status["rpl_semi_sync_master_status"].upper() in (
            "ON", "1") else 0.0
        for key in ("yes_tx", "no_tx"):
            with contextlib.suppress(KeyError, ValueError):
                out[f"semi_sync_{key}"] = float(int(status[f"rpl_semi_sync_master_{key}"]))
        return out

    @staticmethod
    def _read_only(conn: Any) -> float | None:
        """``@@global.read_only`` as 1.0 / 0.0; None when it cannot be read."""
        try:
            cur = conn.cursor(MySQLdb.cursors.DictCursor)
            try:
                cur.execute("SELECT @@global.read_only AS read_only")
                rows = list(cur.fetchall()) if cur.description else []
            finally:
                with contextlib.suppress(Exception):
                    cur.close()
        except Exception:  # noqa: BLE001 - the status was read; read_only is extra
            return None
        if not rows or not isinstance(rows[0], Mapping) or "read_only" not in rows[0]:
            return None
        try:
            return 1.0 if int(rows[0]["read_only"]) else 0.0
        except (TypeError, ValueError):
            return None

