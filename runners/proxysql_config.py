"""ProxySQL's configuration as pure data (``runners.proxysql`` runs the router): the hostgroups,
the ports, ``Routing`` (servers, writers, readers, mode and monitor settings) and the
statements and files made from it: ``admin_statements`` (what the admin interface is told),
``move_writer_statements``, ``config_text`` (``proxysql.cnf``), ``states_from_rows``. Every
value that goes into generated SQL or the cnf file is checked here (``_safe``, ``_port``);
nothing reaches a shell."""

from __future__ import annotations

import re
import secrets
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from dsl import router_settings
from runners.mysql import Credentials

COMPONENT = "proxysql"
WRITER_HG = 10
READER_HG = 20
BACKUP_WRITER_HG = 30  # Galera: writable nodes beyond max_writers
OFFLINE_HG = 40  # Galera: nodes failing the health check
STANDBY_HG = 21  # replication: writer candidates that are read-only now (the monitor's own)
HOST = "127.0.0.1"
# Ports inside the run's block of 100 (runners.runtime.PortLayout): the admin port is B+92
# (``proxysql_admin``); ProxySQL 3.x also opens PostgreSQL listeners, kept on loopback too.
PGSQL_ADMIN_OFFSET = 93
PGSQL_OFFSET = 94
MIN_INTERVAL_MS = 100  # ProxySQL's lower bound for monitor intervals and timeouts
THREADS = 2

Mode = Literal["replication", "galera", "static"]
MODES: tuple[str, ...] = ("replication", "galera", "static")
# Credentials and names go into generated SQL literals and the cnf file: keep them boring.
SAFE_VALUE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
SAFE_NAME = re.compile(r"^[A-Za-z0-9_]{1,64}$")
BACKEND_NAMES = {"writer": WRITER_HG, "reader": READER_HG}
def _safe(value: str, what: str, pattern: re.Pattern[str] = SAFE_VALUE) -> str:
    if not pattern.match(value):
        raise ValueError(f"{what} {value!r}: only letters, digits, '_', '.' and '-' are allowed")
    return value


def _port(value: int) -> int:
    if not isinstance(value, int) or not 0 < value < 65536:
        raise ValueError(f"not a TCP port: {value!r}")
    return value


@dataclass(frozen=True)
class Server:
    name: str
    port: int
    host: str = HOST  # where ProxySQL reaches it (a node's name on a container network)


@dataclass(frozen=True)
class Routing:
    """Everything ``admin_statements`` needs. ``current_writers``: writer candidates that are
    writable now (decides the initial writer hostgroup in replication and static modes)."""

    mode: Mode
    servers: tuple[Server, ...]
    writers: tuple[str, ...]
    readers: tuple[str, ...]
    current_writers: tuple[str, ...]
    app: Credentials
    monitor: Credentials
    interval_ms: int
    reader_port: int
    settings: tuple[tuple[str, str], ...] = ()  # ProxySQL variables from the router block

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown ProxySQL mode {self.mode!r}")
        names = {s.name for s in self.servers}
        for s in self.servers:
            _safe(s.name, "server name", SAFE_NAME)
            _safe(s.host, "server host")
            _port(s.port)
        for n in (*self.writers, *self.readers, *self.current_writers):
            if n not in names:
                raise ValueError(f"{n!r} is not a backend")
        _safe(self.app.user, "application user")
        _safe(self.app.password, "application password")
        _safe(self.monitor.user, "monitor user")
        _safe(self.monitor.password, "monitor password")
        if self.app.user == self.monitor.user:
            raise ValueError("the application and monitor users must differ")
        _port(self.reader_port)
        for name, value in self.settings:
            problem = (router_settings.name_problem(name)
                       or router_settings.value_problem(name, value, params=False))
            if problem:
                raise ValueError(problem)

    def port_of(self, name: str) -> int:
        return next(s.port for s in self.servers if s.name == name)

    def server(self, name: str) -> Server:
        return next(s for s in self.servers if s.name == name)


def interval_ms(check_interval: float) -> int:
    return max(MIN_INTERVAL_MS, int(round(check_interval * 1000)))


def _server_row(hostgroup: int, server: Server, weight: int) -> str:
    return ("INSERT INTO mysql_servers (hostgroup_id, hostname, port, weight, comment) "
            f"VALUES ({hostgroup}, '{server.host}', {server.port}, {weight}, '{server.name}')")


def _set_variable(name: str, value: str | int) -> str:
    return (f"UPDATE global_variables SET variable_value='{value}' "
            f"WHERE variable_name='{name}'")


