"""Topologies on real servers: replication via dbdeployer, Galera, two primaries, HAProxy,
failure to start, and clean teardown."""

from __future__ import annotations

import time

import MySQLdb
import pytest

from runners.errors import ComponentError
from runners.mysql import execute_all, query, scalar
from runners.runtime import Run, alive, list_runs
from runners.topology import Topology

from .conftest import eventually, make_plan, node, replication_nodes, require, router

_wait = eventually


def test_replication_row_reaches_both_replicas_and_gtids_match() -> None:
    require("mariadbd", "dbdeployer")
    plan = make_plan("replication", replication_nodes(2))
    with Run(experiment="it") as run:
        topo = Topology.deploy(plan, plan.cells[0], run)
        try:
            p = topo.nodes["db1"]
            execute_all(p.addr, topo.app, ["CREATE DATABASE t", "CREATE TABLE t.a (id INT "
                                           "PRIMARY KEY, v VARCHAR(10))",
                                           "INSERT INTO t.a VALUES (1, 'hello')"])
            want = scalar(p.addr, topo.admin, "SELECT @@gtid_binlog_pos")
            for r in ("db2", "db3"):
                n = topo.nodes[r]
                assert _wait(lambda n=n: query(n.addr, topo.admin, "SELECT v FROM t.a") ==
                             [{"v": "hello"}])
                assert _wait(lambda n=n: scalar(n.addr, topo.admin,
                                                "SELECT @@gtid_slave_pos") == want)
                # replicas are read-only for the application user
                with pytest.raises(MySQLdb.OperationalError) as e:
                    execute_all(n.addr, topo.app, ["INSERT INTO t.a VALUES (2, 'x')"])
                assert e.value.args[0] == 1290
        finally:
            topo.teardown()
    assert not run.dir.exists()


def test_file_position_and_delayed_replica() -> None:
    require("mariadbd", "dbdeployer")
    nodes = replication_nodes(2)
    nodes[2] = nodes[2].model_copy(update={"delay": 2.0})
    plan = make_plan("replication", nodes, mode="file_position")
    with Run(experiment="it") as run:
        topo = Topology.deploy(plan, plan.cells[0], run)
        try:
            st = query(topo.nodes["db2"].addr, topo.admin, "SHOW SLAVE STATUS")[0]
            assert st["Using_Gtid"] == "No"
            p = topo.nodes["db1"]
            execute_all(p.addr, topo.app, ["CREATE DATABASE t", "CREATE TABLE t.a (id INT "
                                           "PRIMARY KEY)", "INSERT INTO t.a VALUES (1)"])
            t0 = time.monotonic()
            assert _wait(lambda: query(topo.nodes["db2"].addr, topo.admin,
                                       "SELECT id FROM t.a") == [{"id": 1}], 5)
            fast = time.monotonic() - t0
            assert _wait(lambda: query(topo.nodes["db3"].addr, topo.admin,
                                       "SELECT id FROM t.a") == [{"id": 1}], 10)
            slow = time.monotonic() - t0
            assert fast < 1.0
            # MASTER_DELAY=2 counts from the event's timestamp, which has whole seconds:
            # the row shows 1-2 s after the commit, never sooner.
            assert slow >= 0.99
        finally:
            topo.teardown()


def test_galera_write_anywhere_then_survive_a_kill() -> None:
    require("mariadbd", "galera", "rsync")
    nodes = [node(f"g{i}", "galera", i) for i in (1, 2, 3)]
    plan = make_plan("galera", nodes)
    with Run(experiment="it") as run:
        topo = Topology.deploy(plan, plan.cells[0], run)
        try:
            g = topo.nodes
            # the bring-up's faster EVS joins are not in force once the cluster is up
            # (runners.bare.BRINGUP_PROVIDER): Galera's default runs, and the my.cnf of a
            # later start says the same
            for n in g.values():
                opts = str(query(n.addr, topo.admin, "SELECT @@wsrep_provider_options")[0][
                    "@@wsrep_provider_options"])
                assert "evs.join_retrans_period = PT1S" in opts, opts
                assert "PT0.1S" not in n.cnf.read_text()
            execute_all(g["g2"].addr, topo.app, ["CREATE DATABASE t", "CREATE TABLE t.a (id "
                                                 "INT PRIMARY KEY)", "INSERT INTO t.a VALUES (2)"])
            for other in ("g1", "g3"):
                assert _wait(lambda o=other: query(g[o].addr, topo.admin,
                                                   "SELECT id FROM t.a") == [{"id": 2}])
            g["g3"].kill()
            assert not g["g3"].is_running()
            with pytest.raises(MySQLdb.OperationalError):
                query(g["g3"].addr, topo.admin, "SELECT 1", timeout=1)
            assert _wait(lambda: str(query(g["g1"].addr, topo.admin,
                                           "SHOW STATUS LIKE 'wsrep_cluster_size'")[0]["Value"])
                         == "2", 20)
            execute_all(g["g1"].addr, topo.app, ["INSERT INTO t.a VALUES (10)"])
            execute_all(g["g2"].addr, topo.app, ["INSERT INTO t.a VALUES (20)"])
            assert _wait(lambda: [r["id"] for r in query(g["g1"].addr, topo.admin,
                         "SELECT id FROM t.a ORDER BY id")] == [2, 10, 20])
        finally:
            topo.teardown()


