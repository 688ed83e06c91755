"""``lab compare``: stored runs side by side, or the variants of one run with their repeats
aggregated. The library half: which figures, their values, the ratios and the statistics;
``lab.report.compare_render`` draws them (rich, Markdown, JSON).

Figures are named in the language's words (``latency(ryw).p99``, ``throughput(rw).mean last
10s``), in this order:

1. the figures of the run's ``expect`` and ``report`` lines, as they were measured then;
2. the headline figures of each workload and node (what the end-of-run matrix shows):
   downtime, stale reads and visibility (``read_your_writes`` only), lost writes, duplicate
   keys (inserts that can collide), errors, throughput, latency, replication lag, failover;
3. with ``last``: the per-second series over the last N seconds of the load, as benchmark
   write-ups quote them — ``throughput(w).mean``, ``latency(w).p50``/``.p99`` (from the
   operations; for sysbench, over its per-second p95) and ``replication_lag(n).mean``/``.max``
   (from the lag samples) — each with exactly the meaning of ``expect … last N``.

Every value is read by ``lab.judge.expectations.measure`` (the reader ``expect`` uses), from the
checkers' stored metrics, samples and operations; a figure that cannot be measured is unknown
with the reason, and a lower bound stays a lower bound (``≥``).

``compare_runs``: the cells of several runs (``RUN`` is every cell of a run, ``RUN:N`` its cell
N); rows are the figures every one of them has; ratios against the first.
``compare_variants``: the cells of one run grouped by variant and sweep values; each group's
repeats give a median, min–max and a confidence interval (``lab.report.stats``); the ratio of
medians is against the base variant at the same sweep values (the first variant, or ``base``), or,
without variants, against the first group (or the group named ``base``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard, cast

from dsl.metrics import METRICS as METRIC_SPECS
from dsl.models import Metric, Quantity, UnitKind
from lab.figures_format import format_figure, format_value
from lab.history import Op
from lab.judge.checkers.base import CheckContext, CheckResult, WorkloadInfo
from lab.judge.checkers.base import summary as stat_summary
from lab.judge.claims import claim_lines
from lab.judge.expectations import Unmeasurable, measure, metric_text
from lab.judge.figures_lookup import window_between, window_words
from lab.report.metrics import compared, last_from_operations, workload_sources
from lab.report.rows import cell_info
from lab.report.stats import CI_METHOD, Ratio, Spread, ratio, spread
from lab.run.context import run_warnings, summary_identity
from lab.store.db import Store, StoreError

WRITE_KINDS = METRIC_SPECS["lost_writes"].workload_kinds or frozenset()


class CompareError(StoreError):
    """What was asked cannot be compared (the message says why); the CLI exits 2."""


# --- values -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Value:
    """One figure of one cell: ``value`` None is unknown, with the reason in ``why``."""

    value: float | None
    unit: UnitKind | None = None
    lower_bound: bool = False
    why: str | None = None

    def text(self, name: str = "") -> str:
        if self.value is None or self.unit is None:
            return "unknown"
        return format_figure(self.value, self.unit, self.lower_bound, name)

    def to_json(self, name: str = "") -> dict[str, Any]:
        return {"value": self.value, "unit": self.unit, "lower_bound": self.lower_bound,
                "text": self.text(name), "why": self.why}  # fmt: skip


def format_ratio(r: float) -> str:
    """Three significant digits, as every figure: ``0.500×``, ``1.50×``, ``2.00×``, ``12.3×``,
    ``1,234×`` (``format_value`` writes a whole number without decimals: they are added)."""
    text = format_value(r, "count")
    if float(r).is_integer() and abs(r) < 100:
        text = f"{r:.{2 if abs(r) < 10 else 1}f}"
    return text + "×"


def ratio_text(r: Ratio | None) -> str:
    """``1.23×``, ``≥ 2.50×``; ``–`` when the ratio is not defined (base 0, unknown)."""
    if r is None or r.value is None:
        return "–"
    shown = format_ratio(r.value)
    return f"{r.bound} {shown}" if r.bound else shown


# --- one cell: its figures and how to measure them ----------------------------------------------


def _num(v: Any) -> TypeGuard[int | float]:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(float(v))


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def facts_of(metrics: dict[str, Any]) -> dict[str, Any]:
    """``ctx.facts`` again from the facts checker's metrics (``lab.judge.checkers.facts``)."""
    facts = {k: v for k, v in metrics.items() if k != "subjects"}
    for subject, figs in _dict(metrics.get("subjects")).items():
        for name, v in _dict(figs).items():
            facts.setdefault(name, {})[subject] = v
    return facts


