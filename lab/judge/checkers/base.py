"""What every checker shares: the result record, the context of a run, and safe composition.

A checker is a pure function ``check(history, ctx) -> CheckResult``. Its ``metrics`` follow one
shape so that results can be stored and looked up generically::

    {"count": 3, ...,                      # figures over every subject
     "subjects": {"ryw": {...},            # per workload (or per node for replication_lag)
                  "ryw on db3": {...}}}    # per workload and node/endpoint

Values are JSON-serialisable: numbers, strings, booleans, None, lists and dicts. Durations are
seconds, ratios are 0..1, throughput is operations per second.
"""

from __future__ import annotations

import gc
import logging
import math
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from lab.history import NS, Completed, Op, Paired, Sample
from lab.judge.checkers.columns import Columns

log = logging.getLogger(__name__)

JSON = Any
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class WorkloadInfo:
    """What the checkers need to know about a workload."""

    kind: str  # probe, unique_writes, read_your_writes, unique_insert, connect, sysbench, ""
    targets: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()
    key_count: int | None = None  # transactional workloads: keys, counters or accounts


@dataclass(slots=True)
class CheckResult:
    name: str
    valid: bool | None  # None: unknown (the checker could not decide, or raised)
    metrics: dict[str, JSON] = field(default_factory=dict)
    details: str = ""  # human-readable notes; the error and traceback tail when it raised

    def subject(self, name: str) -> dict[str, JSON] | None:
        subjects = self.metrics.get("subjects")
        if isinstance(subjects, dict):
            got = subjects.get(name)
            return got if isinstance(got, dict) else None
        return None

    def rows(self) -> list[MeasurementRow]:
        """The metrics flattened for storage: one row per figure (see ``flatten_metrics``)."""
        return flatten_metrics(self.name, self.metrics)


@dataclass(frozen=True, slots=True)
class MeasurementRow:
    checker: str
    subject: str  # "" for figures over every subject
    name: str  # dotted path: "longest", "visibility.p99", "by_code.1062"
    value: float | None  # numbers and booleans
    json: JSON = None  # lists, strings, None-valued figures


def flatten_metrics(checker: str, metrics: Mapping[str, JSON]) -> list[MeasurementRow]:
    """Nested dicts become dotted names; numbers and booleans go to ``value``; lists, strings
    and None go to ``json``. ``subjects`` maps subject -> metrics of that subject."""
    rows: list[MeasurementRow] = []
    for k, v in metrics.items():
        if k == "subjects" and isinstance(v, dict):
            for subj, m in v.items():
                if isinstance(m, dict):
                    _flatten_into(rows, checker, str(subj), "", m)
            continue
        _flatten_into(rows, checker, "", "", {k: v})
    return rows


def _flatten_into(
    rows: list[MeasurementRow], checker: str, subject: str, prefix: str, m: Mapping[str, JSON]
) -> None:
    for k, v in m.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            _flatten_into(rows, checker, subject, name + ".", v)
        elif isinstance(v, bool):
            rows.append(MeasurementRow(checker, subject, name, float(v)))
        elif isinstance(v, int | float):
            f = float(v)
            rows.append(MeasurementRow(checker, subject, name, f if math.isfinite(f) else None))
        else:
            rows.append(MeasurementRow(checker, subject, name, None, v))


@dataclass
class CheckContext:
    """Everything a checker may use besides the history.

    ``final_state[workload][node][key] = value``: rows read on every node after the faults were
    healed and replication settled. ``facts`` holds figures the engine measured directly:
    ``facts["missing_transactions"][node] = int``,
    ``facts["relay_log_bytes"][node] = {"before": b, "after": a}``,
    ``facts["warmup"] = {"faults": [{"name", "node", "start", "end"}], "baseline": seconds}``.
    ``load_start``/``load_end`` (monotonic ns) bound the load; when None they are taken from the
    history.
    """

    workloads: dict[str, WorkloadInfo] = field(default_factory=dict)
    load_start: int | None = None
    load_end: int | None = None
    final_state: dict[str, dict[str, dict[int, Any]]] = field(default_factory=dict)
    samples: list[Sample] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def memo(self, name: str, history: Sequence[Op], compute: Callable[[], T]) -> T:
        """``compute()`` once per (history object, its length, samples, load bounds): derived
        data shared by several checkers. The cache keeps the history alive, so the identity
        check cannot be fooled by a recycled id."""
        sig = (len(history), len(self.samples), self.load_start, self.load_end)
        hit = self.cache.get(name)
        if hit is not None and hit[0] is history and hit[1] == sig:
            return hit[2]  # type: ignore[no-any-return]
        value = compute()
        self.cache[name] = (history, sig, value)
        return value

    def last_history(self) -> Sequence[Op] | None:
        """The history the checkers last ran on with this context (for expectations that need
        the operations again, e.g. ``latency(w) last 30s``)."""
        hit = self.cache.get("columns")
        return hit[0] if hit is not None else None

    def columns(self, history: Sequence[Op]) -> Columns:
        """The paired client operations as arrays (``lab.judge.checkers.columns``), built once per
        history and shared by the checkers."""
        return self.memo("columns", history, lambda: Columns(history))

    def paired(self, history: Sequence[Op]) -> Paired:
        """``pair_ops(history)`` (one ``Completed`` per operation, made from the columns on
        first use), computed once per history and shared by the checkers."""
        return self.memo("paired", history, lambda: self.columns(history).paired())

    def by_f(self, history: Sequence[Op]) -> Mapping[str, list[Completed]]:
        """The paired ops grouped by operation (``write``, ``read`` ...), each group in
        completion order, made when asked for: checkers that look at a few kinds skip the
        rest cheaply."""
        return self.memo("by_f", history, lambda: self.columns(history).by_f())

    def by_where(self, history: Sequence[Op]) -> dict[tuple[str, str], list[Completed]]:
        """The paired ops grouped by (workload, the node that answered or else the endpoint),
        each group in completion order, first seen first: latency and errors count within
        the groups instead of looking each op up again."""

        def group() -> dict[tuple[str, str], list[Completed]]:
            out: dict[tuple[str, str], list[Completed]] = {}
            get = out.get
            for c in self.paired(history).ops:
                k = (c.workload, c.node or c.endpoint)
                lst = get(k)
                if lst is None:
                    out[k] = [c]
                else:
                    lst.append(c)
            return out

        return self.memo("by_where", history, group)

    def nemesis(self, history: Sequence[Op]) -> list[Op]:
        """The faults' records of the history (``process == NEMESIS``), in history order,
        picked out once per history: checkers that look at the faults skip the rest."""
        return self.columns(history).faults  # picked out on the pairing's pass

    def bounds(self, history: Sequence[Op]) -> tuple[int, int]:
        """(load start, load end) in ns: from the context, else the span of the client ops
        (and samples) in the history."""
        start, end = self.load_start, self.load_end
        if start is not None and end is not None:
            return start, max(start, end)
        return self.memo("bounds", history, lambda: self._bounds(history))

    def _bounds(self, history: Sequence[Op]) -> tuple[int, int]:
        start, end = self.load_start, self.load_end
        times: list[int] = []
        tb = self.columns(history).time_bounds
        if tb is not None:
            times.extend(tb)
        times.extend(s.time for s in self.samples)
        lo, hi = (min(times), max(times)) if times else (0, 0)
        start = lo if start is None else start
        end = hi if end is None else end
        return start, max(start, end)

    def duration_s(self, history: Sequence[Op]) -> float:
        start, end = self.bounds(history)
        return (end - start) / NS

    def kind(self, workload: str) -> str:
        info = self.workloads.get(workload)
        return info.kind if info else ""


