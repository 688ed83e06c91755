"""Every action of the language in one table: its name in the history, its words in the plan,
whether it is a fault a workload should observe, what undoes it, whether it may address the
router's current writer, and whether it needs root.

``ACTIONS`` maps each action model (``dsl.models``) to its ``ActionInfo``; adding an action
adds one row here (and its grammar rule, model, handler in ``fault/`` and docs). ``lab plan``
(``words``), the live view (``label``), the history (``history_name``), the plan's
warnings (``is_fault``), ``for 2s`` / ``for good`` (``undo``), ``router.writer`` as a target
(``routed``) and the root notes of ``lab check`` and the runtime's refusal (``needs_root``)
all read it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, get_args

from dsl.models import (
    Action,
    ClockSkew,
    ConvertStandalone,
    CpuLimit,
    DiskFault,
    DropCaches,
    IoFault,
    MemoryLimit,
    NetworkFault,
    NodeAction,
    NodeGroupAction,
    NodeRef,
    Promote,
    ReplicationControl,
    RunSql,
    SetGlobal,
    Sleep,
    WaitUntil,
)
from dsl.plan import TopologyKind


def seconds(value: float | None) -> str:
    """``0.5`` -> ``500ms``, ``90`` -> ``1m30s``."""
    if value is None:
        return "-"
    if value < 1 and value != 0:
        ms = value * 1000
        return f"{ms:g}ms" if ms >= 1 else f"{value * 1e6:g}us"
    whole = int(value)
    if whole != value or whole < 60:
        return f"{value:g}s"
    minutes, secs = divmod(whole, 60)
    hours, minutes = divmod(minutes, 60)
    out = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "")
    return out + (f"{secs}s" if secs else "")


def size(value: float | None) -> str:
    if value is None:
        return "-"
    for unit, factor in (("T", 1024.0**4), ("G", 1024.0**3), ("M", 1024.0**2), ("K", 1024.0)):
        if value >= factor:
            return f"{value / factor:g}{unit}"
    return f"{value:g}B"


def _nodes(refs: Iterable[object]) -> str:
    return ", ".join(getattr(r, "name", str(r)) for r in refs)


# --- each action: its words in the plan ------------------------------------------------------


ROUTER_WRITER = "router.writer"  # as an action's target: the router's writer when it fires
ROUTER_PROCESS = "router"  # as a process action's target: the router's own process (proxysql)
ROUTER_VERBS = frozenset({"kill", "pause", "resume", "stop", "start", "restart"})


UNSYNCED_WORDS = "losing unsynced writes"


def _node_words(a: NodeAction) -> str:
    verb = "cold restart" if a.verb == "cold_restart" else a.verb
    opts = ", ".join(f"{k} = {v}" for k, v in a.options.items())
    lose = f" {UNSYNCED_WORDS}" if a.lose_unsynced else ""
    return f"{verb} {a.node.name}" + (f" with {opts}" if opts else "") + lose


def _group_words(a: NodeGroupAction) -> str:
    out = f"{a.verb} {_nodes(a.nodes)}"
    if a.verb == "kill" and a.within:
        out += f" within {seconds(a.within)}"
    return out + (f" {UNSYNCED_WORDS}" if a.lose_unsynced else "")


def spread(seed: int, nodes: list[str], within: float) -> list[tuple[str, float]]:
    """``kill g1, g2, g3 within 2s``: when each node is killed, seconds after the action
    fires, in firing order: each drawn uniformly over the window from the run's seed (the same
    seed, nodes and window give the same moments; ``within 0s``: all at 0, at once)."""
    rng = random.Random(f"{seed}:{','.join(nodes)}:{within!r}")
    moments = [(n, round(rng.uniform(0.0, within), 3) if within > 0 else 0.0) for n in nodes]
    return sorted(moments, key=lambda m: m[1])


def _disk_words(a: DiskFault) -> str:
    return f"disk {a.verb} {a.node.name}" + (" binlog" if a.target == "binlog" else "")


def _network_words(a: NetworkFault) -> str:
    out = f"network {a.verb}" + (f" {a.node.name}" if a.node else " (all nodes)")
    if a.latency is not None:
        out += f" {seconds(a.latency)}"
    if a.jitter is not None:
        out += f" jitter {seconds(a.jitter)}"
    if a.bandwidth is not None:
        out += f" {size(a.bandwidth)}/s"
    return out + f" on {a.link}"


def _wait_words(a: WaitUntil) -> str:
    node = f"{a.node.name} " if a.node else ""
    return f"wait until {node}{a.condition} timeout {seconds(a.timeout)}"


# --- what undoes a fault (``for 2s``, ``for good``) -------------------------------------------


def _undo_node(a: NodeAction) -> Action | None:
    verb = {"kill": "start", "stop": "start", "pause": "resume"}.get(a.verb)
    return None if verb is None else NodeAction(verb=verb, node=a.node, span=a.span)  # type: ignore[arg-type]


def _undo_group(a: NodeGroupAction) -> Action | None:
    return NodeGroupAction(verb="start", nodes=a.nodes, span=a.span) if a.verb == "kill" else None


def _undo_network(a: NetworkFault) -> Action | None:
    if a.verb == "heal":
        return None
    return NetworkFault(verb="heal", node=a.node, link=a.link, span=a.span)


def _undo_replication(a: ReplicationControl) -> Action | None:
    if a.verb != "stop":
        return None
    return ReplicationControl(verb="start", node=a.node, threads=a.threads, span=a.span)


def _undo_disk(a: DiskFault) -> Action | None:
    if a.verb != "full":
        return None
    return DiskFault(verb="free", node=a.node, target=a.target, span=a.span)


def _undo_cpu(a: CpuLimit) -> Action | None:
    return CpuLimit(verb="heal", node=a.node, span=a.span) if a.verb == "limit" else None


def _undo_memory(a: MemoryLimit) -> Action | None:
    return MemoryLimit(verb="heal", node=a.node, span=a.span) if a.verb == "limit" else None


def _undo_clock(a: ClockSkew) -> Action | None:
    return ClockSkew(verb="heal", node=a.node, span=a.span) if a.verb == "skew" else None


def _undo_io(a: IoFault) -> Action | None:
    return IoFault(verb="heal", node=a.node, ops=a.ops, span=a.span) if a.verb != "heal" else None


def _io_words(a: IoFault) -> str:
    delay = f" {seconds(a.delay)}" if a.verb == "delay" else ""
    ops = f" on {a.ops}" if a.ops != "all" else ""
    return f"io {a.verb} {a.node.name}{delay}{ops}"


def _no_undo(a: Any) -> Action | None:
    return None


# --- what needs root (``lab check`` notes it; the runtime refuses it up front) ----------------


def _root_drop_caches(a: DropCaches, topology: str) -> str | None:
    return "writing /proc/sys/vm/drop_caches" if a.node is None else None


def _root_disk(a: DiskFault, topology: str) -> str | None:
    if a.verb != "full":
        return None
    what = "binary logs" if a.target == "binlog" else "data directory"
    return f"mounting a tmpfs of its own for {a.node.name}'s {what} when the topology starts"


def _root_cgroup(a: CpuLimit | MemoryLimit, topology: str) -> str | None:
    if a.verb != "limit":
        return None
    return (f"making a cgroup v1 '{a.action}' group for {a.node.name}'s server "
            "(/sys/fs/cgroup) and moving the server into it")


def _root_iofs(a: IoFault, topology: str) -> str | None:
    if a.verb == "heal":
        return None
    return (f"mounting lab-iofs (FUSE) at {a.node.name}'s data directory when the topology "
            "starts")


def _root_unsynced(a: NodeAction | NodeGroupAction, topology: str) -> str | None:
    if not a.lose_unsynced:
        return None
    names = a.node.name if isinstance(a, NodeAction) else _nodes(a.nodes)
    return f"mounting lab-iofs (FUSE) at {names}'s data directory when the topology starts"


def _root_network(a: NetworkFault, topology: str) -> str | None:
    """``fault.network``: the group link (and a Galera partition of all links) is cut with
    iptables rules; the other links are toxiproxy's, which needs no privilege."""
    if a.verb == "heal":
        return None
    if a.link == "group" or (topology == "galera" and a.verb == "partition" and a.link == "all"):
        return "inserting iptables rules that cut the node's group traffic"
    return None