@dataclass
class CellData:
    """A stored cell, ready to be measured."""

    run_id: str
    experiment: str
    summary: dict[str, Any]
    cell: dict[str, Any]
    results: dict[str, CheckResult]
    ctx: CheckContext
    store: Store | None = None
    _history: list[Op] | None = field(default=None, repr=False)

    @property
    def index(self) -> int:
        return int(self.cell.get("index") or 0)

    @property
    def label(self) -> str:
        return str(self.cell.get("label") or f"cell {self.index}")

    def history(self) -> list[Op] | None:
        """The cell's operations (read once, when a figure needs them)."""
        if self._history is None and self.store is not None:
            self._history = self.store.operations(self.run_id, self.index)
        return self._history


def load_cell(store: Store | None, summary: dict[str, Any], cell: dict[str, Any]) -> CellData:
    """A cell of a run's summary with what ``measure`` needs: the checkers' results (their
    verdicts from the ``checks`` table when there is a store), workload kinds, the load window,
    the samples and the facts."""
    rid = str(summary.get("run_id"))
    idx = int(cell.get("index") or 0)
    results = {name: CheckResult(name, True if m else None, m if isinstance(m, dict) else {})
               for name, m in _dict(cell.get("measurements")).items()}  # fmt: skip
    load_start = load_end = None
    samples = []
    if store is not None:
        for ch in store.checks(rid, idx):
            results[ch["checker"]] = CheckResult(ch["checker"], ch["valid"], ch["metrics"] or {},
                                                 ch["details"] or "")  # fmt: skip
        row = store.conn.execute(
            "select load_start_ns, load_end_ns from cells where run_id = ? and idx = ?", [rid, idx]
        ).fetchone()
        if row:
            load_start, load_end = row
        samples = store.samples(rid, idx)
    info = cell_info(summary, cell)
    ctx = CheckContext(
        workloads={w: WorkloadInfo(k) for w, k in info.kinds.items()},
        load_start=load_start,
        load_end=load_end,
        samples=samples,
        facts=facts_of(results["facts"].metrics) if "facts" in results else {},
    )
    return CellData(rid, str(summary.get("experiment")), summary, cell, results, ctx, store)


def _metric(name: str, subject: str | None = None, stat: str | None = None,
            on: str | None = None, last: float | None = None) -> Metric:  # fmt: skip
    return Metric(name=cast(Any, name), subject=subject, on=on, stat=stat, last=last)


def _subjects(data: CellData, checker: str) -> dict[str, dict[str, Any]]:
    r = data.results.get(checker)
    s = _dict(r.metrics.get("subjects")) if r is not None else {}
    return {k: v for k, v in s.items() if isinstance(v, dict)}


def _workloads(data: CellData) -> list[str]:
    names: list[str] = []
    for checker in workload_sources():
        names += [s for s in _subjects(data, checker) if " on " not in s and s not in names]
    return names


