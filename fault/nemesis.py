"""The nemesis: applies actions to a running topology and records them in the history.

Every action is recorded as an ``invoke`` (start) and ``ok``/``fail`` (end) with
``process == NEMESIS``; what it changed is remembered by its family (``fault/``) so that
``heal_all`` can undo it when the experiment ends (unless the file says ``leave faults``).
Values from the experiment reach servers only as SQL literals checked in ``fault.sql`` or as
argv elements, never through a shell.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from dsl.actions import (
    ROUTER_WRITER,
    addresses_router_writer,
    history_name,
    is_left,
    target,
    with_node,
)
from dsl.models import (
    Action,
    ClockSkew,
    CpuLimit,
    DiskFault,
    IoFault,
    MemoryLimit,
    NetworkFault,
    NodeAction,
    NodeGroupAction,
    ReplicationControl,
)
from fault import HANDLERS, HEALERS
from fault import replication as _replication
from fault.cache import cached_bytes_total, evict_files, resident_bytes
from fault.clock import ClockState
from fault.context import ActionFailed, ActionIncomplete, Context, Record
from fault.disk import DiskState
from fault.iofs import IoState
from fault.network import NetworkState, galera_partition, leave_cut
from fault.process import ProcessState
from fault.replication import ReplicationState
from fault.resources import ResourceState
from fault.resources import heal as lift_limits
from fault.sql import sql_literal
from runners.node import Node
from runners.ops import NEMESIS, Op
from runners.router import current_writer
from runners.topology import Topology

__all__ = ["ActionFailed", "Nemesis", "cached_bytes_total", "describe", "evict_files",
           "resident_bytes", "sql_literal"]

def describe(action: Action) -> tuple[str, str | None]:
    """(fault name for the history, node)"""
    return history_name(action), target(action)


class Nemesis:
    """Applies actions (``apply``) and undoes the faults still in force (``heal_all``).
    ``down``, ``paused`` ... are the families' heal bookkeeping, read-only views for callers."""

    def __init__(self, topo: Topology, record: Record) -> None:
        self.topo = topo
        self.record = record
        self.ctx = Context(topo, record)
        self.events: list[dict[str, Any]] = []

    # --- the families' bookkeeping ---------------------------------------------------------
    @property
    def down(self) -> set[str]:
        return self.ctx.down

    @property
    def paused(self) -> set[str]:
        return self.ctx.state(ProcessState).paused

    @property
    def replication_stopped(self) -> set[str]:
        return self.ctx.state(ReplicationState).stopped

    @property
    def former_primaries(self) -> set[str]:
        return self.ctx.state(ReplicationState).former_primaries

    @property
    def damaged_links(self) -> set[str]:
        return self.ctx.state(NetworkState).damaged_links

    @property
    def iptables_rules(self) -> list[list[str]]:
        return self.ctx.state(NetworkState).iptables_rules

    def node(self, name: str) -> Node:
        return self.topo.nodes[name]

    # --- applying ------------------------------------------------------------------------------
    def resolve(self, action: Action) -> tuple[Action, dict[str, Any]]:
        """``router.writer`` -> the node the router sends writes to now; the action aimed at
        it, and what the history says of the resolution (``target``, ``resolved``)."""
        if not addresses_router_writer(action):
            return action, {}
        router = self.topo.router
        node = current_writer(router) if router is not None else None
        if node is None:
            raise ActionFailed(f"{history_name(action)} router.writer: the router sends writes "
                               "to no node now")
        return with_node(action, node), {"target": ROUTER_WRITER, "resolved": node}

    def apply(self, action: Action,
              before: Callable[[Action], None] | None = None) -> dict[str, Any]:
        """Apply one action and record it (``invoke`` at its start, ``ok``/``fail`` at its
        end). ``router.writer`` is resolved first: the op's node is the resolved node and its
        value says ``target: router.writer, resolved: NODE``. A ``for good`` fault is taken
        out of its family's heal state (``leave_in_place``). ``before`` is called with the
        resolved action just before it is applied (the snapshots it needs). Returns the op's
        value."""
        t0 = time.monotonic_ns()
        try:
            action, resolution = self.resolve(action)
        except ActionFailed as e:
            name, node = describe(action)
            self.record(Op("invoke", name, NEMESIS, t0, "nemesis", "", node))
            self.record(Op("fail", name, NEMESIS, time.monotonic_ns(), "nemesis", "", node,
                           error_msg=str(e)[:500]))
            raise
        if before is not None:  # snapshots taken before the fault's window opens
            before(action)
        name, node = describe(action)
        handler = HANDLERS.get(type(action))
        t0 = time.monotonic_ns()
        self.record(Op("invoke", name, NEMESIS, t0, "nemesis", "", node,
                       value=resolution or None))
        try:
            if handler is None:
                raise ActionFailed(f"unknown action {action!r}")
            self.ctx.applied = len(self.events)
            detail = {**resolution, **(handler(self.ctx, action) or {})}
            if is_left(action):
                leave_in_place(self.ctx, action, detail)
                detail["left"] = True
        except Exception as e:
            done = {**resolution, **e.detail} if isinstance(e, ActionIncomplete) else None
            self.record(Op("fail", name, NEMESIS, time.monotonic_ns(), "nemesis", "", node,
                           value=done or None, error_msg=str(e)[:500]))
            self.events.append({"fault": name, "node": node, "start_ns": t0,
                                "end_ns": time.monotonic_ns(), "error": str(e)[:2000]})
            raise
        t1 = time.monotonic_ns()
        self.record(Op("ok", name, NEMESIS, t1, "nemesis", "", node, value=detail or None))
        self.events.append({"fault": name, "node": node, "start_ns": t0, "end_ns": t1,
                            "detail": detail})
        return detail

    def caught_up(self, name: str) -> bool:
        return _replication.caught_up(self.ctx, name)

    def downloaded(self, name: str) -> bool:
        return _replication.downloaded(self.ctx, name)

    def rejoin(self, name: str) -> str:
        return _replication.rejoin(self.ctx, name)

    # --- healing -----------------------------------------------------------------------------
    def release(self) -> list[str]:
        """At the end of a cell, whatever was healed or left (also after Ctrl-C): lift every cpu
        and memory limit and remove its cgroup, and delete every iptables rule the faults
        inserted (a rule outlives the servers; ``for good`` and ``leave faults`` leave
        the servers' state, never the machine's firewall)."""
        done: list[str] = []
        res = self.ctx.state(ResourceState)
        res.groups.update(res.left)  # cgroups never outlive the cell, `for good` or not
        res.left.clear()
        done += lift_limits(self.ctx)
        st = self.ctx.state(NetworkState)
        if not st.iptables_rules and not st.left_rules:
            return done
        try:
            galera_partition(self.ctx, None, heal=True, include_left=True)
        except ActionFailed as e:  # labelled with the run: `lab gc` deletes them
            return [*done, f"delete the group partition's iptables rules: {e}"]
        return [*done, "delete the group partition's iptables rules"]

    def left_paused(self) -> set[str]:
        """Nodes still paused (left, or not healed): they cannot answer the final reads."""
        st = self.ctx.state(ProcessState)
        return set(st.paused) | set(st.left_paused)

    def heal_all(self) -> list[str]:
        """Undo every fault still in force, family by family (``fault.HEALERS``): resume,
        heal links, start, restart replication."""
        done: list[str] = []
        for _, heal in HEALERS:
            done += heal(self.ctx)
        return done