def _root_never(a: Any, topology: str) -> str | None:
    return None


@dataclass(frozen=True)
class ActionInfo:
    history_name: Callable[[Any], str]  # the fault's name in the history: kill, promote ...
    words: Callable[[Any], str]  # the action in the language's own words (``lab plan``)
    is_fault: Callable[[Any], bool]  # a workload should observe its effect (plan warnings)
    # the action that undoes it (``for 2s`` runs it; ``for good`` never does), or None
    undo: Callable[[Any], Action | None] = _no_undo
    # needs_root: reason -- (action, topology kind) -> why it needs root, or None
    needs_root: Callable[[Any, str], str | None] = _root_never
    # it may address ``router.writer`` (resolved when it fires)
    routed: Callable[[Any], bool] = lambda a: False


def _verb(a: Any) -> str:
    return str(a.verb)


def _kind(a: Any) -> str:
    return str(a.action)


def _always(a: Any) -> bool:
    return True


def _never(a: Any) -> bool:
    return False


ACTIONS: dict[type, ActionInfo] = {
    NodeAction: ActionInfo(_verb, _node_words, lambda a: a.verb not in ("start", "resume"),
                           undo=_undo_node, needs_root=_root_unsynced,
                           routed=lambda a: a.verb not in ("start", "resume")),
    NodeGroupAction: ActionInfo(lambda a: f"{a.verb}_nodes", _group_words,
                                lambda a: a.verb == "kill", undo=_undo_group,
                                needs_root=_root_unsynced),
    DropCaches: ActionInfo(
        _kind, lambda a: "drop caches" + (f" on {a.node.name}" if a.node else " (whole OS)"),
        _always, needs_root=_root_drop_caches),
    Promote: ActionInfo(_kind, lambda a: f"promote {a.node.name}", _always),
    ReplicationControl: ActionInfo(
        lambda a: f"{a.verb}_replication",
        lambda a: f"{a.verb} replication {a.node.name}"
                  + {"io": " io_only", "sql": " sql_only"}.get(a.threads, ""),
        lambda a: a.verb == "stop", undo=_undo_replication),
    NetworkFault: ActionInfo(_verb, _network_words, lambda a: a.verb != "heal",
                             undo=_undo_network, needs_root=_root_network,
                             routed=lambda a: a.verb != "heal"),
    DiskFault: ActionInfo(lambda a: f"disk_{a.verb}", _disk_words,
                          lambda a: a.verb == "full", undo=_undo_disk, needs_root=_root_disk),
    CpuLimit: ActionInfo(
        lambda a: f"cpu_{a.verb}",
        lambda a: f"cpu limit {a.node.name} to {a.share * 100:g}%" if a.verb == "limit"
        else f"cpu heal {a.node.name}",
        lambda a: a.verb == "limit", undo=_undo_cpu, needs_root=_root_cgroup),
    MemoryLimit: ActionInfo(
        lambda a: f"memory_{a.verb}",
        lambda a: f"memory limit {a.node.name} to {size(a.limit)}" if a.verb == "limit"
        else f"memory heal {a.node.name}",
        lambda a: a.verb == "limit", undo=_undo_memory, needs_root=_root_cgroup),
    ClockSkew: ActionInfo(
        lambda a: f"clock_{a.verb}",
        lambda a: f"clock skew {a.node.name} by {'+' if a.offset >= 0 else '-'}"
                  f"{seconds(abs(a.offset))}" if a.verb == "skew"
        else f"clock heal {a.node.name}",
        lambda a: a.verb == "skew", undo=_undo_clock),
    IoFault: ActionInfo(lambda a: f"io_{a.verb}", _io_words, lambda a: a.verb != "heal",
                        undo=_undo_io, needs_root=_root_iofs),
    SetGlobal: ActionInfo(
        _kind, lambda a: f"set global {a.name} = {a.value}"
                         + (f" on {_nodes(a.nodes)}" if a.nodes else " on every node"),
        _always),
    ConvertStandalone: ActionInfo(_kind, lambda a: f"convert {a.node.name} to standalone",
                                  _always),
    WaitUntil: ActionInfo(lambda a: f"wait_{a.condition}", _wait_words, _never),
    Sleep: ActionInfo(_kind, lambda a: f"wait {seconds(a.seconds)}", _never),
    RunSql: ActionInfo(_kind, lambda a: f'execute "{a.statement}" on {a.node.name}', _never),
}


