"""Replica wiring and the lab's users on real servers, one function each for both back-ends
(``runners.replication.wire_replica``, ``runners.users``; issue 24): file and position with a
delayed replica and HAProxy in front, natively (dbdeployer) and on containers (podman).

- the replicas replicate by file and position (``Using_Gtid`` No), the delayed one with its
  ``SQL_Delay``; the application user cannot write on them (read-only);
- HAProxy's health check logs in as ``hacheck`` (127.0.0.1 natively, ``'%'`` in containers):
  without that user the writer would be down and ``router.writer`` would refuse;
- the users are made without the binary log in containers (each node makes its own: nothing
  in the primary's ``gtid_binlog_pos`` before the first write);
- wiring a replica again by file and position while it still has rows to apply (a 2 s
  delay, rows just written): ``wire_replica`` waits until it applied them before it reads the
  primary's coordinates; without the wait the new coordinates would skip the rows still in
  its relay log, and they would never arrive.
"""

from __future__ import annotations

import os
import time

import MySQLdb
import pytest

from runners import replication
from runners.components import find
from runners.mysql import execute_all, query, scalar
from runners.runtime import Run

from .conftest import require

pytestmark = pytest.mark.integration

PLAN = """
experiment "wiring-{backend}" {{
  backend {backend}
  topology replication {{ primary db1  replicas db2, db3  replication file_position
                         delay db3 by 2s }}
  router haproxy {{ writers db1 }}
}}
"""


def _require(backend: str) -> None:
    if backend == "native":
        require("mariadbd", "dbdeployer", "haproxy")
        return
    for name in ("podman", "runc", "mmdebstrap"):
        if not find(name).ok:
            pytest.skip(f"{name} not installed here: the container back-end needs it")
    if os.environ.get("DOCKER_HOST") or os.environ.get("LAB_DOCKER_HOST"):
        pytest.skip("DOCKER_HOST names another engine")
    if os.geteuid() != 0:
        pytest.skip("the private podman service runs rootful here: run as root")


def _eventually(check, timeout: float = 15.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return True
        except Exception:  # noqa: BLE001 - not yet
            pass
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("backend", [
    pytest.param("native", id="wiring-native"),
    pytest.param("containers", id="wiring-containers", marks=pytest.mark.containers)])
def test_file_position_delay_health_check_user_and_rewiring(backend: str) -> None:
    _require(backend)
    from dsl.api import plan_text
    from runners.topology import deploy

    plan = plan_text(PLAN.format(backend=backend))
    run = Run(experiment=f"wiring-{backend}")
    topo = None
    try:
        topo = deploy(plan, plan.cells[0], run)
        db1, db3 = topo.nodes["db1"], topo.nodes["db3"]
        if backend == "containers":  # the users reached no binary log
            assert scalar(db1.addr, topo.admin, "SELECT @@gtid_binlog_pos") == ""
            hosts = {(r["User"], r["Host"]) for r in query(
                db1.addr, topo.admin, "SELECT User, Host FROM mysql.user")}
            assert {("lab_admin", "%"), ("lab_app", "%"), ("lab_repl", "%"),
                    ("hacheck", "%")} <= hosts
        for name, delay in (("db2", 0), ("db3", 2)):
            st = query(topo.nodes[name].addr, topo.admin, "SHOW SLAVE STATUS")[0]
            assert (st["Using_Gtid"], int(st["SQL_Delay"])) == ("No", delay), name
            assert st["Slave_IO_Running"] == "Yes" and st["Slave_SQL_Running"] == "Yes"
        writer = topo.address("router.writer")
        assert _eventually(lambda: scalar(writer, topo.app, "SELECT @@server_id") ==
                           topo.planned["db1"].server_id), "HAProxy's writer is not db1"
        execute_all(db1.addr, topo.app, ["CREATE DATABASE t", "CREATE TABLE t.a (id INT "
                                         "PRIMARY KEY)", "INSERT INTO t.a VALUES (1)"])
        with pytest.raises(Exception) as e:  # noqa: PT011 - MySQLdb's OperationalError
            execute_all(topo.nodes["db2"].addr, topo.app, ["INSERT INTO t.a VALUES (99)"])
        assert e.value.args[0] == 1290  # read-only

        # db3 applies 2 s late: rows just written are still in its relay log when it is
        # wired again by file and position
        execute_all(db1.addr, topo.app, [f"INSERT INTO t.a VALUES ({i})" for i in (2, 3, 4)])
        if backend == "native":  # dbdeployer's replica: its user kept
            source, creds, keep = (replication.LOOPBACK, db1.port), None, True
        else:  # by name on the run's network, as the lab's replication user
            source, creds, keep = ("db1", 3306), topo.repl, False
        replication.wire_replica(db3, db1, source, creds, mode="file_position", delay=2.0,
                                 flavor=plan.engine.flavor, dbdeployer=keep)

        def rows_on_db3() -> int | None:
            """None: db3 has no table t.a (its CREATE was skipped too)."""
            try:
                return int(scalar(db3.addr, topo.admin, "SELECT COUNT(*) FROM t.a"))
            except MySQLdb.Error:
                return None

        assert _eventually(lambda: rows_on_db3() == 4), \
            f"db3 has {rows_on_db3()} of 4 rows (None: no table) after its rewiring"
        execute_all(db1.addr, topo.app, ["INSERT INTO t.a VALUES (5)"])
        assert _eventually(lambda: rows_on_db3() == 5), "db3 did not go on replicating"
    finally:
        if topo is not None:
            topo.teardown()
        run.close()
