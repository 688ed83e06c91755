"""What every part of validation (``dsl.validate``) shares: the limits (shared with the builder),
the nodes of a topology (``NodeInfo``, ``topology_nodes``), did-you-mean listings, and
``NameChecks``, the base of the validator's parts: its state, ``error`` and the look-up of
nodes and workloads by name."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from dsl.errors import LanguageError
from dsl.models import (
    Experiment,
    MongoReplSetTopology,
    NodeRef,
    ParamRef,
    Promote,
    ReplicationTopology,
    SingleTopology,
    Span,
    Workload,
)
from dsl.plan import NodeRole

# --- limits shared with the builder ------------------------------------------------------------

PARAM_LIMITS: dict[str, tuple[int, int]] = {
    "clients": (1, 10000),
    "threads": (1, 10000),
    "tables": (1, 10000),
    "table_size": (1, 10**9),
    "rows": (1, 10**9),
    "ops": (1, 10**12),
    "key_count": (1, 100_000),
    "txn_length": (1, 100),
}
MAX_CELLS = 10000
MAX_CRASH_WINDOW = 600.0  # seconds: `kill g1, g2 within D`
MAX_NODES = 9  # a run's block of 100 ports holds nodes 1..9 (docs/topologies.md)

SYSBENCH_SCRIPTS = (
    "oltp_read_write",
    "oltp_read_only",
    "oltp_write_only",
    "oltp_insert",
    "oltp_delete",
    "oltp_point_select",
    "oltp_update_index",
    "oltp_update_non_index",
    "select_random_points",
    "select_random_ranges",
    "bulk_insert",
    "tpcc",
)
SAFE_SCRIPT_PATH = re.compile(r"[A-Za-z0-9_./\-]+\.lua")

ROLE_OF_KIND: dict[str, NodeRole] = {
    "single": "single",
    "galera": "galera",
    "primary_primary": "primary_primary",
    "mongodb_replset": "member",
}
MONGO_FLAVORS = frozenset({"psmdb", "mongodb"})


def did_you_mean(word: str, known: Iterable[str]) -> str | None:
    """The known name closest to ``word``: the same but for case first (``DB1`` -> ``db1``:
    names are case-sensitive), then by spelling."""
    names = list(known)
    same = [n for n in names if n.lower() == word.lower()]
    close = same or difflib.get_close_matches(word, names, n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else None


def listing(names: Iterable[str]) -> str:
    items = list(names)
    return ", ".join(items) if items else "none"


MAX_CPU_SHARE = 64.0  # cpu limit: at most 64 cores' worth
MIN_MEMORY = 16 * 1024**2  # memory limit: below this no MariaDB server runs at all
MAX_SKEW = 10 * 365 * 86400.0  # clock skew: ten years either way
MAX_IO_DELAY = 60.0  # io delay: a minute per operation at most


@dataclass(frozen=True, slots=True)


class NodeInfo:
    name: str
    role: NodeRole
    ref: NodeRef


def topology_nodes(exp: Experiment) -> list[NodeInfo]:
    """Every node of the topology in order, with its role."""
    t = exp.topology
    if isinstance(t, ReplicationTopology):
        return [NodeInfo(t.primary.name, "primary", t.primary)] + [
            NodeInfo(r.name, "replica", r) for r in t.replicas
        ]
    if isinstance(t, SingleTopology):
        return [NodeInfo(t.node.name, "single", t.node)]
    refs = t.members if isinstance(t, MongoReplSetTopology) else t.nodes
    return [NodeInfo(r.name, ROLE_OF_KIND[t.kind], r) for r in refs]


def workload_params(w: Workload) -> list[tuple[str, ParamRef]]:
    """``(field, $param)`` for every parameter a workload uses."""
    out: list[tuple[str, ParamRef]] = []
    for field in PARAM_LIMITS:
        value = getattr(w, field)
        if isinstance(value, ParamRef):
            out.append((field, value))
    return out


def is_bounded(w: Workload) -> bool:
    """A workload that stops on its own (rows, operations or duration)."""
    return w.rows is not None or w.ops is not None or w.duration is not None


class NameChecks:
    """The validator's state and its look-ups of names."""

    def __init__(self, exp: Experiment, path: str) -> None:
        self.exp = exp
        self.path = path
        self.errors: list[LanguageError] = []
        self.kind = exp.topology.kind
        self.node_list = topology_nodes(exp)
        self.nodes: dict[str, NodeInfo] = {}
        self.workloads: dict[str, Workload] = {}

    def error(self, span: Span, message: str, hint: str | None = None) -> None:
        self.errors.append(LanguageError(self.path, span, message, hint))

    # --- names ----------------------------------------------------------------------------

    def node(self, ref: NodeRef | None, what: str = "node") -> NodeInfo | None:
        """The node a reference names, or an error listing the known ones."""
        if ref is None:
            return None
        info = self.nodes.get(ref.name)
        if info is None:
            self.error(
                ref.span,
                f"unknown {what} '{ref.name}' (known: {listing(self.nodes)})",
                did_you_mean(ref.name, self.nodes),
            )
        return info

    def workload(self, name: str, span: Span) -> Workload | None:
        w = self.workloads.get(name)
        if w is None:
            self.error(
                span,
                f"unknown workload '{name}' (known: {listing(self.workloads)})",
                did_you_mean(name, self.workloads),
            )
        return w

    def example_writer(self) -> str:
        """Where this experiment's writes would go, for a hint: the router, else the first
        writer."""
        if self.exp.router is not None:
            return "router.writer"
        writers = [n.name for n in self.node_list if n.role != "replica"]
        return (writers or [n.name for n in self.node_list] or ["db1"])[0]

    def example_readers(self) -> str:
        """Where this experiment's reads could go, for a hint: the replicas, else every
        node."""
        replicas = [n.name for n in self.node_list if n.role == "replica"]
        return listing(replicas or [n.name for n in self.node_list] or ["db2"])

    def replicas(self) -> str:
        return listing(n.name for n in self.node_list if n.role == "replica")

    def promotes(self) -> bool:
        """A replica is promoted somewhere in the timeline or steps: the first primary can end
        as a replica (it rejoins), so replica figures may name it."""
        actions = [t.action for t in self.exp.timeline] + [
            a for s in self.exp.steps for a in s.actions
        ] + [t.action for t in self.exp.triggers]
        return any(isinstance(a, Promote) for a in actions)