def info(a: Action) -> ActionInfo:
    return ACTIONS[type(a)]


def history_name(a: Action) -> str:
    """The fault's name in the history (``kill``, ``stop_replication``, ``wait_caught_up``)."""
    return info(a).history_name(a)


def target(a: Action) -> str | None:
    """The node (or endpoint) the action addresses, when it names one."""
    node = getattr(a, "node", None)
    return getattr(node, "name", None) if node is not None else None


def describe(a: Action) -> str:
    """An action in the language's own words."""
    return info(a).words(a)


def is_fault(a: Action) -> bool:
    """An action whose effect a workload should observe: kill, pause, stop, restart, cold
    restart, promote, stop replication, a network fault, a full disk, a cpu or memory limit,
    a clock skew, an io delay or failure, drop caches, set global, convert. Recoveries (start,
    resume, start replication, network heal, disk free, cpu/memory/clock/io heal), waits and
    ``execute`` are not faults."""
    return info(a).is_fault(a)


def undo(a: Action) -> Action | None:
    """The action that undoes ``a`` (kill, stop -> start; pause -> resume; stop replication ->
    start replication, same threads; a network fault -> network heal of that node and link;
    disk full -> disk free; cpu/memory limit -> cpu/memory heal; clock skew -> clock heal; io
    delay/fail -> io heal of the same operations), or None when nothing does."""
    return info(a).undo(a)


def needs_root(a: Action, topology: str) -> str | None:
    """Why the action needs root on a topology of this kind (None: it does not)."""
    return info(a).needs_root(a, topology)


