"""replication_lag: from the ``lag`` samples (a heartbeat row written on the primary and read on
each replica): per replica the max, mean, p50, p95, p99, and the series over time.

Sample contract: ``Sample(series="lag", subject=<replica node>, time=<ns>,
values={"lag": <seconds>})``. A sample without a finite ``lag`` (the replica could not be read,
replication stopped) is counted in ``unreadable`` and left out of the figures; one of a replica
that answered but had no heartbeat row yet (``no_heartbeat``: its replication never brought
one) is counted in ``no_heartbeat``, not as unreadable: the replica was up. The series is
downsampled to at most ``MAX_POINTS`` points per replica, keeping the highest lag of each slice
of time so that peaks stay visible.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from lab.history import NS, Op
from lab.judge.checkers.base import CheckContext, CheckResult, summary

NAME = "replication_lag"
SERIES = "lag"
MAX_POINTS = 300


def downsample(
    points: list[tuple[float, float]], max_points: int = MAX_POINTS
) -> list[list[float]]:
    """[[t, lag], ...] with at most ``max_points`` entries: the max of each equal time slice."""
    if len(points) <= max_points:
        return [[t, v] for t, v in points]
    t_lo, t_hi = points[0][0], points[-1][0]
    width = (t_hi - t_lo) / max_points or 1.0
    out: list[list[float]] = []
    cur_slot = -1
    for t, v in points:
        slot = min(int((t - t_lo) / width), max_points - 1)
        if slot != cur_slot:
            out.append([t, v])
            cur_slot = slot
        elif v > out[-1][1]:
            out[-1] = [t, v]
    return out


def check(history: Sequence[Op], ctx: CheckContext) -> CheckResult:
    t0, _ = ctx.bounds(history)
    points: dict[str, list[tuple[float, float]]] = defaultdict(list)
    unreadable: dict[str, int] = defaultdict(int)
    no_beat: dict[str, int] = defaultdict(int)
    for s in ctx.samples:
        if s.series != SERIES:
            continue
        if s.values.get("no_heartbeat"):
            no_beat[s.subject] += 1
            continue
        lag = s.values.get("lag")
        if lag is None or not isinstance(lag, int | float) or not math.isfinite(lag):
            unreadable[s.subject] += 1
            continue
        points[s.subject].append(((s.time - t0) / NS, float(lag)))

    subjects: dict[str, dict[str, Any]] = {}
    for node in sorted(set(points) | set(unreadable) | set(no_beat)):
        pts = sorted(points.get(node, []))
        st = summary(v for _, v in pts)
        subj: dict[str, Any] = {
            "max": st["max"], "mean": st["mean"], "p50": st["p50"], "p95": st["p95"],
            "p99": st["p99"], "samples": st["count"], "unreadable": unreadable.get(node, 0),
            "no_heartbeat": no_beat.get(node, 0), "series": downsample(pts),
        }  # fmt: skip
        subjects[node] = subj
    maxes = [s["max"] for s in subjects.values() if s["max"] is not None]
    metrics: dict[str, Any] = {"max": max(maxes) if maxes else None, "subjects": subjects}
    details = "" if subjects else "no replication lag samples were recorded"
    return CheckResult(NAME, True, metrics, details)