def headline_metrics(data: CellData, last: float | None = None) -> list[Metric]:
    """The figures of a cell worth comparing (the matrix's: ``lab.report.metrics``'s
    ``compare``), and with ``last`` the per-second series over the last N seconds."""
    info = cell_info(data.summary, data.cell)
    out: list[Metric] = []
    workloads = _workloads(data)
    per_workload = compared("workload")
    for w in workloads:
        kind = info.kind(w)
        for name, c in per_workload:
            subjects = _subjects(data, name)
            if not c.always and w not in subjects:
                continue
            if c.kinds is not None and kind not in c.kinds and not (
                    kind is None and c.guess is not None and subjects[w].get(c.guess)):
                continue
            out += [_metric(name, w, s) for s in c.stats]
            nodes = sorted(k.split(" on ", 1)[1] for k in subjects if k.startswith(f"{w} on "))
            for n in nodes if c.on_nodes else []:
                out += [_metric(name, w, s, on=n) for s in c.on_nodes]
    for name, c in compared("run"):
        if _dict(data.results.get(name, CheckResult(name, None)).metrics).get("count"):
            out += [_metric(name, None, s) for s in c.stats]
    per_node = [(name, c, sorted(_subjects(data, name))) for name, c in compared("node")]
    for name, c, nodes in per_node:
        for n in nodes:
            out += [_metric(name, n, s) for s in c.stats]
    if last is not None:
        for w in workloads:
            for name, c in per_workload:
                out += [_metric(name, w, s, last=last) for s in c.last]
        for name, c, nodes in per_node:
            for n in nodes:
                out += [_metric(name, n, s, last=last) for s in c.last]
    return out


def _sysbench_latency_last(data: CellData, m: Metric) -> Value | None:
    """``latency(sb).p99 last N`` of a sysbench workload: over its per-second p95 rows of the
    last N seconds (the reader of ``expect`` has no operations to use for sysbench)."""
    subj = _subjects(data, "latency").get(m.subject or "")
    if subj is None or subj.get("source") in (None, "ops") or not m.windowed:
        return None
    lo_hi = _last_window(data, m)
    if lo_hi is None:
        return Value(None, why="the load's window is not stored")
    lo, hi = lo_hi
    vals = [float(s.values["lat_p95"]) for s in data.ctx.samples
            if s.series == "sysbench" and s.subject == m.subject and lo <= s.time <= hi
            and _num(s.values.get("lat_p95"))]  # fmt: skip
    if not vals:
        return Value(None, why=f"no sysbench row of '{m.subject}' {window_words(m)}")
    st = stat_summary(vals)
    v = st.get(m.stat or "p99")
    return Value(float(v), "duration") if _num(v) else Value(None, why=f"no .{m.stat}")


def _last_window(data: CellData, m: Metric) -> tuple[int, int] | None:
    lo, hi = data.ctx.load_start, data.ctx.load_end
    if lo is None or hi is None:
        return None
    d = data.ctx.facts.get("duration")
    return window_between(m, lo, hi, float(d) if isinstance(d, int | float) else None)


def figure_name(m: Metric) -> str:
    """``latency(sb).p99 of per-second p95 last 10s`` for sysbench latency, else the
    language's words."""
    return metric_text(m)


def measure_metric(data: CellData, m: Metric) -> Value:
    """The figure ``m`` names in this cell (unknown with the reason when it cannot be
    measured)."""
    if m.name == "latency" and m.windowed:
        got = _sysbench_latency_last(data, m)
        if got is not None:
            return got
    history = None
    if m.windowed and last_from_operations(m.name):
        history = data.history()
        if history is None:
            return Value(None, why="'last' needs the operations, and no store was given")
    try:
        got_m = measure(m, Quantity(value=0, kind="count", text=""), data.results, data.ctx,
                        history)  # fmt: skip
    except Unmeasurable as e:
        return Value(None, why=str(e))
    except Exception as e:  # noqa: BLE001 - one figure that cannot be read is unknown, not a crash
        return Value(None, why=f"{type(e).__name__}: {e}")
    return Value(got_m.value, got_m.unit, got_m.lower_bound)


