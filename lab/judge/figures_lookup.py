"""What a metric's reader is given and gives back (``Inputs``, ``Measured``, ``Unmeasurable``),
and the lookups every reader shares: a checker's result, a subject's figures, the statistic a
metric names (``dsl.metrics``), the operations of the last N seconds. The readers are in
``lab.judge.figures_load`` (what the clients' operations measured) and ``lab.judge.figures_servers``
(what the servers, the topology and the final rows show); ``lab.judge.expectations`` judges their
figures.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from dsl.metrics import METRICS as METRIC_SPECS
from dsl.metrics import resolve_stat
from dsl.models import Metric, Quantity, UnitKind
from lab.history import NS, Op
from lab.judge.checkers.base import CheckContext, CheckResult


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



def checker_result(inp: Inputs, name: str) -> CheckResult:
    r = inp.results.get(name)
    if r is None:
        raise Unmeasurable(f"the {name} checker did not run")
    if r.valid is None and not r.metrics:
        first = (r.details or "no details").splitlines()[0]
        raise Unmeasurable(f"the {name} checker failed: {first}")
    return r


def subjects_of(r: CheckResult) -> dict[str, dict[str, Any]]:
    s = r.metrics.get("subjects")
    return s if isinstance(s, dict) else {}


def known_list(names: Iterable[str]) -> str:
    xs = sorted(names)
    return ", ".join(xs) if xs else "none"


def get_path(subj: Mapping[str, Any], path: str) -> Any:
    cur: Any = subj
    for part in path.split("."):
        if not isinstance(cur, Mapping) or part not in cur:
            return None
        cur = cur[part]
    return cur


def known_number(value: Any, why: str) -> float:
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        raise Unmeasurable(why)
    return float(value)


def stat_of(inp: Inputs) -> tuple[str, str, UnitKind]:
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


def sum_of(subjects: Mapping[str, Mapping[str, Any]], keys: Iterable[str], path: str) -> float:
    total = 0.0
    for k in keys:
        v = get_path(subjects[k], path)
        if isinstance(v, int | float) and not isinstance(v, bool):
            total += float(v)
    return total


def workload_names(inp: Inputs, r: CheckResult) -> set[str]:
    names = set(inp.ctx.workloads)
    names.update(k for k in subjects_of(r) if " on " not in k)
    return names


def no_such_workload(inp: Inputs, r: CheckResult, w: str) -> Unmeasurable | None:
    known = workload_names(inp, r)
    if w not in known:
        return Unmeasurable(f"no workload named '{w}' (known: {known_list(known)})")
    return None


def subject_of(inp: Inputs, r: CheckResult, what: str, *, single_default: bool = False) -> tuple[
    str, dict[str, Any]
]:  # fmt: skip
    """The subject's metrics for ``w`` or ``w on node``. With no workload written, the only
    workload when ``single_default``; otherwise an explanation."""
    m = inp.metric
    subjects = subjects_of(r)
    w = m.subject
    if w is None:
        names = sorted(k for k in subjects if " on " not in k)
        if single_default and len(names) == 1:
            w = names[0]
        else:
            raise Unmeasurable(f"{m.name} needs a workload (one of: {known_list(names)})")
    key = f"{w} on {m.on}" if m.on else w
    if key in subjects:
        return key, subjects[key]
    err = no_such_workload(inp, r, w)
    if err is not None:
        raise err
    if w not in subjects:
        raise Unmeasurable(f"workload '{w}' recorded no {what}")
    nodes = sorted(k.split(" on ", 1)[1] for k in subjects if k.startswith(f"{w} on "))
    raise Unmeasurable(f"workload '{w}' recorded no {what} on '{m.on}' (nodes: "
                       f"{known_list(nodes)})")  # fmt: skip


def history_of(inp: Inputs) -> Sequence[Op]:
    h = inp.history if inp.history is not None else inp.ctx.last_history()
    if h is None:
        raise Unmeasurable(f"'{window_keyword(inp.metric)}' needs the operations, and no "
                           "history was given")
    return h


def window_keyword(m: Metric) -> str:
    return "from ... to" if m.window is not None else "last"


def window_words(m: Metric) -> str:
    """``in the last 30 s`` / ``from 5 s to 15 s``: the metric's part of the load."""
    if m.window is not None:
        return f"from {m.window[0]:g} s to {m.window[1]:g} s"
    return f"in the last {m.last:g} s"


