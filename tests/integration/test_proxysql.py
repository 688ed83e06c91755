"""ProxySQL for real (issue 22): every path the lab has, against the real binary, in front of
real servers. Where no ``proxysql`` is found (PATH, LAB_BIN_PATH; ``make test`` adds
../shared/bin when it holds one) these tests skip with one line.

What each test asserts is ProxySQL's own behaviour as configured by ``runners.proxysql``: the
read_only monitor moving the writer on asynchronous replication, the Galera health check moving
it to the backup writer, the lab's static writer on two primaries, the reader hostgroup kept
to the declared readers, the monitor user, and the admin interface on 127.0.0.1 only with the
run's own credentials."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import MySQLdb
import pytest

from dsl.plan import PlannedRouter
from runners.mysql import execute_all, scalar
from runners.proxysql import ProxySQL
from runners.proxysql_config import BACKUP_WRITER_HG, OFFLINE_HG, STANDBY_HG, WRITER_HG
from runners.runtime import Run
from runners.topology import Topology

from .conftest import (
    eventually,
    make_plan,
    node,
    port_via,
    replication_nodes,
    require,
    router,
)


def _wait(check: Callable[[], bool], timeout: float = 15.0) -> bool:
    return eventually(check, timeout)


def proxysql_router(writers: list[str], readers: list[str], interval: float = 0.2,
                    settings: dict[str, str] | None = None) -> PlannedRouter:
    return router(writers, readers, interval, "proxysql", settings)


def _proxysql(topo: Topology) -> ProxySQL:
    assert isinstance(topo.router, ProxySQL)
    return topo.router


def _hostgroups(px: ProxySQL) -> dict[str, set[int]]:
    """{node: the hostgroups it is ONLINE in at runtime}."""
    out: dict[str, set[int]] = {}
    for row in px.admin_query("SELECT hostgroup_id, hostname, port, status "
                              "FROM runtime_mysql_servers"):
        if row["status"] == "ONLINE":
            name = px.names[(str(row["hostname"]), int(row["port"]))]
            out.setdefault(name, set()).add(int(row["hostgroup_id"]))
    return out


def _listening(pid: int) -> set[str]:
    """host:port of every TCP socket the process listens on (from /proc/net/tcp[6])."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = fd.readlink().as_posix()
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    out = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            f = line.split()
            if f[3] == "0A" and f[9] in inodes:  # LISTEN
                host, port = f[1].split(":")
                ip = ".".join(str(int(host[i:i + 2], 16)) for i in (6, 4, 2, 0)) \
                    if len(host) == 8 else host
                out.add(f"{ip}:{int(port, 16)}")
    return out


def test_admin_interface_is_on_loopback_only_with_the_runs_own_credentials() -> None:
    require("mariadbd", "dbdeployer", "proxysql")
    plan = make_plan("replication", replication_nodes(1),
                     router_=proxysql_router(["db1"], ["db2"]))
    with Run(experiment="it") as run:
        topo = Topology.deploy(plan, plan.cells[0], run)
        try:
            px = _proxysql(topo)
            assert px.proc is not None
            listening = _listening(px.proc.pid)
            assert listening and all(a.startswith("127.0.0.1:") for a in listening), listening
            assert f"127.0.0.1:{px.admin_port}" in listening
            assert f"127.0.0.1:{run.ports.router_writer}" in listening
            # ProxySQL's default admin:admin is not accepted; the run's generated pair is
            with pytest.raises(MySQLdb.OperationalError):
                MySQLdb.connect(host="127.0.0.1", port=px.admin_port, user="admin",
                                password="admin", connect_timeout=2)
            assert px.admin_query("SELECT 1 AS one") == [{"one": "1"}]  # the admin's SQLite
            assert px.admin_creds.user == "lab_psql_admin" and len(px.admin_creds.password) >= 16
            # the monitor user exists on the nodes and ProxySQL's monitor logs in with it
            assert _wait(lambda: bool(px.admin_query(
                "SELECT 1 FROM monitor.mysql_server_read_only_log WHERE error IS NULL "
                f"AND port={topo.nodes['db1'].port} LIMIT 1")))
        finally:
            topo.teardown()
    assert px.proc is not None and px.proc.poll() is not None  # stopped with the run


