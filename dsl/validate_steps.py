"""Validation of the steps, the timeline, triggers and every action of an experiment (a part of
``dsl.validate``; ``ACTION_CHECKS``: what is checked of each action)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dsl.actions import (
    ROUTER_PROCESS,
    ROUTER_VERBS,
    ROUTER_WRITER,
    describe,
    takes_router_writer,
)
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
    Promote,
    ReplicationControl,
    RunSql,
    SetGlobal,
    Sleep,
    Span,
    WaitUntil,
)
from dsl.owned import normal_key
from dsl.plan import iofs_nodes
from dsl.validate_base import (
    MAX_CPU_SHARE,
    MAX_CRASH_WINDOW,
    MAX_IO_DELAY,
    MAX_SKEW,
    MIN_MEMORY,
    NodeInfo,
    is_bounded,
)
from dsl.validate_workloads import WorkloadChecks


class StepChecks(WorkloadChecks):
    """Checks of the steps, timeline, triggers and actions."""

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


# What validation checks of each action (``Sleep`` has nothing to check).
ACTION_CHECKS: dict[type, Callable[[StepChecks, Any], None]] = {
    NodeAction: StepChecks.check_node_action,
    NodeGroupAction: StepChecks.check_node_group,
    DropCaches: StepChecks.check_drop_caches,
    Promote: StepChecks.check_promote,
    ReplicationControl: StepChecks.check_replication_control,
    NetworkFault: StepChecks.check_network,
    DiskFault: StepChecks.check_disk,
    CpuLimit: StepChecks.check_cgroup_limit,
    MemoryLimit: StepChecks.check_cgroup_limit,
    ClockSkew: StepChecks.check_clock,
    IoFault: StepChecks.check_io,
    SetGlobal: StepChecks.check_set_global,
    ConvertStandalone: StepChecks.check_convert,
    WaitUntil: StepChecks.check_wait,
    RunSql: StepChecks.check_sql,
}
