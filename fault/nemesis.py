"""The nemesis: applies actions to a running topology and records them in the history.

Every action is recorded as an ``invoke`` (start) and ``ok``/``fail`` (end) with
``process == NEMESIS``; what it changed is remembered by its family (``fault/``) so that
``heal_all`` can undo it when the experiment ends (unless the file says ``leave faults``).
Values from the experiment reach servers only as SQL literals checked in ``fault.sql`` or as
argv elements, never through a shell.
"""

from __future__ import annotations

import time
from typing import Any

from dsl.actions import history_name, target
from dsl.models import Action
from fault import HANDLERS, HEALERS
from fault import replication as _replication
from fault.cache import cached_bytes_total, evict_files, resident_bytes
from fault.context import ActionFailed, Context, Record
from fault.network import NetworkState
from fault.process import ProcessState
from fault.replication import ReplicationState
from fault.sql import sql_literal
from runners.node import Node
from runners.ops import NEMESIS, Op
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
    def apply(self, action: Action) -> dict[str, Any]:
        name, node = describe(action)
        handler = HANDLERS.get(type(action))
        t0 = time.monotonic_ns()
        self.record(Op("invoke", name, NEMESIS, t0, "nemesis", "", node))
        try:
            if handler is None:
                raise ActionFailed(f"unknown action {action!r}")
            self.ctx.applied = len(self.events)
            detail = handler(self.ctx, action) or {}
        except Exception as e:
            self.record(Op("fail", name, NEMESIS, time.monotonic_ns(), "nemesis", "", node,
                           error_msg=str(e)[:500]))
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
    def heal_all(self) -> list[str]:
        """Undo every fault still in force, family by family (``fault.HEALERS``): resume,
        heal links, start, restart replication."""
        done: list[str] = []
        for _, heal in HEALERS:
            done += heal(self.ctx)
        return done
