"""Issue 24, item 8 on real servers: a ``wait until`` that times out says how far it got."""

from __future__ import annotations

import re

import pytest

from dsl.models import NodeAction, NodeRef, ReplicationControl, WaitUntil
from fault.nemesis import ActionFailed, Nemesis
from lab.history import Op
from runners.mysql import execute_all
from runners.runtime import Run
from runners.topology import Topology

from .conftest import make_plan, replication_nodes, require


def test_a_wait_on_a_stopped_replica_says_how_far_behind_it_was() -> None:
    """db2's replication stopped, 22 transactions written on db1: ``wait until db2 caught_up
    timeout 2s`` fails saying db2 was 22 transactions behind, not catching up, and why (its
    threads); with db2's server stopped too, that it did not answer, and why."""
    require("mariadbd", "dbdeployer")
    plan = make_plan("replication", replication_nodes(1))
    ops: list[Op] = []
    with Run(experiment="it") as run:
        topo = Topology.deploy(plan, plan.cells[0], run)
        try:
            nem = Nemesis(topo, lambda op: ops.append(op) or op)  # type: ignore[func-returns-value]
            nem.apply(WaitUntil(node=NodeRef(name="db2"), condition="caught_up", timeout=10))
            nem.apply(ReplicationControl(verb="stop", node=NodeRef(name="db2"), threads="both"))
            execute_all(topo.nodes["db1"].addr, topo.admin,
                        ["CREATE DATABASE behind", "CREATE TABLE behind.t (id INT PRIMARY KEY)"]
                        + [f"INSERT INTO behind.t VALUES ({i})" for i in range(20)])
            with pytest.raises(ActionFailed) as got:
                nem.apply(WaitUntil(node=NodeRef(name="db2"), condition="caught_up",
                                    timeout=2))
            message = str(got.value)
            assert message.startswith("wait until db2 caught_up: not reached within 2s: "
                                      "db2 was 22 transactions behind after 2 s, not catching "
                                      "up (22 behind "), message
            assert message.endswith("(db2: its IO thread No, its SQL thread No)"), message
            assert ops[-1].type == "fail" and ops[-1].error_msg == message

            nem.apply(NodeAction(verb="stop", node=NodeRef(name="db2")))
            with pytest.raises(ActionFailed) as got:
                nem.apply(WaitUntil(node=NodeRef(name="db2"), condition="caught_up",
                                    timeout=1))
            assert re.fullmatch(r"wait until db2 caught_up: not reached within 1s: db2 after "
                                r"1 s: it did not answer: .+", str(got.value)), str(got.value)
        finally:
            topo.teardown()