# Two primaries: ProxySQL has no "backup" server; it picks a server at random in proportion to
# the weights of the ONLINE ones. The first writer weighs 10,000,000 and the other 1, so the other
# takes about one write in ten million while the first is ONLINE, and every write once ProxySQL
# shuns the first (failed connections, failed pings) until it recovers it (shun_recovery_time_sec).
PREFERRED_WEIGHT = 10_000_000


def _writer_weights(writers: Sequence[str]) -> dict[str, int]:
    """Declared order is preference: the first writer weighs most."""
    return {name: 1000 - i for i, name in enumerate(writers)}


def monitor_variables(mode: Mode, ms: int) -> list[tuple[str, str | int]]:
    """The monitor's variables the lab sets from the router's ``check every`` (``lab plan``
    shows them); the rest are ProxySQL's defaults, and a file's ``set`` wins over both."""
    out: list[tuple[str, str | int]] = [
        ("mysql-monitor_connect_interval", ms),
        ("mysql-monitor_ping_interval", ms),
        ("mysql-monitor_read_only_interval", ms),
        ("mysql-monitor_read_only_timeout", ms),
    ]
    if mode == "replication":
        # a writer is not copied into the monitor's standby hostgroup (the declared readers
        # are hostgroup 20, which no read_only check touches)
        out.append(("mysql-monitor_writer_is_also_reader", "false"))
    if mode == "galera":
        out += [("mysql-monitor_galera_healthcheck_interval", ms),
                ("mysql-monitor_galera_healthcheck_timeout", ms)]
    return out


def _variables(r: Routing) -> list[tuple[str, str | int]]:
    out: list[tuple[str, str | int]] = [
        ("mysql-monitor_username", r.monitor.user),
        ("mysql-monitor_password", r.monitor.password),
        *monitor_variables(r.mode, r.interval_ms),
    ]
    return out + list(r.settings)  # the experiment's own, after the lab's: they win


def _server_rows(r: Routing) -> list[str]:
    by_name = {s.name: s for s in r.servers}
    weights = _writer_weights(r.writers)
    rows: list[str] = []
    if r.mode == "galera":
        # ProxySQL places Galera nodes itself; the heaviest writable node becomes the writer.
        for name in dict.fromkeys([*r.writers, *r.readers]):
            rows.append(_server_row(WRITER_HG, by_name[name], weights.get(name, 1)))
        return rows
    writers = [n for n in r.writers if n in r.current_writers]
    if r.mode == "static":  # the first writer takes the writes, the others when it is shunned
        weights = {n: PREFERRED_WEIGHT if i == 0 else 1 for i, n in enumerate(writers)}
    for name in writers:
        rows.append(_server_row(WRITER_HG, by_name[name], weights[name]))
    if r.mode == "replication":  # read-only now: the monitor moves it to 10 once writable
        for name in r.writers:
            if name not in writers:
                rows.append(_server_row(STANDBY_HG, by_name[name], weights[name]))
    for name in r.readers:
        rows.append(_server_row(READER_HG, by_name[name], 1))
    return rows


def _hostgroup_rows(r: Routing) -> list[str]:
    if r.mode == "replication":
        return ["INSERT INTO mysql_replication_hostgroups (writer_hostgroup, reader_hostgroup, "
                f"comment) VALUES ({WRITER_HG}, {STANDBY_HG}, 'lab')"]
    if r.mode == "galera":
        # writer_is_also_reader: 1 = writer and backup writers read; 2 = only backup writers.
        also = 1 if any(n in r.writers for n in r.readers) else 2
        return ["INSERT INTO mysql_galera_hostgroups (writer_hostgroup, backup_writer_hostgroup, "
                "reader_hostgroup, offline_hostgroup, active, max_writers, "
                "writer_is_also_reader, max_transactions_behind, comment) VALUES "
                f"({WRITER_HG}, {BACKUP_WRITER_HG}, {READER_HG}, {OFFLINE_HG}, 1, 1, {also}, "
                "100, 'lab')"]
    return []