def leave_in_place(ctx: Context, action: Action, detail: dict[str, Any]) -> None:
    """``for good``: take the fault out of its family's heal state, so that healing at the end
    of the run leaves it (a killed node stays down, a paused one paused, a link cut ...). An
    explicit recovery later on the timeline still undoes it."""
    if isinstance(action, NodeAction):
        name = action.node.name
        if action.verb in ("kill", "stop"):
            ctx.left_down.add(name)  # still down (waits and reads skip it), never healed
        elif action.verb == "pause":
            st = ctx.state(ProcessState)
            st.paused.discard(name)
            st.left_paused.add(name)
    elif isinstance(action, NodeGroupAction) and action.verb == "kill":
        ctx.left_down.update(r.name for r in action.nodes)
    elif isinstance(action, NetworkFault):
        net = ctx.state(NetworkState)
        net.damaged_links -= set(detail.get("links") or [])
        if detail.get("cut") is not None:  # a cut between nodes (runners.netcut)
            leave_cut(ctx, detail)
        if detail.get("port") is not None:  # a group partition: its iptables rules are
            name = action.node.name if action.node else ""  # deleted at the cell's end
            net.left.setdefault(name, []).extend(net.partitions.pop(name, []))
    elif isinstance(action, ReplicationControl):
        ctx.state(ReplicationState).stopped.discard(action.node.name)
    elif isinstance(action, DiskFault):
        ctx.state(DiskState).full.discard((action.node.name, action.target))
    elif isinstance(action, (CpuLimit, MemoryLimit)):
        res = ctx.state(ResourceState)
        group = res.groups.pop((action.action, action.node.name), None)
        if group is not None:  # kept until the cell ends (``release``)
            res.left[(action.action, action.node.name)] = group
    elif isinstance(action, ClockSkew):
        ctx.state(ClockState).skewed.discard(action.node.name)
    elif isinstance(action, IoFault):
        ctx.state(IoState).faulty.discard(action.node.name)
