"""MariaDB replication knowledge in one place: how a replica is pointed at its primary, how
positions are read, when a replica has caught up, when a Galera node is synced, the lab's
heartbeat and lag sampling, and how many transactions each node misses.

The topologies of both back-ends wire their replicas with ``wire_replica`` (one set of
statements, ``replica_statements``); the faults (promote, rejoin, waits) and the engine
(settling, facts) call the rest; nothing here knows about plans or the history. Servers are
reached through ``SqlNode`` (what ``runners.node.Node`` offers: ``sql``, ``scalar``,
``is_running``) or an address and credentials; tests pass fakes.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, Literal, Protocol

from runners.errors import ComponentError
from runners.gtid import (
    HEARTBEAT_DOMAIN,
    missing_galera,
    missing_multi_primary,
    missing_replication,
    parse_gtid,
)
from runners.mysql import Address, Credentials, connect, execute_all, query, wait_until
from runners.workloads import SCHEMA

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
GtidVar = Literal["gtid_binlog_pos", "gtid_current_pos", "gtid_slave_pos",
                  "gtid_binlog_state"]
UseGtid = Literal["slave_pos", "current_pos", "no"]
ReplicationMode = Literal["gtid", "file_position"]  # the plan's replication_mode
WSREP_SYNCED = "4"  # wsrep_local_state of a Galera node that is Synced
HEARTBEAT_SCHEMA = SCHEMA  # the lab's own schema
# emit(series, subject, time_ns, values): how samples leave this module (as replication_watch)
Emit = Callable[[str, str, int, dict[str, float]], None]


class SqlNode(Protocol):
    """What these helpers need of a server: ``runners.node.Node`` is one."""

    name: str

    def sql(self, statement: str, timeout: float = 5.0) -> list[dict[str, Any]]: ...
    def scalar(self, statement: str, timeout: float = 5.0) -> Any: ...
    def is_running(self) -> bool: ...


# --- wiring -----------------------------------------------------------------------------------


def _quoted(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def change_master(
    port: int | None = None,
    *,
    host: str = LOOPBACK,
    creds: Credentials | None = None,
    use_gtid: UseGtid | None = None,
    log_file: str | None = None,
    log_pos: int | None = None,
    connect_retry: int | None = 1,
    delay: float | None = None,
    flavor: str = "mariadb",
) -> str:
    """The one ``CHANGE MASTER TO`` of the lab (MariaDB's ``MASTER_USE_GTID``; MySQL and
    Percona Server 8.0, ``flavor`` mysql or percona: ``MASTER_AUTO_POSITION``, 1 for either
    GTID position, 0 for ``no``). Without ``port`` only the other options are
    changed (``CHANGE MASTER TO MASTER_CONNECT_RETRY=1``: keep dbdeployer's wiring). Replicas
    retry their connection every second by default, so that recovery times measure the
    servers and not a 60-second retry timer."""
    opts: list[str] = []
    if port is not None:
        opts += [f"MASTER_HOST={_quoted(host)}", f"MASTER_PORT={int(port)}"]
    if creds is not None:
        opts += [f"MASTER_USER={_quoted(creds.user)}",
                 f"MASTER_PASSWORD={_quoted(creds.password)}"]
    if use_gtid is not None and flavor == "mariadb":
        opts.append(f"MASTER_USE_GTID={use_gtid}")
    elif use_gtid is not None:  # MySQL, Percona Server 8.0: one GTID set, no slave_pos
        opts.append(f"MASTER_AUTO_POSITION={0 if use_gtid == 'no' else 1}")
    if log_file is not None:
        opts.append(f"MASTER_LOG_FILE={_quoted(log_file)}")
    if log_pos is not None:
        opts.append(f"MASTER_LOG_POS={int(log_pos)}")
    if connect_retry is not None:
        opts.append(f"MASTER_CONNECT_RETRY={int(connect_retry)}")
    if delay:
        opts.append(f"MASTER_DELAY={int(round(delay))}")
    if not opts:
        raise ValueError("CHANGE MASTER TO needs at least one option")
    return "CHANGE MASTER TO " + ", ".join(opts)


def repoint(port: int, creds: Credentials, use_gtid: UseGtid = "slave_pos",
            read_only: bool = False, host: str = LOOPBACK, flavor: str = "mariadb"
            ) -> list[str]:
    """The statements that make a running server replicate from ``host:port``: promote's
    other replicas (``slave_pos``), a former primary rejoining (``current_pos``, read-only),
    one primary of two."""
    out = ["SET GLOBAL read_only=ON"] if read_only else []
    return [*out, "STOP SLAVE", change_master(port, host=host, creds=creds, use_gtid=use_gtid,
                                              flavor=flavor),
            "START SLAVE"]


def replica_statements(
    source: tuple[str, int] | None,
    creds: Credentials | None,
    *,
    mode: ReplicationMode = "gtid",
    position: tuple[str, int] | None = None,
    delay: float | None = None,
    flavor: str = "mariadb",
    read_only: bool = True,
    dbdeployer: bool = False,
) -> list[str]:
    """The statements that wire a replica at deploy time, on every back-end: it replicates
    from ``source`` (host, port: the source itself, or the toxiproxy link in between) as
    ``creds``, by GTID (``slave_pos``; MySQL and Percona Server: auto-position) or from the
    file ``position`` (``mode`` file_position), ``delay`` seconds behind; read-only unless
    ``read_only`` is False (two primaries).

    ``dbdeployer``: the replica was wired by dbdeployer (native replication): its user and
    its GTID setting are dbdeployer's and are kept (``creds`` must be None); with ``source``
    None its whole wiring is kept but for the retry interval (no link, no delay, no file
    coordinates to set: dbdeployer's wiring is what the plan wants)."""
    if dbdeployer and creds is not None:
        raise ValueError("a replica wired by dbdeployer keeps dbdeployer's user")
    if not dbdeployer and (source is None or creds is None):
        raise ValueError("a replica needs a source and a user (dbdeployer's are kept only "
                         "on a replica it wired)")
    if (mode == "file_position") != (position is not None):
        raise ValueError("file coordinates go with mode file_position, and it needs them")
    if source is None and (position is not None or delay):
        raise ValueError("keeping dbdeployer's wiring sets no coordinates and no delay")
    use_gtid: UseGtid | None = "no" if mode == "file_position" else "slave_pos"
    if dbdeployer and mode == "gtid":
        use_gtid = None  # dbdeployer's own choice
    host, port = source if source is not None else (LOOPBACK, None)
    log_file, log_pos = position if position is not None else (None, None)
    stmt = change_master(port, host=host, creds=creds, use_gtid=use_gtid, log_file=log_file,
                         log_pos=log_pos, delay=delay, flavor=flavor)
    return [*(["SET GLOBAL read_only=ON"] if read_only else []), "STOP SLAVE", stmt,
            "START SLAVE"]


class WiredNode(SqlNode, Protocol):
    """A server ``wire_replica`` wires: ``runners.node.Node`` is one (native and containers)."""

    admin: Credentials
    error_log: Any

    @property
    def addr(self) -> Address: ...
    @property
    def component(self) -> str: ...


def wire_replica(
    replica: WiredNode,
    source: SqlNode,
    address: tuple[str, int] | None,
    creds: Credentials | None,
    *,
    mode: ReplicationMode = "gtid",
    delay: float | None = None,
    flavor: str = "mariadb",
    read_only: bool = True,
    dbdeployer: bool = False,
) -> None:
    """Wire ``replica`` to replicate from ``source``, reached at ``address`` (host, port: the
    source's, or its toxiproxy link's), with ``replica_statements`` run as the replica's admin.

    File and position (``mode`` file_position): explicit coordinates, the source's binary
    log position (after a restart with relay_log_recovery the replica may not know its file
    name, and an empty one never advances). A replica that replicates already (dbdeployer's)
    first applies everything it was sent (``wait_applied``), so that the source's position
    is its own; one that replicates from nothing yet (a fresh container) has nothing to
    apply."""
    position = None
    if mode == "file_position":
        if slave_status(replica, timeout=5.0):
            wait_applied(replica, source)
        position = binlog_position(source, timeout=5.0)
    execute_all(replica.addr, replica.admin, replica_statements(
        address, creds, mode=mode, position=position, delay=delay, flavor=flavor,
        read_only=read_only, dbdeployer=dbdeployer))


PROMOTE_STATEMENTS = ("STOP SLAVE", "RESET SLAVE ALL", "SET GLOBAL read_only=OFF")


# --- positions and status ------------------------------------------------------------------------


def read_gtid(node: SqlNode, var: GtidVar, timeout: float = 2.0) -> str:
    """One of the node's GTID positions as the server writes it (``0-100-5,99-100-7``)."""
    return str(node.scalar(f"SELECT @@{var}", timeout=timeout) or "")


def gtid(node: SqlNode, var: GtidVar, timeout: float = 2.0) -> dict[int, int]:
    """One of the node's GTID positions, parsed: {domain: highest seq_no}."""
    return parse_gtid(read_gtid(node, var, timeout))


def slave_status(node: SqlNode, timeout: float = 2.0) -> dict[str, Any]:
    """The first row of ``SHOW SLAVE STATUS`` ({} when the node replicates from nothing)."""
    rows = node.sql("SHOW SLAVE STATUS", timeout=timeout)
    return rows[0] if rows else {}


def binlog_position(node: SqlNode, timeout: float = 2.0) -> tuple[str, int]:
    """(file, position) of the node's binary log (``SHOW MASTER STATUS``)."""
    rows = node.sql("SHOW MASTER STATUS", timeout=timeout)
    return str(rows[0]["File"]), int(rows[0]["Position"])


def replicating(node: SqlNode, timeout: float = 5.0) -> bool:
    """Both replication threads run."""
    st = slave_status(node, timeout)
    return bool(st) and st.get("Slave_IO_Running") == "Yes" and \
        st.get("Slave_SQL_Running") == "Yes"


def caught_up(replica: SqlNode, primary: SqlNode | None) -> bool:
    """The replica's SQL thread runs and has applied everything: the primary's binlog position
    when ``primary`` is given (it runs), else everything its IO thread downloaded."""
    st = slave_status(replica)
    if not st or st.get("Slave_SQL_Running") != "Yes":
        return False
    if primary is None:
        return st.get("Read_Master_Log_Pos") == st.get("Exec_Master_Log_Pos") and \
            st.get("Relay_Master_Log_File") == st.get("Master_Log_File")
    f, pos = binlog_position(primary)
    return st.get("Relay_Master_Log_File") == f and int(st.get("Exec_Master_Log_Pos", 0)) == pos


def downloaded(replica: SqlNode, primary: SqlNode) -> bool:
    """The replica's IO thread has downloaded the primary's whole binary log."""
    st = slave_status(replica)
    if not st:
        return False
    f, pos = binlog_position(primary)
    return st.get("Master_Log_File") == f and int(st.get("Read_Master_Log_Pos", 0)) == pos


def _status_rows(nodes: Mapping[str, SqlNode]) -> list[tuple[str, dict[str, Any]]]:
    """(name, ``SHOW SLAVE STATUS`` row) of every running node that answers."""
    out: list[tuple[str, dict[str, Any]]] = []
    for name, node in nodes.items():
        if node.is_running():
            with contextlib.suppress(Exception):
                out += [(name, st) for st in node.sql("SHOW SLAVE STATUS", timeout=2)]
    return out


# network errors an IO thread retries by itself (every MASTER_CONNECT_RETRY): one that shows
# "No" with one of these was stopped by someone (`stop replication`), and the error is stale
NETWORK_IO_ERRORS = frozenset({1158, 1159, 1160, 1161, 2003, 2005, 2006, 2013, 2026})


def _sql_stopped(name: str, st: Mapping[str, Any]) -> str | None:
    errno = int(st.get("Last_SQL_Errno") or 0)
    return f"{name} (error {errno})" if st.get("Slave_SQL_Running") != "Yes" and errno else None


def _io_stopped(name: str, st: Mapping[str, Any]) -> str | None:
    errno = int(st.get("Last_IO_Errno") or 0)
    if st.get("Slave_IO_Running") != "No" or not errno or errno in NETWORK_IO_ERRORS:
        return None
    msg = str(st.get("Last_IO_Error") or "")[:160]
    return f"{name} (error {errno}: {msg})" if msg else f"{name} (error {errno})"


def stopped_threads(nodes: Mapping[str, SqlNode]) -> tuple[list[str], list[str]]:
    """From one ``SHOW SLAVE STATUS`` per running node: the nodes whose SQL thread stopped on
    an error (``db2 (error 1062)``), and those whose IO thread did (``Slave_IO_Running`` No,
    not Connecting: it will not retry; ``db1 (error 1236: Got fatal error ...)``, a former
    primary whose own writes the new primary lacks, say)."""
    rows = _status_rows(nodes)
    sql = [x for x in (_sql_stopped(n, st) for n, st in rows) if x]
    io = [x for x in (_io_stopped(n, st) for n, st in rows) if x]
    return sql, io


def thread_errors(st: Mapping[str, Any]) -> dict[str, Any]:
    """The replication threads' state and last errors from one ``SHOW SLAVE STATUS`` row."""
    return {
        "sql_errno": int(st.get("Last_SQL_Errno") or 0),
        "io_errno": int(st.get("Last_IO_Errno") or 0),
        "sql_error": str(st.get("Last_SQL_Error") or "")[:300],
        "io_running": st.get("Slave_IO_Running"),
        "sql_running": st.get("Slave_SQL_Running"),
    }


# --- Galera --------------------------------------------------------------------------------------


def synced(node: SqlNode, timeout: float = 1.0) -> bool:
    """The Galera node is Synced (``wsrep_local_state`` 4)."""
    rows = node.sql("SHOW GLOBAL STATUS LIKE 'wsrep_local_state'", timeout=timeout)
    return bool(rows) and str(rows[0]["Value"]) == WSREP_SYNCED


GALERA_STATE = ("SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_local_state', "
                "'wsrep_cluster_status', 'wsrep_cluster_conf_id', 'wsrep_ready')")


def galera_state(node: SqlNode, timeout: float = 1.0) -> dict[str, str]:
    """The node's wsrep_local_state, wsrep_cluster_status, wsrep_cluster_conf_id and
    wsrep_ready, lower-case names without the prefix."""
    rows = node.sql(GALERA_STATE, timeout=timeout)
    return {str(r["Variable_name"]).lower().removeprefix("wsrep_"): str(r["Value"])
            for r in rows}


def synced_in_cluster(node: SqlNode, others: Sequence[SqlNode]) -> bool:
    """The Galera node is Synced, ready, in a Primary component, and that component is the
    current one: no other node that answers is in a Primary component of a later view. A
    node resumed after a pause still shows its old view as Primary and Synced until it learns
    it was left out (measured: 4 s after the resume): ``synced`` alone accepts it."""
    st = galera_state(node)
    if st.get("local_state") != WSREP_SYNCED or st.get("cluster_status") != "Primary" or \
            st.get("ready", "").upper() != "ON":
        return False
    view = int(st.get("cluster_conf_id") or -1)
    for other in others:
        try:
            o = galera_state(other, timeout=0.5)
        except Exception:  # noqa: BLE001 - down or paused: it says nothing about the view
            continue
        if o.get("cluster_status") == "Primary" and int(o.get("cluster_conf_id") or -1) > view:
            return False
    return True


def last_committed(node: SqlNode, timeout: float = 2.0) -> int:
    """``wsrep_last_committed``: the Galera node's position."""
    return int(node.sql("SHOW GLOBAL STATUS LIKE 'wsrep_last_committed'",
                        timeout=timeout)[0]["Value"])


def role_state(addr: Address, creds: Credentials) -> tuple[bool, bool]:
    """(read_only, synced) in one query, for the router's role checks (synced is True on
    servers without Galera only in the sense that the caller ignores it there)."""
    rows = query(addr, creds,
                 "SELECT @@read_only AS ro, (SELECT VARIABLE_VALUE FROM "
                 "information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME="
                 "'WSREP_LOCAL_STATE') AS wsrep", timeout=1)
    st = rows[0]
    return int(st["ro"]) != 0, str(st["wsrep"]) == WSREP_SYNCED


# --- what each node misses -----------------------------------------------------------------------


def missing_transactions(kind: str, running: Mapping[str, SqlNode], primary: str | None,
                         primary_last: Mapping[int, int]) -> dict[str, int]:
    """Transactions each running node lacks, per topology (``runners.gtid``); {} when the
    positions cannot be read (unknown, not zero). ``primary_last``: the primary's last
    binlog position seen, used when the primary is down."""
    try:
        if kind == "galera":
            return missing_galera({n: last_committed(node) for n, node in running.items()})
        if kind == "primary_primary":
            return missing_multi_primary(
                {n: gtid(node, "gtid_binlog_pos") for n, node in running.items()},
                {n: gtid(node, "gtid_current_pos") for n, node in running.items()})
        if primary is None:
            return {}
        truth = dict(primary_last)
        if primary in running:
            truth = gtid(running[primary], "gtid_binlog_pos")
        return missing_replication(
            truth, {n: gtid(node, "gtid_current_pos") for n, node in running.items()
                    if n != primary})
    except Exception as e:  # noqa: BLE001 - unknown, not zero
        log.warning("missing transactions: %s", e)
        return {}


# --- waits ---------------------------------------------------------------------------------------


def wait_tables(nodes: Sequence[Any], schema: str, want: int, timeout: float) -> None:
    """Every running node holds at least ``want`` tables of ``schema`` (two primaries, Galera:
    the tables must exist everywhere before the load)."""
    def holds(node: SqlNode) -> bool:
        return int(node.scalar("SELECT COUNT(*) FROM information_schema.tables "
                               f"WHERE table_schema = '{schema}'", timeout=1) or 0) >= want

    for node in nodes:
        if node.is_running():
            wait_until(partial(holds, node), timeout, "holding the workload tables",
                       node.component)


def wait_caught_up(replicas: Mapping[str, SqlNode], primary: SqlNode | None, timeout: float,
                   primary_name: str = "the primary") -> list[str]:
    """Poll until every replica caught up with ``primary``; the replicas still behind ([] when
    all caught up). An unreadable replica is behind."""
    deadline = time.monotonic() + timeout
    behind = list(replicas)
    while time.monotonic() < deadline:
        behind = []
        for n, node in replicas.items():
            try:
                if not caught_up(node, primary):
                    behind.append(n)
            except Exception:  # noqa: BLE001 - unreadable: not caught up
                behind.append(n)
        if not behind:
            return []
        time.sleep(0.05)
    return behind


def wait_applied(replica: Any, primary: SqlNode, timeout: float = 30.0) -> None:
    """The replica's SQL thread has applied the primary's whole binary log (``caught_up``:
    by file and position, which MariaDB, MySQL and Percona Server report alike)."""
    wait_until(partial(caught_up, replica, primary), timeout, "caught up with the primary",
               replica.component, replica.error_log)


def caught_up_error(behind: Sequence[str], primary: str, timeout: float) -> ComponentError:
    return ComponentError("replication", f"{', '.join(behind)} not caught up with "
                          f"{primary} after {timeout:g}s")


# --- the lab's heartbeat and lag sampling --------------------------------------------------------


def heartbeat_statements(schema: str = HEARTBEAT_SCHEMA) -> list[str]:
    """The heartbeat table, made on the writer before the load (in the heartbeat's own GTID
    domain: ``SET SESSION gtid_domain_id`` first)."""
    return [
        f"CREATE DATABASE IF NOT EXISTS `{schema}`",
        f"CREATE TABLE IF NOT EXISTS `{schema}`.heartbeat (id INT PRIMARY KEY, "
        "ts BIGINT NOT NULL) ENGINE=InnoDB",
        f"REPLACE INTO `{schema}`.heartbeat VALUES (1, 0)",
    ]


HEARTBEAT_SESSION = f"SET SESSION gtid_domain_id = {HEARTBEAT_DOMAIN}"


class HeartbeatWriter:
    """Writes the wall-clock time on the primary every ``interval`` seconds (own GTID domain)
    until ``stop`` is set, and passes the primary's binlog position to ``on_position`` after
    each beat. ``primary()`` is asked every beat: after a promote it names another server."""

    def __init__(self, primary: Callable[[], Address | None], creds: Credentials,
                 stop: threading.Event, on_position: Callable[[dict[int, int]], None],
                 interval: float = 0.05, schema: str = HEARTBEAT_SCHEMA) -> None:
        self.primary, self.creds, self.stop = primary, creds, stop
        self.on_position = on_position
        self.interval = interval
        self.schema = schema
        self.latest_ts = 0  # the ts (wall clock, µs) the last committed beat wrote; 0: none
        self.thread = threading.Thread(target=self._run, daemon=True, name="heartbeat")

    def start(self) -> None:
        self.thread.start()

    def join(self, timeout: float | None = None) -> None:
        self.thread.join(timeout)

    def _run(self) -> None:
        conn: Any = None
        current: Address | None = None
        mariadb = True
        while not self.stop.is_set():
            try:
                addr = self.primary()
                if conn is None or addr != current:
                    if conn is not None:
                        with contextlib.suppress(Exception):
                            conn.close()
                        conn = None
                    current = addr
                    assert current is not None
                    conn = connect(current, self.creds, timeout=1)
                    cur = conn.cursor()
                    cur.execute("SELECT @@version")
                    # MySQL and Percona Server have no GTID domains: their beats are
                    # transactions like the others there, and no MariaDB position is read
                    mariadb = "mariadb" in str(cur.fetchone()[0]).lower()
                    if mariadb:
                        cur.execute(HEARTBEAT_SESSION)
                    cur.close()
                cur = conn.cursor()
                ts = time.time_ns() // 1000
                cur.execute(f"UPDATE `{self.schema}`.heartbeat SET ts = %s WHERE id = 1",
                            (ts,))  # autocommit: committed when it returns
                row = None
                if mariadb:
                    cur.execute("SELECT @@gtid_binlog_pos")
                    row = cur.fetchone()
                cur.close()
                self.latest_ts = ts
                if row:
                    self.on_position(parse_gtid(str(row[0])))
            except Exception:  # noqa: BLE001
                with contextlib.suppress(Exception):
                    if conn is not None:
                        conn.close()
                conn = None
            self.stop.wait(self.interval)
        with contextlib.suppress(Exception):
            if conn is not None:
                conn.close()


def lag_seconds(replica_ts: int, latest_ts: int) -> float:
    """A replica's lag from heartbeat timestamps (µs of this machine's wall clock, written by
    the lab): how much older its heartbeat row is than the primary's last committed beat;
    never negative."""
    return max(0.0, (latest_ts - replica_ts) / 1e6)


# a lag sample of a replica that answered but has no heartbeat yet (its replication never
# brought one): not "unreadable", and no lag either
NO_HEARTBEAT: dict[str, float] = {"lag": float("nan"), "no_heartbeat": 1.0}
NO_HEARTBEAT_ERRNOS = frozenset({1146, 1049})  # no such table, no such database


class LagSampler:
    """Reads the heartbeat on every replica every ``interval`` seconds and emits
    ``("lag", replica, time_ns, {"lag": seconds})`` (NaN: unreadable): how much older the
    replica's heartbeat row is than the primary's last committed beat (``latest()``: the
    writer's ``latest_ts``; ``lag_seconds``). While the primary beats (every 50 ms) this is
    pt-heartbeat's figure less up to one beat; when it stops committing (down, paused, cut
    off) the lag stays what the replica still has to apply: a replica that applied everything
    is 0 behind, not behind by the time since the primary died. ``replicas()`` is asked every
    tick."""

    def __init__(self, replicas: Callable[[], Mapping[str, Address]], creds: Credentials,
                 emit: Emit, latest: Callable[[], int], stop: threading.Event,
                 interval: float = 0.1, schema: str = HEARTBEAT_SCHEMA) -> None:
        self.replicas, self.creds, self.emit = replicas, creds, emit
        self.latest, self.stop = latest, stop
        self.interval = interval
        self.schema = schema
        self.thread = threading.Thread(target=self._run, daemon=True, name="lag")

    def start(self) -> None:
        self.thread.start()

    def join(self, timeout: float | None = None) -> None:
        self.thread.join(timeout)

    def _run(self) -> None:
        conns: dict[str, Any] = {}
        while not self.stop.is_set():
            for name, addr in self.replicas().items():
                try:
                    if name not in conns:
                        conns[name] = connect(addr, self.creds, timeout=1)
                    cur = conns[name].cursor()
                    cur.execute(f"SELECT ts FROM `{self.schema}`.heartbeat WHERE id = 1")
                    row = cur.fetchone()
                    cur.close()
                    latest = self.latest()
                    if row and int(row[0]) > 0 and latest > 0:
                        lag = lag_seconds(int(row[0]), latest)
                        self.emit("lag", name, time.monotonic_ns(), {"lag": lag})
                    elif latest > 0:  # it answered, but no beat has reached it yet
                        self.emit("lag", name, time.monotonic_ns(), NO_HEARTBEAT)
                except Exception as e:  # noqa: BLE001 - an unreadable replica: unknown, not a gap
                    if e.args and isinstance(e.args[0], int) and \
                            e.args[0] in NO_HEARTBEAT_ERRNOS:
                        # up and answering: the heartbeat's schema or table has not been
                        # replicated to it (its replication stopped before the load)
                        self.emit("lag", name, time.monotonic_ns(), NO_HEARTBEAT)
                        continue
                    self.emit("lag", name, time.monotonic_ns(), {"lag": float("nan")})
                    c = conns.pop(name, None)
                    with contextlib.suppress(Exception):
                        if c is not None:
                            c.close()
            self.stop.wait(self.interval)
        for c in conns.values():
            with contextlib.suppress(Exception):
                c.close()
