"""throughput and stalls, from the per-second series (see ``lab.judge.checkers.series``).

throughput: per workload, and per workload and answering node (``"w on db2"``), the mean
(completed ok operations / seconds of the workload's active window; sysbench: the mean of its
per-second tps), p50, min and max over whole seconds, the total, and the
per-second series (``per_second[s]`` = second [s, s+1) of the load) from which an expectation
takes the mean over the last N seconds of the workload's run (``figures_lookup.last_window``).

stalls: per workload the whole seconds inside its active window with zero completed operations
(sysbench: tps 0 or no row), their count, the longest run of consecutive ones (seconds) and the
runs themselves.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lab.history import Op
from lab.judge.checkers.base import CheckContext, CheckResult, percentile
from lab.judge.checkers.series import Series, per_second, per_second_by_node

MAX_RUNS = 200


def _throughput(s: Series) -> dict[str, Any]:
    full = [s.per_second[i] for i in s.full_seconds()]
    if s.source == "ops":
        mean = s.total / s.active_seconds if s.active_seconds > 0 else None
    else:
        mean = sum(full) / len(full) if full else None
    return {
        "mean": mean,
        "p50": percentile(sorted(full), 50),
        "min": min(full) if full else None,
        "max": max(full) if full else None,
        "total": s.total,
        "seconds": s.active_seconds,
        "start": s.active_start,
        "end": s.active_end,
        "source": s.source,
        "per_second": [round(v, 3) for v in s.per_second],
    }


def check_throughput(history: Sequence[Op], ctx: CheckContext) -> CheckResult:
    series = per_second(history, ctx)
    subjects = {w: _throughput(s) for w, s in series.items()}
    subjects.update((k, _throughput(s)) for k, s in per_second_by_node(history, ctx).items())
    return CheckResult(
        "throughput",
        True,
        {"load_seconds": ctx.duration_s(history), "subjects": subjects},
        "" if subjects else "no completed operations and no sysbench rows",
    )


def stall_runs(s: Series) -> list[tuple[int, int]]:
    """(first second, length) of each run of zero seconds inside the active window."""
    runs: list[tuple[int, int]] = []
    start: int | None = None
    rng = s.full_seconds()
    for i in rng:
        if s.per_second[i] == 0:
            if start is None:
                start = i
        elif start is not None:
            runs.append((start, i - start))
            start = None
    if start is not None:
        runs.append((start, rng.stop - start))
    return runs


def check_stalls(history: Sequence[Op], ctx: CheckContext) -> CheckResult:
    subjects: dict[str, dict[str, Any]] = {}
    total = 0
    for w, s in per_second(history, ctx).items():
        runs = stall_runs(s)
        count = sum(n for _, n in runs)
        total += count
        subjects[w] = {
            "count": count,
            "longest": float(max((n for _, n in runs), default=0)),
            "runs": [{"start": a, "end": a + n, "seconds": n} for a, n in runs[:MAX_RUNS]],
            "seconds_checked": len(s.full_seconds()),
        }
    return CheckResult("stalls", True, {"count": total, "subjects": subjects})