def admin_statements(r: Routing) -> list[str]:
    """The admin-interface SQL that configures ProxySQL from scratch, then loads it to runtime
    (and saves it to the run's datadir)."""
    out = [f"DELETE FROM {t}" for t in ("mysql_servers", "mysql_users", "mysql_query_rules",
                                        "mysql_replication_hostgroups",
                                        "mysql_galera_hostgroups")]
    out += [_set_variable(k, v) for k, v in _variables(r)]
    out += _server_rows(r)
    out.append("INSERT INTO mysql_users (username, password, active, default_hostgroup) "
               f"VALUES ('{r.app.user}', '{r.app.password}', 1, {WRITER_HG})")
    out += _hostgroup_rows(r)
    out.append("INSERT INTO mysql_query_rules (rule_id, active, proxy_port, "
               f"destination_hostgroup, apply) VALUES (1, 1, {r.reader_port}, {READER_HG}, 1)")
    for what in ("VARIABLES", "USERS", "QUERY RULES", "SERVERS"):
        out.append(f"LOAD MYSQL {what} TO RUNTIME")
        out.append(f"SAVE MYSQL {what} TO DISK")
    return out


def move_writer_statements(r: Routing, node: str) -> list[str]:
    """Writes go to ``node`` now: copy the runtime placement (the monitor may have moved
    servers) to memory, take every other writer-hostgroup server OFFLINE_HARD, put ``node`` in
    the writer hostgroup ONLINE, load to runtime."""
    s = r.server(node)
    weight = _writer_weights(r.writers).get(node, 1000)
    return [
        "SAVE MYSQL SERVERS TO MEMORY",
        f"UPDATE mysql_servers SET status='OFFLINE_HARD' WHERE hostgroup_id={WRITER_HG} "
        f"AND NOT (hostname='{s.host}' AND port={s.port})",
        "REPLACE INTO mysql_servers (hostgroup_id, hostname, port, status, weight, comment) "
        f"VALUES ({WRITER_HG}, '{s.host}', {s.port}, 'ONLINE', {weight}, '{node}')",
        "LOAD MYSQL SERVERS TO RUNTIME",
    ]


def states_from_rows(rows: Iterable[Mapping[str, Any]], hostgroup: int,
                     names: Mapping[tuple[str, int], str]) -> dict[str, str]:
    """``stats_mysql_connection_pool`` rows -> {node name: status} for one hostgroup
    (``names``: (host, port) -> node)."""
    out: dict[str, str] = {}
    for row in rows:
        if int(row["hostgroup"]) != hostgroup:
            continue
        name = names.get((str(row["srv_host"]), int(row["srv_port"])))
        if name is not None:
            out[name] = str(row["status"])
    return out


def config_text(datadir: Path, admin: Credentials, stats: Credentials, admin_port: int,
                writer_port: int, reader_port: int, pgsql_admin_port: int,
                pgsql_port: int, listen: str = HOST) -> str:
    """proxysql.cnf (libconfig syntax): where ProxySQL keeps its files and listens. Every
    listener is on ``listen`` (127.0.0.1; in a container of its own, every address of the
    container: its ports are published on the loopback); the rest is configured through the
    admin interface.
    ``pgsql_*`` settings exist from ProxySQL 3.0 on (2.x warns about them and goes on)."""
    for c, what in ((admin, "admin"), (stats, "stats")):
        _safe(c.user, f"{what} user")
        _safe(c.password, f"{what} password")
    if admin.user == stats.user:
        raise ValueError("the admin and stats users must differ")
    ports = [_port(p) for p in (admin_port, writer_port, reader_port, pgsql_admin_port,
                                pgsql_port)]
    if len(set(ports)) != len(ports):
        raise ValueError(f"ProxySQL ports must differ: {ports}")
    if any(c in str(datadir) for c in '"\n\\'):
        raise ValueError(f"unusable datadir {datadir}")
    _safe(listen, "listen address")
    return "\n".join([
        f'datadir="{datadir}"',
        f'errorlog="{datadir / "proxysql.log"}"',
        "",
        "admin_variables=",
        "{",
        f'    admin_credentials="{admin.user}:{admin.password}"',
        f'    stats_credentials="{stats.user}:{stats.password}"',
        f'    mysql_ifaces="{listen}:{admin_port}"',
        f'    pgsql_ifaces="{listen}:{pgsql_admin_port}"',
        "    restapi_enabled=false",
        "    web_enabled=false",
        "}",
        "",
        "mysql_variables=",
        "{",
        f"    threads={THREADS}",
        f'    interfaces="{listen}:{writer_port};{listen}:{reader_port}"',
        "}",
        "",
        "pgsql_variables=",
        "{",
        f'    interfaces="{listen}:{pgsql_port}"',
        "}",
        "",
    ])


def generated_credentials(user: str, n: int = 20) -> Credentials:
    alphabet = string.ascii_letters + string.digits
    return Credentials(user, "".join(secrets.choice(alphabet) for _ in range(n)))
