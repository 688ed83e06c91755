"""ProxySQL without the binary: the generated proxysql.cnf, the admin-interface SQL, the
writer move, state parsing and the monitor user's SQL."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from runners.components import find
from runners.haproxy import Backend
from runners.mysql import Credentials
from runners.proxysql import ProxySQL, mode_for, monitor_user_setup, monitor_user_statements
from runners.proxysql_config import (
    BACKUP_WRITER_HG,
    OFFLINE_HG,
    READER_HG,
    STANDBY_HG,
    WRITER_HG,
    Routing,
    Server,
    admin_statements,
    config_text,
    interval_ms,
    move_writer_statements,
    states_from_rows,
)
from runners.runtime import PortLayout

APP = Credentials("lab_app", "AppPw123")
MON = Credentials("lab_monitor", "MonPw456")
SERVERS = (Server("db1", 23001), Server("db2", 23002), Server("db3", 23003))


def routing(mode: str = "replication", writers: tuple[str, ...] = ("db1", "db2", "db3"),
            readers: tuple[str, ...] = ("db2", "db3"),
            current: tuple[str, ...] = ("db1",), ms: int = 500,
            settings: tuple[tuple[str, str], ...] = ()) -> Routing:
    return Routing(mode=mode, servers=SERVERS, writers=writers, readers=readers,  # type: ignore[arg-type]
                   current_writers=current, app=APP, monitor=MON, interval_ms=ms,
                   reader_port=23091, settings=settings)


def fake_run(tmp_path: Path) -> Any:
    tmp_path.mkdir(parents=True, exist_ok=True)
    return SimpleNamespace(dir=tmp_path, id="abcd1234", ports=PortLayout(23000),
                           record=lambda pid, name: None, forget=lambda pid: None)


def proxysql(tmp_path: Path, mode: str = "replication") -> ProxySQL:
    backends = [Backend(s.name, s.port, 23070 + i, 23080 + i)
                for i, s in enumerate(SERVERS, start=1)]
    return ProxySQL(fake_run(tmp_path), backends, ["db1", "db2", "db3"], ["db2", "db3"], 0.5,
                    23090, 23091, APP, MON, mode=mode)  # type: ignore[arg-type]


def server_rows(stmts: list[str]) -> list[tuple[int, int, int]]:
    """(hostgroup, port, weight) of every mysql_servers insert."""
    rx = re.compile(r"INSERT INTO mysql_servers .* VALUES \((\d+), '127\.0\.0\.1', (\d+), "
                    r"(\d+), '\w+'\)")
    return [tuple(int(g) for g in m.groups()) for s in stmts if (m := rx.match(s))]  # type: ignore[misc]


def variables(stmts: list[str]) -> dict[str, str]:
    rx = re.compile(r"UPDATE global_variables SET variable_value='([^']*)' "
                    r"WHERE variable_name='([^']+)'")
    return {m.group(2): m.group(1) for s in stmts if (m := rx.match(s))}


# --- proxysql.cnf ---------------------------------------------------------------------------------

def test_config_listens_on_loopback_only_with_generated_admin(tmp_path: Path) -> None:
    p = proxysql(tmp_path)
    text = p.config_text()
    assert f'datadir="{p.dir}"' in text
    assert f'errorlog="{p.dir / "proxysql.log"}"' in text
    assert f'admin_credentials="{p.admin_creds.user}:{p.admin_creds.password}"' in text
    assert f'stats_credentials="{p.stats_creds.user}:{p.stats_creds.password}"' in text
    assert 'mysql_ifaces="127.0.0.1:23092"' in text  # PortLayout.proxysql_admin
    assert 'interfaces="127.0.0.1:23090;127.0.0.1:23091"' in text
    assert 'pgsql_ifaces="127.0.0.1:23093"' in text
    assert 'interfaces="127.0.0.1:23094"' in text
    for line in text.splitlines():
        if "ifaces" in line or "interfaces" in line:
            hosts = re.findall(r"([\d.]+):\d+", line)
            assert hosts and set(hosts) == {"127.0.0.1"}, line
    assert "admin:admin" not in text and "stats:stats" not in text
    assert "restapi_enabled=false" in text and "web_enabled=false" in text


def test_every_port_stays_in_the_run_block(tmp_path: Path) -> None:
    p = proxysql(tmp_path)
    ports = {int(x) for x in re.findall(r"127\.0\.0\.1:(\d+)", p.config_text())}
    assert len(ports) == 5 and all(23000 <= x < 23100 for x in ports)


def test_admin_credentials_are_generated_per_instance(tmp_path: Path) -> None:
    a, b = proxysql(tmp_path / "a"), proxysql(tmp_path / "b")
    assert a.admin_creds.password != b.admin_creds.password
    assert len(a.admin_creds.password) >= 16


@pytest.mark.parametrize("creds", [Credentials("adm", 'x"y'), Credentials("adm", "a;b"),
                                   Credentials("a b", "pw"), Credentials("adm", "")])
def test_config_refuses_unsafe_credentials(tmp_path: Path, creds: Credentials) -> None:
    with pytest.raises(ValueError):
        config_text(tmp_path, creds, Credentials("st", "pw"), 1, 2, 3, 4, 5)


def test_config_refuses_duplicate_ports_and_odd_datadir(tmp_path: Path) -> None:
    admin, stats = Credentials("adm", "pw"), Credentials("st", "pw")
    with pytest.raises(ValueError, match="differ"):
        config_text(tmp_path, admin, stats, 1, 2, 2, 4, 5)
    with pytest.raises(ValueError, match="datadir"):
        config_text(tmp_path / 'we"ird', admin, stats, 1, 2, 3, 4, 5)
    with pytest.raises(ValueError):
        config_text(tmp_path, admin, stats, 0, 2, 3, 4, 5)


# --- admin statements ----------------------------------------------------------------------------

def test_replication_statements() -> None:
    stmts = admin_statements(routing())
    assert stmts[:5] == [f"DELETE FROM {t}" for t in (
        "mysql_servers", "mysql_users", "mysql_query_rules", "mysql_replication_hostgroups",
        "mysql_galera_hostgroups")]
    v = variables(stmts)
    assert v["mysql-monitor_username"] == "lab_monitor"
    assert v["mysql-monitor_password"] == "MonPw456"
    for name in ("connect_interval", "ping_interval", "read_only_interval", "read_only_timeout"):
        assert v[f"mysql-monitor_{name}"] == "500"
    assert v["mysql-monitor_writer_is_also_reader"] == "false"
    assert "mysql-monitor_galera_healthcheck_interval" not in v
    # the writable candidate in the writer hostgroup, the read-only candidates in the monitor's
    # standby hostgroup (read_only moves them), the declared readers in the reader one, which
    # no read_only check touches
    assert server_rows(stmts) == [(WRITER_HG, 23001, 1000), (STANDBY_HG, 23002, 999),
                                  (STANDBY_HG, 23003, 998), (READER_HG, 23002, 1),
                                  (READER_HG, 23003, 1)]
    assert ("INSERT INTO mysql_users (username, password, active, default_hostgroup) "
            "VALUES ('lab_app', 'AppPw123', 1, 10)") in stmts
    assert ("INSERT INTO mysql_replication_hostgroups (writer_hostgroup, reader_hostgroup, "
            "comment) VALUES (10, 21, 'lab')") in stmts
    assert not any(s.startswith("INSERT INTO mysql_galera_hostgroups") for s in stmts)
    assert ("INSERT INTO mysql_query_rules (rule_id, active, proxy_port, destination_hostgroup, "
            "apply) VALUES (1, 1, 23091, 20, 1)") in stmts
    tail = stmts[-8:]
    for what in ("VARIABLES", "USERS", "QUERY RULES", "SERVERS"):
        assert f"LOAD MYSQL {what} TO RUNTIME" in tail
        assert f"SAVE MYSQL {what} TO DISK" in tail
    assert stmts[-2] == "LOAD MYSQL SERVERS TO RUNTIME"  # servers last: everything is in place


def test_a_declared_reader_that_is_the_writer_stays_a_reader() -> None:
    # the issue-22 run: replication 1+1, db2 promoted, the reader endpoint lost db2 because
    # the read_only monitor moved it out of the reader hostgroup. Now the reader hostgroup is
    # not the monitor's: db1, writable and a declared reader, is in both 10 and 20.
    stmts = admin_statements(routing(readers=("db1", "db2")))
    rows = server_rows(stmts)
    assert (WRITER_HG, 23001, 1000) in rows and (READER_HG, 23001, 1) in rows
    assert (STANDBY_HG, 23001, 1000) not in rows  # writable now: the writer hostgroup's
    assert f"VALUES ({WRITER_HG}, {STANDBY_HG}, 'lab')" in " ".join(stmts)


def test_the_experiments_settings_come_after_the_labs_and_win() -> None:
    stmts = admin_statements(routing(settings=(("mysql-monitor_read_only_interval", "2000"),
                                               ("mysql-shun_on_failures", "3"))))
    names = [s.split("WHERE variable_name=")[1] for s in stmts if "WHERE variable_name=" in s]
    assert names.count("'mysql-monitor_read_only_interval'") == 2
    assert names[-2:] == ["'mysql-monitor_read_only_interval'", "'mysql-shun_on_failures'"]
    assert variables(stmts)["mysql-monitor_read_only_interval"] == "2000"


@pytest.mark.parametrize("setting", [("mysql-interfaces", "127.0.0.1:1"),
                                     ("admin-admin_credentials", "a:b"),
                                     ("mysql-monitor_username", "root"),
                                     ("mysql-monitor_read_only_interval", "1;DROP"),
                                     ("mysql-monitor_read_only_interval", "$interval")])
def test_unsafe_or_reserved_settings_are_refused(setting: tuple[str, str]) -> None:
    with pytest.raises(ValueError):
        routing(settings=(setting,))


def test_no_writable_candidate_leaves_the_writer_hostgroup_empty() -> None:
    rows = server_rows(admin_statements(routing(current=())))
    assert {hg for hg, _, _ in rows} == {STANDBY_HG, READER_HG}  # the monitor decides


def test_galera_statements() -> None:
    stmts = admin_statements(routing("galera", writers=("db2",), readers=("db1", "db3"),
                                     current=("db1", "db2", "db3")))
    v = variables(stmts)
    assert v["mysql-monitor_galera_healthcheck_interval"] == "500"
    assert v["mysql-monitor_galera_healthcheck_timeout"] == "500"
    assert "mysql-monitor_writer_is_also_reader" not in v
    # every node in the writer hostgroup; ProxySQL moves them; the declared writer weighs most
    assert server_rows(stmts) == [(WRITER_HG, 23002, 1000), (WRITER_HG, 23001, 1),
                                  (WRITER_HG, 23003, 1)]
    galera = [s for s in stmts if s.startswith("INSERT INTO mysql_galera_hostgroups")]
    assert galera == [
        "INSERT INTO mysql_galera_hostgroups (writer_hostgroup, backup_writer_hostgroup, "
        "reader_hostgroup, offline_hostgroup, active, max_writers, writer_is_also_reader, "
        f"max_transactions_behind, comment) VALUES ({WRITER_HG}, {BACKUP_WRITER_HG}, "
        f"{READER_HG}, {OFFLINE_HG}, 1, 1, 2, 100, 'lab')"]
    assert not any(s.startswith("INSERT INTO mysql_replication_hostgroups") for s in stmts)


def test_galera_writer_also_reads_when_declared_a_reader() -> None:
    stmts = admin_statements(routing("galera", writers=("db1",), readers=("db1", "db2"),
                                     current=("db1", "db2", "db3")))
    assert any(", 1, 1, 1, 100, 'lab')" in s for s in stmts)


def test_static_mode_weighs_the_first_writer_ten_million_to_one() -> None:
    """Two primaries: both in the writer hostgroup (ProxySQL shuns a dead one and the other
    takes the writes), the first weighing 10,000,000 and the other 1."""
    stmts = admin_statements(routing("static", writers=("db1", "db2"), readers=("db1", "db2"),
                                     current=("db1", "db2")))
    writer_rows = [r for r in server_rows(stmts) if r[0] == WRITER_HG]
    assert writer_rows == [(WRITER_HG, 23001, 10_000_000), (WRITER_HG, 23002, 1)]
    assert not any("_hostgroups (" in s and s.startswith("INSERT") for s in stmts)


def test_statements_are_single_statements() -> None:
    for mode in ("replication", "galera", "static"):
        for s in admin_statements(routing(mode)):
            assert ";" not in s and "\n" not in s


def test_intervals_respect_proxysql_minimum() -> None:
    assert interval_ms(0.01) == 100
    assert interval_ms(0.5) == 500
    assert interval_ms(2) == 2000


@pytest.mark.parametrize("kw", [
    {"writers": ("db9",)},
    {"current": ("db9",)},
])
def test_routing_refuses_unknown_nodes(kw: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="not a backend"):
        routing(**kw)


def test_routing_refuses_unsafe_or_shared_users() -> None:
    with pytest.raises(ValueError):
        Routing("replication", SERVERS, ("db1",), (), ("db1",), Credentials("x'y", "pw"), MON,
                500, 1)
    with pytest.raises(ValueError, match="differ"):
        Routing("replication", SERVERS, ("db1",), (), ("db1",), MON, MON, 500, 1)
    with pytest.raises(ValueError, match="mode"):
        routing("roundrobin")


# --- moving the writer, reading states --------------------------------------------------------

def test_move_writer_statements() -> None:
    stmts = move_writer_statements(routing(), "db2")
    assert stmts[0] == "SAVE MYSQL SERVERS TO MEMORY"
    assert stmts[1] == ("UPDATE mysql_servers SET status='OFFLINE_HARD' WHERE hostgroup_id=10 "
                        "AND NOT (hostname='127.0.0.1' AND port=23002)")
    assert stmts[2] == ("REPLACE INTO mysql_servers (hostgroup_id, hostname, port, status, "
                        "weight, comment) VALUES (10, '127.0.0.1', 23002, 'ONLINE', 999, 'db2')")
    assert stmts[-1] == "LOAD MYSQL SERVERS TO RUNTIME"


def test_states_from_rows() -> None:
    rows = [
        {"hostgroup": 10, "srv_host": "127.0.0.1", "srv_port": 23001, "status": "SHUNNED"},
        {"hostgroup": "20", "srv_host": "127.0.0.1", "srv_port": "23002", "status": "ONLINE"},
        {"hostgroup": 20, "srv_host": "127.0.0.1", "srv_port": 23003, "status": "OFFLINE_HARD"},
        {"hostgroup": 20, "srv_host": "127.0.0.1", "srv_port": 9999, "status": "ONLINE"},
    ]
    names = {("127.0.0.1", 23001): "db1", ("127.0.0.1", 23002): "db2",
             ("127.0.0.1", 23003): "db3"}
    assert states_from_rows(rows, WRITER_HG, names) == {"db1": "SHUNNED"}
    assert states_from_rows(rows, READER_HG, names) == {"db2": "ONLINE", "db3": "OFFLINE_HARD"}


def test_on_a_container_network_servers_are_nodes_by_name_on_one_port() -> None:
    """Every node listens on 3306 in its own container: ProxySQL reaches them by name, and the
    pool's rows are told apart by host."""
    r = routing("replication", current=("db1",))
    r = Routing(**{**r.__dict__, "servers": tuple(Server(s.name, 3306, s.name)
                                                   for s in r.servers)})
    stmts = admin_statements(r)
    assert any("VALUES (10, 'db1', 3306, 1000, 'db1')" in s for s in stmts)
    moved = move_writer_statements(r, "db2")
    assert "AND NOT (hostname='db2' AND port=3306)" in moved[1]
    rows = [{"hostgroup": 10, "srv_host": "db2", "srv_port": 3306, "status": "ONLINE"}]
    assert states_from_rows(rows, WRITER_HG, {("db1", 3306): "db1", ("db2", 3306): "db2"}) == \
        {"db2": "ONLINE"}
    with pytest.raises(ValueError):
        Routing(**{**r.__dict__, "servers": (Server("db1", 3306, "db1'; DROP"),)})


