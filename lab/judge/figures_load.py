"""The readers of the figures the clients' operations measure: downtime, stale reads,
duplicate keys, lost writes, replication lag, throughput, latency, errors, stalls, warmup. One
function per metric, named by ``dsl.metrics.METRICS`` (``MetricSpec.reader``); ``READERS``
maps the names to them. Shared lookups: ``lab.judge.figures_lookup``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from lab.figures_format import format_count, format_duration
from lab.history import NS
from lab.judge.checkers.base import summary
from lab.judge.checkers.downtime import error_label
from lab.judge.checkers.stale_reads import visibility_lower_bound, visibility_upper
from lab.judge.figures_lookup import (
    Inputs,
    Measured,
    Unmeasurable,
    checker_result,
    count_metric,
    get_path,
    known_list,
    known_number,
    last_ops,
    last_window,
    no_such_workload,
    planned_duration,
    stat_of,
    subject_of,
    subjects_of,
    sum_of,
    window_keyword,
    window_seconds,
    window_words,
)


def _downtime(inp: Inputs) -> Measured:
    r = checker_result(inp, "downtime")
    stat, path, unit = stat_of(inp)
    m = inp.metric
    if m.subject is None and m.on is None:
        subj: Mapping[str, Any] = r.metrics
    elif m.subject is None:
        raise Unmeasurable("downtime on a node needs a workload: downtime(w on node)")
    else:
        subjects = subjects_of(r)
        key = f"{m.subject} on {m.on}" if m.on else m.subject
        if key not in subjects:
            err = no_such_workload(inp, r, m.subject)
            if err is not None:
                raise err
            if m.subject not in subjects:
                raise Unmeasurable(f"workload '{m.subject}' recorded no operations")
            eps = subjects[m.subject].get("endpoints", [])
            raise Unmeasurable(f"workload '{m.subject}' has no endpoint '{m.on}' (endpoints: "
                               f"{known_list(eps)})")  # fmt: skip
        subj = subjects[key]
    value = known_number(get_path(subj, path), f"no downtime {stat}")
    if path == "longest":
        lower = bool(subj.get("longest_open_at_end"))
    elif path == "total":
        lower = bool(subj.get("open_at_end"))
    else:
        lower = False
    n = int(subj.get("count", 0) or 0)
    note = f"{format_count(n)} outage window{'s' if n != 1 else ''}"
    if lower:
        note += "; an outage was still open when the load stopped"
    return Measured(value, unit, stat, lower, note)


def _stale_reads(inp: Inputs) -> Measured:
    r = checker_result(inp, "stale_reads")
    stat, path, unit = stat_of(inp)
    m = inp.metric
    subjects = subjects_of(r)
    if path.startswith("visibility") and m.subject is None:
        _, subj = subject_of(inp, r, "reads", single_default=True)
    elif m.subject is None and m.on is None:
        subj = r.metrics
    elif m.subject is None:
        keys = [k for k in subjects if k.endswith(f" on {m.on}")]
        if not keys:
            raise Unmeasurable(f"no reads were recorded on node '{m.on}'")
        if path not in ("count", "eligible_reads", "rate"):
            raise Unmeasurable(f"'.{stat}' on a node needs a workload: stale_reads(w on n)")
        count = sum_of(subjects, keys, "count")
        eligible = sum_of(subjects, keys, "eligible_reads")
        subj = {"count": count, "eligible_reads": eligible,
                "rate": count / eligible if eligible else None}  # fmt: skip
    else:
        _, subj = subject_of(inp, r, "reads")
    raw = get_path(subj, path)
    if raw is None and path == "rate":
        raise Unmeasurable(
            "the stale-read ratio is undefined: no read had an acknowledged write to the same "
            "key before it began"
        )
    if raw is None and path.startswith("visibility"):
        raise Unmeasurable("no write was ever read back, so visibility time is unknown")
    if raw is None and path.startswith("time_behind"):
        return Measured(0.0, unit, stat, note="no stale read")
    value = known_number(raw, f"no stale_reads .{stat}")
    if path.startswith("visibility"):
        vis = get_path(subj, "visibility") or {}
        never = vis.get("never_seen") or 0
        note = f"{format_count(vis.get('seen') or 0)} writes read back"
        vstat = path.split(".", 1)[1]
        lower = visibility_lower_bound(vis, vstat, value)
        upper = visibility_upper(vis, vstat) if lower else None
        if never:
            note += f", {format_count(never)} never seen"
            if lower:
                note += " (each longer than the last read that missed it" + (
                    ")" if upper is None else ", for the upper end longer than any seen)")
        return Measured(value, unit, stat, lower, note, upper)
    n_eligible = subj.get("eligible_reads")
    note = (f"of {format_count(n_eligible)} eligible reads" if isinstance(n_eligible, int | float)
            else "")
    return Measured(value, unit, stat, note=note)


def _duplicate_keys(inp: Inputs) -> Measured:
    r = checker_result(inp, "duplicate_keys")
    stat, path, unit = stat_of(inp)
    if path == "ratio" and inp.metric.subject is None:
        raise Unmeasurable("duplicate_keys .ratio needs a workload")
    return count_metric(inp, r, stat, path, unit, absent_is_zero=True)


def _lost_writes(inp: Inputs) -> Measured:
    m = inp.metric
    if m.subject is not None and inp.ctx.kind(m.subject) == "list_append":
        return _lost_appends(inp)
    r = checker_result(inp, "lost_writes")
    stat, path, unit = stat_of(inp)
    unchecked = r.metrics.get("unchecked_workloads") or []
    if m.subject is not None and m.subject in unchecked:
        raise Unmeasurable(
            f"no final state was read for workload '{m.subject}', so lost writes cannot be counted"
        )
    if m.subject is None and r.valid is None:
        raise Unmeasurable(f"lost writes cannot be counted: {r.details}")
    if m.on and path != "count":
        raise Unmeasurable(f"lost_writes on a node only has a count, not '.{stat}'")
    return count_metric(inp, r, stat, path, unit, absent_is_zero=False)


def _lost_appends(inp: Inputs) -> Measured:
    """lost_writes(w) of a list_append workload: acknowledged appends missing at the end."""
    m = inp.metric
    r = checker_result(inp, "lost_appends")
    stat, path, unit = stat_of(inp)
    if m.on:
        raise Unmeasurable("a list_append workload's lost writes are judged on the "
                           "authoritative node only, not 'on' a node")
    subj = subjects_of(r).get(str(m.subject)) or {}
    raw = get_path(subj, path)
    if subj.get("count") is None:
        first = (r.details or "no final state").splitlines()[0]
        raise Unmeasurable(f"lost appends cannot be counted: {first}")
    if raw is None:
        raise Unmeasurable(f"lost_writes .{stat} is not measured on a list_append workload "
                           "(count, acknowledged, ratio, unknown, unknown_applied, "
                           "failed_but_present are)")
    return Measured(known_number(raw, f"no lost_writes .{stat}"), unit, stat)


def _replication_lag(inp: Inputs) -> Measured:
    r = checker_result(inp, "replication_lag")
    stat, path, unit = stat_of(inp)
    subjects = subjects_of(r)
    node = inp.metric.subject or inp.metric.on
    if node is not None and node not in subjects:
        raise Unmeasurable(f"no replication lag samples for '{node}' (replicas with samples: "
                           f"{known_list(subjects)})")  # fmt: skip
    if not subjects:
        raise Unmeasurable("no replication lag samples were recorded")
    nodes = [node] if node is not None else sorted(subjects)
    if inp.metric.windowed:
        lo, hi = last_window(inp)
        per: dict[str, float | None] = {}
        for n in nodes:
            lags = [float(s.values["lag"]) for s in inp.ctx.samples
                    if s.series == "lag" and s.subject == n and lo <= s.time <= hi
                    and isinstance(s.values.get("lag"), int | float)
                    and math.isfinite(s.values["lag"])]  # fmt: skip
            per[n] = summary(lags)[path] if lags else None
    else:
        per = {n: subjects[n].get(path) for n in nodes}
    known = {n: float(v) for n, v in per.items() if isinstance(v, int | float)}
    if not known:
        raise Unmeasurable(
            f"{'no replica' if node is None else repr(node)} could be read for lag"
            + (f" {window_words(inp.metric)}" if inp.metric.windowed else "")
        )
    worst = max(known, key=lambda n: known[n])
    note = f"worst replica {worst}" if node is None else ""
    return Measured(known[worst], unit, stat, note=note)


def _throughput(inp: Inputs) -> Measured:
    r = checker_result(inp, "throughput")
    stat, path, unit = stat_of(inp)
    w, subj = subject_of(inp, r, "completed operations", single_default=True)
    if inp.metric.windowed:
        if stat == "total":
            raise Unmeasurable(f"'{window_keyword(inp.metric)}' applies to .mean, .p50, .min "
                               "and .max, not '.total'")
        series = subj.get("per_second") or []
        load_s = float(r.metrics.get("load_seconds") or len(series))
        end = subj.get("end")
        own_end = float(end) if isinstance(end, int | float) else load_s
        # last N: the last N seconds of the workload's own run (last_window)
        a, b = window_seconds(inp.metric, own_end if inp.metric.window is None else load_s,
                              planned_duration(inp))
        hi = min(len(series), math.floor(load_s + 1e-9), math.floor(b + 1e-9))
        # last N: from the second it starts in (as before); from A: whole seconds from A on
        lo = max(0, math.floor(a + 1e-9) if inp.metric.window is None
                 else math.ceil(a - 1e-9))
        window = sorted(float(v) for v in series[lo:hi])
        if not window:
            raise Unmeasurable(f"the load lasted {load_s:.1f} s: no whole second to average"
                               + (f" {window_words(inp.metric)}" if inp.metric.window else ""))
        agg = {"mean": sum(window) / len(window), "min": window[0], "max": window[-1],
               "p50": window[(len(window) - 1) // 2]}[stat]  # fmt: skip
        note = f"seconds {lo}..{hi} of the load"
        if hi - lo < (b - a) - 1e-9:
            note += f" (only {hi - lo} whole seconds)"
        if inp.metric.window is None and own_end < load_s - 1e-9:
            note += f"; {w} ran until {own_end:.1f} s of the {load_s:.1f} s load"
        return Measured(agg, unit, stat, note=note)
    value = known_number(subj.get(path), f"'{w}' has no whole second to measure")
    return Measured(value, unit, stat, note=f"over {float(subj.get('seconds') or 0):.1f} s")


def _latency(inp: Inputs) -> Measured:
    r = checker_result(inp, "latency")
    stat, path, unit = stat_of(inp)
    w, subj = subject_of(inp, r, "successful operations", single_default=True)
    if inp.metric.windowed:
        if subj.get("source") != "ops":
            raise Unmeasurable(f"'{window_keyword(inp.metric)}' is not available for {w} "
                               "(sysbench rows)")
        lat = [
            c.end - c.start
            for c in last_ops(inp, inp.metric.subject or w.split(" on ")[0])
            if c.type == "ok" and c.end is not None
        ]
        if not lat:
            raise Unmeasurable(f"no successful operation of '{w}' "
                               f"{window_words(inp.metric)}")  # fmt: skip
        st = summary(lat, scale=1 / NS)
        return Measured(float(st[path] or 0.0), unit, stat,
                        note=f"{format_count(st['count'])} ok ops")
    value = known_number(subj.get(path), f"'{w}' has no successful operation")
    note = (f"{format_count(subj.get('count', 0))} ok ops" if subj.get("source") == "ops"
            else str(subj.get("source")))  # fmt: skip
    return Measured(value, unit, stat, note=note)


def _errors(inp: Inputs) -> Measured:
    r = checker_result(inp, "errors")
    stat, path, unit = stat_of(inp)
    m = inp.metric
    code_path = f"by_code.{m.code}" if m.code is not None else "total"
    if m.windowed:
        if m.subject is None:
            raise Unmeasurable(f"errors ... {window_keyword(m)} needs a workload")
        info = inp.ctx.workloads.get(m.subject)
        if info is not None and info.kind == "sysbench":
            raise Unmeasurable(f"'{window_keyword(m)}' is not available for {m.subject} "
                               "(sysbench: per-second rows, no operations)")
        ops = last_ops(inp, m.subject)
        bad = [c for c in ops if c.type != "ok"]
        if m.code is not None:
            bad = [c for c in bad if error_label(c) == str(m.code)]
        lo, hi = last_window(inp, m.subject)
        count, n_ops, secs = float(len(bad)), float(len(ops)), (hi - lo) / NS
    else:
        subjects = subjects_of(r)
        if m.subject is None:
            if m.on is None:
                keys = [k for k in subjects if " on " not in k]
            else:
                keys = [k for k in subjects if k.endswith(f" on {m.on}")]
                if not keys:
                    raise Unmeasurable(f"no operation was answered by '{m.on}'")
        else:
            key, _ = subject_of(inp, r, "operations")
            keys = [key]
        count = sum_of(subjects, keys, code_path)
        n_ops = sum_of(subjects, keys, "ops")
        secs = float(r.metrics.get("load_seconds") or 0.0)
    if path == "ratio":
        if n_ops == 0:
            raise Unmeasurable("no operations were recorded, so the error ratio is undefined")
        return Measured(count / n_ops, unit, stat,
                        note=f"{format_count(count)} of {format_count(n_ops)} operations")
    if path == "rate":
        if secs <= 0:
            raise Unmeasurable("the load has no duration, so errors per second are undefined")
        return Measured(count / secs, unit, stat,
                        note=f"{format_count(count)} errors in {format_duration(secs)}")
    return Measured(count, unit, stat, note=f"of {format_count(n_ops)} operations")


def _stalls(inp: Inputs) -> Measured:
    r = checker_result(inp, "stalls")
    stat, path, unit = stat_of(inp)
    w, subj = subject_of(inp, r, "operations", single_default=True)
    if inp.metric.windowed:
        tr = checker_result(inp, "throughput")
        ts = subjects_of(tr).get(w)
        if ts is None:
            raise Unmeasurable(f"no per-second series for '{w}'")
        series = ts.get("per_second") or []
        load_s = float(tr.metrics.get("load_seconds") or len(series))
        a, b = window_seconds(inp.metric, load_s, planned_duration(inp))
        first = math.floor(a + 1e-9) if inp.metric.window is None else math.ceil(a - 1e-9)
        lo = max(0, first, math.ceil(ts["start"] - 1e-9))
        hi = min(len(series), math.floor(load_s + 1e-9), math.floor(ts["end"] + 1e-9),
                 math.floor(b + 1e-9))
        if hi <= lo and inp.metric.window is not None:
            raise Unmeasurable(f"no whole second of '{w}' {window_words(inp.metric)} (it ran "
                               f"from {ts['start']:.1f} s to {ts['end']:.1f} s)")
        zeros = [i for i in range(lo, hi) if series[i] == 0]
        longest = run = 0
        prev = None
        for i in zeros:
            run = run + 1 if prev is not None and i == prev + 1 else 1
            longest = max(longest, run)
            prev = i
        value = float(longest) if path == "longest" else float(len(zeros))
        return Measured(value, unit, stat, note=f"of {max(0, hi - lo)} seconds")
    value = known_number(subj.get(path), f"no stalls .{stat}")
    return Measured(value, unit, stat, note=f"of {subj.get('seconds_checked', 0)} seconds")


def _warmup(inp: Inputs) -> Measured:
    r = checker_result(inp, "warmup")
    stat, _, _ = stat_of(inp)
    w, subj = subject_of(inp, r, "throughput", single_default=True)
    if subj.get("unknown"):
        raise Unmeasurable(f"warmup of '{w}' unknown: {subj['unknown']}")
    mode = "after the cache drop" if r.metrics.get("mode") == "fault" else "from the start"
    if stat == "min_level":
        return Measured(known_number(subj.get("min_level"), "no level after the fault"), "percent",
                        stat, note=mode)  # fmt: skip
    if subj.get("recovered") is False:
        bound = known_number(subj.get("lower_bound"), "no warmup figure")
        return Measured(bound, "duration", stat, True,
                        "throughput was not back to 90% before the load ended")  # fmt: skip
    value = known_number(subj.get("warmup"), "no warmup figure")
    note = mode if subj.get("dip_beyond_noise", True) else f"{mode}; no dip beyond noise"
    return Measured(value, "duration", stat, note=note)


# The readers ``dsl.metrics.METRICS`` names (``MetricSpec.reader``).
READERS: dict[str, Callable[[Inputs], Measured]] = {
    f.__name__: f
    for f in (_downtime, _stale_reads, _duplicate_keys, _lost_writes, _replication_lag,
              _throughput, _latency, _errors, _stalls, _warmup)
}
