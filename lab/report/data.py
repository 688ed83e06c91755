"""The numbers behind the HTML report (``lab.report.html_report``), read from a stored run.

Everything is per cell and in seconds since the start of the load (``cells.load_start_ns``);
second ``s`` is the interval [s, s+1). The same definitions as the checkers
(docs/results.md), so that a chart and the text report never disagree:

- **throughput**: ``lab.judge.checkers.series.per_second`` (``ok`` completions per second; the polls
  and reads of ``read_your_writes`` do not count; sysbench: its tps rows);
- **latency**: invoke to ``ok`` of the operations completed in each second, p50/p95/p99 per
  workload (nearest rank, as ``lab.judge.checkers.base.percentile``);
- **outages**: the ``downtime`` checker's windows, per workload;
- **visibility**: per write, ack to the first read that saw it on each node (the
  ``stale_reads`` checker's visibility, every value rather than its statistics); writes never
  seen there are kept apart with their lower bound;
- **replication lag**: the ``lag`` samples per replica, ``None`` where the replica could not be
  read;
- **errors**: operations that did not complete ``ok`` per second of their completion (an
  operation that never completed: of its invoke), per workload and code (the ``errors``
  checker's labels: ``2013``, ``timeout``, ``fail``, ``incomplete``);
- **failovers**: the ``failover`` checker's figures as consecutive phases;
- **fault periods**: from the nemesis operations; a fault that an action undoes (``kill`` /
  ``stop`` until ``start``, ``pause`` until ``resume``, a network fault until ``heal``, a full
  disk until ``disk free``, ``stop replication`` until ``start replication``) lasts until that
  action completed (a ``start``: until the server was ready, its ``ready_seconds``, when that
  is earlier: a former primary's rejoin comes after); other actions (``promote``,
  ``restart``, ``drop caches`` ...) last as long as they ran. Waits, sleeps and SQL statements
  are not faults.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lab.history import NEMESIS, NS, READ_FS, REREAD_FS, WRITE_FS, Completed, Op, Sample, pair_ops
from lab.judge.checkers.base import CheckContext, WorkloadInfo, percentile
from lab.judge.checkers.downtime import error_label
from lab.judge.checkers.series import per_second
from lab.judge.checkers.stale_reads import KeyWrites, Look, _visibility, version
from lab.judge.claims import claim_lines
from lab.report.summary_matrix import transaction_findings
from lab.report.timeline import fault_words
from lab.store.db import Store

RYW = "read_your_writes"
MAX_LAG_POINTS = 3000  # per replica; more are thinned keeping the highest lag of each slice

# an action that starts a fault -> the actions that end it (on the same node)
UNDONE_BY: dict[str, frozenset[str]] = {
    "kill": frozenset({"start", "restart", "cold_restart"}),
    "stop": frozenset({"start", "restart", "cold_restart"}),
    "pause": frozenset({"resume"}),
    "stop_replication": frozenset({"start_replication"}),
    "disk_full": frozenset({"disk_free"}),
    "latency": frozenset({"heal"}),
    "bandwidth": frozenset({"heal"}),
    "partition": frozenset({"heal"}),
    "link_down": frozenset({"heal"}),
}
ENDINGS: frozenset[str] = frozenset(n for ends in UNDONE_BY.values() for n in ends) - {
    "restart", "cold_restart"
}  # fmt: skip
NOT_FAULTS: frozenset[str] = frozenset({"sleep", "sql"})


# --- records ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FaultPeriod:
    """A fault from its start to the completion of the action that ended it."""

    label: str  # "kill db1 until start db1", "promote db2"
    name: str  # the fault's name in the history: kill, pause, promote ...
    node: str | None
    start: float
    end: float  # the end of the load when it was still active then
    open_at_end: bool = False  # still active when the load ended (healed after it, or never)
    ok: bool | None = True  # False: the action failed


@dataclass(slots=True)
class LatencySeries:
    """Per second with at least one ``ok`` completion: the second and its percentiles (s)."""

    seconds: list[int] = field(default_factory=list)
    p50: list[float] = field(default_factory=list)
    p95: list[float] = field(default_factory=list)
    p99: list[float] = field(default_factory=list)
    max: list[float] = field(default_factory=list)  # the slowest: a stall p99 hides shows here
    count: list[int] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Outage:
    workload: str
    start: float
    end: float
    duration: float
    kind: str  # "error" or "stall"
    open_at_end: bool
    errors: dict[str, int]


@dataclass(slots=True)
class VisibilityData:
    """Ack-to-visible times of one workload on one node (seconds, sorted); ``unseen``: the
    lower bounds of writes never seen there; ``resolution``: the median time between the read
    that saw a write and the look before it."""

    workload: str
    node: str
    times: list[float]
    unseen: list[float]
    resolution: float | None

    @property
    def subject(self) -> str:
        return f"{self.workload} on {self.node}"


@dataclass(frozen=True, slots=True)
class Phase:
    row: str  # the bar it belongs to: "phases", "router.writer outage", "lab's promote call"
    name: str
    start: float
    end: float
    open_at_end: bool = False


@dataclass(slots=True)
class FailoverData:
    title: str  # "db1 -> db2"
    fault_at: float | None
    phases: list[Phase]
    events: dict[str, float | None]  # name -> seconds since the start of the load


@dataclass(slots=True)
class CellReport:
    index: int
    label: str
    status: str
    error: str | None
    load_seconds: float
    notes: list[str] = field(default_factory=list)
    throughput: dict[str, list[float]] = field(default_factory=dict)
    throughput_source: dict[str, str] = field(default_factory=dict)
    # each workload's active window (seconds: first invoke, last completion; series.Series)
    throughput_window: dict[str, tuple[float, float]] = field(default_factory=dict)
    latency: dict[str, LatencySeries] = field(default_factory=dict)
    latency_source: dict[str, str] = field(default_factory=dict)
    outages: dict[str, list[Outage]] = field(default_factory=dict)
    visibility: list[VisibilityData] = field(default_factory=list)
    lag: dict[str, list[tuple[float, float | None]]] = field(default_factory=dict)
    errors: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    failovers: list[FailoverData] = field(default_factory=list)
    faults: list[FaultPeriod] = field(default_factory=list)
    expectations: list[dict[str, Any]] = field(default_factory=list)
    reports: list[dict[str, Any]] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)  # transactional ones, with their txns


@dataclass(slots=True)
class RunReport:
    run_id: str
    experiment: str
    source: str | None
    status: str
    exit_code: int | None
    message: str | None
    started_at: str | None
    ended_at: str | None
    cells: list[CellReport]
    claims: list[str] = field(default_factory=list)  # lab.judge.claims.claim_lines: across cells
    # the run's identity (lab.run.context): back-end, topology, engine, versions, config
    context: dict[str, Any] = field(default_factory=dict)

    @property
    def workloads(self) -> list[str]:
        """Every workload of every cell, in first-seen order (one colour each)."""
        seen: dict[str, None] = {}
        for c in self.cells:
            for w in (*c.throughput, *c.latency, *c.outages, *c.errors):
                seen.setdefault(w, None)
        return list(seen)


# --- from the store ---------------------------------------------------------------------------


def load_report(store: Store, ref: str) -> RunReport:
    """The report of run ``ref`` (an id or a unique prefix: ``RunNotFound`` / ``AmbiguousRun``
    otherwise)."""
    summary = store.summary(ref)
    rid = str(summary["run_id"])
    by_index = {int(c["index"]): c for c in summary.get("cells") or [] if "index" in c}
    cells = [cell_report(store, rid, row, by_index.get(int(row["idx"]), {}))
             for row in store.cells(rid)]  # fmt: skip
    return RunReport(
        run_id=rid,
        experiment=str(summary.get("experiment") or ""),
        source=summary.get("source"),
        status=str(summary.get("status") or ""),
        exit_code=summary.get("exit_code"),
        message=summary.get("message"),
        started_at=summary.get("started_at"),
        ended_at=summary.get("ended_at"),
        cells=cells,
        claims=claim_lines(summary),
        context=run_identity(summary),
    )


def run_identity(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The summary's ``context`` with its ``backend`` and ``topology`` filled from the summary
    when a run stored before contexts were recorded has them there (``None``: unknown)."""
    ctx = summary.get("context")
    out: dict[str, Any] = dict(ctx) if isinstance(ctx, dict) else {}
    for k in ("backend", "topology"):
        if not out.get(k):
            out[k] = summary.get(k)
    return out