def stored_figures(cell: dict[str, Any]) -> dict[str, Value]:
    """The figures of the cell's ``expect`` and ``report`` lines, as measured in the run, by
    their metric text."""
    out: dict[str, Value] = {}
    for e in cell.get("expectations") or []:
        name = str(e.get("metric") or "")
        if not name or name in out:
            continue
        v = e.get("measured")
        unit = e.get("unit")
        if _num(v) and isinstance(unit, str):
            out[name] = Value(float(v), cast(UnitKind, unit), bool(e.get("lower_bound")))
        else:
            out[name] = Value(None, why=str(e.get("explanation") or "unknown"))
    for r in cell.get("reports") or []:
        name = str(r.get("metric") or "")
        if not name or name in out:
            continue
        v, unit, display = r.get("value"), r.get("unit"), str(r.get("display") or "")
        if _num(v) and isinstance(unit, str):
            out[name] = Value(float(v), cast(UnitKind, unit),
                              display.startswith(("≥", "at least")))  # fmt: skip
        else:
            out[name] = Value(None, why=display or "unknown")
    return out


def cell_figures(data: CellData, last: float | None = None) -> dict[str, Value | Metric]:
    """Figure name → its stored value (``expect``/``report`` lines) or the metric to measure,
    in the order of the module's docstring."""
    out: dict[str, Value | Metric] = dict(stored_figures(data.cell))
    for m in headline_metrics(data, last):
        out.setdefault(figure_name(m), m)
    return out


def value_of(data: CellData, fig: Value | Metric) -> Value:
    return fig if isinstance(fig, Value) else measure_metric(data, fig)


def _units(values: Sequence[Value]) -> UnitKind | None:
    return next((v.unit for v in values if v.unit is not None), None)


# --- runs side by side --------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    run_id: str
    experiment: str
    cell: int
    label: str  # the cell's label
    backend: str | None = None  # the run's identity (None: not recorded, an older run)
    topology: str | None = None
    mark: str = ""  # the back-end in the title, when the columns differ in it

    @property
    def title(self) -> str:
        return (f"{self.run_id[:8]} {self.experiment}" + (f" {self.label}" if self.label else "")
                + (f" [{self.mark}]" if self.mark else ""))

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "experiment": self.experiment, "cell": self.cell,
                "label": self.label, "title": self.title, "backend": self.backend,
                "topology": self.topology}  # fmt: skip


@dataclass(frozen=True)
class Row:
    figure: str
    unit: UnitKind | None
    values: list[Value]
    ratios: list[Ratio | None]  # against the first column; None for the first

    def to_json(self) -> dict[str, Any]:
        return {
            "figure": self.figure, "unit": self.unit,
            "values": [v.to_json(self.figure) for v in self.values],
            "ratios": [None if r is None else {**r.to_json(), "text": ratio_text(r)}
                       for r in self.ratios],
        }  # fmt: skip


@dataclass
class RunComparison:
    columns: list[Column]
    rows: list[Row]
    last: float | None = None
    warnings: list[str] = field(default_factory=list)  # identity_warnings

    def to_json(self) -> dict[str, Any]:
        return {"mode": "runs", "base": self.columns[0].to_json() if self.columns else None,
                "last": self.last, "warnings": self.warnings,
                "columns": [c.to_json() for c in self.columns],
                "rows": [r.to_json() for r in self.rows]}  # fmt: skip


def _split_ref(ref: str) -> tuple[str, int | None]:
    run, sep, cell = ref.rpartition(":")
    if sep and cell.isdigit():
        return run, int(cell)
    return ref, None


