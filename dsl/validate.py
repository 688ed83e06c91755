"""Semantic checks of an experiment: every error in a file, sorted by position.

``validate(exp, path)`` checks what a parse cannot: names (unknown nodes and workloads, listing
the known ones; duplicates), roles that make no sense (promoting a Galera node, delaying the
primary, stopping replication on a primary, converting anything but a MongoDB replica set,
``wait until ... synced`` outside Galera), ``$param`` without ``vary``, expectations on unknown
workloads and with units of the wrong kind, timeline times beyond the duration, and the safety
of every config key and value (they are written into my.cnf files and must never reach a
shell; settings the lab owns are refused or confined, see ``dsl.owned``). ``setting_problems``
is also used by the builder, which knows the exact tokens.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from dsl.actions import (
    ROUTER_PROCESS,
    ROUTER_VERBS,
    ROUTER_WRITER,
    describe,
    takes_router_writer,
)
from dsl.errors import LanguageError, sorted_errors
from dsl.metrics import METRICS, SPLIT_BRAIN_UNDEFINED, resolve_stat
from dsl.models import (
    NO_SPAN,
    TXN_WORKLOADS,
    Action,
    ClockSkew,
    ConvertStandalone,
    CpuLimit,
    DiskFault,
    DropCaches,
    Endpoint,
    Expectation,
    Experiment,
    GaleraTopology,
    IoFault,
    MemoryLimit,
    Metric,
    MongoReplSetTopology,
    NetworkFault,
    NodeAction,
    NodeGroupAction,
    NodeRef,
    ParamRef,
    PrimaryPrimaryTopology,
    Promote,
    Quantity,
    ReplicationControl,
    ReplicationTopology,
    RunSql,
    SetGlobal,
    SingleTopology,
    Sleep,
    Span,
    WaitUntil,
    Workload,
)
from dsl.owned import PROVIDER_KEY, normal_key, owned_problem
from dsl.plan import NodeRole, iofs_nodes
from dsl.units import kind_problem
from dsl.versions import mysql_unspoken

# --- safety of names, keys and values ---------------------------------------------------------

SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}")
SAFE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
SQL_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SAFE_VALUE_CHARS = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _.,:/+@%=*~^-"
)
MAX_KEY = 128
MAX_VALUE = 1024
VALUE_CHARS_HINT = "allowed: letters, digits, spaces and _ . , : / + @ % = * ~ ^ -"

Where = Literal["key", "value"]
Problem = tuple[Where, str, str | None]


def is_safe_name(name: str) -> bool:
    """Experiment names end up in paths: letters, digits, ``.``, ``-``, ``_``."""
    return SAFE_NAME.fullmatch(name) is not None


def _value_problem(value: str, key: str = "") -> tuple[str, str | None] | None:
    if len(value) > MAX_VALUE:
        return f"the value is longer than {MAX_VALUE} characters", None
    if "\n" in value or "\r" in value:
        return "a value cannot span lines", "values are written on one line of my.cnf"
    # Galera's options are separated by ';', which starts a comment only at the start of a line
    allowed = SAFE_VALUE_CHARS | {";"} if normal_key(key) == PROVIDER_KEY else SAFE_VALUE_CHARS
    bad = next((ch for ch in value if ch not in allowed), None)
    if bad is None:
        if value != value.strip():
            return "a value cannot start or end with a space", None
        return None
    shown = repr(bad)
    if bad in "\"'`\\":
        return (
            f"the value contains {shown}: quotes and backslashes are not allowed",
            "values are written into my.cnf as they are and must never reach a shell; "
            + VALUE_CHARS_HINT,
        )
    if bad in "#;":
        return (f"the value contains {shown}, which starts a comment in my.cnf", VALUE_CHARS_HINT)
    return f"the value contains {shown}, which is not allowed", VALUE_CHARS_HINT


def setting_problems(key: str, value: str, context: str) -> list[Problem]:
    """What is wrong with ``key = value`` in a ``config`` block, a variant, ``start ... with``
    options, ``set global`` or ``vary config``; an empty list when it is safe."""
    problems: list[Problem] = []
    pattern = SQL_VARIABLE if context == "set global" else SAFE_KEY
    if len(key) > MAX_KEY:
        problems.append(("key", f"the setting name is longer than {MAX_KEY} characters", None))
    elif pattern.fullmatch(key) is None:
        allowed = (
            "letters, digits and '_'"
            if context == "set global"
            else "letters, digits, '_', '.' and '-'"
        )
        problems.append(
            (
                "key",
                f"'{key}' is not a valid setting name",
                f"a setting name starts with a letter or '_' and has {allowed}",
            )
        )
    value_problem = _value_problem(value, key)
    if value_problem:
        problems.append(("value", *value_problem))
    elif not problems:
        owned = owned_problem(key, value, context)
        if owned is not None:
            where, message, hint = owned
            problems.append(("key" if where == "key" else "value", message, hint))
    return problems


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


class _Validator:
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

    def run(self) -> list[LanguageError]:
        self.check_topology()
        self.check_router()
        self.check_configs()
        self.check_images()
        self.check_workloads()
        self.check_sweeps()
        self.check_steps()
        self.check_timeline()
        self.check_triggers()
        self.check_measurements()
        self.check_backend()
        return sorted_errors(self.errors)

    def check_backend(self) -> None:
        """What the file's back-end cannot run yet: its declared capabilities against what
        the fault families need (``dsl.backends``)."""
        from dsl.backends import problems

        for span, message, hint in problems(self.exp):
            self.error(span, message, hint)

    # --- topology and router --------------------------------------------------------------

    def check_topology(self) -> None:
        t = self.exp.topology
        for info in self.node_list:
            if info.name in self.nodes:
                first = self.nodes[info.name].ref.span.line
                self.error(
                    info.ref.span, f"node '{info.name}' is declared twice (first at line {first})"
                )
                continue
            if info.name == "router":
                self.error(
                    info.ref.span,
                    "'router' cannot name a node",
                    "it names the router's endpoints: router.writer, router.reader",
                )
            elif info.name == "toxiproxy":
                self.error(
                    info.ref.span,
                    "'toxiproxy' cannot name a node",
                    "it names the lab's toxiproxy on a container run's network",
                )
            self.nodes[info.name] = info
        if len(self.node_list) > MAX_NODES:
            self.error(
                t.span,
                f"the topology has {len(self.node_list)} nodes; at most "
                f"{MAX_NODES} fit the port layout",
            )
        flavor = t.engine.flavor
        if self.kind == "mongodb_replset" and flavor not in MONGO_FLAVORS:
            self.error(
                t.engine.span,
                f"a MongoDB replica set runs psmdb or mongodb, not {flavor}",
                "engine psmdb 7.0  or  engine mongodb 7.0",
            )
        elif self.kind != "mongodb_replset" and flavor in MONGO_FLAVORS:
            self.error(
                t.engine.span,
                f"{flavor} only runs a mongodb_replset topology",
                "for MySQL-family servers: engine mariadb, mysql or percona",
            )
        elif self.kind == "galera" and flavor != "mariadb":
            self.error(
                t.engine.span,
                f"the galera topology runs on mariadb (galera-4), not {flavor}",
                "engine mariadb 10.11",
            )
        elif flavor in ("mysql", "percona") and mysql_unspoken(t.engine.version):
            self.error(
                t.engine.span,
                f"{flavor} {t.engine.version}: the lab speaks MySQL 8.0's replication "
                "statements (SHOW SLAVE STATUS, CHANGE MASTER TO), which 8.4 removed",
                f"engine {flavor} 8.0",
            )
        elif self.kind == "primary_primary" and flavor != "mariadb":
            self.error(
                t.engine.span,
                f"primary_primary runs on mariadb (the lab starts two mariadbd), not {flavor}",
                "engine mariadb 10.11",
            )
        if isinstance(t, GaleraTopology) and len(t.nodes) < 2:
            self.error(
                t.span,
                "a galera cluster needs at least 2 nodes",
                "3 nodes keep a quorum when one fails: nodes g1, g2, g3",
            )
        if isinstance(t, PrimaryPrimaryTopology) and len(t.nodes) != 2:
            self.error(
                t.span,
                f"primary_primary has exactly 2 nodes, not {len(t.nodes)}",
                "nodes p1, p2 (for more writers, use galera)",
            )
        if isinstance(t, ReplicationTopology):
            self.check_replication(t)

    def check_replication(self, t: ReplicationTopology) -> None:
        if t.semi_sync and not t.replicas:
            self.error(t.span, "semi_sync needs at least one replica", "add: replicas db2, db3")
        delayed: set[str] = set()
        for d in t.delays:
            info = self.node(d.node)
            if info is None:
                continue
            if info.role == "primary":
                self.error(
                    d.node.span,
                    f"'{d.node.name}' is the primary; only a replica can be delayed",
                    f"delay one of: {listing(r.name for r in t.replicas)}",
                )
            elif d.node.name in delayed:
                self.error(d.node.span, f"'{d.node.name}' is delayed twice")
            delayed.add(d.node.name)

    def check_router(self) -> None:
        r = self.exp.router
        if r is None:
            return
        if self.kind == "mongodb_replset":
            self.error(
                r.span,
                f"{r.kind} routes MySQL-protocol traffic; a MongoDB replica set has no router here",
                "clients of a replica set target its members",
            )
        for group in (r.writers, r.readers):
            seen: set[str] = set()
            for ref in group:
                self.node(ref)
                if ref.name in seen:
                    self.error(ref.span, f"'{ref.name}' is listed twice")
                seen.add(ref.name)

    def check_router_params(self, params: dict[str, list[str]]) -> set[str]:
        """``set mysql-... = $name`` in a proxysql router: ``$name`` is a ``vary``, and each of
        its values is one ProxySQL takes. Returns the parameters used there."""
        from dsl import router_settings

        r = self.exp.router
        used: set[str] = set()
        for key, value in (r.settings if r is not None else {}).items():
            if not router_settings.PARAM.match(value):
                continue
            name = value[1:]
            if name not in params:
                known = ", ".join(f"${p}" for p in params) or "none"
                self.error(r.span if r is not None else self.exp.span,
                           f"{key} = ${name}: unknown parameter (known: {known})",
                           f"add: vary {name} in 500, 1000")
                continue
            used.add(name)
            for v in params[name]:
                problem = router_settings.value_problem(key, v, params=False)
                if problem:
                    self.error(r.span if r is not None else self.exp.span, problem)
        return used

    def check_images(self) -> None:
        """``image``: known nodes, one image per node, and only where containers run."""
        images = list(self.exp.topology.images)
        if self.exp.router is not None and self.exp.router.image is not None:
            images.append(self.exp.router.image)
        seen: dict[str | None, int] = {}
        for spec in images:
            self.node(spec.node)
            key = spec.node.name if spec.node is not None else None
            if spec in self.exp.topology.images and key in seen:
                self.error(spec.span, f"{'every node' if key is None else key} has an image "
                           f"already (line {seen[key]})")
            if spec in self.exp.topology.images:
                seen.setdefault(key, spec.span.line)
        if images and self.exp.backend != "containers":
            self.error(images[0].span, "`image` needs `backend containers`: natively the "
                       "servers are this machine's programs", "add: backend containers")

    def check_configs(self) -> None:
        blocks = list(self.exp.configs) + list(self.exp.topology.configs)
        for block in blocks:
            self.node(block.node)
            self.check_settings(block.settings, block.span)
            if block.node is not None:
                self.check_node_settings(block.node, block.settings, block.span)
        seen: dict[str, int] = {}
        for v in self.exp.variants:
            if v.name in seen:
                self.error(
                    v.span, f"variant '{v.name}' is defined twice (first at line {seen[v.name]})"
                )
            seen.setdefault(v.name, v.span.line)
            self.check_settings(v.settings, v.span)

    def check_node_settings(self, node: NodeRef, settings: dict[str, str], span: Span) -> None:
        """Settings that must be the same on every node of the topology."""
        for key in settings:
            name = normal_key(key)
            if name == "wsrep_cluster_name" and self.kind == "galera":
                self.error(
                    span,
                    f"'{key}' cannot be set for one node: every node of a galera cluster "
                    "has the same cluster name",
                    "set it for every node: config { wsrep_cluster_name = ... }",
                )
            elif name == "log_bin" and self.kind == "replication":
                self.error(
                    span,
                    f"'{key}' cannot be set for one node of a replication topology: renaming "
                    f"the binary log of a node that has started ({node.name}) loses its GTID "
                    "state",
                    "set it for every node: config { log_bin = ... }",
                )

    def check_settings(self, settings: dict[str, str], span: Span, context: str = "config") -> None:
        """Defence in depth: the builder already left unsafe settings out."""
        for key, value in settings.items():
            for _, message, hint in setting_problems(key, value, context):
                self.error(span, message, hint)

    # --- workloads and sweeps -------------------------------------------------------------

    def check_workloads(self) -> None:
        for w in self.exp.workloads:
            if w.name in self.workloads:
                first = self.workloads[w.name].span.line
                self.error(w.span, f"workload '{w.name}' is defined twice (first at line {first})")
                continue
            if w.name in self.nodes:
                self.error(
                    w.span,
                    f"'{w.name}' names both a node and a workload",
                    "give the workload another name",
                )
            self.workloads[w.name] = w
        longest = 0.0
        for w in self.exp.workloads:
            self.check_workload(w)
            if w.duration is not None:
                longest = max(longest, w.duration)
                if w.duration > self.exp.duration:
                    self.error(
                        w.span,
                        f"workload '{w.name}' runs for {w.duration:g}s but the "
                        f"experiment's load lasts {self.exp.duration:g}s",
                        "lengthen the experiment's duration or shorten the workload's",
                    )
        self.check_start_after()

    def check_workload(self, w: Workload) -> None:
        if w.kind == "read_your_writes":
            if not w.targets:
                self.error(
                    w.span,
                    f"workload '{w.name}' does not say where it writes",
                    f"add: write {self.example_writer()}",
                )
            elif len(w.targets) > 1:
                self.error(
                    w.targets[1].span,
                    "read_your_writes writes through one endpoint",
                    "read the key back on several: read db2, db3",
                )
            if not w.reads:
                self.error(
                    w.span, f"workload '{w.name}' does not say where it reads",
                    f"add: read {self.example_readers()}",
                )
        elif not w.targets:
            self.error(
                w.span, f"workload '{w.name}' has no target", "add: target db1  (or router.writer)"
            )
        for e in list(w.targets) + list(w.reads):
            self.endpoint(e)
        if w.kind == "sysbench":
            self.check_sysbench(w)
        elif w.script is not None:
            self.error(w.script_span, f"only sysbench takes a script; '{w.name}' is a {w.kind}")
        if self.kind == "mongodb_replset" and w.kind == "sysbench":
            self.error(w.span, "sysbench needs a MySQL-family server, not MongoDB")
        if self.kind == "mongodb_replset" and w.kind in TXN_WORKLOADS:
            self.error(w.span, f"{w.kind} runs SQL transactions on a MySQL-family server; the "
                       "lab has no MongoDB transaction workload",
                       "on MongoDB use probe, unique_writes or read_your_writes")

    def check_sysbench(self, w: Workload) -> None:
        if w.script is None:
            self.error(
                w.span,
                f"sysbench workload '{w.name}' needs a script",
                f"e.g. workload {w.name}: sysbench oltp_read_write {{ ... }}",
            )
        elif w.script not in SYSBENCH_SCRIPTS and SAFE_SCRIPT_PATH.fullmatch(w.script) is None:
            self.error(
                w.script_span,
                f"unknown sysbench script '{w.script}' (known: {listing(SYSBENCH_SCRIPTS)})",
                did_you_mean(w.script, SYSBENCH_SCRIPTS)
                or 'or give the path of a .lua file in quotes: "path/to/test.lua"',
            )
        if len(w.targets) > 1:
            self.error(
                w.targets[1].span,
                "sysbench connects to one endpoint",
                "run one sysbench workload per node, or target router.writer",
            )

    def endpoint(self, e: Endpoint) -> None:
        if e.name.startswith("router."):
            r = self.exp.router
            if r is None:
                self.error(
                    e.span,
                    f"'{e.name}' needs a router",
                    "add: router haproxy { writer db1  readers db2 }",
                )
            elif e.name == "router.reader" and not r.readers:
                self.error(
                    e.span,
                    "'router.reader' needs readers in the router",
                    "add to the router: readers db2, db3",
                )
            return
        self.node(NodeRef(name=e.name, span=e.span))

    def check_start_after(self) -> None:
        for w in self.exp.workloads:
            if w.start_after is None or self.workloads.get(w.name) is not w:
                continue
            before = self.workload(w.start_after, w.start_after_span)
            if before is None:
                continue
            if before is w:
                self.error(w.start_after_span, f"workload '{w.name}' cannot start after itself")
                continue
            if not is_bounded(before):
                self.error(
                    w.start_after_span,
                    f"workload '{before.name}' never finishes on its own, so "
                    f"'{w.name}' would never start",
                    f"bound '{before.name}': rows 5000, operations 1000 or duration 20s",
                )
            chain, cur = {w.name}, before
            while cur.start_after is not None and cur.start_after in self.workloads:
                if cur.name in chain:
                    self.error(
                        w.start_after_span,
                        f"workloads wait for each other in a circle: {' -> '.join(sorted(chain))}",
                    )
                    break
                chain.add(cur.name)
                cur = self.workloads[cur.start_after]

    def check_sweeps(self) -> None:
        seen: dict[str, int] = {}
        params: dict[str, list[str]] = {}
        for s in self.exp.sweeps:
            if s.name in seen:
                self.error(s.span, f"'{s.name}' is varied twice (first at line {seen[s.name]})")
                continue
            seen[s.name] = s.span.line
            if s.target == "param":
                params[s.name] = s.values
        used: dict[str, list[str]] = {}
        for w in self.exp.workloads:
            for field, ref in workload_params(w):
                if ref.name not in params:
                    known = ", ".join(f"${p}" for p in params) or "none"
                    self.error(
                        ref.span,
                        f"unknown parameter ${ref.name} (known: {known})",
                        did_you_mean(ref.name, params) or f"add: vary {ref.name} in 1, 4, 16",
                    )
                    continue
                used.setdefault(ref.name, []).append(field)
        router_used = self.check_router_params(params)
        for s in self.exp.sweeps:
            if s.target != "param" or seen.get(s.name) != s.span.line or (
                    s.name in router_used and s.name not in used):
                continue
            if s.name not in used:
                self.error(
                    s.span,
                    f"'vary {s.name}' is not used: no workload says ${s.name}",
                    f"use it (threads ${s.name}), or vary a server variable: "
                    f"vary config {s.name} in ...",
                )
                continue
            for field in sorted(set(used[s.name])):
                low, high = PARAM_LIMITS[field]
                for v in s.values:
                    if not v.isdigit() or not low <= int(v) <= high:
                        self.error(
                            s.span,
                            f"'{v}' cannot be used as {field} (${s.name}): it "
                            f"must be a whole number from {low} to {high}",
                        )
        cells = max(1, len(self.exp.variants)) * self.exp.repeat
        for s in self.exp.sweeps:
            cells *= max(1, len(s.values))
        if cells > MAX_CELLS:
            self.error(
                self.exp.span,
                f"the run matrix has {cells} cells (variants x vary "
                f"values x repeat); at most {MAX_CELLS}",
                "vary fewer values or repeat fewer times",
            )

    # --- steps, timeline, actions ---------------------------------------------------------

    def check_steps(self) -> None:
        seen: dict[str | None, int] = {}
        for step in self.exp.steps:
            key = step.workload if step.when == "after" else None
            label = "before load" if key is None else f"after {key}"
            if key in seen:
                self.error(
                    step.span,
                    f"there is already a '{label}' block (line {seen[key]})",
                    "put all its actions in one block",
                )
            seen.setdefault(key, step.span.line)
            if step.when == "after" and step.workload is not None:
                w = self.workload(step.workload, step.workload_span)
                if w is not None and not is_bounded(w):
                    self.error(
                        step.workload_span,
                        f"workload '{w.name}' never finishes on its own, so "
                        f"'after {w.name}' would never run",
                        f"bound '{w.name}': rows 5000, operations 1000 or duration 20s",
                    )
            for action in step.actions:
                self.check_action(action)

    def check_timeline(self) -> None:
        duration = self.exp.duration
        for timed in self.exp.timeline:
            if timed.at > duration:
                self.error(
                    timed.span,
                    f"at {timed.at:g}s is after the end of the load (duration {duration:g}s)",
                    "move the action earlier or lengthen the experiment: duration ...",
                )
            elif isinstance(timed.action, NodeGroupAction) and \
                    timed.at + timed.action.within > duration:
                a = timed.action
                self.error(
                    a.within_span,
                    f"the kills of this action run until {timed.at + a.within:g}s (at "
                    f"{timed.at:g}s within {a.within:g}s), after the end of the load "
                    f"(duration {duration:g}s)",
                    "shorten the window, move the action earlier or lengthen the experiment",
                )
            elif timed.lasts is not None and timed.at + timed.lasts > duration:
                ends = timed.at + timed.lasts
                self.error(
                    timed.span,
                    f"the fault at {timed.at:g}s would be undone at {ends:g}s, after the end "
                    f"of the load (duration {duration:g}s)",
                    "shorten it, lengthen the experiment, or leave it in place: for good",
                )
            self.check_action(timed.action)

    def check_triggers(self) -> None:
        """``when CONDITION ACTION [for D] [within D]``."""
        duration = self.exp.duration
        tabled = [w for w in self.exp.workloads if w.kind not in ("connect", "sysbench")]
        for trig in self.exp.triggers:
            cond = trig.condition
            info = self.node(cond.node)
            if cond.metric == "replication_lag" and info is not None and (
                    self.kind != "replication" or info.role != "replica"):
                self.error(
                    cond.node.span,
                    f"replication_lag({info.name}): the lab measures lag on the replicas of a "
                    "replication topology",
                    f"name a replica: {self.replicas() or '(this topology has none)'}",
                )
            if cond.metric == "rows" and not tabled:
                self.error(
                    cond.span,
                    "rows(...) counts the rows of the workloads' tables, and no workload here "
                    "has a table",
                    "add a workload that writes: unique_writes, unique_insert, probe or "
                    "read_your_writes",
                )
            if self.kind == "mongodb_replset":
                self.error(cond.span, "a 'when' condition reads MySQL-family servers; this "
                           "topology runs MongoDB")
            if isinstance(trig.action, (WaitUntil, Sleep)):
                self.error(
                    trig.action.span,
                    f"'{describe(trig.action)}' does nothing a 'when' could fire",
                    "fire a fault: when ... kill db1, when ... cpu limit db1 to 20%",
                )
            if trig.within is not None and trig.within > duration:
                self.error(
                    trig.span,
                    f"within {trig.within:g}s reaches after the end of the load (duration "
                    f"{duration:g}s)",
                    "shorten it or lengthen the experiment",
                )
            self.check_action(trig.action)

    def check_cgroup_limit(self, a: CpuLimit | MemoryLimit) -> None:
        self.node(a.node)
        if self.kind == "mongodb_replset":
            self.error(a.span, f"'{a.action} {a.verb}' moves a MySQL-family server into a "
                       "cgroup; this topology runs MongoDB")
        if isinstance(a, CpuLimit) and a.share is not None and a.share > MAX_CPU_SHARE:
            self.error(a.span, f"cpu limit {a.share * 100:g}% is more than "
                       f"{MAX_CPU_SHARE * 100:g}% ({MAX_CPU_SHARE:g} cores)",
                       "a limit is a share of one core: 20% is a fifth of a core")
        if isinstance(a, MemoryLimit) and a.limit is not None and a.limit < MIN_MEMORY:
            self.error(a.span, f"memory limit {a.limit} bytes is below "
                       f"{MIN_MEMORY // 1024**2}M, less than any server needs to run",
                       "use e.g. memory limit db1 to 200M")

    def check_clock(self, a: ClockSkew) -> None:
        self.node(a.node)
        if self.kind == "mongodb_replset":
            self.error(a.span, "clock skew preloads libfaketime into a MySQL-family server; "
                       "this topology runs MongoDB")
        if abs(a.offset) > MAX_SKEW:
            self.error(a.span, f"a skew of {a.offset:g}s is more than {MAX_SKEW:g}s either way",
                       "skews of seconds to hours show what a DBA meets")

    def check_action(self, a: Action) -> None:
        """Each action's own checks (``ACTION_CHECKS``: one row per action)."""
        check = ACTION_CHECKS.get(type(a))
        if check is not None:
            check(self, a)

    def target(self, a: NodeAction | NetworkFault) -> NodeInfo | None:
        """The node an action addresses; ``router.writer`` is resolved when it fires (it
        needs a router, and an action that may address it)."""
        ref = a.node
        if ref is None or not ref.name.startswith("router."):
            return self.node(ref)
        if ref.name != ROUTER_WRITER:
            self.error(
                ref.span,
                f"'{ref.name}' spreads over several nodes; only router.writer names one node "
                "when the action fires",
                "name the node, or use router.writer",
            )
        elif self.exp.router is None:
            self.error(
                ref.span,
                "'router.writer' needs a router: it is the node the router sends writes to "
                "when the action fires",
                "add: router haproxy { writer db1 }",
            )
        elif not takes_router_writer(a):
            self.error(
                ref.span,
                f"'{describe(a)}' cannot address router.writer",
                "router.writer is for kill, pause, stop, restart, cold restart and the network "
                "faults of one node; a recovery names the node itself",
            )
        return None

    def check_node_action(self, a: NodeAction) -> None:
        if a.node.name == ROUTER_PROCESS:
            self.check_router_process(a)
            return
        self.target(a)
        self.check_settings(a.options, a.span, "option")
        if a.lose_unsynced:
            self.check_unsynced(a.span, [a.node.name])

    def check_router_process(self, a: NodeAction) -> None:
        """``kill router`` ...: the router's own process, ProxySQL's (natively: the back-ends'
        ``RouterProcess``, ``check_backend``)."""
        r = self.exp.router
        if r is None:
            self.error(a.node.span, "'router' names the router's process, and there is no router",
                       "add: router proxysql { writer db1 }")
        elif r.kind != "proxysql":
            self.error(a.node.span, f"the {r.kind} router's own process cannot be faulted yet",
                       "router proxysql: kill, pause, resume, stop, start, restart router")
        if a.verb not in ROUTER_VERBS:
            self.error(a.span, f"'{a.verb.replace('_', ' ')} router' is not a router fault",
                       "kill, pause, resume, stop, start or restart router")
        if a.options or a.lose_unsynced:
            self.error(a.span, "the router's process takes no options")

    def check_node_group(self, a: NodeGroupAction) -> None:
        """``kill g1, g2 within 2s``, ``start g1, g2``: known nodes (named once: the builder),
        a window of at most ``MAX_CRASH_WINDOW``."""
        for ref in a.nodes:
            self.node(ref)
        if a.within > MAX_CRASH_WINDOW:
            self.error(a.within_span, f"a window of {a.within:g}s is more than "
                       f"{MAX_CRASH_WINDOW:g}s", "a coordinated crash spreads its kills over "
                       "seconds: within 2s")
        if a.lose_unsynced:
            self.check_unsynced(a.span, [r.name for r in a.nodes])

    def check_unsynced(self, span: Span, names: list[str]) -> None:
        """``losing unsynced writes``: lab-iofs keeps the unsynced writes of a MySQL-family
        server's data directory; not with a full disk (a tmpfs) on the same node."""
        if self.kind == "mongodb_replset":
            self.error(span, "'losing unsynced writes' puts a MySQL-family server's data "
                       "directory on lab-iofs; this topology runs MongoDB")
        actions = self._all_actions()  # (containers: refused by dsl.backends)
        for name in names:
            if any(isinstance(x, DiskFault) and x.verb == "full" and x.node.name == name
                   for x in actions):
                self.error(span, f"'{name}' has both 'losing unsynced writes' (lab-iofs, FUSE) "
                           "and 'disk full' (a tmpfs): one data directory cannot be on both")

    def check_drop_caches(self, a: DropCaches) -> None:
        self.node(a.node)

    def check_replication_control(self, a: ReplicationControl) -> None:
        info = self.node(a.node)
        if self.kind not in ("replication", "primary_primary"):
            self.error(
                a.span,
                f"'{a.verb} replication' controls asynchronous replication, "
                f"which a {self.kind} topology does not have",
            )
        elif info is not None and info.role == "primary":
            self.error(
                a.node.span,
                f"'{a.node.name}' is the primary: it does not replicate from anyone",
                f"use a replica: {self.replicas()}",
            )

    def check_disk(self, a: DiskFault) -> None:
        self.node(a.node)
        if self.kind == "mongodb_replset":
            self.error(
                a.span,
                f"'disk {a.verb}' fills a MySQL-family server's data directory; "
                "this topology runs MongoDB",
            )
        elif a.target == "binlog" and self.kind == "single" and not self.sets_log_bin():
            self.error(
                a.span,
                f"'disk {a.verb} {a.node.name} binlog' fills the filesystem of the binary logs; "
                "a single server writes none unless the file turns them on",
                "give them a base name: config { log_bin = mysql-bin }",
            )

    def sets_log_bin(self) -> bool:
        """A config block or variant of the file names the binary logs (``log_bin``)."""
        blocks = [b.settings for b in (*self.exp.configs, *self.exp.topology.configs)]
        blocks += [v.settings for v in self.exp.variants]
        return any(normal_key(k) == "log_bin" for b in blocks for k in b)

    def _all_actions(self) -> list[Action]:
        return ([t.action for t in self.exp.timeline] + [a for s in self.exp.steps
                                                         for a in s.actions]
                + [t.action for t in self.exp.triggers])

    def check_io(self, a: IoFault) -> None:
        self.node(a.node)
        name = a.node.name
        if self.kind == "mongodb_replset":
            self.error(a.span, f"'io {a.verb}' puts a MySQL-family server's data directory on "
                       "lab-iofs; this topology runs MongoDB")
        if a.delay is not None and a.delay > MAX_IO_DELAY:
            self.error(a.span, f"an io delay of {a.delay:g}s per operation is more than "
                       f"{MAX_IO_DELAY:g}s", "a stalled disk is tens to hundreds of ms per "
                       "operation: io delay db1 200ms on fsyncs")
        actions = self._all_actions()
        if a.verb == "heal" and name not in iofs_nodes(actions):
            self.error(a.node.span, f"'{name}' has no io delay or io fail in the file, so its "
                       "data directory is not on lab-iofs: there is nothing to heal",
                       f"add e.g. io delay {name} 100ms on fsyncs before it")
        if a.verb != "heal" and any(isinstance(x, DiskFault) and x.verb == "full" and
                                    x.node.name == name for x in actions):
            self.error(a.span, f"'{name}' has both an io fault (lab-iofs, FUSE) and 'disk "
                       "full' (a tmpfs): one data directory cannot be on both",
                       "put the io fault and the full disk on different nodes")

    def check_set_global(self, a: SetGlobal) -> None:
        for ref in a.nodes:
            self.node(ref)
        if self.kind == "mongodb_replset":
            self.error(
                a.span,
                "'set global' changes a MySQL-family server variable; "
                "this topology runs MongoDB",
            )

    def check_convert(self, a: ConvertStandalone) -> None:
        self.node(a.node)
        if self.kind != "mongodb_replset":
            self.error(
                a.span,
                f"'convert ... to standalone' turns a MongoDB replica set "
                f"member into a standalone server; this topology is {self.kind}",
            )

    def check_sql(self, a: RunSql) -> None:
        self.endpoint(a.node)
        if self.kind == "mongodb_replset":
            self.error(a.span, "'execute' runs SQL; this topology runs MongoDB")

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

    def check_promote(self, a: Promote) -> None:
        info = self.node(a.node)
        if self.kind in ("galera", "primary_primary", "single"):
            reason = {
                "galera": "every galera node already takes writes",
                "primary_primary": "both nodes already take writes",
                "single": "a single server has no replica to promote",
            }[self.kind]
            self.error(a.span, f"cannot promote a node in a {self.kind} topology: {reason}")
        elif info is not None and info.role == "primary":
            self.error(
                a.node.span,
                f"'{a.node.name}' is already the primary",
                f"promote a replica: {self.replicas()}",
            )

    def check_network(self, a: NetworkFault) -> None:
        self.target(a)
        if a.link == "replication" and self.kind not in ("replication", "primary_primary"):
            hint = "use: on group" if self.kind in ("galera", "mongodb_replset") else None
            self.error(a.span, f"a {self.kind} topology has no asynchronous replication link", hint)
        if a.link == "group" and self.kind not in ("galera", "mongodb_replset"):
            hint = "use: on replication" if self.kind != "single" else None
            self.error(
                a.span,
                f"'group' is the link between galera nodes or replica set "
                f"members; this topology is {self.kind}",
                hint,
            )

    def check_wait(self, a: WaitUntil) -> None:
        cond = a.condition
        if cond == "primary_elected":
            if a.node is not None:
                self.error(
                    a.node.span,
                    "'primary_elected' is about the whole replica set; it takes no node",
                    "wait until primary_elected timeout 30s",
                )
            if self.kind != "mongodb_replset":
                self.error(
                    a.span,
                    f"'primary_elected' is for a MongoDB replica set; a "
                    f"{self.kind} topology elects no primary",
                )
            return
        if a.node is None:
            self.error(
                a.span,
                f"'wait until {cond}' needs a node",
                f"wait until {self.node_list[0].name} {cond}",
            )
            return
        info = self.node(a.node)
        if cond == "synced" and self.kind != "galera":
            self.error(
                a.span,
                f"'synced' is a galera node state; this topology is {self.kind}",
                "for a replica use: caught_up" if self.kind != "single" else None,
            )
        elif cond in ("caught_up", "downloaded"):
            allowed = ("replication", "primary_primary") + (
                ("mongodb_replset",) if cond == "caught_up" else ()
            )
            if self.kind not in allowed:
                self.error(
                    a.span,
                    f"'{cond}' is about a replica; a {self.kind} topology has none",
                    "for a galera node use: synced" if self.kind == "galera" else None,
                )
            elif info is not None and info.role == "primary" and not self.promotes():
                # after a promote the first primary rejoins as a replica: it may be waited for
                self.error(
                    a.node.span,
                    f"'{a.node.name}' is the primary; '{cond}' is about a replica",
                    f"use a replica: {self.replicas()}",
                )

    # --- expectations and reports ---------------------------------------------------------

    def check_measurements(self) -> None:
        for e in self.exp.expectations:
            self.check_variant(e.variant, e.variant_span)
            if e.other is not None:
                self.check_claim(e)
                continue
            self.check_metric(e.metric, e.value)
            if e.high is not None:
                self.check_metric(e.metric, e.high)
        for r in self.exp.reports:
            self.check_metric(r.metric, None)

    def check_variant(self, name: str | None, span: Span) -> None:
        if name is None:
            return
        known = [v.name for v in self.exp.variants]
        if name not in known:
            self.error(
                span,
                f"unknown variant '{name}' (known: {listing(known)})",
                did_you_mean(name, known) or "define it: variant NAME { setting = value }",
            )

    def check_claim(self, e: Expectation) -> None:
        """``expect M in V1 >= 1.3 * M2 in V2``: both sides measured, of one unit."""
        assert e.other is not None
        self.check_variant(e.other_variant, e.other_variant_span)
        self.check_metric(e.metric, None)
        self.check_metric(e.other, None)
        units = []
        for m in (e.metric, e.other):
            spec = METRICS[m.name]
            stat = resolve_stat(m.name, m.stat)
            units.append(spec.stats.get(stat))
        if None not in units and units[0] != units[1]:
            self.error(
                e.span,
                f"the two sides of this claim measure different things: a {units[0]} and a "
                f"{units[1]}",
                "compare a figure with the same figure in another variant",
            )

    def check_metric(self, m: Metric, value: Quantity | None) -> None:
        spec = METRICS[m.name]
        if m.name == "failover" and not self.promotes():
            self.error(m.span, "failover measures the first promote, and this experiment has "
                       "none: the figure would be unknown",
                       f"promote a replica: at 10s promote {self.first_replica()}"
                       if self.kind in ("replication", "mongodb_replset") else
                       f"a {self.kind} topology has no promote: downtime(w) is what the "
                       "clients saw")
        if m.name == "router_failover" and self.exp.router is None:
            self.error(m.span, "router_failover measures the router moving the writes, and "
                       "this experiment has no router: the figure would be unknown",
                       "add: router proxysql { writers db1, db2 }")
        if m.name == "split_brain" and self.kind in SPLIT_BRAIN_UNDEFINED:
            self.error(m.span, f"split_brain is unknown on {self.kind}: "
                       f"{SPLIT_BRAIN_UNDEFINED[self.kind]}",
                       "on two primaries, lost_writes and divergence say what the "
                       "conflicts did" if self.kind == "primary_primary" else None)
        subject_span = m.subject_span if m.subject_span != NO_SPAN else m.span
        workload: Workload | None = None
        if spec.subject == "node":
            if m.subject is None:
                self.error(m.span, f"{m.name} needs a node: {m.name}({self.first_replica()})")
            else:
                self.check_node_metric(m, NodeRef(name=m.subject, span=subject_span))
        elif m.subject is None:
            if spec.subject == "workload":
                self.error(
                    m.span,
                    f"{m.name} needs a workload: {m.name}(w) (known: {listing(self.workloads)})",
                )
        else:
            workload = self.workload(m.subject, subject_span)
            if (
                workload is not None
                and spec.workload_kinds is not None
                and workload.kind not in spec.workload_kinds
            ):
                kinds = " or ".join(sorted(spec.workload_kinds))
                self.error(
                    subject_span,
                    f"{m.name} is measured on a {kinds} workload; "
                    f"'{workload.name}' is a {workload.kind}",
                )
        if m.on is not None:
            self.check_on(m, spec.on, workload)
        if m.code is not None and not spec.code:
            self.error(m.span, f"only errors() takes an error code, not {m.name}()")
        if m.stat is not None and m.stat not in spec.stats:
            self.error(
                m.span,
                f"{m.name} has no statistic '{m.stat}' (known: {listing(spec.stats)})",
                did_you_mean(m.stat, spec.stats),
            )
            return
        if m.last is not None:
            if not spec.last:
                self.error(
                    m.span,
                    f"'last' does not apply to {m.name}",
                    "it applies to throughput, latency, errors, stalls, replication_lag",
                )
            elif m.last > self.exp.duration:
                self.error(
                    m.span, f"last {m.last:g}s is longer than the load ({self.exp.duration:g}s)"
                )
        if value is not None:
            stat = resolve_stat(m.name, m.stat, value.kind)
            what = m.name if m.stat is None else f"{m.name}.{m.stat}"
            problem = kind_problem(value, (spec.stats[stat],), what)
            if problem:
                self.error(value.span if value.span != NO_SPAN else m.span, *problem)
            elif value.kind == "percent" and value.value > 1.0:
                self.error(value.span, f"a ratio cannot exceed 100%, not {value.text}")

    def first_replica(self) -> str:
        replicas = [n.name for n in self.node_list if n.role == "replica"]
        return (replicas or [n.name for n in self.node_list] or ["db2"])[0]

    def check_node_metric(self, m: Metric, ref: NodeRef) -> None:
        spec = METRICS[m.name]
        info = self.node(ref)
        if self.kind not in spec.topologies:
            self.error(
                m.span,
                f"{m.name} is measured on a replica; a {self.kind} topology has none"
                if self.kind != "galera"
                else f"{m.name} is measured on a replica; galera nodes are not replicas",
            )
        elif (
            info is not None
            and spec.replica_only
            and info.role == "primary"
            and not self.promotes()
        ):
            self.error(
                ref.span,
                f"'{ref.name}' is the primary; {m.name} is measured on a replica",
                f"use a replica: {self.replicas()}",
            )

    def promotes(self) -> bool:
        """A replica is promoted somewhere in the timeline or steps: the first primary can end
        as a replica (it rejoins), so replica figures may name it."""
        actions = [t.action for t in self.exp.timeline] + [
            a for s in self.exp.steps for a in s.actions
        ] + [t.action for t in self.exp.triggers]
        return any(isinstance(a, Promote) for a in actions)

    def check_on(self, m: Metric, allowed: bool, workload: Workload | None) -> None:
        on_span = m.on_span if m.on_span != NO_SPAN else m.span
        if not allowed:
            self.error(on_span, f"'on' does not apply to {m.name}")
            return
        endpoints = [] if workload is None else [
            e.name for e in list(workload.targets) + list(workload.reads)]
        if m.name == "downtime" and workload is not None:
            # downtime is measured per endpoint: `on` names one of the workload's
            if m.on not in endpoints:
                self.error(on_span, f"'{m.on}' is not an endpoint of workload "
                           f"'{workload.name}' ({listing(endpoints)}): downtime(w on E) is "
                           "what w saw through endpoint E",
                           did_you_mean(m.on or "", endpoints))
            return
        if (m.on or "").startswith("router."):
            if m.name == "errors" and workload is not None:
                if m.on not in endpoints:  # what went through it and no server answered
                    self.error(on_span, f"'{m.on}' is not an endpoint of workload "
                               f"'{workload.name}' ({listing(endpoints)})")
                return
            self.error(on_span, f"{m.name}(w on N) names the node that answered, not a "
                       "router endpoint", f"a node: {listing(self.nodes)}")
            return
        info = self.node(NodeRef(name=m.on or "", span=on_span))
        if info is None or workload is None or m.name == "divergence":
            return  # divergence(w on n): the rows of w's tables on any node
        if any(e.startswith("router.") for e in endpoints):
            return
        if info.name not in endpoints:
            self.error(
                on_span,
                f"'{info.name}' is not one of the nodes of workload "
                f"'{workload.name}' ({listing(endpoints)})",
            )


# What validation checks of each action (``Sleep`` has nothing to check).
ACTION_CHECKS: dict[type, Callable[[_Validator, Any], None]] = {
    NodeAction: _Validator.check_node_action,
    NodeGroupAction: _Validator.check_node_group,
    DropCaches: _Validator.check_drop_caches,
    Promote: _Validator.check_promote,
    ReplicationControl: _Validator.check_replication_control,
    NetworkFault: _Validator.check_network,
    DiskFault: _Validator.check_disk,
    CpuLimit: _Validator.check_cgroup_limit,
    MemoryLimit: _Validator.check_cgroup_limit,
    ClockSkew: _Validator.check_clock,
    IoFault: _Validator.check_io,
    SetGlobal: _Validator.check_set_global,
    ConvertStandalone: _Validator.check_convert,
    WaitUntil: _Validator.check_wait,
    RunSql: _Validator.check_sql,
}


def validate(exp: Experiment, path: str | None = None) -> list[LanguageError]:
    """Every semantic error of an experiment, sorted by position (empty: valid)."""
    from dsl.space import space_errors  # the fault space (lab explore)

    where = path or exp.source or "<string>"
    return sorted_errors(_Validator(exp, where).run() + space_errors(exp, where))