def cell_report(
    store: Store, run_id: str, row: Mapping[str, Any], summary_cell: Mapping[str, Any]
) -> CellReport:
    """One cell: ``row`` from ``Store.cells``, ``summary_cell`` its entry of the JSON summary."""
    idx = int(row["idx"])
    history = store.operations(run_id, idx)
    samples = store.samples(run_id, idx)
    checks = {c["checker"]: c["metrics"] for c in store.checks(run_id, idx)}
    measurements = summary_cell.get("measurements")
    if isinstance(measurements, dict):  # the stored summary is the one printed at the end
        checks = {**checks, **{k: v for k, v in measurements.items() if isinstance(v, dict)}}
    kinds = summary_cell.get("workloads")
    kinds = dict(kinds) if isinstance(kinds, dict) else guess_kinds(history)
    ctx = CheckContext(
        workloads={w: WorkloadInfo(str(k)) for w, k in kinds.items()},
        load_start=row.get("load_start_ns"),
        load_end=row.get("load_end_ns"),
        samples=samples,
    )
    t0, t1 = ctx.bounds(history)
    paired = ctx.paired(history).ops
    out = CellReport(
        index=idx,
        label=str(row.get("label") or summary_cell.get("label") or f"cell {idx}"),
        status=str(row.get("status") or summary_cell.get("status") or ""),
        error=row.get("error") or summary_cell.get("error"),
        load_seconds=(t1 - t0) / NS,
        notes=[str(n) for n in summary_cell.get("notes") or []],
        expectations=list(summary_cell.get("expectations") or []),
        reports=list(summary_cell.get("reports") or []),
    )
    for w, s in per_second(history, ctx).items():
        out.throughput[w] = list(s.per_second)
        out.throughput_source[w] = s.source
        out.throughput_window[w] = (s.active_start, s.active_end)
    out.latency = latency_per_second(paired, t0, t1)
    out.latency_source = {w: "ops" for w in out.latency}
    for w, lat in sysbench_latency(samples, t0, t1).items():
        out.latency.setdefault(w, lat)
        out.latency_source.setdefault(w, "sysbench per-second p95")
    out.outages = outages(checks.get("downtime"))
    out.visibility = visibility(history)
    out.lag = lag_series(samples, t0)
    out.errors = errors_per_second(paired, t0, t1)
    out.failovers = failover_phases(checks.get("failover"), out.load_seconds)
    out.faults = fault_periods(history, t0, t1)
    out.findings = transaction_findings({"measurements": checks})
    return out