def test_replication_read_only_monitor_moves_the_writer_without_the_lab() -> None:
    """Nobody calls move_writer: db1 made read-only and db2 writable by hand, ProxySQL's
    read_only check moves the writer hostgroup to db2 (and db1 to its standby hostgroup)."""
    require("mariadbd", "dbdeployer", "proxysql")
    plan = make_plan("replication", replication_nodes(2),
                     router_=proxysql_router(["db1"], ["db2", "db3"], interval=0.2))
    with Run(experiment="it") as run:
        topo = Topology.deploy(plan, plan.cells[0], run)
        try:
            px = _proxysql(topo)
            assert _hostgroups(px)["db1"] == {WRITER_HG}
            assert STANDBY_HG in _hostgroups(px)["db2"]
            execute_all(topo.nodes["db1"].addr, topo.admin, ["SET GLOBAL read_only=ON"])
            execute_all(topo.nodes["db2"].addr, topo.admin, ["STOP SLAVE", "RESET SLAVE ALL",
                                                             "SET GLOBAL read_only=OFF"])
            writer = topo.address("router.writer")
            db2 = topo.nodes["db2"].port
            assert _wait(lambda: port_via(writer, topo.app) == db2)
            groups = _hostgroups(px)
            assert WRITER_HG in groups["db2"] and WRITER_HG not in groups["db1"]
            assert STANDBY_HG in groups["db1"]
            # the reader endpoint still spreads over the declared readers, db2 among them
            reader = topo.address("router.reader")
            seen = {port_via(reader, topo.app) for _ in range(20)}
            assert seen == {db2, topo.nodes["db3"].port}
        finally:
            topo.teardown()


def test_replication_one_plus_one_promote_keeps_the_reader_endpoint() -> None:
    """The issue's hand run: 1+1, kill db1, promote db2: the reader endpoint failed every query
    (db2 had left the reader hostgroup). Now db2 serves both endpoints."""
    require("mariadbd", "dbdeployer", "proxysql")
    plan = make_plan("replication", replication_nodes(1),
                     router_=proxysql_router(["db1"], ["db2"]))
    with Run(experiment="it") as run:
        topo = Topology.deploy(plan, plan.cells[0], run)
        try:
            px = _proxysql(topo)
            db2 = topo.nodes["db2"]
            topo.nodes["db1"].kill()
            execute_all(db2.addr, topo.admin, ["STOP SLAVE", "RESET SLAVE ALL",
                                               "SET GLOBAL read_only=OFF"])
            px.move_writer("db2")
            writer, reader = topo.address("router.writer"), topo.address("router.reader")
            assert _wait(lambda: port_via(writer, topo.app) == db2.port)
            time.sleep(1.0)  # five monitor rounds: nothing takes db2 out of the readers
            assert all(port_via(reader, topo.app) == db2.port for _ in range(10))
            assert "db2" in px.up_servers("reader")
        finally:
            topo.teardown()


