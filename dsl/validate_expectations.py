"""Validation of the expectations, claims and reports of an experiment (a part of
``dsl.validate``)."""

from __future__ import annotations

from dsl.metrics import METRICS, SPLIT_BRAIN_UNDEFINED, resolve_stat
from dsl.models import (
    NO_SPAN,
    Expectation,
    Metric,
    NodeRef,
    Quantity,
    Span,
    Workload,
)
from dsl.units import kind_problem
from dsl.validate_base import (
    did_you_mean,
    listing,
)
from dsl.validate_steps import StepChecks


class ExpectationChecks(StepChecks):
    """Checks of the expectations, claims and reports."""

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
                if workload.kind == "sysbench" and m.name == "downtime":
                    where = ", ".join(t.name for t in workload.targets) or "db1"
                    self.error(
                        subject_span,
                        f"{m.name} is measured from each operation, and sysbench records "
                        f"per-second rows only; '{workload.name}' is a sysbench",
                        "a probe or unique_writes beside it measures downtime: "
                        f"workload p: probe {{ target {where}  operation read }}",
                    )
                else:
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
        if m.window is not None:
            a, b = m.window
            if not spec.last:
                self.error(
                    m.span,
                    f"'from ... to' does not apply to {m.name}",
                    "it applies to throughput, latency, errors, stalls, replication_lag",
                )
            elif m.last is not None:
                self.error(m.span, "one window per figure: 'last N' or 'from A to B'",
                           f"write {m.name}(...) from {max(0.0, self.exp.duration - m.last):g}s "
                           f"to {self.exp.duration:g}s for the last {m.last:g} s")
            elif a >= b:
                self.error(m.span, f"from {a:g}s to {b:g}s is empty: the window's start "
                           "comes first")
            elif b > self.exp.duration:
                self.error(m.span, f"to {b:g}s is after the end of the load "
                           f"({self.exp.duration:g}s)")
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
