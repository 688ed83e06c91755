"""Claims across cells: ``expect throughput(sb) in relaxed >= 1.3 * throughput(sb) in durable``.

Each side is a figure measured in the cells of one variant. While a cell is checked,
``measure_sides`` reads the figures of the sides that name its variant (the cell's own results
and context, like any expectation); once every cell has run, ``judge_claims`` compares them:
the left side's figure against the factor times the right side's. With several cells per
variant (``repeat``) a side is the mean of its cells' figures; with ``vary`` sweeps the claim is
judged once per combination of values, between the cells that share it. A side that could not
be measured in any of its cells makes the claim unknown, never true.

A claim is an expectation of the run, not of a cell: it is in the summary's ``claims``, the
report shows both figures and their ratio, and a claim that does not hold makes the run fail
(exit 1).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dsl.metrics import resolve_stat
from dsl.models import Expectation, Quantity, UnitKind
from dsl.plan import Cell, Plan
from lab.figures_format import figure_clause
from lab.history import Op
from lab.judge.checkers import CheckContext, CheckResult
from lab.judge.expectations import Unmeasurable, compare, compare_lower_bound, measure, metric_text

_ANY = Quantity(value=0, kind="count", text="")


@dataclass(frozen=True, slots=True)
class Side:
    """One side of a claim as measured in one cell."""

    value: float | None
    unit: UnitKind | None
    lower_bound: bool = False
    why: str | None = None  # why it is unknown

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "unit": self.unit, "lower_bound": self.lower_bound,
                "why": self.why}


def claims_of(plan: Plan) -> list[tuple[int, Expectation]]:
    """``(position among the plan's expectations, claim)`` for every claim across cells."""
    return [(i, e) for i, e in enumerate(plan.expectations) if e.across_cells]


def measure_sides(
    plan: Plan,
    cell: Cell,
    results: Mapping[str, CheckResult],
    ctx: CheckContext,
    history: Sequence[Op] | None = None,
) -> dict[str, Side]:
    """The figures a cell contributes to the run's claims: ``"<position>:left"`` when the
    cell is of the claim's left variant, ``"<position>:right"`` of its right one."""
    out: dict[str, Side] = {}
    for i, e in claims_of(plan):
        assert e.other is not None
        for side, variant, metric in (("left", e.variant, e.metric),
                                      ("right", e.other_variant, e.other)):
            if variant != cell.variant:
                continue
            try:
                got = measure(metric, _ANY, results, ctx, history)
            except Unmeasurable as exc:
                out[f"{i}:{side}"] = Side(None, None, why=str(exc))
                continue
            except Exception as exc:  # noqa: BLE001 - a bug must not lose the other claims
                out[f"{i}:{side}"] = Side(None, None, why=f"{type(exc).__name__}: {exc}")
                continue
            out[f"{i}:{side}"] = Side(got.value, got.unit, got.lower_bound)
    return out


@dataclass
class ClaimOutcome:
    text: str
    passed: bool | None
    explanation: str
    group: dict[str, str] = field(default_factory=dict)  # the vary values it was judged at
    left: float | None = None
    right: float | None = None
    ratio: float | None = None  # left / right
    unit: UnitKind | None = None
    left_cells: list[int] = field(default_factory=list)
    right_cells: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "passed": self.passed, "explanation": self.explanation,
                "group": self.group, "left": self.left, "right": self.right,
                "ratio": self.ratio, "unit": self.unit, "left_cells": self.left_cells,
                "right_cells": self.right_cells}


@dataclass(frozen=True, slots=True)
class CellSides:
    """What one cell contributed: its plan cell and its sides."""

    cell: Cell
    sides: Mapping[str, Side]


def _mean(sides: list[Side]) -> tuple[float | None, bool, str | None]:
    """(mean, some figure is only a lower bound, why unknown)."""
    if not sides:
        return None, False, "no cell of that variant ran"
    unknown = [s for s in sides if s.value is None]
    if unknown:
        return None, False, unknown[0].why or "not measured"
    values = [s.value for s in sides if s.value is not None]
    return sum(values) / len(values), any(s.lower_bound for s in sides), None


