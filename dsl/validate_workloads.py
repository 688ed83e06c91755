"""Validation of the workloads and sweeps of an experiment (a part of ``dsl.validate``)."""

from __future__ import annotations

from dsl.models import (
    TXN_WORKLOADS,
    Endpoint,
    NodeRef,
    Workload,
)
from dsl.validate_base import (
    MAX_CELLS,
    PARAM_LIMITS,
    SAFE_SCRIPT_PATH,
    SYSBENCH_SCRIPTS,
    did_you_mean,
    is_bounded,
    listing,
    workload_params,
)
from dsl.validate_topology import TopologyChecks


class WorkloadChecks(TopologyChecks):
    """Checks of the workloads and sweeps."""

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