def takes_router_writer(a: Action) -> bool:
    """``a`` may name ``router.writer``: kill, pause, stop, restart, cold restart and the
    network faults of one node (not their recoveries: a recovery names the node itself)."""
    return info(a).routed(a)


def addresses_router_writer(a: Action) -> bool:
    node = getattr(a, "node", None)
    return isinstance(node, NodeRef) and node.name == ROUTER_WRITER


def with_node(a: Action, node: str) -> Action:
    """``a`` aimed at ``node`` (``router.writer`` resolved when the action fires)."""
    old = getattr(a, "node", None)
    if not isinstance(old, NodeRef):
        return a
    return a.model_copy(update={"node": old.model_copy(update={"name": node})})


def resolved_action(a: Action, detail: dict[str, Any] | None) -> Action:
    """``a`` as it was applied: aimed at the node ``router.writer`` resolved to (the op's
    value says ``resolved``), else ``a``."""
    node = (detail or {}).get("resolved")
    return with_node(a, str(node)) if node and addresses_router_writer(a) else a


def is_left(a: Action) -> bool:
    """The action says ``for good``: its fault is never undone."""
    return bool(getattr(a, "left", False))


FAMILY_WORDS = ("network", "disk", "io", "cpu", "memory")  # `network partition db2` ...


def label(a: Action) -> str:
    """``kill db2``, ``stop replication db3``, ``network partition db2``, ``set global
    max_connections = 10``: the short label of the live view, as the language writes it."""
    if isinstance(a, SetGlobal):
        return f"set global {a.name} = {a.value}"
    if isinstance(a, NodeGroupAction):
        return f"{a.verb} {_nodes(a.nodes)}"
    if isinstance(a, Sleep | WaitUntil):  # `wait 1s`, `wait until r1 caught_up timeout 30s`
        return describe(a)
    verb = getattr(a, "verb", None)
    if verb is None:
        return f"{a.action.replace('_', ' ')} {target(a) or ''}".strip()
    if a.action == "replication":
        verb = f"{verb} replication"
    elif a.action in FAMILY_WORDS:
        verb = f"{a.action} {verb}"
    return f"{verb} {target(a) or ''}".strip()


# --- what needs root, for ``lab doctor``: one action of each form, judged by the table -------

ANY_NODE = NodeRef(name="NODE")

# Each form of action that needs root, as ``lab doctor`` lists it (NODE: any node; FAULT: any
# network fault), with one action of that form. Whether and why it needs root is not written
# here: ``root_faults`` asks the table's ``needs_root``; a unit test enumerates every action
# and checks that each reason the table can give is one of these forms'.
ROOT_FORMS: tuple[tuple[str, Action], ...] = (
    ("drop caches (whole OS)", DropCaches()),
    ("disk full NODE", DiskFault(verb="full", node=ANY_NODE)),
    ("disk full NODE binlog", DiskFault(verb="full", node=ANY_NODE, target="binlog")),
    ("cpu limit NODE", CpuLimit(verb="limit", node=ANY_NODE, share=0.5)),
    ("memory limit NODE", MemoryLimit(verb="limit", node=ANY_NODE, limit=256 * 1024**2)),
    ("io delay NODE, io fail NODE", IoFault(verb="delay", node=ANY_NODE, delay=0.05)),
    ("kill NODE losing unsynced writes",
     NodeAction(verb="kill", node=ANY_NODE, lose_unsynced=True)),
    ("network FAULT NODE on group", NetworkFault(verb="partition", node=ANY_NODE, link="group")),
    ("network partition NODE", NetworkFault(verb="partition", node=ANY_NODE)),
)
TOPOLOGY_KINDS: tuple[str, ...] = get_args(TopologyKind)


@dataclass(frozen=True)
class RootFault:
    """A form of action the runtime refuses without root, why, and on which topologies."""

    form: str
    reason: str
    topologies: tuple[str, ...]  # the topology kinds on which it needs root

    @property
    def action(self) -> str:
        """The form, and the topologies when it needs root on some only: ``network partition
        NODE (topology galera)``."""
        if set(self.topologies) == set(TOPOLOGY_KINDS):
            return self.form
        return f"{self.form} (topology {' or '.join(self.topologies)})"

    @property
    def text(self) -> str:
        """``drop caches (whole OS): writing /proc/sys/vm/drop_caches``."""
        return f"{self.action}: {self.reason}"


def root_faults() -> list[RootFault]:
    """Every form of action that needs root, with the table's reason (``needs_root``)."""
    out: list[RootFault] = []
    for form, action in ROOT_FORMS:
        reasons = {kind: needs_root(action, kind) for kind in TOPOLOGY_KINDS}
        kinds = tuple(kind for kind, reason in reasons.items() if reason is not None)
        if kinds:
            out.append(RootFault(form, str(reasons[kinds[0]]), kinds))
    return out
