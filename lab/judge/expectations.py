"""Expectations: an ``expect`` line of the experiment, judged against the checkers' results.

``evaluate(expectation, results, ctx)`` finds the figure the metric names in the results (or in
``ctx.facts``/``ctx.samples``), compares it with the expected quantity and explains the verdict.
``passed`` is None when the figure cannot be measured; the explanation says why (no such
workload, no samples, the checker failed ...).

Statistics, where each is found and its unit come from ``dsl/metrics.py`` (the language's one
table per metric); each metric's reader is the function it names there (``READERS``): in
``lab.judge.figures_load`` (what the clients' operations measured) and ``lab.judge.figures_servers``
(what the servers, the topology and the final rows show), over ``lab.judge.figures_lookup``. Numbers
are written by ``lab.figures_format``.
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
from typing import Any

from dsl.metrics import METRICS as METRIC_SPECS
from dsl.models import Expectation, Metric, Quantity, UnitKind
from lab.figures_format import figure_clause, format_value
from lab.figures_format import (
    format_figure as format_figure,  # lab/explore/schedules.py imports it here
)
from lab.history import Op
from lab.judge import figures_load, figures_servers
from lab.judge.checkers.base import CheckContext, CheckResult
from lab.judge.figures_lookup import Inputs
from lab.judge.figures_lookup import Measured as Measured  # what measure() returns
from lab.judge.figures_lookup import Unmeasurable as Unmeasurable  # what it raises


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
    if m.window is not None:
        out += f" from {m.window[0]:g}s to {m.window[1]:g}s"
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


# The readers ``dsl.metrics.METRICS`` names (``MetricSpec.reader``): one function per metric.
READERS: dict[str, Callable[[Inputs], Measured]] = {**figures_load.READERS,
                                                    **figures_servers.READERS}
_COMPATIBLE: set[tuple[UnitKind, UnitKind]] = {("count", "duration")}  # stall seconds



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
    if metric.windowed and not spec.last:
        word = "last" if metric.last is not None else "from ... to"
        raise Unmeasurable(f"'{word}' is not supported for {metric.name}")
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
    every cell has run, ``lab.judge.claims``), and ``in VARIANT`` only in that variant's cells."""
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