def select_cells(store: Store, refs: Sequence[str]) -> list[CellData]:
    """Every cell of each ``RUN``, or cell N of ``RUN:N``, in the order given."""
    out: list[CellData] = []
    for ref in refs:
        run, idx = _split_ref(ref)
        s = store.summary(run)
        cells = [c for c in s.get("cells") or [] if isinstance(c, dict)]
        if idx is not None:
            cells = [c for c in cells if c.get("index") == idx]
            if not cells:
                known = ", ".join(str(c.get("index")) for c in s.get("cells") or [])
                raise CompareError(
                    f"run {s['run_id']} has no cell {idx} (cells: {known or 'none'})")
        if not cells:
            raise CompareError(f"run {s['run_id']} has no cell with results")
        out += [load_cell(store, s, c) for c in cells]
    return out


def compare_cells(datas: Sequence[CellData], last: float | None = None) -> RunComparison:
    """Rows: the figures every cell has; values; ratios against the first cell."""
    figs = [cell_figures(d, last) for d in datas]
    names = [n for n in figs[0] if all(n in f for f in figs[1:])] if figs else []
    rows = []
    for name in names:
        values = [value_of(d, f[name]) for d, f in zip(datas, figs, strict=True)]
        base = values[0]
        ratios: list[Ratio | None] = [None] + [
            ratio(v.value, base.value, v.lower_bound, base.lower_bound) for v in values[1:]]
        rows.append(Row(name, _units(values), values, ratios))
    backends = {_identity(d, "backend") for d in datas}
    cols = [Column(d.run_id, d.experiment, d.index,
                   d.label if len(d.summary.get("cells") or []) > 1 else "",
                   _identity(d, "backend"), _identity(d, "topology"),
                   (_identity(d, "backend") or "back-end unknown") if len(backends) > 1 else "")
            for d in datas]
    return RunComparison(cols, rows, last, identity_warnings(datas))


def _identity(d: CellData, key: str) -> str | None:
    return summary_identity(d.summary, key)


def identity_warnings(datas: Sequence[CellData]) -> list[str]:
    """What differs between the runs compared beside the experiment (``lab.run.context``)."""
    return run_warnings([(d.run_id, d.summary) for d in datas])


def compare_runs(store: Store, refs: Sequence[str], last: float | None = None) -> RunComparison:
    if not refs:
        raise CompareError("name at least one run")
    datas = select_cells(store, refs)
    if len(datas) < 2:
        raise CompareError(
            f"run {datas[0].run_id} has one cell: name another run to compare it with, or "
            "use --variants for the cells of one run")
    return compare_cells(datas, last)


# --- variants of one run ------------------------------------------------------------------------


@dataclass
class Group:
    """The repeats of one variant at one set of sweep values."""

    label: str
    variant: str | None
    sweep: dict[str, str]
    cells: list[CellData] = field(default_factory=list)
    base: int | None = None  # index of the group its ratios are against (None: none)

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "variant": self.variant, "sweep": self.sweep,
                "cells": [d.index for d in self.cells], "base": self.base}  # fmt: skip


def group_label(variant: str | None, sweep: dict[str, Any]) -> str:
    parts = ([variant] if variant else []) + [f"{k}={v}" for k, v in sweep.items()]
    return " ".join(parts) or "default"


@dataclass(frozen=True)
class GroupFigure:
    spread: Spread
    values: list[Value]
    ratio: Ratio | None  # median against the base group's median; None for a base

    def to_json(self, name: str) -> dict[str, Any]:
        return {**self.spread.to_json(), "values": [v.to_json(name) for v in self.values],
                "ratio": None if self.ratio is None
                else {**self.ratio.to_json(), "text": ratio_text(self.ratio)}}  # fmt: skip


@dataclass(frozen=True)
class VariantRow:
    figure: str
    unit: UnitKind | None
    groups: list[GroupFigure]

    def to_json(self, groups: Sequence[Group]) -> dict[str, Any]:
        return {"figure": self.figure, "unit": self.unit,
                "groups": [{"group": g.label, **gf.to_json(self.figure)}
                           for g, gf in zip(groups, self.groups, strict=True)]}  # fmt: skip


