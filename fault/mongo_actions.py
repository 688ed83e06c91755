"""MongoDB actions the nemesis applies to a running topology.

Kept apart from ``fault.nemesis`` (which imports this module) so that neither imports the
other's names at load time; failures raise ``runners.errors.ComponentError``, which the
nemesis records as the action's ``fail`` like any other exception.
"""

from __future__ import annotations

from typing import Any

from pymongo.errors import PyMongoError

from runners.errors import ComponentError
from runners.mongo import MongoNode, convert_to_standalone
from runners.topology import Topology


def mongo_members(topo: Topology) -> list[MongoNode]:
    return [n for n in topo.nodes.values() if isinstance(n, MongoNode)]


def convert_standalone(topo: Topology, node_name: str) -> dict[str, Any]:
    """``convert NODE to standalone``: the seed-digest §3 procedure on the topology's replica
    set. Returns the phase timings, downtime and data checks (see
    ``runners.mongo.convert_to_standalone``). The removed members are left stopped with
    their data; they are no longer part of any replica set, so healing must not restart them
    as members."""
    members = mongo_members(topo)
    if not members:
        raise ComponentError("convert to standalone", "needs a MongoDB replica set (mongod); "
                             f"this topology is {topo.plan.topology}")
    if node_name not in {m.name for m in members}:
        raise ComponentError("convert to standalone", f"{node_name} is not a replica set member")
    return convert_to_standalone(members, node_name)


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