def _judge(e: Expectation, left: float, right: float, left_bound: bool, right_bound: bool,
           ) -> bool | None:
    target = e.value.value * right
    if right_bound:  # the right side is only a lower bound: its true value may be larger
        return None
    if left_bound:
        return compare_lower_bound(left, e.op, target)
    return compare(left, e.op, target)


def _side_text(e: Expectation, side: str) -> str:
    m = e.metric if side == "left" else e.other
    assert m is not None
    variant = e.variant if side == "left" else e.other_variant
    return f"{metric_text(m, resolve_stat(m.name, m.stat))} in {variant}"


def judge_claims(plan: Plan, cells: Iterable[CellSides]) -> list[ClaimOutcome]:
    """Every claim across cells, judged on the figures the cells measured (one outcome per
    combination of ``vary`` values)."""
    ran = list(cells)
    groups: list[dict[str, str]] = []
    for c in plan.cells:
        if c.sweep not in groups:
            groups.append(dict(c.sweep))
    out: list[ClaimOutcome] = []
    for i, e in claims_of(plan):
        for group in groups or [{}]:
            out.append(_judge_group(e, i, group, ran))
    return out


def _judge_group(e: Expectation, i: int, group: dict[str, str], ran: list[CellSides],
                 ) -> ClaimOutcome:
    here = [c for c in ran if c.cell.sweep == group]
    lefts = [(c.cell.index, c.sides[f"{i}:left"]) for c in here if f"{i}:left" in c.sides]
    rights = [(c.cell.index, c.sides[f"{i}:right"]) for c in here if f"{i}:right" in c.sides]
    left, lb, lwhy = _mean([s for _, s in lefts])
    right, rb, rwhy = _mean([s for _, s in rights])
    unit = next((s.unit for _, s in lefts + rights if s.unit is not None), None)
    outcome = ClaimOutcome(e.text, None, "", group, left, right, None, unit,
                           [n for n, _ in lefts], [n for n, _ in rights])
    ltext, rtext = _side_text(e, "left"), _side_text(e, "right")
    if left is None or right is None:
        side, why = (ltext, lwhy) if left is None else (rtext, rwhy)
        outcome.explanation = f"unknown: {side} could not be measured: {why}"
        return outcome
    if right != 0:
        outcome.ratio = left / right
    outcome.passed = _judge(e, left, right, lb, rb)
    verdict = {True: "holds", False: "fails", None: "undecided"}[outcome.passed]
    shown_unit: UnitKind = unit or "count"
    ratio = f"{outcome.ratio:.3g}" if outcome.ratio is not None else "undefined (right is 0)"
    outcome.explanation = (
        f"{figure_clause(ltext, left, shown_unit, lb)}; "
        f"{figure_clause(rtext, right, shown_unit, rb)}; ratio {ratio}; "
        f"expected {e.op} {e.value.text} x: {verdict}"
    )
    if outcome.passed is None and (lb or rb):
        outcome.explanation += " (only a lower bound is known)"
    return outcome


def claims_passed(claims: Iterable[ClaimOutcome]) -> bool:
    """True when every claim holds (an unknown one does not)."""
    return all(c.passed is True for c in claims)


def claim_lines(summary: Mapping[str, Any]) -> list[str]:
    """The run's claims as the terminal report prints them: verdict, the two figures, the
    ratio (``[]`` when the run has none)."""
    out: list[str] = []
    for c in summary.get("claims") or []:
        mark = {True: "PASS", False: "FAIL", None: "UNKNOWN"}[c.get("passed")]
        group = c.get("group") or {}
        at = " (" + ", ".join(f"{k}={v}" for k, v in group.items()) + ")" if group else ""
        out.append(f"{mark} {c.get('text', '')}{at}: {c.get('explanation', '')}")
    return out
