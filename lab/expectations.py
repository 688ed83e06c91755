"""Expectations: an ``expect`` line of the experiment, judged against the checkers' results.

``evaluate(expectation, results, ctx)`` finds the figure the metric names in the results (or in
``ctx.facts``/``ctx.samples``), compares it with the expected quantity and explains the verdict.
``passed`` is None when the figure cannot be measured; the explanation says why (no such
workload, no samples, the checker failed ...).

Statistics, where each is found and its unit come from ``dsl/metrics.py`` (the language's one
table per metric); each metric's reader is the function it names there (``READERS``).
Units: durations are seconds, sizes bytes, throughput operations per second, percentages ratios
(``< 1%`` arrives as 0.01). A bare number (kind ``count``) is compared in the metric's base unit.
A percentage against a metric with a ``ratio`` and no statistic written compares the ratio.

``last N s`` (throughput, latency, errors, stalls, replication_lag) keeps only the last N seconds
of the load: from the per-second series, or from the operations / samples (the history is taken
from ``history=`` or from the context the checkers ran with).

Lower bounds: an outage still open when the load stopped, or a warmup that had not finished,
gives a figure that is only a lower bound; the verdict is then decided only when the bound
already settles it (``downtime(p) < 5s`` fails when the open outage is already 6 s, and is
unknown when it is 3 s so far).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

import numpy as np

from dsl.metrics import METRICS as METRIC_SPECS
from dsl.metrics import resolve_stat
from dsl.models import Expectation, Metric, Quantity, UnitKind
from lab.checkers.base import CheckContext, CheckResult, summary
from lab.checkers.downtime import error_label
from lab.checkers.stale_reads import visibility_lower_bound, visibility_upper
from lab.history import NS, Op


@dataclass(frozen=True, slots=True)
class ExpectationOutcome:
    passed: bool | None  # None: could not be measured or decided
    measured: float | None
    unit: UnitKind
    text: str  # the expect line as written
    explanation: str
    metric: str = ""  # the figure measured, e.g. "downtime(probe).max"
    lower_bound: bool = False  # measured is only a lower bound

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "passed": self.passed,
            "measured": self.measured,
            "unit": self.unit,
            "metric": self.metric,
            "lower_bound": self.lower_bound,
            "explanation": self.explanation,
        }


class Unmeasurable(Exception):
    """The metric cannot be computed from these results; the message says why."""


@dataclass(frozen=True, slots=True)
class Measured:
    value: float
    unit: UnitKind
    stat: str
    lower_bound: bool = False
    note: str = ""
    upper: float | None = None  # with lower_bound: what the figure can at most be (None: no end)


@dataclass(frozen=True, slots=True)
class Inputs:
    """What a metric function may look at."""

    metric: Metric
    quantity: Quantity
    results: Mapping[str, CheckResult]
    ctx: CheckContext
    history: Sequence[Op] | None


# --- formatting ------------------------------------------------------------------------------


def _sig(x: float, digits: int = 3) -> str:
    """``x`` to ``digits`` significant digits in fixed notation, with thousands separators:
    never scientific notation (2.03, 10.8, 123, 1,235, 0.0052)."""
    if x == 0:
        return "0"
    r = float(f"{x:.{digits - 1}e}")  # rounded first, so that 9.996 becomes 10.0, not 10.00
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(r))))
    return f"{r:,.{decimals}f}"


def format_duration(seconds: float) -> str:
    """One duration format everywhere (latency, lag, downtime, visibility): 0.52 ms, 4.9 ms,
    497 ms, 2.03 s, 10.8 s, 123 s, 1,234 s."""
    a = abs(seconds)
    if a == 0:
        return "0 s"
    ms = seconds * 1000
    if a * 1000 < 0.995:
        return f"{_sig(ms, 2)} ms" if a * 1000 >= 0.000_5 else "< 0.001 ms"
    if a * 1000 < 99.95:
        return f"{ms:.1f} ms"
    if a * 1000 < 999.5:
        return f"{ms:.0f} ms"
    if a < 999.5:
        return f"{_sig(seconds, 3)} s"
    return f"{seconds:,.0f} s"


def format_value(value: float | None, unit: UnitKind) -> str:
    """The one number formatter of the lab: expectation explanations, ``report`` lines, the
    end-of-run tables and the live view all use it. Never scientific notation; durations as
    ``format_duration``; counts as integers with thousands separators (47,185); rates 20.0/s
    (3,055/s from 1,000 up); percentages 87.2%; sizes in B, KiB, MiB, GiB."""
    if value is None:
        return "unknown"
    value = float(value)
    if math.isnan(value):
        return "unknown"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    if unit == "duration":
        return format_duration(value)
    if unit == "percent":
        p = value * 100
        if p != 0 and abs(p) < 0.095:
            return f"{_sig(p, 2)}%"
        return f"{p:.1f}%"
    if unit == "rate":
        if value != 0 and abs(value) < 0.095:
            return f"{_sig(value, 2)}/s"
        return f"{value:,.1f}/s" if abs(value) < 999.95 else f"{value:,.0f}/s"
    if unit in ("size", "bandwidth"):
        suffix = "/s" if unit == "bandwidth" else ""
        for name, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
            if abs(value) >= scale * 0.9995:
                return f"{_sig(value / scale, 3)} {name}{suffix}"
        return f"{value:,.0f} B{suffix}"
    if value.is_integer():
        return f"{value:,.0f}"
    return _sig(value, 3)


def format_count(n: float | None) -> str:
    """A count: 47,185."""
    return format_value(n, "count")


def format_figure(value: float | None, unit: UnitKind, lower_bound: bool = False,
                  metric: str = "") -> str:
    """A figure as shown in every table: ``2.03 s``, or for a lower bound ``≥ 4.20 s (still
    down at end)`` (the label depends on the metric's name, ``downtime(w).max`` → downtime)."""
    if metric.endswith("errno") and value is not None and float(value).is_integer():
        shown = str(int(value))  # an error code, not a count: 1062, never 1,062
    else:
        shown = format_value(value, unit)
    if not lower_bound or value is None:
        return shown
    spec = METRIC_SPECS.get(metric.split("(", 1)[0].split(".", 1)[0])
    label = spec.open_label if spec is not None else ""
    return f"≥ {shown}" + (f" ({label})" if label else "")


def figure_clause(name: str, value: float | None, unit: UnitKind, lower_bound: bool = False
                  ) -> str:  # fmt: skip
    """``downtime(w).max = 2.03 s``; a lower bound: ``downtime(w).max ≥ 4.20 s (still down at
    end)``."""
    shown = format_figure(value, unit, lower_bound, name)
    if shown.startswith("≥ "):
        return f"{name} {shown}"
    return f"{name} = {shown}"


def metric_text(m: Metric, stat: str | None = None) -> str:
    """``latency(w on db2).p99 last 30s``: the figure in the language's words."""
    args = [a for a in (m.subject, str(m.code) if m.code is not None else None) if a]
    inside = ", ".join(args)
    if m.on:
        inside = f"{inside} on {m.on}" if inside else f"on {m.on}"
    out = f"{m.name}({inside})" if inside else m.name
    stat = stat or m.stat
    if stat:
        out += f".{stat}"
    if m.last is not None:
        out += f" last {m.last:g}s"
    return out


# --- comparison ------------------------------------------------------------------------------


def compare(measured: float, op: str, target: float) -> bool:
    eq = math.isclose(measured, target, rel_tol=1e-9, abs_tol=1e-12)
    if op == "<":
        return measured < target and not eq
    if op == "<=":
        return measured <= target or eq
    if op == ">":
        return measured > target and not eq
    if op == ">=":
        return measured >= target or eq
    if op == "==":
        return eq
    if op == "!=":
        return not eq
    raise ValueError(f"unknown comparison {op!r}")


def within(measured: float, low: float, high: float, lower_bound: bool = False) -> bool | None:
    """``between low and high`` (both ends included). With only a lower bound known, it fails
    once the bound is past ``high`` and is undecided otherwise."""
    above_high = measured > high and not math.isclose(measured, high, rel_tol=1e-9)
    if lower_bound:
        return False if above_high else None
    below_low = measured < low and not math.isclose(measured, low, rel_tol=1e-9)
    return not (below_low or above_high)


def compare_interval(lo: float, hi: float, op: str, target: float,
                     high: float | None = None) -> bool | None:
    """The verdict for a figure known only to lie in [lo, hi]: decided when every value of
    the interval gives the same answer (``between target and high`` when ``high`` is
    given), else None."""
    if high is not None:
        inside_lo, inside_hi = within(lo, target, high), within(hi, target, high)
        if inside_lo and inside_hi:
            return True
        if compare(lo, ">", high) or compare(hi, "<", target):  # wholly above, or below
            return False
        return None
    if op in ("<", "<=", ">", ">="):  # monotone: the two ends settle every value between
        a, b = compare(lo, op, target), compare(hi, op, target)
        return a if a == b else None
    outside = compare(target, "<", lo) or compare(target, ">", hi)
    if op == "==":
        return False if outside else (True if compare(lo, "==", hi) and
                                      compare(lo, "==", target) else None)
    if op == "!=":
        return True if outside else (False if compare(lo, "==", hi) and
                                     compare(lo, "==", target) else None)
    raise ValueError(f"unknown comparison {op!r}")


def compare_lower_bound(bound: float, op: str, target: float) -> bool | None:
    """The verdict when the true value is >= bound: decided only if the bound settles it."""
    if op in ("<", "<="):
        return False if not compare(bound, op, target) else None
    if op in (">", ">="):
        return True if compare(bound, op, target) else None
    if bound > target and not math.isclose(bound, target):
        return op == "!="
    return None


# --- lookups ---------------------------------------------------------------------------------


def _result(inp: Inputs, name: str) -> CheckResult:
    r = inp.results.get(name)
    if r is None:
        raise Unmeasurable(f"the {name} checker did not run")
    if r.valid is None and not r.metrics:
        first = (r.details or "no details").splitlines()[0]
        raise Unmeasurable(f"the {name} checker failed: {first}")
    return r


def _subjects(r: CheckResult) -> dict[str, dict[str, Any]]:
    s = r.metrics.get("subjects")
    return s if isinstance(s, dict) else {}


def _known_list(names: Iterable[str]) -> str:
    xs = sorted(names)
    return ", ".join(xs) if xs else "none"


def _get(subj: Mapping[str, Any], path: str) -> Any:
    cur: Any = subj
    for part in path.split("."):
        if not isinstance(cur, Mapping) or part not in cur:
            return None
        cur = cur[part]
    return cur


def _number(value: Any, why: str) -> float:
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        raise Unmeasurable(why)
    return float(value)


def _stat(inp: Inputs) -> tuple[str, str, UnitKind]:
    """(stat, path in the subject's metrics, unit), from the language's table
    (``dsl.metrics.METRICS``). A percentage compared without a statistic picks ``ratio`` when
    the metric has one."""
    m = inp.metric
    figures = METRIC_SPECS[m.name].figures
    stat = resolve_stat(m.name, m.stat, inp.quantity.kind)
    if stat not in figures:
        raise Unmeasurable(
            f"{m.name} has no '.{stat}' (known: {', '.join('.' + s for s in figures)})"
        )
    path, unit = figures[stat]
    return stat, path, cast(UnitKind, unit)


def _sum(subjects: Mapping[str, Mapping[str, Any]], keys: Iterable[str], path: str) -> float:
    total = 0.0
    for k in keys:
        v = _get(subjects[k], path)
        if isinstance(v, int | float) and not isinstance(v, bool):
            total += float(v)
    return total


def _workload_names(inp: Inputs, r: CheckResult) -> set[str]:
    names = set(inp.ctx.workloads)
    names.update(k for k in _subjects(r) if " on " not in k)
    return names


def _no_such_workload(inp: Inputs, r: CheckResult, w: str) -> Unmeasurable | None:
    known = _workload_names(inp, r)
    if w not in known:
        return Unmeasurable(f"no workload named '{w}' (known: {_known_list(known)})")
    return None


def _subject(inp: Inputs, r: CheckResult, what: str, *, single_default: bool = False) -> tuple[
    str, dict[str, Any]
]:  # fmt: skip
    """The subject's metrics for ``w`` or ``w on node``. With no workload written, the only
    workload when ``single_default``; otherwise an explanation."""
    m = inp.metric
    subjects = _subjects(r)
    w = m.subject
    if w is None:
        names = sorted(k for k in subjects if " on " not in k)
        if single_default and len(names) == 1:
            w = names[0]
        else:
            raise Unmeasurable(f"{m.name} needs a workload (one of: {_known_list(names)})")
    key = f"{w} on {m.on}" if m.on else w
    if key in subjects:
        return key, subjects[key]
    err = _no_such_workload(inp, r, w)
    if err is not None:
        raise err
    if w not in subjects:
        raise Unmeasurable(f"workload '{w}' recorded no {what}")
    nodes = sorted(k.split(" on ", 1)[1] for k in subjects if k.startswith(f"{w} on "))
    raise Unmeasurable(f"workload '{w}' recorded no {what} on '{m.on}' (nodes: "
                       f"{_known_list(nodes)})")  # fmt: skip


def _history(inp: Inputs) -> Sequence[Op]:
    h = inp.history if inp.history is not None else inp.ctx.last_history()
    if h is None:
        raise Unmeasurable("'last' needs the operations, and no history was given")
    return h


def _last_window(inp: Inputs) -> tuple[int, int]:
    """(from, to) in ns: the last N seconds of the load."""
    assert inp.metric.last is not None
    h = inp.history if inp.history is not None else inp.ctx.last_history()
    t0, t1 = inp.ctx.bounds(h or [])
    return max(t0, t1 - round(inp.metric.last * NS)), t1


def _last_ops(inp: Inputs, workload: str) -> list[Any]:
    """Operations of the workload (on ``metric.on``, if given) completed in the last N seconds
    (an operation that never completed counts as ending at the end of the load)."""
    m = inp.metric
    h = _history(inp)
    lo, hi = _last_window(inp)
    col = inp.ctx.columns(h)  # the checkers' columns: completion order, never-completed last
    ends = col.end[: col.n_done]
    first = int(np.searchsorted(ends, lo, side="left"))
    last = int(np.searchsorted(ends, hi, side="right"))
    # the window, then those that never completed
    sel = np.concatenate([np.arange(first, last), np.arange(col.n_done, col.n)])
    sel = sel[col.workload[sel] == col.code(workload)]
    if m.on is not None:
        sel = sel[col.where[sel] == col.code(m.on)]
    return col.completed_at(sel)


# --- one function per metric -----------------------------------------------------------------


def _downtime(inp: Inputs) -> Measured:
    r = _result(inp, "downtime")
    stat, path, unit = _stat(inp)
    m = inp.metric
    if m.subject is None and m.on is None:
        subj: Mapping[str, Any] = r.metrics
    elif m.subject is None:
        raise Unmeasurable("downtime on a node needs a workload: downtime(w on node)")
    else:
        subjects = _subjects(r)
        key = f"{m.subject} on {m.on}" if m.on else m.subject
        if key not in subjects:
            err = _no_such_workload(inp, r, m.subject)
            if err is not None:
                raise err
            if m.subject not in subjects:
                raise Unmeasurable(f"workload '{m.subject}' recorded no operations")
            eps = subjects[m.subject].get("endpoints", [])
            raise Unmeasurable(f"workload '{m.subject}' has no endpoint '{m.on}' (endpoints: "
                               f"{_known_list(eps)})")  # fmt: skip
        subj = subjects[key]
    value = _number(_get(subj, path), f"no downtime {stat}")
    if path == "longest":
        lower = bool(subj.get("longest_open_at_end"))
    elif path == "total":
        lower = bool(subj.get("open_at_end"))
    else:
        lower = False
    n = int(subj.get("count", 0) or 0)
    note = f"{format_count(n)} outage window{'s' if n != 1 else ''}"
    if lower:
        note += "; an outage was still open when the load stopped"
    return Measured(value, unit, stat, lower, note)


def _stale_reads(inp: Inputs) -> Measured:
    r = _result(inp, "stale_reads")
    stat, path, unit = _stat(inp)
    m = inp.metric
    subjects = _subjects(r)
    if path.startswith("visibility") and m.subject is None:
        _, subj = _subject(inp, r, "reads", single_default=True)
    elif m.subject is None and m.on is None:
        subj = r.metrics
    elif m.subject is None:
        keys = [k for k in subjects if k.endswith(f" on {m.on}")]
        if not keys:
            raise Unmeasurable(f"no reads were recorded on node '{m.on}'")
        if path not in ("count", "eligible_reads", "rate"):
            raise Unmeasurable(f"'.{stat}' on a node needs a workload: stale_reads(w on n)")
        count = _sum(subjects, keys, "count")
        eligible = _sum(subjects, keys, "eligible_reads")
        subj = {"count": count, "eligible_reads": eligible,
                "rate": count / eligible if eligible else None}  # fmt: skip
    else:
        _, subj = _subject(inp, r, "reads")
    raw = _get(subj, path)
    if raw is None and path == "rate":
        raise Unmeasurable(
            "the stale-read ratio is undefined: no read had an acknowledged write to the same "
            "key before it began"
        )
    if raw is None and path.startswith("visibility"):
        raise Unmeasurable("no write was ever read back, so visibility time is unknown")
    if raw is None and path.startswith("time_behind"):
        return Measured(0.0, unit, stat, note="no stale read")
    value = _number(raw, f"no stale_reads .{stat}")
    if path.startswith("visibility"):
        vis = _get(subj, "visibility") or {}
        never = vis.get("never_seen") or 0
        note = f"{format_count(vis.get('seen') or 0)} writes read back"
        vstat = path.split(".", 1)[1]
        lower = visibility_lower_bound(vis, vstat, value)
        upper = visibility_upper(vis, vstat) if lower else None
        if never:
            note += f", {format_count(never)} never seen"
            if lower:
                note += " (each longer than the last read that missed it" + (
                    ")" if upper is None else ", for the upper end longer than any seen)")
        return Measured(value, unit, stat, lower, note, upper)
    n_eligible = subj.get("eligible_reads")
    note = (f"of {format_count(n_eligible)} eligible reads" if isinstance(n_eligible, int | float)
            else "")
    return Measured(value, unit, stat, note=note)


def _count_metric(inp: Inputs, r: CheckResult, stat: str, path: str, unit: UnitKind,
                  *, absent_is_zero: bool) -> Measured:  # fmt: skip
    m = inp.metric
    subjects = _subjects(r)
    if m.subject is None and m.on is None:
        return Measured(_number(_get(r.metrics, path), f"no {r.name} .{stat}"), unit, stat)
    if m.subject is None:
        keys = [k for k in subjects if k.endswith(f" on {m.on}")]
        if path == "ratio":
            raise Unmeasurable(f"'.{stat}' on a node needs a workload")
        return Measured(_sum(subjects, keys, path), unit, stat)
    key = f"{m.subject} on {m.on}" if m.on else m.subject
    if key in subjects:
        raw = _get(subjects[key], path)
        if raw is None and path == "ratio":
            raise Unmeasurable(f"the {r.name} ratio of '{key}' is undefined (nothing to divide by)")
        return Measured(_number(raw, f"no {r.name} .{stat} for '{key}'"), unit, stat)
    err = _no_such_workload(inp, r, m.subject)
    if err is not None:
        raise err
    if absent_is_zero and path != "ratio":
        return Measured(0.0, unit, stat, note="none recorded")
    raise Unmeasurable(f"no {r.name} figures for '{key}'")


def _duplicate_keys(inp: Inputs) -> Measured:
    r = _result(inp, "duplicate_keys")
    stat, path, unit = _stat(inp)
    if path == "ratio" and inp.metric.subject is None:
        raise Unmeasurable("duplicate_keys .ratio needs a workload")
    return _count_metric(inp, r, stat, path, unit, absent_is_zero=True)


def _lost_writes(inp: Inputs) -> Measured:
    m = inp.metric
    if m.subject is not None and inp.ctx.kind(m.subject) == "list_append":
        return _lost_appends(inp)
    r = _result(inp, "lost_writes")
    stat, path, unit = _stat(inp)
    unchecked = r.metrics.get("unchecked_workloads") or []
    if m.subject is not None and m.subject in unchecked:
        raise Unmeasurable(
            f"no final state was read for workload '{m.subject}', so lost writes cannot be counted"
        )
    if m.subject is None and r.valid is None:
        raise Unmeasurable(f"lost writes cannot be counted: {r.details}")
    if m.on and path != "count":
        raise Unmeasurable(f"lost_writes on a node only has a count, not '.{stat}'")
    return _count_metric(inp, r, stat, path, unit, absent_is_zero=False)


def _lost_appends(inp: Inputs) -> Measured:
    """lost_writes(w) of a list_append workload: acknowledged appends missing at the end."""
    m = inp.metric
    r = _result(inp, "lost_appends")
    stat, path, unit = _stat(inp)
    if m.on:
        raise Unmeasurable("a list_append workload's lost writes are judged on the "
                           "authoritative node only, not 'on' a node")
    subj = _subjects(r).get(str(m.subject)) or {}
    raw = _get(subj, path)
    if subj.get("count") is None:
        first = (r.details or "no final state").splitlines()[0]
        raise Unmeasurable(f"lost appends cannot be counted: {first}")
    if raw is None:
        raise Unmeasurable(f"lost_writes .{stat} is not measured on a list_append workload "
                           "(count, acknowledged, ratio, unknown, unknown_applied, "
                           "failed_but_present are)")
    return Measured(_number(raw, f"no lost_writes .{stat}"), unit, stat)


def _fact_per_node(inp: Inputs, name: str, node: str | None, what: str) -> dict[str, Any]:
    fact = inp.ctx.facts.get(name)
    if not isinstance(fact, dict) or not fact:
        raise Unmeasurable(f"the engine did not measure {what}")
    if node is not None and node not in fact:
        raise Unmeasurable(f"{what} was not measured on '{node}' (measured on: "
                           f"{_known_list(fact)})")  # fmt: skip
    return fact


def _missing_transactions(inp: Inputs) -> Measured:
    stat, path, _ = _stat(inp)
    node = inp.metric.subject or inp.metric.on
    when = {"missing_before_heal": "before healing",
            "missing_at_promote": "when it was promoted"}.get(path, "after settling")
    fact = _fact_per_node(inp, path, node, f"missing transactions {when}")
    settled = inp.ctx.facts.get("settled")
    note = when + ("" if settled is not False or path != "missing_transactions"
                   else " (replication did not settle)")
    if node is None:
        vals = [float(v) for v in fact.values() if isinstance(v, int | float)]
        return Measured(sum(vals), "count", stat, note=f"over {len(vals)} nodes, {note}")
    value = _number(fact[node], f"no missing-transaction count for '{node}'")
    before = (inp.ctx.facts.get("missing_before_heal") or {}).get(node)
    if path == "missing_transactions" and isinstance(before, int | float) and before != value:
        # the heal at the end changed the answer: say what it was before
        note += (f"; {format_count(before)} before the heal at the end (.before_heal; "
                 "`for good` leaves the fault)")
    return Measured(value, "count", stat, note=note)


def _relay_log_bytes(inp: Inputs) -> Measured:
    stat, key, unit = _stat(inp)
    node = inp.metric.subject or inp.metric.on
    fact = _fact_per_node(inp, "relay_log_bytes", node, "the relay log size")
    if node is None:
        if len(fact) != 1:
            raise Unmeasurable(f"relay_log_bytes needs a node (measured on: {_known_list(fact)})")
        node = next(iter(fact))
    v = fact[node]
    if isinstance(v, int | float) and key == "after":
        return Measured(float(v), unit, stat)
    if not isinstance(v, dict):
        raise Unmeasurable(f"the relay log size of '{node}' is not a before/after pair")
    if key == "growth":
        before = _number(v.get("before"), f"no relay log size before the start of '{node}'")
        after = _number(v.get("after"), f"no relay log size after the start of '{node}'")
        return Measured(after - before, unit, stat)
    if key in ("max", "min") and key not in v:
        pair = [x for x in (v.get("before"), v.get("after")) if isinstance(x, int | float)]
        if not pair:
            raise Unmeasurable(f"no relay log size measured on '{node}'")
        agg = max(pair) if key == "max" else min(pair)
        return Measured(float(agg), unit, stat, note="of the sizes before and after its start")
    return Measured(_number(v.get(key), f"no relay log size ({key}) on '{node}'"), unit, stat)


def _replication_lag(inp: Inputs) -> Measured:
    r = _result(inp, "replication_lag")
    stat, path, unit = _stat(inp)
    subjects = _subjects(r)
    node = inp.metric.subject or inp.metric.on
    if node is not None and node not in subjects:
        raise Unmeasurable(f"no replication lag samples for '{node}' (replicas with samples: "
                           f"{_known_list(subjects)})")  # fmt: skip
    if not subjects:
        raise Unmeasurable("no replication lag samples were recorded")
    nodes = [node] if node is not None else sorted(subjects)
    if inp.metric.last is not None:
        lo, hi = _last_window(inp)
        per: dict[str, float | None] = {}
        for n in nodes:
            lags = [float(s.values["lag"]) for s in inp.ctx.samples
                    if s.series == "lag" and s.subject == n and lo <= s.time <= hi
                    and isinstance(s.values.get("lag"), int | float)
                    and math.isfinite(s.values["lag"])]  # fmt: skip
            per[n] = summary(lags)[path] if lags else None
    else:
        per = {n: subjects[n].get(path) for n in nodes}
    known = {n: float(v) for n, v in per.items() if isinstance(v, int | float)}
    if not known:
        raise Unmeasurable(
            f"{'no replica' if node is None else repr(node)} could be read for lag"
            + (f" in the last {inp.metric.last:g} s" if inp.metric.last is not None else "")
        )
    worst = max(known, key=lambda n: known[n])
    note = f"worst replica {worst}" if node is None else ""
    return Measured(known[worst], unit, stat, note=note)


def _throughput(inp: Inputs) -> Measured:
    r = _result(inp, "throughput")
    stat, path, unit = _stat(inp)
    w, subj = _subject(inp, r, "completed operations", single_default=True)
    if inp.metric.last is not None:
        if stat == "total":
            raise Unmeasurable("'last' applies to .mean, .p50, .min and .max, not '.total'")
        series = subj.get("per_second") or []
        load_s = float(r.metrics.get("load_seconds") or len(series))
        hi = min(len(series), math.floor(load_s + 1e-9))
        lo = max(0, math.floor(load_s - inp.metric.last + 1e-9))
        window = sorted(float(v) for v in series[lo:hi])
        if not window:
            raise Unmeasurable(f"the load lasted {load_s:.1f} s: no whole second to average")
        agg = {"mean": sum(window) / len(window), "min": window[0], "max": window[-1],
               "p50": window[(len(window) - 1) // 2]}[stat]  # fmt: skip
        note = f"seconds {lo}..{hi} of the load"
        if hi - lo < inp.metric.last - 1e-9:
            note += f" (only {hi - lo} whole seconds)"
        return Measured(agg, unit, stat, note=note)
    value = _number(subj.get(path), f"'{w}' has no whole second to measure")
    return Measured(value, unit, stat, note=f"over {float(subj.get('seconds') or 0):.1f} s")


def _latency(inp: Inputs) -> Measured:
    r = _result(inp, "latency")
    stat, path, unit = _stat(inp)
    w, subj = _subject(inp, r, "successful operations", single_default=True)
    if inp.metric.last is not None:
        if subj.get("source") != "ops":
            raise Unmeasurable(f"'last' is not available for {w} (sysbench rows)")
        lat = [
            c.end - c.start
            for c in _last_ops(inp, inp.metric.subject or w.split(" on ")[0])
            if c.type == "ok" and c.end is not None
        ]
        if not lat:
            raise Unmeasurable(f"no successful operation of '{w}' in the last "
                               f"{inp.metric.last:g} s")  # fmt: skip
        st = summary(lat, scale=1 / NS)
        return Measured(float(st[path] or 0.0), unit, stat,
                        note=f"{format_count(st['count'])} ok ops")
    value = _number(subj.get(path), f"'{w}' has no successful operation")
    note = (f"{format_count(subj.get('count', 0))} ok ops" if subj.get("source") == "ops"
            else str(subj.get("source")))  # fmt: skip
    return Measured(value, unit, stat, note=note)


def _errors(inp: Inputs) -> Measured:
    r = _result(inp, "errors")
    stat, path, unit = _stat(inp)
    m = inp.metric
    code_path = f"by_code.{m.code}" if m.code is not None else "total"
    if m.last is not None:
        if m.subject is None:
            raise Unmeasurable("errors ... last needs a workload")
        ops = _last_ops(inp, m.subject)
        bad = [c for c in ops if c.type != "ok"]
        if m.code is not None:
            bad = [c for c in bad if error_label(c) == str(m.code)]
        count, n_ops, secs = float(len(bad)), float(len(ops)), float(m.last)
    else:
        subjects = _subjects(r)
        if m.subject is None:
            if m.on is None:
                keys = [k for k in subjects if " on " not in k]
            else:
                keys = [k for k in subjects if k.endswith(f" on {m.on}")]
                if not keys:
                    raise Unmeasurable(f"no operation was answered by '{m.on}'")
        else:
            key, _ = _subject(inp, r, "operations")
            keys = [key]
        count = _sum(subjects, keys, code_path)
        n_ops = _sum(subjects, keys, "ops")
        secs = float(r.metrics.get("load_seconds") or 0.0)
    if path == "ratio":
        if n_ops == 0:
            raise Unmeasurable("no operations were recorded, so the error ratio is undefined")
        return Measured(count / n_ops, unit, stat,
                        note=f"{format_count(count)} of {format_count(n_ops)} operations")
    if path == "rate":
        if secs <= 0:
            raise Unmeasurable("the load has no duration, so errors per second are undefined")
        return Measured(count / secs, unit, stat,
                        note=f"{format_count(count)} errors in {format_duration(secs)}")
    return Measured(count, unit, stat, note=f"of {format_count(n_ops)} operations")


def _stalls(inp: Inputs) -> Measured:
    r = _result(inp, "stalls")
    stat, path, unit = _stat(inp)
    w, subj = _subject(inp, r, "operations", single_default=True)
    if inp.metric.last is not None:
        tr = _result(inp, "throughput")
        ts = _subjects(tr).get(w)
        if ts is None:
            raise Unmeasurable(f"no per-second series for '{w}'")
        series = ts.get("per_second") or []
        load_s = float(tr.metrics.get("load_seconds") or len(series))
        lo = max(0, math.floor(load_s - inp.metric.last + 1e-9), math.ceil(ts["start"] - 1e-9))
        hi = min(len(series), math.floor(load_s + 1e-9), math.floor(ts["end"] + 1e-9))
        zeros = [i for i in range(lo, hi) if series[i] == 0]
        longest = run = 0
        prev = None
        for i in zeros:
            run = run + 1 if prev is not None and i == prev + 1 else 1
            longest = max(longest, run)
            prev = i
        value = float(longest) if path == "longest" else float(len(zeros))
        return Measured(value, unit, stat, note=f"of {max(0, hi - lo)} seconds")
    value = _number(subj.get(path), f"no stalls .{stat}")
    return Measured(value, unit, stat, note=f"of {subj.get('seconds_checked', 0)} seconds")


def _warmup(inp: Inputs) -> Measured:
    r = _result(inp, "warmup")
    stat, _, _ = _stat(inp)
    w, subj = _subject(inp, r, "throughput", single_default=True)
    if subj.get("unknown"):
        raise Unmeasurable(f"warmup of '{w}' unknown: {subj['unknown']}")
    mode = "after the cache drop" if r.metrics.get("mode") == "fault" else "from the start"
    if stat == "min_level":
        return Measured(_number(subj.get("min_level"), "no level after the fault"), "percent",
                        stat, note=mode)  # fmt: skip
    if subj.get("recovered") is False:
        bound = _number(subj.get("lower_bound"), "no warmup figure")
        return Measured(bound, "duration", stat, True,
                        "throughput was not back to 90% before the load ended")  # fmt: skip
    value = _number(subj.get("warmup"), "no warmup figure")
    note = mode if subj.get("dip_beyond_noise", True) else f"{mode}; no dip beyond noise"
    return Measured(value, "duration", stat, note=note)


def _failover(inp: Inputs) -> Measured:
    """The first promote's phases (``lab.checkers.failover``), over every writing endpoint or
    for one workload: ``outage``, ``recovered``, ``first_failure``, ``new_writer_accepts``,
    ``router_switch``, in seconds from the fault on the old primary."""
    r = _result(inp, "failover")
    stat, key, unit = _stat(inp)
    failovers = r.metrics.get("failovers")
    if not isinstance(failovers, list) or not failovers:
        raise Unmeasurable("no promote in the history: failover phases are measured from a "
                           "`promote` action that succeeded")  # fmt: skip
    rec = failovers[0]
    if not isinstance(rec, dict):
        raise Unmeasurable("the failover checker gave no figures")
    new = rec.get("new_primary")
    ref = f"{rec.get('fault')} of {rec.get('fault_node')}" if rec.get("fault") else "the promote"
    note = f"promote {new}, from the {ref}"
    if len(failovers) > 1:
        note += f"; the first of {len(failovers)} failovers"
    scope: dict[str, Any] = rec
    w = inp.metric.subject
    per = rec.get("workloads")
    per = per if isinstance(per, dict) else {}
    if w is not None and w not in per:
        raise Unmeasurable(f"workload '{w}' wrote nothing around the failover (writing "
                           f"workloads: {_known_list(per)})")  # fmt: skip
    if w is not None and key in ("outage", "recovered", "first_failure"):
        scope = per[w]
        if not scope.get("endpoints_counted"):
            raise Unmeasurable(f"no endpoint of '{w}' had a successful write before the fault")
    value = scope.get(key)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return Measured(float(value), unit, stat, note=note)
    if key == "outage" and scope.get("open_at_end"):
        bound = _number(scope.get("outage_lower_bound"), "the outage never ended and no write "
                        "succeeded before it")  # fmt: skip
        return Measured(bound, unit, stat, True, note + "; the writes never recovered")
    if key == "recovered" and scope.get("open_at_end"):
        bound = _number(scope.get("recovered_lower_bound"), "the writes never recovered")
        return Measured(bound, unit, stat, True, note + "; the writes never recovered")
    why = {
        "outage": "no endpoint had a successful write before the fault",
        "recovered": "no endpoint had a successful write before the fault",
        "first_failure": "no write failed after the fault",
        "new_writer_accepts": f"no write was answered by the new primary {new} after the fault",
        "router_switch": (f"no operation through a router was answered by {new} after the "
                          "fault" if rec.get("router") else "no workload used a router"),
    }[key]  # fmt: skip
    raise Unmeasurable(why)


def _replication_errors(inp: Inputs) -> Measured:
    """Replication threads stopped on an error (``lab.checkers.replication_errors``)."""
    r = _result(inp, "replication_errors")
    stat, key, unit = _stat(inp)
    subjects = _subjects(r)
    if not subjects:
        raise Unmeasurable(r.details or "no replication status samples were recorded")
    node = inp.metric.subject or inp.metric.on
    if node is None:
        if key != "count":
            raise Unmeasurable(f"replication_errors .{stat} needs a node (sampled: "
                               f"{_known_list(subjects)})")  # fmt: skip
        nodes = r.metrics.get("nodes") or []
        return Measured(_number(r.metrics.get("count"), "no replication error count"), unit,
                        stat, note=f"nodes: {', '.join(nodes) or 'none'}")  # fmt: skip
    if node not in subjects:
        raise Unmeasurable(f"no replication status samples for '{node}' (sampled: "
                           f"{_known_list(subjects)})")  # fmt: skip
    subj = subjects[node]
    if not subj.get("samples") or subj.get("samples") == subj.get("unreadable"):
        raise Unmeasurable(f"the replication status of '{node}' could never be read")
    value = subj.get(key)
    if key == "stopped_at" and value is None:
        if subj.get("count"):
            raise Unmeasurable(f"'{node}' was already stopped on an error at the first sample: "
                               "when it stopped is unknown")  # fmt: skip
        raise Unmeasurable(f"no replication thread of '{node}' stopped on an error")
    note = ""
    if key in ("sql_errno", "io_errno", "count") and subj.get("count"):
        msg = subj.get("message")
        errno = subj.get("sql_errno") or subj.get("io_errno")
        note = f"error {errno}" + (f": {str(msg)[:120]}" if msg else "")
    return Measured(_number(value, f"no {stat} for '{node}'"), unit, stat, note=note)


def _split_brain(inp: Inputs) -> Measured:
    """Split-brain windows (``lab.checkers.split_brain``): topology-wide; ``.writes`` of one
    workload when one is named."""
    r = _result(inp, "split_brain")
    stat, key, unit = _stat(inp)
    m = inp.metric.subject
    if r.metrics.get(key) is None:
        raise Unmeasurable(r.details or r.metrics.get("why") or "split brain was not measured")
    value = float(r.metrics[key])
    if key == "writes" and m is not None:
        err = _no_such_workload(inp, r, m)
        if err is not None and m not in (r.metrics.get("writes_by_workload") or {}):
            raise err
        value = float((r.metrics.get("writes_by_workload") or {}).get(m, 0))
    n = int(r.metrics.get("count") or 0)
    note = f"{format_count(n)} window{'s' if n != 1 else ''}; {r.metrics.get('evidence')}"
    lower = bool(r.metrics.get("lower_bound")) and key in ("longest", "total", "count",
                                                           "writes")
    if lower:
        windows = r.metrics.get("windows") or []
        if windows and windows[-1].get("open"):
            note += "; still split when the load stopped"
        else:
            note += "; read_only was not sampled"
    return Measured(value, unit, stat, lower, note)


def _router_failover(inp: Inputs) -> Measured:
    """The router moving the writes off a failed writer on its own
    (``lab.checkers.router_failover``): ``detected``, ``switched``, ``accepted``, in seconds
    from the fault on the old writer; ``accepted`` of one workload when one is named."""
    r = _result(inp, "router_failover")
    stat, key, unit = _stat(inp)
    m = r.metrics
    if not m.get("samples"):
        raise Unmeasurable(r.details or "the router's state was not sampled")
    if m.get("old_writer") is None:
        raise Unmeasurable("no fault hit the router's writer (kill, pause, stop ... of the node "
                           "it sent writes to)")
    note = f"{m.get('fault')} of {m.get('old_writer')} at {m.get('fault_at')} s"
    if m.get("new_writer"):
        note += f"; writes moved to {m.get('new_writer')}"
    value = m.get(key)
    w = inp.metric.subject
    if w is not None and key == "accepted":
        per = m.get("workloads") or {}
        value = per.get(w, {}).get("accepted") if isinstance(per, dict) else None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return Measured(float(value), unit, stat, note=note)
    raise Unmeasurable(f"{key}: not before the end of the load ({note})")


def _errant_gtids(inp: Inputs) -> Measured:
    """Errant transactions of a node (``lab.checkers.errant_gtids``)."""
    r = _result(inp, "errant_gtids")
    stat, key, unit = _stat(inp)
    node = inp.metric.subject
    subjects = _subjects(r)
    if not subjects:
        raise Unmeasurable(r.details or "errant GTIDs were not read")
    if node is None or node not in subjects:
        if node is not None and node == r.metrics.get("authority"):
            return Measured(0.0, unit, stat, note=f"{node} is the primary at the end: the "
                            "reference, errant by definition of nothing")
        raise Unmeasurable(f"errant GTIDs were not read on '{node}' (read on: "
                           f"{_known_list(subjects)})")  # fmt: skip
    subj = subjects[node]
    value = subj.get(key)
    if value is None:
        raise Unmeasurable(f"the errant GTIDs of '{node}' could not be counted: "
                           f"{subj.get('error') or 'unknown'} (at least "
                           f"{subj.get('at_least')} source(s) ahead)")  # fmt: skip
    gtids = subj.get("gtids") or []
    note = f"against {r.metrics.get('authority')}"
    if gtids:
        note += ": " + ", ".join(gtids[:3]) + (" ..." if len(gtids) > 3 else "")
    return Measured(_number(value, f"no errant count for '{node}'"), unit, stat, note=note)


def _divergence(inp: Inputs) -> Measured:
    """Rows that differ between nodes (``lab.checkers.divergence``)."""
    r = _result(inp, "divergence")
    stat, key, unit = _stat(inp)
    m = inp.metric
    subjects = _subjects(r)
    ref = r.metrics.get("reference")
    if m.subject is None:
        if m.on is not None:
            raise Unmeasurable("divergence on a node needs a workload: divergence(w on node)")
        if key != "rows":
            raise Unmeasurable(f"divergence .{stat} needs a workload")
        value = r.metrics.get("rows")
        if value is None:
            raise Unmeasurable(r.details or r.metrics.get("why") or "rows were not compared")
        return Measured(float(value), unit, stat, note=f"every table, against {ref}")
    subj_key = f"{m.subject} on {m.on}" if m.on else m.subject
    if m.on is not None and m.on == ref:
        return Measured(0.0, unit, stat, note=f"{ref} is the reference")
    if subj_key not in subjects:
        err = _no_such_workload(inp, r, m.subject)
        if err is not None:
            raise err
        raise Unmeasurable(f"the tables of '{m.subject}' were not compared"
                           + (f" on '{m.on}'" if m.on else ""))
    value = subjects[subj_key].get(key)
    if value is None:
        raise Unmeasurable(f"the rows of '{m.subject}' could not be compared on every node")
    return Measured(float(value), unit, stat, note=f"against {ref}")


# The readers ``dsl.metrics.METRICS`` names (``MetricSpec.reader``).
READERS: dict[str, Callable[[Inputs], Measured]] = {
    f.__name__: f
    for f in (_downtime, _stale_reads, _duplicate_keys, _lost_writes, _missing_transactions,
              _replication_lag, _throughput, _latency, _errors, _stalls, _warmup,
              _relay_log_bytes, _failover, _replication_errors, _split_brain, _errant_gtids,
              _router_failover,
              _divergence)
}
_COMPATIBLE: set[tuple[UnitKind, UnitKind]] = {("count", "duration")}  # stall seconds


def _lost_updates(inp: Inputs) -> Measured:
    """read_modify_write: the lost_updates checker's count, a bound when some increments have
    an unknown outcome; list_append: the anomaly checker's lost-update (P4) count."""
    m = inp.metric
    stat, path, unit = _stat(inp)
    if m.subject is not None and inp.ctx.kind(m.subject) == "list_append":
        if path != "count":
            raise Unmeasurable(f"a list_append workload's lost updates have only a count "
                               f"(Elle's lost-update anomalies), not '.{stat}'")
        r = _result(inp, "anomalies")
        subj = _subjects(r).get(m.subject)
        if subj is None or subj.get("lost_update") is None:
            first = (r.details or "no committed transaction to check").splitlines()[0]
            raise Unmeasurable(f"the anomaly checker could not decide for '{m.subject}': "
                               f"{first}")
        return Measured(_number(subj.get("lost_update"), "no lost-update count"), unit, stat)
    r = _result(inp, "lost_updates")
    _, subj = _subject(inp, r, "read-modify-write transactions", single_default=True)
    raw = _get(subj, path)
    if path == "count" and raw is None:
        lo, hi = subj.get("at_least"), subj.get("at_most")
        if lo is None or hi is None:
            first = (r.details or "no final state").splitlines()[0]
            raise Unmeasurable(f"lost updates cannot be counted: {first}")
        return Measured(float(lo), unit, stat, lower_bound=True,
                        note=f"{subj.get('unknown')} increments of unknown outcome",
                        upper=float(hi))
    if raw is None:
        raise Unmeasurable(f"lost_updates .{stat} is not known for '{m.subject}' "
                           "(no final state, or nothing acknowledged)")
    return Measured(_number(raw, f"no lost_updates .{stat}"), unit, stat)


def _wrong_totals(inp: Inputs) -> Measured:
    """bank: reads whose total was wrong, negative balances, money created at the end."""
    r = _result(inp, "bank")
    stat, path, unit = _stat(inp)
    _, subj = _subject(inp, r, "bank reads", single_default=True)
    raw = _get(subj, path)
    if raw is None:
        first = (r.details or "no final state was read").splitlines()[0]
        raise Unmeasurable(f"wrong_totals .{stat} is not known: {first}")
    return Measured(_number(raw, f"no wrong_totals .{stat}"), unit, stat)


def _anomalies(inp: Inputs) -> Measured:
    """list_append: the anomaly checker's counts (Elle's kinds); unknown where it could not
    decide (no committed transaction read a key, appends not unique)."""
    r = _result(inp, "anomalies")
    stat, path, unit = _stat(inp)
    m = inp.metric
    if m.subject is None:
        if r.metrics.get(path) is None:
            first = (r.details or "no list_append workload").splitlines()[0]
            raise Unmeasurable(f"anomalies cannot be counted: {first}")
        return _count_metric(inp, r, stat, path, unit, absent_is_zero=False)
    subj = _subjects(r).get(m.subject)
    if subj is None:
        err = _no_such_workload(inp, r, m.subject)
        if err is not None:
            raise err
        raise Unmeasurable(f"workload '{m.subject}' is not a list_append workload: the anomaly "
                           "checker did not check it")
    if not subj.get("decided"):
        raise Unmeasurable(f"the anomaly checker could not decide for '{m.subject}': "
                           f"{subj.get('reason') or 'unknown'}")
    got = _count_metric(inp, r, stat, path, unit, absent_is_zero=False)
    if subj.get("search_incomplete") and path in ("count", "g0", "g1c", "g_single", "g2_item",
                                                  "stale_read"):
        return Measured(got.value, unit, stat, lower_bound=True,
                        note="the cycle search ran out of budget in a component")
    return got


READERS.update({f.__name__: f for f in (_lost_updates, _wrong_totals, _anomalies)})



def measure(
    metric: Metric,
    quantity: Quantity,
    results: Mapping[str, CheckResult],
    ctx: CheckContext,
    history: Sequence[Op] | None = None,
) -> Measured:
    """The figure a metric names; raises ``Unmeasurable`` with the reason."""
    spec = METRIC_SPECS.get(metric.name)
    if spec is None:
        raise Unmeasurable(f"unknown metric '{metric.name}'")
    if metric.last is not None and not spec.last:
        raise Unmeasurable(f"'last' is not supported for {metric.name}")
    if metric.code is not None and not spec.code:
        raise Unmeasurable(f"an error code only applies to errors(...), not {metric.name}")
    return READERS[spec.reader](Inputs(metric, quantity, results, ctx, history))


def evaluate(
    expectation: Expectation,
    results: Mapping[str, CheckResult],
    ctx: CheckContext,
    history: Sequence[Op] | None = None,
) -> ExpectationOutcome:
    m, q = expectation.metric, expectation.value
    try:
        got = measure(m, q, results, ctx, history)
    except Unmeasurable as e:
        return ExpectationOutcome(None, None, q.kind, expectation.text, f"unknown: {e}",
                                  metric_text(m))  # fmt: skip
    except Exception as e:  # noqa: BLE001 - a bug here must not lose the other expectations
        return ExpectationOutcome(None, None, q.kind, expectation.text,
                                  f"unknown: evaluating failed: {type(e).__name__}: {e}",
                                  metric_text(m))  # fmt: skip
    name = metric_text(m, got.stat)
    if q.kind != got.unit and q.kind != "count" and (got.unit, q.kind) not in _COMPATIBLE:
        return ExpectationOutcome(
            None, got.value, got.unit, expectation.text,
            f"unknown: {name} is a {got.unit}, it cannot be compared with {q.text} (a {q.kind})",
            name, got.lower_bound,
        )  # fmt: skip
    high = expectation.high
    if got.lower_bound and got.upper is not None:  # known to lie in [value, upper]
        low_q = q.value
        high_q = high.value if expectation.op == "between" and high is not None else None
        passed = compare_interval(got.value, got.upper, expectation.op, low_q, high_q)
        wanted = f"between {q.text} and {high.text}" if high_q is not None and high \
            is not None else f"{expectation.op} {q.text}"
    elif expectation.op == "between" and high is not None:
        passed = within(got.value, q.value, high.value, got.lower_bound)
        wanted = f"between {q.text} and {high.text}"
    elif got.lower_bound:
        passed = compare_lower_bound(got.value, expectation.op, q.value)
        wanted = f"{expectation.op} {q.text}"
    else:
        passed = compare(got.value, expectation.op, q.value)
        wanted = f"{expectation.op} {q.text}"
    verdict = {True: "holds", False: "fails", None: "undecided"}[passed]
    if got.lower_bound and got.upper is not None:  # both ends known: say so, not "≥"
        why = (f"{name} = {format_value(got.value, got.unit)} to "
               f"{format_value(got.upper, got.unit)}")
    else:
        why = figure_clause(name, got.value, got.unit, got.lower_bound)
    if got.note:  # one parenthesis: "≥ 4.20 s (still down at end; 1 outage window)"
        why = why[:-1] + f"; {got.note})" if why.endswith(")") else why + f" ({got.note})"
    why += f"; expected {wanted}: {verdict}"
    if passed is None and got.lower_bound:
        why += " (only a lower bound is known)" if got.upper is None else \
            " (the figure lies between its two bounds, on both sides of the limit)"
    return ExpectationOutcome(passed, got.value, got.unit, expectation.text, why, name,
                              got.lower_bound)  # fmt: skip


def applies_in_cell(e: Expectation, variant: str | None) -> bool:
    """An expectation judged in a cell of this variant: not a claim across cells (judged once
    every cell has run, ``lab.claims``), and ``in VARIANT`` only in that variant's cells."""
    return not e.across_cells and (e.variant is None or e.variant == variant)


def evaluate_all(
    expectations: Iterable[Expectation],
    results: Mapping[str, CheckResult],
    ctx: CheckContext,
    history: Sequence[Op] | None = None,
    variant: str | None = None,
) -> list[ExpectationOutcome]:
    """The expectations that apply in a cell of ``variant`` (``applies_in_cell``), judged."""
    return [evaluate(e, results, ctx, history) for e in expectations
            if applies_in_cell(e, variant)]


def not_judged(outcomes: Iterable[ExpectationOutcome], why: str) -> list[ExpectationOutcome]:
    """A cell cut short (interrupted, or stopped by an error) judges nothing: each outcome
    becomes unknown, with ``why`` and what the partial load measured (its figure is kept)."""
    return [replace(o, passed=None, explanation=f"not judged: {why}; on the load until then: "
                                                f"{o.explanation}")  # fmt: skip
            for o in outcomes]


def all_passed(outcomes: Iterable[ExpectationOutcome]) -> bool:
    """True only when every expectation holds (an unknown one does not)."""
    return all(o.passed is True for o in outcomes)