def window_between(m: Metric, t0: int, t1: int,
                   duration: float | None = None) -> tuple[int, int]:
    """(from, to) in ns of a windowed metric within a load from ``t0`` to ``t1``: ``last N``,
    the last N seconds; ``from A to B``, A to B seconds after the start (cut at the end); a
    window whose B is the experiment's ``duration`` reaches the load's real end ``t1`` (the
    workloads' stop comes after the duration), as ``last`` does."""
    if m.window is not None:
        a, b = m.window
        end = t1 if duration is not None and b >= duration - 1e-9 else t0 + round(b * NS)
        return min(t1, t0 + round(a * NS)), min(t1, end)
    assert m.last is not None
    return max(t0, t1 - round(m.last * NS)), t1


def window_seconds(m: Metric, load_s: float,
                   duration: float | None = None) -> tuple[float, float]:
    """The same, in seconds since the start of a load of ``load_s`` seconds."""
    if m.window is not None:
        b = load_s if duration is not None and m.window[1] >= duration - 1e-9 else m.window[1]
        return min(load_s, m.window[0]), min(load_s, b)
    assert m.last is not None
    return max(0.0, load_s - m.last), load_s


def last_window(inp: Inputs, workload: str | None = None) -> tuple[int, int]:
    """(from, to) in ns: the metric's window of the load (``last N``, ``from A to B``). With
    a ``workload``, ``last N`` is the last N seconds of that workload's own run (its active
    window, ``lab.judge.checkers.series``): a workload that stopped before the load ended (its
    own duration, a budget of operations, a timeline still waiting) is measured where it ran,
    never over seconds in which it no longer ran."""
    h = inp.history if inp.history is not None else inp.ctx.last_history()
    t0, t1 = inp.ctx.bounds(h or [])
    if workload is not None and inp.metric.window is None:
        t1 = min(t1, t0 + round(workload_end_s(inp, workload, h or []) * NS))
    return window_between(inp.metric, t0, t1, planned_duration(inp))


def workload_end_s(inp: Inputs, workload: str, history: Sequence[Op]) -> float:
    """When the workload's run ended, in seconds since the load started (the load's end if
    it ran to within a second of it, or has no operations)."""
    from lab.judge.checkers.series import per_second  # the checkers' own series, memoised

    s = per_second(history, inp.ctx).get(workload)
    t0, t1 = inp.ctx.bounds(history)
    return s.active_end if s is not None else (t1 - t0) / NS


def planned_duration(inp: Inputs) -> float | None:
    """The experiment's ``duration`` (``facts["duration"]``; None for a run stored before)."""
    d = inp.ctx.facts.get("duration")
    return float(d) if isinstance(d, int | float) else None


def last_ops(inp: Inputs, workload: str) -> list[Any]:
    """Operations of the workload (on ``metric.on``, if given) completed in the metric's window
    (an operation that never completed counts as ending at the end of the load: in a window
    that reaches the end)."""
    m = inp.metric
    h = history_of(inp)
    lo, hi = last_window(inp, workload)
    _, t1 = inp.ctx.bounds(h)
    col = inp.ctx.columns(h)  # the checkers' columns: completion order, never-completed last
    ends = col.end[: col.n_done]
    first = int(np.searchsorted(ends, lo, side="left"))
    last = int(np.searchsorted(ends, hi, side="right"))
    # the window, then those that never completed (when it reaches the end of the load)
    never = np.arange(col.n_done, col.n) if hi >= t1 else np.arange(0)
    sel = np.concatenate([np.arange(first, last), never])
    sel = sel[col.workload[sel] == col.code(workload)]
    if m.on is not None:
        sel = sel[col.where[sel] == col.code(m.on)]
    return col.completed_at(sel)


def count_metric(inp: Inputs, r: CheckResult, stat: str, path: str, unit: UnitKind,
                  *, absent_is_zero: bool) -> Measured:  # fmt: skip
    m = inp.metric
    subjects = subjects_of(r)
    if m.subject is None and m.on is None:
        return Measured(known_number(get_path(r.metrics, path), f"no {r.name} .{stat}"), unit, stat)
    if m.subject is None:
        keys = [k for k in subjects if k.endswith(f" on {m.on}")]
        if path == "ratio":
            raise Unmeasurable(f"'.{stat}' on a node needs a workload")
        return Measured(sum_of(subjects, keys, path), unit, stat)
    key = f"{m.subject} on {m.on}" if m.on else m.subject
    if key in subjects:
        raw = get_path(subjects[key], path)
        if raw is None and path == "ratio":
            raise Unmeasurable(f"the {r.name} ratio of '{key}' is undefined (nothing to divide by)")
        return Measured(known_number(raw, f"no {r.name} .{stat} for '{key}'"), unit, stat)
    err = no_such_workload(inp, r, m.subject)
    if err is not None:
        raise err
    if absent_is_zero and path != "ratio":
        return Measured(0.0, unit, stat, note="none recorded")
    raise Unmeasurable(f"no {r.name} figures for '{key}'")
