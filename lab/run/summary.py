"""The JSON summary of a run (docs/results.md), the figures of its ``report`` lines and each
cell's fault timeline (``fault_timeline``: the faults with their times since the start of the
load)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dsl.actions import label
from dsl.models import Metric, Quantity, TimedAction
from lab.figures_format import format_figure
from lab.history import NS, FaultWindow
from lab.judge.checkers import CheckContext, CheckResult
from lab.judge.expectations import Unmeasurable, measure, metric_text
from lab.run.context import run_context
from lab.run.outcome import RunOutcome


def summary(outcome: RunOutcome) -> dict[str, Any]:
    """The JSON summary of a run (docs/results.md)."""
    return {
        "run_id": outcome.run_id,
        "experiment": outcome.plan.name,
        "source": outcome.plan.source,
        "status": outcome.status,
        "topology": outcome.plan.topology,
        "backend": outcome.plan.backend,
        "context": run_context(outcome.plan),
        "exit_code": outcome.exit_code,
        "message": outcome.message,
        "claims": [c.to_json() for c in outcome.claims],
        "cells": [
            {
                "index": c.cell.index,
                "label": c.cell.label,
                "variant": c.cell.variant,
                "sweep": c.cell.sweep,
                "repeat": c.cell.repeat,
                "status": c.status,
                "error": c.error,
                "operations": c.operations,
                "timings": {k: round(v, 3) for k, v in c.timings.items()},
                "healed": c.healed,
                "heal": c.heal,
                "notes": c.notes,
                "faults": c.faults,
                "workloads": {w.name: w.kind for w in c.cell.workloads},
                "read_only_workloads": [w.name for w in c.cell.workloads
                                        if w.kind == "probe" and w.operation == "read"],
                "expectations": [e.to_json() for e in c.expectations],
                "reports": c.reports,
                "measurements": {name: r.metrics for name, r in c.results.items()},
            }
            for c in outcome.cells
        ],
    }


def report_figure(metric: Metric, text: str, results: dict[str, CheckResult],
                  ctx: CheckContext) -> dict[str, Any]:
    """A ``report`` line: the figure, without a verdict."""
    try:
        got = measure(metric, Quantity(value=0, kind="count", text=""), results, ctx)
    except Unmeasurable as e:
        return {"text": text, "metric": metric_text(metric), "value": None, "unit": None,
                "display": f"unknown: {e}"}
    shown = format_figure(got.value, got.unit, got.lower_bound, metric_text(metric, got.stat))
    return {"text": text, "metric": metric_text(metric, got.stat), "value": got.value,
            "unit": got.unit, "display": shown}


def action_label(ta: TimedAction) -> str:
    """``kill db2``: a timed action as the live view lists it."""
    return label(ta.action)


def fault_timeline(windows: Iterable[FaultWindow], origin_ns: int) -> list[dict[str, Any]]:
    """The cell's faults in start order, times in seconds since ``origin_ns`` (the start of the
    load): ``name``, ``node``, ``at``, ``end`` (None: still active when the history ended),
    ``ok`` (None while active, False when the action failed), ``error``, ``detail``."""
    out = []
    for w in sorted(windows, key=lambda f: f.start):
        out.append({
            "name": w.name, "node": w.node, "at": round((w.start - origin_ns) / NS, 3),
            "end": None if w.end is None else round((w.end - origin_ns) / NS, 3),
            "ok": w.ok, "error": w.error_msg, "detail": w.detail,
        })  # fmt: skip
    return out
