"""MongoDB actions: ``convert NODE to standalone`` (the replica set -> standalone procedure,
docs/topologies.md, "Converting a replica set to a standalone server") and the replica set's
``wait until`` conditions.

The conversion writes the node's downtime into the history like every other fault: each of
its two restarts (without ``--replSet``, then again after cleaning ``local.system.replset``)
is a ``standalone_restart`` fault window on the node, inside the ``convert_standalone`` one.
What the clients saw in those windows is the workloads' to measure. The MongoDB commands are
``runners.mongo``'s. Nothing to heal: the removed members stay stopped with their data, and
they are no longer members of any replica set, so healing must not restart them as members.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from pymongo.errors import PyMongoError

from dsl.models import ConvertStandalone
from fault.context import ActionFailed, Context, Detail, Handler, Needs
from runners.errors import ComponentError
from runners.mongo import (
    MongoNode,
    clean_system_replset,
    collection_counts,
    ensure_primary,
    majority_caught_up,
    remove_member,
    restart_member,
    saw_warning,
    write_marker,
)
from runners.mysql import wait_until
from runners.topology import Topology

PhaseHook = Callable[[str, float], None]
# window(fault name, node): a fault window in the history (``Context.fault``)
Window = Callable[[str, str | None], AbstractContextManager[dict[str, Any]]]
DOWN_WINDOW = "standalone_restart"


@contextlib.contextmanager
def _no_window(name: str, node: str | None) -> Iterator[dict[str, Any]]:
    yield {}


@dataclass
class _Phases:
    hook: PhaseHook | None
    times: dict[str, float] = field(default_factory=dict)

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        t0 = time.monotonic()
        try:
            yield
        finally:
            dt = time.monotonic() - t0
            self.times[name] = round(dt, 4)
            if self.hook is not None:
                self.hook(name, dt)


def convert_to_standalone(members: Sequence[MongoNode], node_name: str,
                          window: Window = _no_window,
                          on_phase: PhaseHook | None = None) -> dict[str, Any]:
    """Turn the replica set into a standalone server on ``node_name`` (docs/topologies.md,
    "Converting a replica set to a standalone server"):

    1. make sure ``node_name`` is the PRIMARY (replSetStepUp if not);
    2. write a marker collection and count every user collection;
    3. from the primary remove the other members, one replSetReconfig each (``rs.remove``);
    4. wait until the majority commit point reaches the last applied write;
    5. stop mongod on the removed members (their data stays);
    6. restart the former primary without --replSet; it warns about system.replset;
    7. delete local.system.replset (via a temporary __system user when auth is on);
    8. restart again; the warning must be gone and every count must match.

    Both restarts are ``window(DOWN_WINDOW, node)``: the node's downtime in the history."""
    by_name = {m.name: m for m in members}
    if node_name not in by_name:
        raise ComponentError("convert to standalone", f"{node_name} is not a member "
                             f"(members: {', '.join(by_name)})")
    node = by_name[node_name]
    others = [m for m in members if m is not node]
    phases = _Phases(on_phase)
    current = "check_primary"
    try:
        with phases.phase(current):
            ensure_primary(node)
        current = "count_data"
        with phases.phase(current):
            write_marker(node)
            before = collection_counts(node)
        current = "remove_members"
        with phases.phase(current):
            for m in others:
                remove_member(node, m.host)
        current = "wait_majority_commit"
        with phases.phase(current):
            wait_until(lambda: majority_caught_up(node), 30, "majority commit caught up",
                       node.component, node.error_log, interval=0.05)
        current = "stop_removed"
        with phases.phase(current):
            for m in others:
                m.stop()
        current = "restart_standalone"
        with phases.phase(current), window(DOWN_WINDOW, node.name):
            offset = restart_member(node, None)
        current = "check_warning"
        with phases.phase(current):
            warned = saw_warning(node, offset, wait=5.0)
        current = "clean_system_replset"
        with phases.phase(current):
            removed_docs = clean_system_replset(node)
        current = "final_restart"
        with phases.phase(current), window(DOWN_WINDOW, node.name):
            offset = restart_member(node, None)
        current = "verify"
        with phases.phase(current):
            still_warned = saw_warning(node, offset, wait=0.5)
            after = collection_counts(node)
    except (PyMongoError, ComponentError, KeyError, ValueError) as e:
        raise ComponentError(node.component, f"convert to standalone failed in phase "
                             f"{current}: {e}", node.error_log) from None
    node.role = "standalone"
    return {
        "node": node_name,
        "removed_members": [m.name for m in others],
        "phases": phases.times,
        "restart_seconds": round(phases.times["restart_standalone"]
                                 + phases.times["final_restart"], 4),
        "warning_after_first_restart": warned,
        "warning_after_final_restart": still_warned,
        "system_replset_docs_removed": removed_docs,
        "counts_before": before,
        "counts_after": after,
        "data_intact": before == after,
    }


def mongo_members(topo: Topology) -> list[MongoNode]:
    return [n for n in topo.nodes.values() if isinstance(n, MongoNode)]


def convert_standalone(topo: Topology, node_name: str,
                       window: Window = _no_window) -> dict[str, Any]:
    """``convert NODE to standalone`` on the topology's replica set (see
    ``convert_to_standalone``)."""
    members = mongo_members(topo)
    if not members:
        raise ComponentError("convert to standalone", "needs a MongoDB replica set (mongod); "
                             f"this topology is {topo.plan.topology}")
    if node_name not in {m.name for m in members}:
        raise ComponentError("convert to standalone", f"{node_name} is not a replica set member")
    return convert_to_standalone(members, node_name, window)


def convert(ctx: Context, a: ConvertStandalone) -> Detail:
    if ctx.topo.plan.topology != "mongodb_replset":
        raise ActionFailed("convert to standalone needs a MongoDB replica set")
    return convert_standalone(ctx.topo, a.node.name, ctx.fault)


def primary_elected(topo: Topology) -> bool:
    """``wait until primary_elected`` on a replica set: some running member is primary."""
    return any(m.is_running() and _is_primary(m) for m in mongo_members(topo))


def caught_up(topo: Topology, node_name: str) -> bool:
    """``wait until NODE caught_up`` on a replica set: the member has applied the primary's
    last operation (``replSetGetStatus`` optimes as the primary sees them)."""
    primary = next((m for m in mongo_members(topo) if m.is_running() and _is_primary(m)), None)
    if primary is None:
        return False
    node = topo.nodes[node_name]
    assert isinstance(node, MongoNode)
    members = {m["name"]: m for m in primary.command("replSetGetStatus").get("members", [])}
    mine, theirs = members.get(node.host), members.get(primary.host)
    if mine is None or theirs is None or mine.get("stateStr") not in ("PRIMARY", "SECONDARY"):
        return False
    return bool(mine["optime"]["ts"] >= theirs["optime"]["ts"])


def _is_primary(m: MongoNode) -> bool:
    try:
        return m.is_primary()
    except PyMongoError:
        return False


HANDLERS: dict[type, Handler] = {ConvertStandalone: convert}
NEEDS: dict[type, Needs] = {}  # through the servers: every back-end
