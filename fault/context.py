"""What every fault handler gets: the topology, the history, and its family's heal state.

A handler is ``handler(ctx, action) -> detail`` (a dict for the history, or None). What it
changed and must be undone at the end is kept in its family's state object,
``ctx.state(FamilyState)``: one per family, made on first use, read by that family's heal.
``ctx.down`` is shared: the nodes the faults took down (killed, stopped), which other
families must not address.

What a back-end can do is declared (``runners.capabilities``): a family asks ``ctx.has(P)``
(its topology's back-end lists the capability ``P``) and then uses the topology as a ``P``;
it never probes the topology's attributes nor imports a back-end's classes. Each family
declares in ``NEEDS`` what its actions need (``Needs``), which ``lab check`` compares with
the back-end's capabilities (``dsl.backends``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from runners.capabilities import Need
from runners.node import Node
from runners.ops import NEMESIS, Op
from runners.topology import Topology

Detail = dict[str, Any] | None
Record = Callable[[Op], Op]
T = TypeVar("T")


class ActionFailed(RuntimeError):
    """An action could not be carried out (a wait timed out, a node refused). The run fails
    clearly with this message."""


class ActionIncomplete(ActionFailed):
    """An action that ran but did not complete (a page-cache drop the kernel had not finished
    within its limit): recorded as failed, with what it did (``detail``), and the run goes on
    (``lab.run.load``): nothing is computed from it."""

    def __init__(self, message: str, detail: dict[str, Any]) -> None:
        super().__init__(message)
        self.detail = detail


class Context:
    def __init__(self, topo: Topology, record: Record) -> None:
        self.topo = topo
        self.record = record
        self.down: set[str] = set()  # killed or stopped nodes
        self.left_down: set[str] = set()  # of those, the ones down ``for good``: not healed
        self.applied = 0  # actions applied so far: unique names (toxics) count on it
        self._states: dict[type, Any] = {}

    def node(self, name: str) -> Node:
        return self.topo.nodes[name]

    @property
    def flavor(self) -> str:
        """The servers' engine (``mariadb``, ``mysql``, ``percona``)."""
        return str(self.topo.plan.engine.flavor)

    def has(self, capability: type) -> bool:
        """The topology's back-end declares ``capability`` (``runners.capabilities``)."""
        return capability in self.topo.capabilities

    def state(self, kind: type[T]) -> T:
        """The heal state of one family (made empty on first use)."""
        got = self._states.get(kind)
        if got is None:
            got = self._states[kind] = kind()
        return got

    @contextlib.contextmanager
    def fault(self, name: str, node: str | None) -> Iterator[dict[str, Any]]:
        """A fault window in the history: ``invoke`` now, ``ok`` (with the dict the block
        fills as its value) or ``fail`` (with the error) when the block ends."""
        detail: dict[str, Any] = {}
        self.record(Op("invoke", name, NEMESIS, time.monotonic_ns(), "nemesis", "", node))
        try:
            yield detail
        except Exception as e:
            self.record(Op("fail", name, NEMESIS, time.monotonic_ns(), "nemesis", "", node,
                           error_msg=str(e)[:500]))
            raise
        self.record(Op("ok", name, NEMESIS, time.monotonic_ns(), "nemesis", "", node,
                       value=detail or None))


Handler = Callable[[Context, Any], Detail]  # applies one action; its detail goes to the history
Healer = Callable[[Context], list[str]]  # undoes a family's faults still in force; what it did
# what an action needs of the back-end, given the topology's kind (``runners.capabilities``)
Needs = Callable[[Any, str], list[Need]]