@dataclass
class VariantComparison:
    run_id: str
    experiment: str
    groups: list[Group]
    rows: list[VariantRow]
    last: float | None = None
    ci_method: str = CI_METHOD
    claims: list[str] = field(default_factory=list)  # the run's claims across cells

    def to_json(self) -> dict[str, Any]:
        return {"mode": "variants", "run_id": self.run_id, "experiment": self.experiment,
                "last": self.last, "ci_method": self.ci_method, "claims": self.claims,
                "groups": [g.to_json() for g in self.groups],
                "rows": [r.to_json(self.groups) for r in self.rows]}  # fmt: skip


def group_cells(datas: Sequence[CellData]) -> list[Group]:
    """Cells grouped by (variant, sweep values), in the order of the plan."""
    groups: dict[tuple[str | None, tuple[tuple[str, str], ...]], Group] = {}
    for d in datas:
        variant = d.cell.get("variant")
        sweep = {str(k): str(v) for k, v in _dict(d.cell.get("sweep")).items()}
        key = (variant if isinstance(variant, str) else None, tuple(sweep.items()))
        if key not in groups:
            groups[key] = Group(group_label(key[0], sweep), key[0], sweep)
        groups[key].cells.append(d)
    return list(groups.values())


def assign_bases(groups: list[Group], base: str | None = None) -> None:
    """Each group's base: the base variant at the same sweep values when there are variants
    (the first variant, or the one named ``base``); else the first group (or the group whose
    label is ``base``). Raises ``CompareError`` for a ``base`` that names nothing."""
    variants = list(dict.fromkeys(g.variant for g in groups if g.variant is not None))
    labels = [g.label for g in groups]
    if variants and (base is None or base in variants):
        chosen = base if base is not None else variants[0]
        for g in groups:
            g.base = next((i for i, o in enumerate(groups)
                           if o.variant == chosen and o.sweep == g.sweep), None)  # fmt: skip
        return
    if base is None:
        idx = 0
    elif base in labels:
        idx = labels.index(base)
    else:
        known = ", ".join(variants + [x for x in labels if x not in variants])
        raise CompareError(f"no variant or group named '{base}' (known: {known})")
    for g in groups:
        g.base = idx


def compare_variants(store: Store, ref: str, base: str | None = None,
                     last: float | None = None) -> VariantComparison:  # fmt: skip
    s = store.summary(ref)
    datas = [load_cell(store, s, c) for c in s.get("cells") or [] if isinstance(c, dict)]
    if not datas:
        raise CompareError(f"run {s['run_id']} has no cell with results")
    cmp = compare_groups(str(s["run_id"]), str(s.get("experiment")), datas, base, last)
    cmp.claims = claim_lines(s)
    return cmp


def compare_groups(run_id: str, experiment: str, datas: Sequence[CellData],
                   base: str | None = None, last: float | None = None) -> VariantComparison:
    groups = group_cells(datas)
    assign_bases(groups, base)
    figs = {id(d): cell_figures(d, last) for d in datas}
    first = figs[id(datas[0])]
    names = [n for n in first if all(n in f for f in figs.values())]
    rows = []
    for name in names:
        per_group: list[tuple[Spread, list[Value]]] = []
        for g in groups:
            values = [value_of(d, figs[id(d)][name]) for d in g.cells]
            per_group.append((spread([v.value for v in values],
                                     [v.lower_bound for v in values]), values))  # fmt: skip
        out = []
        for g, (sp, values) in zip(groups, per_group, strict=True):
            r: Ratio | None = None
            if g.base is not None and groups[g.base] is not g:
                b = per_group[g.base][0]
                r = ratio(sp.median, b.median, sp.lower_bound, b.lower_bound)
            elif g.base is None:
                r = Ratio(None, why="no base group at these sweep values")
            out.append(GroupFigure(sp, values, r))
        unit = _units([v for _, vs in per_group for v in vs])
        rows.append(VariantRow(name, unit, out))
    return VariantComparison(run_id, experiment, groups, rows, last)