Checker = Callable[[Sequence[Op], CheckContext], CheckResult]


def safe_check(
    name: str, checker: Checker, history: Sequence[Op], ctx: CheckContext
) -> CheckResult:
    """Run one checker; an exception becomes ``valid=None`` with the error in ``details``."""
    try:
        result = checker(history, ctx)
    except Exception as e:  # noqa: BLE001 - a checker bug must not lose the other results
        log.exception("checker %s raised", name)
        tb = "".join(traceback.format_exception(e)[-3:]).strip()
        return CheckResult(name, None, {}, f"checker raised {type(e).__name__}: {e}\n{tb}")
    if result.name != name:
        result.name = name
    return result


def run_checkers(
    history: Sequence[Op],
    ctx: CheckContext,
    checkers: Mapping[str, Checker] | None = None,
) -> dict[str, CheckResult]:
    """Run checkers (default: every one in ``ALL_CHECKERS``) and return results by name."""
    if checkers is None:
        from lab.judge.checkers import ALL_CHECKERS

        checkers = ALL_CHECKERS
    # Millions of long-lived objects (the history) make the cyclic GC's full collections
    # expensive, and checkers create no garbage cycles: pause it while they run.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return {name: safe_check(name, fn, history, ctx) for name, fn in checkers.items()}
    finally:
        if was_enabled:
            gc.enable()


def compose(
    checkers: Mapping[str, Checker],
) -> Callable[[Sequence[Op], CheckContext], dict[str, CheckResult]]:
    """Several checkers as one function returning every result by name."""

    def composed(history: Sequence[Op], ctx: CheckContext) -> dict[str, CheckResult]:
        return run_checkers(history, ctx, checkers)

    return composed


# --- small numeric helpers ------------------------------------------------------------------


def percentile(sorted_values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100) of already sorted values; None when empty."""
    n = len(sorted_values)
    if n == 0:
        return None
    rank = math.ceil(q / 100.0 * n)
    return float(sorted_values[min(max(rank, 1), n) - 1])


def summary(values: Iterable[float], *, scale: float = 1.0) -> dict[str, float | int | None]:
    """count, mean, min, p50, p90, p95, p99, p999, max of the values times ``scale``
    (``scale`` is applied to the figures, not to every value: cheap on millions of ints)."""
    xs = sorted(values)
    n = len(xs)
    if n == 0:
        return {"count": 0, "mean": None, "min": None, "p50": None, "p90": None, "p95": None,
                "p99": None, "p999": None, "max": None}  # fmt: skip
    return summary_of_sorted(xs, math.fsum(xs), scale=scale)


def summary_of_sorted(xs: Sequence[float], total: float, *, scale: float = 1.0
                      ) -> dict[str, float | int | None]:
    """``summary``'s figures of values already sorted (at least one) whose sum is ``total``
    (the columnar checkers sum their arrays exactly their own way)."""
    n = len(xs)

    def pct(q: float) -> float:
        return float(xs[min(max(math.ceil(q / 100.0 * n), 1), n) - 1]) * scale

    return {
        "count": n,
        "mean": (total / n) * scale,
        "min": float(xs[0]) * scale,
        "p50": pct(50),
        "p90": pct(90),
        "p95": pct(95),
        "p99": pct(99),
        "p999": pct(99.9),
        "max": float(xs[-1]) * scale,
    }


def seconds(ns: int | float) -> float:
    return ns / NS
