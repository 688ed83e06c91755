"""warmup: how long until throughput is at its level, after a cache-drop fault or, when the
history has none, from the start.

Without a fault (``mode = "start"``): the seconds from the workload's first whole second until
its per-second throughput first reaches 90 % of its mean over the second half of its active
window.

After faults (``mode = "fault"``):

Faults considered: nemesis ops named in ``WARMUP_FAULTS`` in the history, plus any listed by the
engine in ``ctx.facts["warmup"]["faults"]`` (dicts with ``name``, ``start``, ``end`` in ns). For
each fault and each workload with a per-second series (``lab.judge.checkers.series``):

- baseline: the whole seconds of the workload's active window in the N seconds before the fault
  started (N = ``ctx.facts["warmup"]["baseline"]``, default 10), but those overlapping an
  earlier fault (any nemesis action) or an outage of the workload (``downtime``'s windows, on
  any of its endpoints): an outage is no noise; its mean is the level, its min..max the noise;
- ``warmup`` = start of the first whole second at >= 90 % of the level among those that end
  after the fault ended (the second in which it ended counts), minus the end of the fault, at
  least 0 (1-second resolution);
- ``min_level``: the lowest per-second throughput relative to the level, over the whole seconds
  the fault overlaps and those after it, to the later of recovery and N seconds;
- when no second of that window falls below the noise (the baseline's minimum), the dip is
  within the noise: ``dip_beyond_noise = False`` and ``warmup = 0``;
- when throughput never recovers before the end of the active window, ``warmup`` is None,
  ``recovered`` False and ``lower_bound`` holds the seconds observed.

A workload's figure is the worst over the faults. A cache drop that did not complete (its
action failed: ``finished: false``) is no fault here: nothing is computed from it; when it is
the only one, every workload's figure is unknown and says so.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lab.history import NS, Op, fault_windows
from lab.judge.checkers.base import CheckContext, CheckResult
from lab.judge.checkers.downtime import outage_spans
from lab.judge.checkers.series import Series, per_second

NAME = "warmup"
WARMUP_FAULTS = frozenset({"drop_caches", "cold_restart"})
DEFAULT_BASELINE_S = 10.0
RECOVERED_AT = 0.9
MIN_BASELINE_SECONDS = 3


@dataclass(frozen=True, slots=True)
class FaultTime:
    name: str
    node: str | None
    start: float  # seconds since load start
    end: float


def _failed(history: Sequence[Op], t0: int) -> list[FaultTime]:
    """Cache-drop faults that did not complete (``ok`` False: a drop the kernel had not
    finished within its limit): nothing is computed from them."""
    return [FaultTime(w.name, w.node, (w.start - t0) / NS, ((w.end or w.start) - t0) / NS)
            for w in fault_windows(history) if w.name in WARMUP_FAULTS and w.ok is False]


def _faults(history: Sequence[Op], ctx: CheckContext, t0: int) -> list[FaultTime]:
    out = [
        FaultTime(w.name, w.node, (w.start - t0) / NS, ((w.end or w.start) - t0) / NS)
        for w in fault_windows(ctx.nemesis(history))
        if w.name in WARMUP_FAULTS and w.ok is not False
    ]
    fact = ctx.facts.get("warmup")
    if isinstance(fact, dict):
        for f in fact.get("faults", []) or []:
            start = int(f["start"])
            end = int(f.get("end") or start)
            out.append(FaultTime(str(f.get("name", "fault")), f.get("node"),
                                 (start - t0) / NS, (end - t0) / NS))  # fmt: skip
    out.sort(key=lambda f: f.start)
    return out


def warmup_after(s: Series, fault: FaultTime, baseline_s: float,
                 earlier: Sequence[tuple[float, float]] = ()) -> dict[str, Any]:
    """``earlier``: the windows (seconds since the load's start) of the faults before this
    one and of the workload's outages; a second of the baseline that overlaps one is left out
    (an outage in it made its noise start at 0, so that no dip could be beyond it)."""
    full = s.full_seconds()
    base_secs = [i for i in full if i >= fault.start - baseline_s and i + 1 <= fault.start
                 and not any(a < i + 1 and i <= b for a, b in earlier)]
    res: dict[str, Any] = {"fault": fault.name, "node": fault.node, "start": fault.start,
                           "end": fault.end}  # fmt: skip
    if len(base_secs) < MIN_BASELINE_SECONDS:
        res["unknown"] = (
            f"only {len(base_secs)} whole seconds of load before the fault, outside earlier "
            f"faults (need {MIN_BASELINE_SECONDS})"
        )
        return res
    base_vals = [s.per_second[i] for i in base_secs]
    level = statistics.fmean(base_vals)
    if level <= 0:
        res["unknown"] = "no throughput before the fault"
        return res
    lo, hi = min(base_vals), max(base_vals)
    res.update(
        baseline=level,
        noise={"min": lo, "max": hi, "stdev": statistics.pstdev(base_vals)},
    )
    # the seconds the fault overlaps count: a dip in the second that began 77 ms before the
    # drop ended is the drop's dip (it was left out, and "no dip beyond noise" said)
    after = [i for i in full if i + 1 > fault.end]
    if not after:
        res["unknown"] = "no whole second of load after the fault"
        return res
    recovered_at: int | None = None
    for i in after:
        if s.per_second[i] >= RECOVERED_AT * level:
            recovered_at = i
            break
    horizon = max(recovered_at if recovered_at is not None else math.inf,
                  math.ceil(fault.end) + baseline_s)  # fmt: skip
    during = [i for i in full if fault.start < i + 1 and i < fault.end and i not in after]
    window = [s.per_second[i] for i in [*during, *after] if i <= horizon]
    min_v = min(window) if window else None
    res["min_level"] = min_v / level if min_v is not None else None
    res["dip_beyond_noise"] = min_v is not None and min_v < lo
    if not res["dip_beyond_noise"]:
        res.update(warmup=0.0, recovered=True, note="no dip beyond noise")
    elif recovered_at is None:
        res.update(warmup=None, recovered=False, lower_bound=max(0.0, s.active_end - fault.end))
    else:
        res.update(warmup=max(0.0, recovered_at - fault.end), recovered=True)
    return res


def warmup_from_start(s: Series) -> dict[str, Any]:
    """Seconds from the workload's start until its per-second throughput first reaches 90 %
    of its mean over the second half of its active window."""
    full = list(s.full_seconds())
    res: dict[str, Any] = {"mode": "start"}
    if len(full) < 2 * MIN_BASELINE_SECONDS:
        res.update(warmup=None, recovered=None,
                   unknown=f"only {len(full)} whole seconds of load "
                           f"(need {2 * MIN_BASELINE_SECONDS})")  # fmt: skip
        return res
    level = statistics.fmean(s.per_second[i] for i in full[len(full) // 2 :])
    if level <= 0:
        res.update(warmup=None, recovered=None, unknown="no throughput in the second half")
        return res
    reached = next(i for i in full if s.per_second[i] >= RECOVERED_AT * level)
    before = [s.per_second[i] for i in full if i <= reached]
    res.update(
        warmup=max(0.0, reached - s.active_start),
        recovered=True,
        baseline=level,
        min_level=min(before) / level,
        dip_beyond_noise=reached > full[0],
    )
    return res


def check(history: Sequence[Op], ctx: CheckContext) -> CheckResult:
    t0, _ = ctx.bounds(history)
    faults = _faults(history, ctx, t0)
    failed = _failed(ctx.nemesis(history), t0)  # the faults' records: all it reads
    if failed and not faults:
        f = failed[0]
        why = (f"the {f.name.replace('_', ' ')} at {f.start:.1f} s did not complete (failed): "
               "nothing is computed from it")
        none = {w: {"mode": "fault", "warmup": None, "recovered": None, "unknown": why}
                for w in per_second(history, ctx)}
        return CheckResult(NAME, None, {"faults": 0, "failed_faults": len(failed),
                                        "mode": "fault", "subjects": none}, why)
    if not faults:
        from_start = {w: warmup_from_start(s) for w, s in per_second(history, ctx).items()}
        return CheckResult(NAME, True, {"faults": 0, "mode": "start", "subjects": from_start},
                           "no cache-drop fault in the history: warmup from the start")  # fmt: skip
    fact = ctx.facts.get("warmup")
    baseline_s = DEFAULT_BASELINE_S
    if isinstance(fact, dict):
        baseline_s = float(fact.get("baseline", DEFAULT_BASELINE_S))
    subjects: dict[str, dict[str, Any]] = {}
    windows = [((w.start - t0) / NS, ((w.end or w.start) - t0) / NS)
               for w in fault_windows(ctx.nemesis(history))]
    outages = outage_spans(history, ctx)
    for w, s in per_second(history, ctx).items():
        down = [((a - t0) / NS, (b - t0) / NS) for a, b in outages.get(w, [])]
        per_fault = [warmup_after(s, f, baseline_s,
                                  [(a, b) for a, b in windows + down if a < f.start - 1e-9])
                     for f in faults]
        known = [r for r in per_fault if "unknown" not in r]
        subj: dict[str, Any] = {"faults": per_fault}
        if not known:
            subj.update(warmup=None, recovered=None, unknown=per_fault[0]["unknown"])
        else:
            unrecovered = [r for r in known if not r["recovered"]]
            if unrecovered:
                subj.update(warmup=None, recovered=False,
                            lower_bound=max(r["lower_bound"] for r in unrecovered))  # fmt: skip
            else:
                subj.update(warmup=max(r["warmup"] for r in known), recovered=True)
            levels = [r["min_level"] for r in known if r["min_level"] is not None]
            subj["min_level"] = min(levels) if levels else None
            subj["dip_beyond_noise"] = any(r["dip_beyond_noise"] for r in known)
        subj["mode"] = "fault"
        subjects[w] = subj
    return CheckResult(NAME, True, {"faults": len(faults), "failed_faults": len(failed),
                                    "mode": "fault", "subjects": subjects})