@pytest.mark.parametrize("offsets", [True, False])
def test_two_primaries_replicate_to_each_other(offsets: bool) -> None:
    require("mariadbd")
    nodes = [node("m1", "primary_primary", 1), node("m2", "primary_primary", 2)]
    plan = make_plan("primary_primary", nodes, auto_increment_offsets=offsets)
    with Run(experiment="it") as run:
        topo = Topology.deploy(plan, plan.cells[0], run)
        try:
            m1, m2 = topo.nodes["m1"], topo.nodes["m2"]
            execute_all(m1.addr, topo.app, ["CREATE DATABASE t", "CREATE TABLE t.a (id INT "
                                            "AUTO_INCREMENT PRIMARY KEY, who CHAR(2))"])
            assert _wait(lambda: bool(query(m2.addr, topo.admin, "SHOW TABLES FROM t")))
            execute_all(m1.addr, topo.app, ["INSERT INTO t.a (who) VALUES ('m1')"])
            # Without offsets, concurrent inserts collide (both pick id 1): insert on m2 only
            # once m1's row is there. The collision itself is an experiment, not this test.
            assert _wait(lambda: bool(query(m2.addr, topo.admin, "SELECT * FROM t.a")))
            execute_all(m2.addr, topo.app, ["INSERT INTO t.a (who) VALUES ('m2')"])
            for n in (m1, m2):
                assert _wait(lambda n=n: sorted(r["who"] for r in query(
                    n.addr, topo.admin, "SELECT who FROM t.a")) == ["m1", "m2"])
            incr = scalar(m2.addr, topo.admin, "SELECT @@auto_increment_increment")
            assert int(incr) == (2 if offsets else 1)
        finally:
            topo.teardown()


def test_haproxy_routes_to_writer_and_drops_a_killed_reader() -> None:
    require("mariadbd", "dbdeployer", "haproxy")
    plan = make_plan("replication", replication_nodes(2),
                     router_=router(["db1"], ["db2", "db3"], 0.2))
    with Run(experiment="it") as run:
        topo = Topology.deploy(plan, plan.cells[0], run)
        try:
            assert topo.router is not None
            port = scalar(topo.address("router.writer"), topo.app, "SELECT @@port")
            assert int(port) == topo.nodes["db1"].port
            # replicas are read_only: the role-aware check keeps them out of the writer backend
            assert topo.router.up_servers("writer") == ["db1"]
            assert sorted(topo.router.up_servers("reader")) == ["db2", "db3"]
            topo.nodes["db3"].kill()
            assert _wait(lambda: topo.router.server_states("reader")["db3"].startswith("DOWN"),
                         5)
            seen = {int(scalar(topo.address("router.reader"), topo.app, "SELECT @@port"))
                    for _ in range(10)}
            assert seen == {topo.nodes["db2"].port}
        finally:
            topo.teardown()


def test_a_rejected_config_value_gives_the_log_tail_and_leaves_nothing() -> None:
    require("mariadbd")
    nodes = [node("m1", "primary_primary", 1, config={"no_such_server_option": "1"}),
             node("m2", "primary_primary", 2)]
    plan = make_plan("primary_primary", nodes)
    run = Run(experiment="it")
    try:
        with pytest.raises(ComponentError) as e:
            Topology.deploy(plan, plan.cells[0], run)
        text = str(e.value)
        assert "m1" in text
        assert "unknown variable" in text.lower()
        assert "--- last lines of" in text
        assert not any(alive(r.pid, r.start_time) for r in run.records)
    finally:
        run.close()
    assert run.id not in [r.id for r in list_runs()]