@pytest.mark.parametrize("fault", ["kill", "pause"])
def test_galera_monitor_moves_a_dead_writer_to_the_backup_writer(fault: str) -> None:
    """max_writers 1: g1 (heaviest) writes, g2 is the backup writer. g1 killed or frozen:
    the Galera health check takes g1 out of the writer hostgroup and g2 takes the writes."""
    require("mariadbd", "galera", "rsync", "proxysql")
    nodes = [node(f"g{i}", "galera", i) for i in (1, 2, 3)]
    plan = make_plan("galera", nodes, router_=proxysql_router(
        ["g1", "g2"], [], settings={"mysql-monitor_galera_healthcheck_max_timeout_count": "2"}))
    with Run(experiment="it") as run:
        topo = Topology.deploy(plan, plan.cells[0], run)
        try:
            px = _proxysql(topo)
            groups = _hostgroups(px)
            assert groups["g1"] >= {WRITER_HG} and BACKUP_WRITER_HG in groups["g2"]
            assert WRITER_HG not in groups["g2"] and WRITER_HG not in groups.get("g3", set())
            assert px.admin_query("SELECT variable_value AS v FROM runtime_global_variables "
                                  "WHERE variable_name="
                                  "'mysql-monitor_galera_healthcheck_max_timeout_count'"
                                  ) == [{"v": "2"}]
            g1 = topo.nodes["g1"]
            if fault == "kill":
                g1.kill()
            else:
                g1.pause()
            try:
                writer = topo.address("router.writer")
                g2 = topo.nodes["g2"].port
                assert _wait(lambda: port_via(writer, topo.app) == g2, 30)
                assert WRITER_HG in _hostgroups(px)["g2"]
                execute_all(writer, topo.app, ["CREATE DATABASE IF NOT EXISTS t",
                                               "CREATE TABLE t.a (id INT PRIMARY KEY)",
                                               "INSERT INTO t.a VALUES (1)"])
                if fault == "kill":  # a dead node is in the offline hostgroup
                    assert _wait(lambda: any(
                        int(r["hostgroup_id"]) == OFFLINE_HG and int(r["port"]) == g1.port
                        for r in px.admin_query("SELECT hostgroup_id, port "
                                                "FROM runtime_mysql_servers")), 10)
            finally:
                if fault == "pause":
                    g1.resume()
        finally:
            topo.teardown()


def test_two_primaries_static_writer_and_a_move() -> None:
    require("mariadbd", "proxysql")
    nodes = [node("p1", "primary_primary", 1), node("p2", "primary_primary", 2)]
    plan = make_plan("primary_primary", nodes, router_=proxysql_router(["p1", "p2"], ["p2"]))
    with Run(experiment="it") as run:
        topo = Topology.deploy(plan, plan.cells[0], run)
        try:
            px = _proxysql(topo)
            writer = topo.address("router.writer")
            p1, p2 = topo.nodes["p1"].port, topo.nodes["p2"].port
            assert {port_via(writer, topo.app) for _ in range(10)} == {p1}  # one writer
            execute_all(writer, topo.app, ["CREATE DATABASE IF NOT EXISTS t",
                                           "CREATE TABLE t.a (id INT PRIMARY KEY)",
                                           "INSERT INTO t.a VALUES (1)"])
            assert _wait(lambda: scalar(topo.nodes["p2"].addr, topo.admin,
                                        "SELECT COUNT(*) FROM t.a") == 1)
            topo.nodes["p1"].kill()
            assert px.move_writer("p2") < 2
            assert _wait(lambda: port_via(writer, topo.app) == p2)
            execute_all(writer, topo.app, ["INSERT INTO t.a VALUES (2)"])
        finally:
            topo.teardown()


@pytest.mark.parametrize(("name", "value", "said"), [
    ("mysql-monitor_ping_intervall", "500", "ProxySQL has no variable mysql-monitor_ping_interv"),
    ("mysql-monitor_ping_interval", "soon", "ProxySQL kept mysql-monitor_ping_interval = "),
])
def test_a_proxysql_variable_it_did_not_take_stops_the_deploy(name: str, value: str,
                                                              said: str) -> None:
    """A file's `set` read back from ProxySQL's runtime: a misspelt name (the UPDATE changed
    no row) or a value ProxySQL refused (it keeps the one it had) stops the run with the
    reason, never runs it on ProxySQL's default in silence."""
    from runners.errors import ComponentError

    require("mariadbd", "dbdeployer", "proxysql")
    plan = make_plan("replication", replication_nodes(1),
                     router_=proxysql_router(["db1"], ["db2"], settings={name: value}))
    with Run(experiment="it") as run, pytest.raises(ComponentError, match=said):
        Topology.deploy(plan, plan.cells[0], run)