def guess_kinds(history: Sequence[Op]) -> dict[str, str]:
    """Workload kinds when the summary does not have them (a run rebuilt from the tables): a
    workload that polls is ``read_your_writes``; the rest is unknown ("")."""
    kinds: dict[str, str] = {}
    for op in history:
        if op.process == NEMESIS or not op.workload:
            continue
        if op.f in REREAD_FS:
            kinds[op.workload] = RYW
        else:
            kinds.setdefault(op.workload, "")
    return kinds


# --- the series -------------------------------------------------------------------------------


def _second(t: int, t0: int, n: int) -> int:
    return min(max(0, (t - t0) // NS), n - 1)


def _n_seconds(t0: int, t1: int) -> int:
    return max(1, math.ceil((t1 - t0) / NS))


def latency_per_second(ops: Iterable[Completed], t0: int, t1: int) -> dict[str, LatencySeries]:
    """Per workload, p50/p95/p99 of the latency of the ``ok`` operations completed in each
    second of the load (seconds without one are left out)."""
    n = _n_seconds(t0, t1)
    buckets: dict[str, dict[int, list[int]]] = {}
    for c in ops:
        if c.type != "ok" or c.end is None or not t0 <= c.end <= t1:
            continue
        b = _second(c.end, t0, n)
        buckets.setdefault(c.workload, {}).setdefault(b, []).append(c.end - c.start)
    out: dict[str, LatencySeries] = {}
    for w in sorted(buckets):
        s = LatencySeries()
        for sec in sorted(buckets[w]):
            xs = sorted(buckets[w][sec])
            s.seconds.append(sec)
            s.count.append(len(xs))
            for name in ("p50", "p95", "p99"):
                p = percentile(xs, float(name[1:]))
                getattr(s, name).append((p or 0.0) / NS)
            s.max.append(xs[-1] / NS)
        out[w] = s
    return out


MIN_PARTIAL = 0.2  # a last partial second shorter than this is too short to give a rate


def throughput_points(counts: Sequence[float], end: float, start: float = 0.0
                      ) -> tuple[list[float], list[float], list[str]]:  # fmt: skip
    """The throughput chart's points: (x: the middle of each second, y: ops per second, a
    hover text), over the workload's active window ``[start, end)`` (seconds since the start
    of the load). A second the window covers only in part — the last one of a load that does
    not end on a whole second, the one where a workload stopped before the load ended — has
    its count divided by the part covered, so that it is not drawn as a fall; one covered less
    than ``MIN_PARTIAL`` gives no rate and is left out, as are the seconds outside the
    window."""
    xs: list[float] = []
    ys: list[float] = []
    hover: list[str] = []
    for i, v in enumerate(counts):
        lo, hi = max(float(i), start), min(i + 1.0, end)
        frac = hi - lo
        if frac >= 1.0 - 1e-9:
            xs.append(i + 0.5)
            ys.append(float(v))
            hover.append(f"{v:g} ops in second {i}")
        elif frac >= MIN_PARTIAL:
            xs.append((lo + hi) / 2)
            ys.append(v / frac)
            hover.append(f"{v:g} ops in {frac:.2f} s of second {i} (a partial second): "
                         f"{v / frac:.1f} per second")
    return xs, ys, hover


def sysbench_latency(samples: Iterable[Sample], t0: int, t1: int) -> dict[str, LatencySeries]:
    """Sysbench's own per-second p95 (its rows give no other percentile)."""
    n = _n_seconds(t0, t1)
    out: dict[str, LatencySeries] = {}
    for s in samples:
        v = s.values.get("lat_p95") if s.series == "sysbench" else None
        if not isinstance(v, int | float) or not math.isfinite(v):
            continue
        b = (s.time - t0 - 1) // NS
        if 0 <= b < n:
            lat = out.setdefault(s.subject, LatencySeries())
            lat.seconds.append(int(b))
            lat.p95.append(float(v))
            lat.count.append(1)
    return out


def errors_per_second(
    ops: Iterable[Completed], t0: int, t1: int
) -> dict[str, dict[str, list[int]]]:
    """workload -> error label -> count per second of the load."""
    n = _n_seconds(t0, t1)
    out: dict[str, dict[str, list[int]]] = {}
    for c in ops:
        if c.type == "ok":
            continue
        t = c.end if c.end is not None else c.start
        if not t0 <= t <= t1:
            continue
        row = out.setdefault(c.workload, {}).setdefault(error_label(c), [0] * n)
        row[_second(t, t0, n)] += 1
    return {w: dict(sorted(codes.items())) for w, codes in sorted(out.items())}


def outages(downtime: Mapping[str, Any] | None) -> dict[str, list[Outage]]:
    """The downtime checker's windows of each workload (not of each endpoint)."""
    out: dict[str, list[Outage]] = {}
    subjects = (downtime or {}).get("subjects") or {}
    for w, m in subjects.items():
        if " on " in w or not isinstance(m, dict):
            continue
        out[w] = [
            Outage(w, float(x["start"]), float(x["end"]), float(x["duration"]),
                   str(x.get("kind") or "error"), bool(x.get("open_at_end")),
                   {str(k): int(v) for k, v in (x.get("errors") or {}).items()})
            for x in m.get("windows") or []
            if isinstance(x, dict) and x.get("start") is not None and x.get("end") is not None
        ]  # fmt: skip
    return out


def visibility(history: Sequence[Op]) -> list[VisibilityData]:
    """Every write's ack-to-visible time on every node its workload read it on (the
    ``stale_reads`` checker's visibility, value by value)."""
    ops = pair_ops(history).ops
    looks: dict[str, dict[str, list[Look]]] = {}
    for c in ops:
        if c.type != "ok" or c.end is None or (c.f not in READ_FS and c.f not in REREAD_FS):
            continue
        lk = looks.setdefault(c.workload, {}).setdefault(c.node or c.endpoint, [])
        if isinstance(c.value, list):  # a poll: [[key, version or None], ...]
            for pair in c.value:
                if isinstance(pair, list | tuple) and len(pair) == 2:
                    lk.append((int(pair[0]), c.start, c.end, pair[1]))
        elif c.key is not None:
            lk.append((c.key, c.start, c.end, c.value))
    writes: dict[str, dict[int, list[tuple[int, int]]]] = {}
    for c in ops:
        if c.type != "ok" or c.f not in WRITE_FS or c.key is None or c.end is None:
            continue
        if c.workload not in looks:
            continue
        v = version(c.value)
        if v is not None:
            writes.setdefault(c.workload, {}).setdefault(c.key, []).append((c.end, v))
    out: list[VisibilityData] = []
    for w in sorted(looks):
        keys = {k: KeyWrites.build(p) for k, p in writes.get(w, {}).items()}
        if not keys:
            continue
        for node in sorted(looks[w]):
            vis = _visibility(keys, looks[w][node])
            if not vis.times and not vis.bounds:
                continue
            gaps = sorted(vis.gaps)
            res = percentile(gaps, 50)
            out.append(VisibilityData(
                w, node, sorted(t / NS for t in vis.times), sorted(b / NS for b in vis.bounds),
                None if res is None else res / NS))  # fmt: skip
    return out


def lag_series(samples: Iterable[Sample], t0: int) -> dict[str, list[tuple[float, float | None]]]:
    """Per replica, (seconds, lag) of every ``lag`` sample; lag ``None``: unreadable."""
    out: dict[str, list[tuple[float, float | None]]] = {}
    for s in samples:
        if s.series != "lag":
            continue
        v = s.values.get("lag")
        lag = float(v) if isinstance(v, int | float) and math.isfinite(v) else None
        out.setdefault(s.subject, []).append(((s.time - t0) / NS, lag))
    return {node: thin(sorted(pts, key=lambda p: p[0])) for node, pts in sorted(out.items())}


def thin(
    points: list[tuple[float, float | None]], max_points: int = MAX_LAG_POINTS
) -> list[tuple[float, float | None]]:
    """At most ``max_points``: the highest lag of each run of consecutive points (an
    unreadable point is kept when its run has no lag at all)."""
    if len(points) <= max_points:
        return points
    step = math.ceil(len(points) / max_points)
    out: list[tuple[float, float | None]] = []
    for i in range(0, len(points), step):
        chunk = points[i : i + step]
        known = [p for p in chunk if p[1] is not None]
        out.append(max(known, key=lambda p: p[1] or 0.0) if known else chunk[0])
    return out


# --- failovers --------------------------------------------------------------------------------

SAME_TIME = 1e-6  # seconds: failover events closer than this are one step
EVENTS = (  # the failover checker's times since the start of the load, in their usual order
    ("first_failure_at", "first write failed"),
    ("new_writer_accepts_at", "new primary accepted a write"),
    ("router_switch_at", "router switched"),
    ("recovered_at", "every writer recovered"),
)


def failover_phases(failover: Mapping[str, Any] | None, load_seconds: float) -> list[FailoverData]:
    """Each promote as bars: the phases between what the clients observed (fault, first
    failure, new primary accepts, router switch, recovered), each endpoint's outage (its last
    ``ok`` to its recovery), and the lab's promote call for reference."""
    out: list[FailoverData] = []
    for f in (failover or {}).get("failovers") or []:
        if not isinstance(f, dict):
            continue
        fault_at = _num(f.get("fault_at"))
        fault_name = (
            f"{f.get('fault')} {f.get('fault_node') or ''}".strip()
            if f.get("fault") else "promote started"
        )  # fmt: skip
        events: dict[str, float | None] = {fault_name: fault_at}
        for key, name in EVENTS:
            events[name] = _num(f.get(key))
        phases: list[Phase] = []
        known: list[tuple[float, str]] = []  # events at the same time are one step
        for t, n in sorted(((t, n) for n, t in events.items() if t is not None),
                           key=lambda x: x[0]):  # fmt: skip
            if known and t - known[-1][0] < SAME_TIME:
                known[-1] = (known[-1][0], f"{known[-1][1]}, {n}")
            else:
                known.append((t, n))
        for (a, na), (b, nb) in zip(known, known[1:], strict=False):
            phases.append(Phase("phases", f"{na} → {nb}", a, b))
        if f.get("open_at_end") and known:
            a, na = known[-1]
            phases.append(Phase("phases", f"{na} → not recovered by the end of the load",
                                a, max(a, load_seconds), True))  # fmt: skip
        for ep, e in sorted((f.get("endpoints") or {}).items()):
            last_ok, rec = _num(e.get("last_ok_at")), _num(e.get("recovered_at"))
            if last_ok is None or not e.get("worked_before"):
                continue
            if rec is not None:
                phases.append(Phase(f"{ep} outage", f"{ep}: no ok write", last_ok, rec))
            elif e.get("open_at_end"):
                phases.append(Phase(f"{ep} outage", f"{ep}: no ok write until the end",
                                    last_ok, max(last_ok, load_seconds), True))  # fmt: skip
        started, call = _num(f.get("lab_promote_started")), _num(f.get("lab_promote_call_seconds"))
        if fault_at is not None and started is not None and call is not None:
            a = fault_at + started
            phases.append(Phase("lab's promote call", "the lab's promote call", a, a + call))
        title = f"{f.get('old_primary') or '?'} → {f.get('new_primary') or '?'}"
        out.append(FailoverData(title, fault_at, phases, events))
    return out


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


# --- fault periods ----------------------------------------------------------------------------


def fault_periods(history: Sequence[Op], t0: int, t1: int) -> list[FaultPeriod]:
    """The faults of a history as periods (see the module's docstring), clipped to the load;
    a fault still active when the load ended runs to its end with ``open_at_end``."""
    nemesis = [op for op in history if op.process == NEMESIS]
    # each action: (name, node, start, completion time or None, ok, completion's value)
    actions: list[tuple[str, str | None, int, int | None, bool | None, Any]] = []
    open_: dict[tuple[str, str | None], int] = {}
    for op in nemesis:
        k = (op.f, op.node)
        if op.type == "invoke":
            if k in open_:
                i = open_.pop(k)
                actions[i] = actions[i][:3] + (None, None, None)
            open_[k] = len(actions)
            actions.append((op.f, op.node, op.time, None, None, None))
        else:
            i_done = open_.pop(k, None)
            if i_done is None:
                actions.append((op.f, op.node, op.time, op.time, op.type == "ok", op.value))
            else:
                name, node, start, _, _, _ = actions[i_done]
                actions[i_done] = (name, node, start, op.time, op.type == "ok", op.value)
    actions.sort(key=lambda a: a[2])
    out: list[FaultPeriod] = []
    used: set[int] = set()
    for i, (name, node, start, done, ok, _) in enumerate(actions):
        if name.startswith("wait") or name in NOT_FAULTS or name in ENDINGS:
            continue
        label = fault_words(name, node)  # the language's words, as the text timeline
        ends = UNDONE_BY.get(name)
        end: int | None = done
        if ends is not None and ok is not False:
            end = None
            for j in range(i + 1, len(actions)):
                n2, node2, start2, done2, _, value2 = actions[j]
                if j in used or n2 not in ends or not (node2 == node or node2 is None):
                    continue
                used.add(j)
                end = done2 if done2 is not None else start2
                ready = value2.get("ready_seconds") if isinstance(value2, dict) else None
                if isinstance(ready, int | float) and start2 + ready * NS < end:
                    end = start2 + round(ready * NS)  # up again before its rejoin ended
                label += f" until {fault_words(n2, node2)}"
                break
        if start > t1 or (end is not None and end < t0):
            continue  # entirely outside the load
        open_at_end = end is None or end > t1
        e = t1 if open_at_end else max(end or start, start)
        out.append(FaultPeriod(label, name, node, max(0.0, (start - t0) / NS), (e - t0) / NS,
                               open_at_end, ok))  # fmt: skip
    return out
