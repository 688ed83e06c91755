"""ProxySQL and MongoDB on real binaries. Neither ships from any registry reachable on the lab's
own machines, so these tests skip there with a one-line reason (``require``); they run where
``proxysql`` or ``mongod`` is on PATH or in LAB_BIN_PATH.

They bring topologies up through ``runners.topology.Topology.deploy`` (``router proxysql``,
``topology mongodb_replset``) and the standalone conversion through
``fault.mongo.convert_standalone``."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import MySQLdb
import pytest
from pymongo import MongoClient
from pymongo.errors import PyMongoError
from pymongo.write_concern import WriteConcern

from dsl.models import Engine
from dsl.plan import Cell, Plan, PlannedRouter
from runners.mysql import execute_all, scalar
from runners.runtime import Run
from runners.topology import Topology

from .conftest import (
    _session_dir,
    eventually,
    make_plan,
    node,
    port_via,
    replication_nodes,
    require,
    router,
)


def _wait(check: Callable[[], bool], timeout: float = 10.0) -> bool:
    return eventually(check, timeout, (MySQLdb.Error, PyMongoError))


@pytest.fixture(scope="module", autouse=True)
def no_proxysql_or_mongod_left() -> Iterator[None]:
    yield
    out = subprocess.run(["ps", "-eo", "pid=,stat=,args="], capture_output=True, text=True)
    left = [ln.strip() for ln in out.stdout.splitlines()
            if _session_dir in ln and ("proxysql" in ln or "mongod" in ln)
            and not ln.split(None, 2)[1].startswith("Z")]
    assert not left, "proxysql/mongod left running:\n" + "\n".join(left)


def proxysql_router(writers: list[str], readers: list[str],
                    interval: float = 0.2) -> PlannedRouter:
    return router(writers, readers, interval, "proxysql")


def mongo_plan(members: tuple[str, ...] = ("m1", "m2", "m3")) -> Plan:
    nodes = [node(m, "member", i,
                  config={"storage.wiredTiger.engineConfig.cacheSizeGB": "0.25"})
             for i, m in enumerate(members, start=1)]
    cell = Cell(index=1, label="base", nodes=nodes, workloads=[])
    return Plan(name="it-mongo", duration=10, topology="mongodb_replset",
                engine=Engine(flavor="mongodb"), cells=[cell])


def mongo_client(port: int) -> MongoClient[dict[str, Any]]:
    return MongoClient("127.0.0.1", port, directConnection=True, serverSelectionTimeoutMS=2000)


# --- ProxySQL ------------------------------------------------------------------------------------

def test_proxysql_routes_writes_to_the_primary_and_drops_a_killed_reader() -> None:
    require("mariadbd", "dbdeployer", "proxysql")
    plan = make_plan("replication", replication_nodes(2),
                     router_=proxysql_router(["db1"], ["db2", "db3"]))
    with Run(experiment="it") as run:
        topo = Topology.deploy(plan, plan.cells[0], run)
        try:
            assert topo.router is not None and type(topo.router).__name__ == "ProxySQL"
            writer = topo.address("router.writer")
            assert int(scalar(writer, topo.app, "SELECT @@port")) == topo.nodes["db1"].port
            assert topo.router.up_servers("writer") == ["db1"]
            assert sorted(topo.router.up_servers("reader")) == ["db2", "db3"]
            execute_all(writer, topo.app, ["CREATE DATABASE IF NOT EXISTS t",
                                           "CREATE TABLE t.a (id INT PRIMARY KEY)",
                                           "INSERT INTO t.a VALUES (1)"])
            reader = topo.address("router.reader")
            assert _wait(lambda: scalar(reader, topo.app, "SELECT COUNT(*) FROM t.a") == 1)
            topo.nodes["db3"].kill()
            assert _wait(lambda: topo.router.server_states("reader").get("db3") != "ONLINE", 10)
            seen = {port_via(reader, topo.app) for _ in range(10)}
            seen.discard(None)
            assert seen == {topo.nodes["db2"].port}
        finally:
            topo.teardown()


def test_proxysql_moves_the_writer_on_promote() -> None:
    require("mariadbd", "dbdeployer", "proxysql")
    plan = make_plan("replication", replication_nodes(2),
                     router_=proxysql_router(["db1"], ["db2", "db3"]))
    with Run(experiment="it") as run:
        topo = Topology.deploy(plan, plan.cells[0], run)
        try:
            assert topo.router is not None
            db2 = topo.nodes["db2"]
            topo.nodes["db1"].kill()
            execute_all(db2.addr, topo.admin, ["STOP SLAVE", "RESET SLAVE ALL",
                                               "SET GLOBAL read_only=OFF"])
            seconds = topo.router.move_writer("db2")
            assert seconds < 2
            writer = topo.address("router.writer")
            assert _wait(lambda: int(scalar(writer, topo.app, "SELECT @@port")) == db2.port, 10)
            assert "db2" in topo.router.up_servers("writer")
        finally:
            topo.teardown()


def test_proxysql_galera_routes_writes_that_reach_every_node() -> None:
    require("mariadbd", "galera", "rsync", "proxysql")
    nodes = [node(f"g{i}", "galera", i) for i in (1, 2, 3)]
    plan = make_plan("galera", nodes, router_=proxysql_router(["g1"], ["g2", "g3"]))
    with Run(experiment="it") as run:
        topo = Topology.deploy(plan, plan.cells[0], run)
        try:
            assert topo.router is not None
            writer = topo.address("router.writer")
            assert int(scalar(writer, topo.app, "SELECT @@port")) == topo.nodes["g1"].port
            execute_all(writer, topo.app, ["CREATE DATABASE IF NOT EXISTS t",
                                           "CREATE TABLE t.a (id INT PRIMARY KEY)",
                                           "INSERT INTO t.a VALUES (1)"])
            for name in ("g2", "g3"):
                n = topo.nodes[name]
                assert _wait(lambda n=n: scalar(n.addr, topo.admin,
                                                "SELECT COUNT(*) FROM t.a") == 1)
        finally:
            topo.teardown()


# --- MongoDB -------------------------------------------------------------------------------------

def test_mongo_replica_set_elects_the_preferred_primary_and_replicates() -> None:
    require("mongod")
    plan = mongo_plan()
    with Run(experiment="it") as run:
        topo = Topology.deploy(plan, plan.cells[0], run)
        try:
            m1 = topo.nodes["m1"]
            assert _wait(lambda: bool(m1.hello().get("isWritablePrimary")), 30)  # type: ignore[attr-defined]
            with mongo_client(m1.port) as c:
                coll = c["app"].get_collection("items", write_concern=WriteConcern("majority"))
                coll.insert_many([{"_id": i} for i in range(100)])
            for name in ("m2", "m3"):
                with mongo_client(topo.nodes[name].port) as c:
                    assert _wait(lambda c=c: c["app"]["items"].count_documents({}) == 100)
        finally:
            topo.teardown()
    assert not run.dir.exists()


def test_mongo_kill_stays_dead() -> None:
    require("mongod")
    plan = mongo_plan()
    with Run(experiment="it") as run:
        topo = Topology.deploy(plan, plan.cells[0], run)
        try:
            m2 = topo.nodes["m2"]
            m2.kill()
            time.sleep(1.0)
            assert not m2.is_running()
            with pytest.raises(PyMongoError):
                m2.ping()  # type: ignore[attr-defined]
        finally:
            topo.teardown()


def test_convert_replica_set_to_standalone() -> None:
    require("mongod")
    from fault.context import Context
    from fault.mongo import DOWN_WINDOW, convert_standalone
    from runners.ops import Op

    plan = mongo_plan()
    with Run(experiment="it") as run:
        topo = Topology.deploy(plan, plan.cells[0], run)
        try:
            m1 = topo.nodes["m1"]
            assert _wait(lambda: bool(m1.hello().get("isWritablePrimary")), 30)  # type: ignore[attr-defined]
            with mongo_client(m1.port) as c:
                coll = c["app"].get_collection("items", write_concern=WriteConcern("majority"))
                coll.insert_many([{"_id": i} for i in range(500)])
            history: list[Op] = []
            ctx = Context(topo, lambda op: history.append(op) or op)
            out = convert_standalone(topo, "m1", ctx.fault)
            assert out["removed_members"] == ["m2", "m3"]
            assert out["warning_after_first_restart"] is True
            assert out["warning_after_final_restart"] is False
            assert out["system_replset_docs_removed"] == 1
            assert out["data_intact"] is True
            assert out["counts_after"]["app.items"] == 500
            # the downtime is in the history: two restart windows on m1, each ok
            assert [(o.type, o.f, o.node) for o in history] == [
                ("invoke", DOWN_WINDOW, "m1"), ("ok", DOWN_WINDOW, "m1")] * 2
            assert out["restart_seconds"] > 0
            for phase in ("remove_members", "stop_removed", "restart_standalone",
                          "clean_system_replset", "final_restart", "verify"):
                assert phase in out["phases"]
            assert not topo.nodes["m2"].is_running() and not topo.nodes["m3"].is_running()
            hello = m1.hello()  # type: ignore[attr-defined]
            assert "setName" not in hello
            with mongo_client(m1.port) as c:
                assert c["local"]["system.replset"].count_documents({}) == 0
                c["app"]["items"].insert_one({"_id": "after"})  # a standalone takes writes
        finally:
            topo.teardown()