def test_server_states_needs_a_known_backend(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="writer"):
        proxysql(tmp_path).server_states("primary")


def test_routing_for_uses_backends(tmp_path: Path) -> None:
    r = proxysql(tmp_path, "galera").routing_for(["db1"])
    assert r.mode == "galera" and r.servers == SERVERS and r.reader_port == 23091
    assert r.current_writers == ("db1",) and r.interval_ms == 500


def test_mode_for_topologies() -> None:
    assert mode_for("replication") == "replication"
    assert mode_for("single") == "replication"
    assert mode_for("galera") == "galera"
    assert mode_for("primary_primary") == "static"


def test_start_without_binary_says_how_to_get_it(tmp_path: Path) -> None:
    if find("proxysql").ok:
        pytest.skip("proxysql is installed here")
    from runners.components import MissingComponent

    with pytest.raises(MissingComponent, match="proxysql is not installed"):
        proxysql(tmp_path).start(lambda n: True, lambda n: True)


# --- the monitor user on the nodes -------------------------------------------------------------

def test_monitor_user_statements() -> None:
    stmts = monitor_user_statements(MON)
    assert stmts == [
        "CREATE USER IF NOT EXISTS 'lab_monitor'@'127.0.0.1' IDENTIFIED BY 'MonPw456'",
        "GRANT REPLICATION CLIENT, SLAVE MONITOR ON *.* TO 'lab_monitor'@'127.0.0.1'",
        "CREATE USER IF NOT EXISTS 'lab_monitor'@'localhost' IDENTIFIED BY 'MonPw456'",
        "GRANT REPLICATION CLIENT, SLAVE MONITOR ON *.* TO 'lab_monitor'@'localhost'",
    ]
    mysql = monitor_user_statements(MON, flavor="mysql")
    assert all("SLAVE MONITOR" not in s for s in mysql)
    assert "GRANT REPLICATION CLIENT ON *.* TO 'lab_monitor'@'127.0.0.1'" in mysql


def test_monitor_user_refuses_unsafe_password() -> None:
    with pytest.raises(ValueError):
        monitor_user_statements(Credentials("lab_monitor", "x' OR '1"))


def test_monitor_user_setup_stays_out_of_the_binlog() -> None:
    stmts = monitor_user_setup(MON, "mariadb")
    assert stmts[0] == "SET sql_log_bin=0"
    assert stmts[1:] == monitor_user_statements(MON, "mariadb")
