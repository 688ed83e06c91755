"""The rows each checker's figures give the measurements table of ``lab show RUN --all``
(``lab.report.measurements``), one renderer a checker (``lab.report.metrics`` says which, in
which order), and what a cell is beyond its figures (``CellInfo``: workload kinds, topology).
The rules they keep are ``lab.report.measurements``'s (its docstring).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from lab.figures_format import format_count, format_value
from lab.judge.checkers.stale_reads import visibility_lower_bound, visibility_upper

RYW = "read_your_writes"
COLLIDING_INSERTS = frozenset({"unique_insert", "unique_writes"})
STILL_DOWN = "still down at end"


def fmt_duration(v: Any) -> str:
    return format_value(v, "duration") if _num(v) else "unknown"


def fmt_count(v: Any) -> str:
    return format_count(v) if _num(v) else "unknown"


def fmt_percent(v: Any) -> str:
    return format_value(v, "percent") if _num(v) else "unknown"


def fmt_rate(v: Any) -> str:
    return format_value(v, "rate") if _num(v) else "unknown"


def fmt_size(v: Any) -> str:
    return format_value(v, "size") if _num(v) else "unknown"


def _num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _float(v: Any) -> float | None:
    return float(v) if _num(v) else None


def _plural(n: int, word: str, many: str | None = None) -> str:
    return f"{format_count(n)} {word if n == 1 else (many or word + 's')}"


# --- what a cell is: workload kinds, topology ----------------------------------------------


@dataclass
class CellInfo:
    """What the report knows about a cell beyond its figures."""

    kinds: dict[str, str] = field(default_factory=dict)  # workload -> kind; empty: unknown
    topology: str | None = None
    readers: frozenset[str] = frozenset()  # workloads that only read (probe operation read)

    def kind(self, workload: str) -> str | None:
        return self.kinds.get(workload)


def cell_info(summary: dict[str, Any], cell: dict[str, Any]) -> CellInfo:
    """Workload kinds from ``cell["workloads"]`` ({name: kind}, or {name: {"kind": ...}}),
    the topology from ``cell["topology"]`` or ``summary["topology"]``; otherwise inferred:
    only ``read_your_writes`` reads keys that had an acknowledged write (eligible reads)."""
    kinds: dict[str, str] = {}
    raw = cell.get("workloads")
    if isinstance(raw, dict):
        for name, v in raw.items():
            k = v.get("kind") if isinstance(v, dict) else v
            if isinstance(k, str):
                kinds[str(name)] = k
    topology = cell.get("topology") or summary.get("topology")
    readers = frozenset(str(w) for w in cell.get("read_only_workloads") or [])
    info = CellInfo(kinds, topology if isinstance(topology, str) else None, readers)
    if not kinds:
        stale = _subjects(cell, "stale_reads")
        for s, figs in stale.items():
            if " on " in s:
                continue
            vis = _dict(figs.get("visibility"))
            looked = (vis.get("seen") or 0) + (vis.get("unseen") or 0)
            if (figs.get("eligible_reads") or 0) > 0 or looked > 0:
                info.kinds[s] = RYW
    return info


def _subjects(cell: dict[str, Any], checker: str) -> dict[str, dict[str, Any]]:
    m = (cell.get("measurements") or {}).get(checker)
    s = m.get("subjects") if isinstance(m, dict) else None
    if not isinstance(s, dict):
        return {}
    return {k: v for k, v in s.items() if isinstance(v, dict)}


def _workload(subject: str) -> str:
    return subject.split(" on ", 1)[0]


# --- the measurements table ----------------------------------------------------------------


class Rows:
    """Rows of the measurements table, in order of first appearance. A row whose every value
    was put with ``show=False`` (a zero nobody needs to see) is left out."""

    def __init__(self, n_cells: int) -> None:
        self.n = n_cells
        self.values: dict[str, list[str]] = {}
        self.shown: set[str] = set()

    def put(self, name: str, ci: int, text: str, show: bool = True) -> None:
        self.values.setdefault(name, ["-"] * self.n)[ci] = text
        if show:
            self.shown.add(name)

    def __iter__(self) -> Iterator[tuple[str, list[str]]]:
        return ((k, v) for k, v in self.values.items() if k in self.shown)


Renderer = Callable[[Rows, int, dict[str, Any], CellInfo], None]


def _downtime_longest(figs: dict[str, Any]) -> str:
    text = fmt_duration(figs.get("longest"))
    if figs.get("longest_open_at_end"):
        return f"≥ {text} ({STILL_DOWN})"
    return text + _resolution(figs)


def _downtime_total(figs: dict[str, Any]) -> str:
    text = fmt_duration(figs.get("total"))
    if figs.get("open_at_end"):
        return f"≥ {text} ({STILL_DOWN})"
    return text


def _resolution(figs: dict[str, Any]) -> str:
    res = _float(figs.get("resolution"))
    return f" ± {fmt_duration(res)}" if res is not None and res > 0 else ""


def _windows(figs: dict[str, Any]) -> str:
    n = int(figs.get("count") or 0)
    if n == 0:
        return "0"
    text = _plural(n, "window")
    stalls = int(figs.get("stalls") or 0)
    if stalls:
        text += f", {format_count(stalls)} a stall" if stalls == 1 else \
            f", {format_count(stalls)} stalls"
    return text


def downtime_rows(rows: Rows, ci: int, m: dict[str, Any], info: CellInfo) -> None:
    subjects = {k: v for k, v in (m.get("subjects") or {}).items() if isinstance(v, dict)}
    for s, figs in subjects.items():
        rows.put(f"downtime({s}).longest", ci, _downtime_longest(figs))
        rows.put(f"downtime({s}).total", ci, _downtime_total(figs))
        rows.put(f"downtime({s}).count", ci, _windows(figs))
    workloads = [s for s in subjects if " on " not in s]
    if len(workloads) > 1 and _num(m.get("total")):
        rows.put("downtime(any workload).total (union, not a sum)", ci, _downtime_total(m))


def failover_rows(rows: Rows, ci: int, m: dict[str, Any], info: CellInfo) -> None:
    seen: dict[str, int] = {}
    for rec in m.get("failovers") or []:
        if not isinstance(rec, dict):
            continue
        new = str(rec.get("new_primary"))
        seen[new] = seen.get(new, 0) + 1
        key = new if seen[new] == 1 else f"{new}#{seen[new]}"
        if rec.get("open_at_end") and _num(rec.get("outage_lower_bound")):
            outage = f"≥ {fmt_duration(rec['outage_lower_bound'])} ({STILL_DOWN})"
        elif _num(rec.get("outage")):
            outage = fmt_duration(rec["outage"])
        else:
            outage = "unknown"
        rows.put(f"failover({key}).outage", ci, outage)
        acc = rec.get("new_writer_accepts")
        rows.put(f"failover({key}).new_writer_accepts", ci,
                 fmt_duration(acc) if _num(acc) else "never")  # fmt: skip


def router_failover_rows(rows: Rows, ci: int, m: dict[str, Any], info: CellInfo) -> None:
    """The router moving the writes on its own: its phases, when a fault hit its writer."""
    if m.get("old_writer") is None:
        return
    for phase in ("detected", "switched", "accepted"):
        v = m.get(phase)
        rows.put(f"router_failover.{phase} ({m.get('fault')} of {m.get('old_writer')})", ci,
                 fmt_duration(v) if _num(v) else "not before the end")


def visibility_value(vis: dict[str, Any], stat: str, v: float) -> str:
    """A visibility statistic as known: ``506 ms``; with writes never seen that could change
    it, between its two ends (``2.01 s to 2.30 s``: the unseen at the time to the last read
    that missed them, and after every seen one), one figure when both ends show the same, or
    ``≥ 2.01 s`` when its rank falls among the unseen (no upper end)."""
    text = fmt_duration(v)
    if not visibility_lower_bound(vis, stat, v):
        return text
    upper = visibility_upper(vis, stat)
    if upper is None:
        return f"≥ {text}"
    high = fmt_duration(upper)
    return text if high == text else f"{text} to {high}"


def _visibility(figs: dict[str, Any], stat: str) -> str | None:
    vis = figs.get("visibility")
    if not isinstance(vis, dict) or not _num(vis.get(stat)):
        return None
    text = visibility_value(vis, stat, float(vis[stat]))
    res = vis.get("resolution")
    if _num(res):
        text += f" ± {fmt_duration(res)}"
    return text


def stale_reads_rows(rows: Rows, ci: int, m: dict[str, Any], info: CellInfo) -> None:
    for s, figs in (m.get("subjects") or {}).items():
        if not isinstance(figs, dict):
            continue
        kind = info.kind(_workload(s))
        if kind is not None and kind != RYW:
            continue  # only read_your_writes has reads to compare with its writes
        if kind is None and not (figs.get("eligible_reads") or figs.get("count")):
            continue
        rows.put(f"stale_reads({s}).count", ci, fmt_count(figs.get("count")))
        rate = figs.get("rate")
        rows.put(f"stale_reads({s}).rate", ci,
                 fmt_percent(rate) if _num(rate) else "no eligible reads")  # fmt: skip
        for stat in ("p50", "p99"):
            text = _visibility(figs, stat)
            if text is not None:
                rows.put(f"stale_reads({s}).{stat} (ack → visible)", ci, text)
        vis = _dict(figs.get("visibility"))
        unseen = int(vis.get("unseen") or 0)
        looked = unseen + int(vis.get("seen") or 0)
        if looked:
            rows.put(f"stale_reads({s}).never seen", ci,
                     f"{format_count(unseen)} of {_plural(looked, 'write')}", show=unseen > 0)


def duplicate_keys_rows(rows: Rows, ci: int, m: dict[str, Any], info: CellInfo) -> None:
    for s, figs in (m.get("subjects") or {}).items():
        if not isinstance(figs, dict):
            continue
        kind = info.kind(_workload(s))
        # only inserts that can collide; not read_your_writes (an upsert: INSERT ... ON
        # DUPLICATE KEY UPDATE) nor a probe, unless they did get duplicate-key errors
        if kind is not None and kind not in COLLIDING_INSERTS and not figs.get("count"):
            continue
        rows.put(f"duplicate_keys({s}).count", ci, fmt_count(figs.get("count")))


def lost_writes_rows(rows: Rows, ci: int, m: dict[str, Any], info: CellInfo) -> None:
    for s, figs in (m.get("subjects") or {}).items():
        if not isinstance(figs, dict):
            continue
        if " on " in s:
            text = fmt_count(figs.get("count"))
            if figs.get("authoritative"):
                text += " (authority)"
            rows.put(f"lost_writes({s}).missing at end", ci, text)
            continue
        text = fmt_count(figs.get("count"))
        unchecked = int(figs.get("unchecked") or 0)
        if unchecked:
            text += f" (+ {format_count(unchecked)} unchecked)"
        rows.put(f"lost_writes({s}).count", ci, text)
        for key in ("not_replicated", "divergent"):
            n = figs.get(key) or 0
            rows.put(f"lost_writes({s}).{key}", ci, fmt_count(n), show=bool(n))
    for w in m.get("unchecked_workloads") or []:
        rows.put(f"lost_writes({w}).count", ci, "unknown (no final state)")


def replication_lag_rows(rows: Rows, ci: int, m: dict[str, Any], info: CellInfo) -> None:
    for node, figs in (m.get("subjects") or {}).items():
        if not isinstance(figs, dict):
            continue
        samples = int(figs.get("samples") or 0)
        unreadable = int(figs.get("unreadable") or 0)
        if figs.get("no_heartbeat"):  # it answered: up, without a beat
            why = "unknown (up, but the primary's heartbeat never reached it)"
        elif unreadable:
            why = f"unknown (unreadable: {_plural(unreadable, 'sample')})"
        else:
            why = "unknown (never read)"
        for stat in ("max", "p99"):
            v = figs.get(stat)
            rows.put(f"replication_lag({node}).{stat}", ci,
                     fmt_duration(v) + _resolution(figs) if _num(v) else why)  # fmt: skip
        total = samples + unreadable
        if total:
            rows.put(f"replication_lag({node}).unknown (replica unreadable)", ci,
                     f"{format_count(unreadable)} of {_plural(total, 'sample')}",
                     show=unreadable > 0)  # fmt: skip


def replication_errors_rows(rows: Rows, ci: int, m: dict[str, Any], info: CellInfo) -> None:
    for node, figs in (m.get("subjects") or {}).items():
        if not isinstance(figs, dict):
            continue
        parts = []
        for th in ("sql", "io"):
            if figs.get(f"{th}_count"):
                at = figs.get(f"{th}_stopped_at")
                when = f"at {fmt_duration(at)}" if _num(at) else "before the first sample"
                parts.append(f"{th.upper()} stopped {when}, error {figs.get(f'{th}_errno')}")
        rows.put(f"replication_errors({node})", ci, "; ".join(parts) or "none",
                 show=bool(parts))  # fmt: skip


def semi_sync_rows(rows: Rows, ci: int, m: dict[str, Any], info: CellInfo) -> None:
    """Each node whose semi-sync primary side was enabled: what went unacknowledged, and how
    often (and how long) it fell back to asynchronous."""
    for node, figs in (m.get("subjects") or {}).items():
        if not isinstance(figs, dict) or not figs.get("enabled"):
            continue
        bound = "≥ " if figs.get("lower_bound") else ""
        n = int(figs.get("fallbacks") or 0)
        text = (f"{bound}{format_count(figs.get('unacknowledged'))} commits unacknowledged, "
                f"{bound}{format_count(figs.get('acknowledged'))} acknowledged; "
                + (f"fell back {_plural(n, 'time')}, asynchronous for "
                   f"{fmt_duration(figs.get('off'))} ± 200 ms" if n else "never fell back")
                + (" (still at the end)" if figs.get("still_off") else ""))
        rows.put(f"semi_sync({node})", ci, text)


def split_brain_rows(rows: Rows, ci: int, m: dict[str, Any], info: CellInfo) -> None:
    n = m.get("count")
    if n is None:
        rows.put("split_brain.longest", ci, f"unknown ({m.get('why') or 'not measured'})",
                 show=m.get("topology") == "replication")
        return
    if not n:
        rows.put("split_brain.longest", ci, "none (no two nodes took writes at once)",
                 show=False)
        return
    bound = "≥ " if m.get("lower_bound") else ""
    rows.put("split_brain.longest", ci, f"{bound}{fmt_duration(m.get('longest'))} ± 200 ms"
             if m.get("resolution") else f"≥ {fmt_duration(m.get('longest'))} (writes only)")
    rows.put("split_brain.total (windows)", ci,
             f"{bound}{fmt_duration(m.get('total'))} ({_plural(int(n), 'window')})")
    per = ", ".join(f"{w}: {format_count(k)}"
                    for w, k in (m.get("writes_by_workload") or {}).items())
    rows.put("split_brain.writes (acknowledged inside)", ci,
             f"{format_count(m.get('writes') or 0)}" + (f" ({per})" if per else ""))
    first = (m.get("windows") or [{}])[0]
    if first:
        rows.put("split_brain first window", ci,
                 f"{fmt_duration(first.get('start'))} → {fmt_duration(first.get('end'))}: "
                 f"{', '.join(first.get('nodes') or [])}")


def errant_gtids_rows(rows: Rows, ci: int, m: dict[str, Any], info: CellInfo) -> None:
    subjects = m.get("subjects") or {}
    if not subjects:
        if m.get("why") and "not running" in str(m.get("why")):
            rows.put("errant_gtids", ci, f"unknown ({m.get('why')})")
        return
    for node, figs in subjects.items():
        if not isinstance(figs, dict):
            continue
        c = figs.get("count")
        if c is None:
            rows.put(f"errant_gtids({node})", ci, f"unknown (≥ {figs.get('at_least')}: "
                     f"{figs.get('error') or 'binlogs not readable'})")
            continue
        gtids = figs.get("gtids") or []
        listed = ", ".join(gtids[:5]) + (" …" if c > 5 else "")
        rows.put(f"errant_gtids({node})", ci,
                 f"{format_count(c)}" + (f" ({listed})" if listed else ""), show=c > 0)


def divergence_rows(rows: Rows, ci: int, m: dict[str, Any], info: CellInfo) -> None:
    subjects = m.get("subjects") or {}
    ref = m.get("reference")
    for name, figs in subjects.items():
        if not isinstance(figs, dict) or "." not in name or " on " in name:
            continue  # tables only (workload subjects repeat them)
        r = figs.get("rows")
        if r is None:
            rows.put(f"divergence({name})", ci,
                     f"unknown ({figs.get('error') or 'a node could not be read'})")
            continue
        text = (f"{format_count(r)} rows vs {ref} (missing {figs.get('missing')}, extra "
                f"{figs.get('extra')}, different {figs.get('different')})" if r
                else f"none vs {ref}")
        rows.put(f"divergence({name})", ci, text, show=r > 0)
    if not subjects and m.get("why"):
        rows.put("divergence", ci, f"unknown ({m.get('why')})", show=False)


def throughput_rows(rows: Rows, ci: int, m: dict[str, Any], info: CellInfo) -> None:
    # Only the mean: the minimum second is shown once, as warmup(w).min_level, relative to
    # the level before the fault (throughput's own .min is over the whole load).
    for s, figs in (m.get("subjects") or {}).items():
        if isinstance(figs, dict) and " on " not in s:
            rows.put(f"throughput({s}).mean", ci, fmt_rate(figs.get("mean")))


def stalls_rows(rows: Rows, ci: int, m: dict[str, Any], info: CellInfo) -> None:
    for s, figs in (m.get("subjects") or {}).items():
        if not isinstance(figs, dict) or " on " in s:
            continue
        n = int(figs.get("count") or 0)
        checked = figs.get("seconds_checked")
        text = f"{format_count(n)} s"
        if _num(checked):
            text += f" of {format_count(checked)} s"
        rows.put(f"stalls({s}).count (whole seconds at 0/s)", ci, text)
        longest = figs.get("longest")
        rows.put(f"stalls({s}).longest", ci,
                 f"{format_count(longest)} s" if _num(longest) else "unknown")  # fmt: skip


def warmup_rows(rows: Rows, ci: int, m: dict[str, Any], info: CellInfo) -> None:
    if m.get("mode") != "fault":
        return  # warmup from the start: not what the run was about
    for s, figs in (m.get("subjects") or {}).items():
        if not isinstance(figs, dict):
            continue
        name = f"warmup({s}).time (back to 90% of the level)"
        if figs.get("unknown"):
            rows.put(name, ci, f"unknown: {figs['unknown']}")
            continue
        if figs.get("recovered") is False:
            rows.put(name, ci, f"≥ {fmt_duration(figs.get('lower_bound'))} (not back by the end)")
        elif figs.get("dip_beyond_noise") is False:
            rows.put(name, ci, f"{fmt_duration(figs.get('warmup'))} (no dip beyond noise)")
        else:
            rows.put(name, ci, fmt_duration(figs.get("warmup")))
        rows.put(f"warmup({s}).min_level (lowest 1 s after the fault, vs before)",
                 ci, fmt_percent(figs.get("min_level")))  # fmt: skip


def latency_rows(rows: Rows, ci: int, m: dict[str, Any], info: CellInfo) -> None:
    for s, figs in (m.get("subjects") or {}).items():
        if not isinstance(figs, dict) or " on " in s:
            continue
        sysbench = figs.get("source") not in (None, "ops")
        for stat in ("p50", "p99", "max"):
            if stat not in figs:
                continue
            # sysbench gives one p95 per second: its figures are over those
            name = f"latency({s}).{stat}" + (" of per-second p95" if sysbench else "")
            rows.put(name, ci, fmt_duration(figs[stat]))


def errors_rows(rows: Rows, ci: int, m: dict[str, Any], info: CellInfo) -> None:
    for s, figs in (m.get("subjects") or {}).items():
        if not isinstance(figs, dict):
            continue
        text = fmt_count(figs.get("total"))
        ratio = figs.get("ratio")
        if figs.get("total") and _num(ratio):
            text += f" ({fmt_percent(ratio)} of ops)"
        rows.put(f"errors({s}).total", ci, text)


def missing_before_heal(m: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """``{node: (before the heal, after settling)}`` of the ``facts`` measurements: the
    missing transactions as the timeline left them and as read at the end (either None when
    not measured)."""
    before = _dict(m.get("missing_before_heal"))
    settled = {n: f.get("missing_transactions") for n, f in _dict(m.get("subjects")).items()
               if isinstance(f, dict) and "missing_transactions" in f}
    return {n: (before.get(n), settled.get(n)) for n in sorted({*before, *settled})}


def heal_changed(before: Any, settled: Any) -> bool:
    return _num(before) and _num(settled) and before != settled


def facts_rows(rows: Rows, ci: int, m: dict[str, Any], info: CellInfo) -> None:
    pairs = missing_before_heal(m)
    for node, figs in (m.get("subjects") or {}).items():
        if not isinstance(figs, dict):
            continue
        # Galera has no replica behind a primary: wsrep_last_committed differences are not
        # missing transactions
        if info.topology != "galera" and "missing_transactions" in figs:
            text = fmt_count(figs["missing_transactions"])
            before = pairs.get(node, (None, None))[0]
            if heal_changed(before, figs["missing_transactions"]):  # the heal changed it
                text += f" ({fmt_count(before)} before the heal)"
            rows.put(f"facts({node}).missing_transactions", ci, text)
            if _num(before):
                rows.put(f"facts({node}).missing_transactions.before_heal", ci,
                         fmt_count(before))  # fmt: skip
        if "applied_since_restart" in figs:
            rows.put(f"facts({node}).applied_since_restart", ci,
                     fmt_count(figs["applied_since_restart"]))  # fmt: skip
        # a Galera node has no relay log: its 0 B → 0 B means nothing
        relay = figs.get("relay_log_bytes") if info.topology != "galera" else None
        if isinstance(relay, dict) and (relay.get("before") is not None
                                        or relay.get("after") is not None):
            rows.put(f"facts({node}).relay_log_bytes (before → after the replica's start)", ci,
                     f"{fmt_size(relay.get('before'))} → {fmt_size(relay.get('after'))}")
        elif _num(relay):
            rows.put(f"facts({node}).relay_log_bytes (after the replica's start)", ci,
                     fmt_size(relay))  # fmt: skip
