"""downtime: the stretches in which a client saw no successful completion.

Per workload and endpoint, operations are taken in completion order. An outage window runs
from one successful completion to the next when, in between, the clients saw no success for a
reason:

- an operation failed (``fail`` or ``info``, or an invoke that never completed): the window
  opens at the completion of the last ``ok`` before it (an *error window*);
- or an operation took longer than ``STALL`` (200 ms) and then succeeded: a hang (a paused
  server, a lock, a full disk) is downtime too, whatever it ends in (a *stall window*). It opens
  at the last ``ok`` completion before, or at the slow operation's invoke when the endpoint had
  been idle longer than ``STALL`` before it (a reader waiting for work is not down). When
  another client's operation succeeded during the hang, the window would open at that success:
  it is an outage only if what is left is longer than ``STALL`` (four clients hung together
  through an outage are one window, not one plus three of a fraction of a millisecond).

The first ``ok`` completed after it closes the window at its completion. A duplicate-key error
(1062 / 11000) is an answer from a working server: it counts as an ok.

Resolution: the gap between a workload's operations (a 10 ms probe: a window is known to within
one probe interval plus one operation's latency). Hangs shorter than ``STALL`` are not outages.

Edges: when the first operations of an endpoint fail, the window starts at the first invoke
(``from_start``); when failures last until the end, the window is closed at the end of the load
(or at the last failure's completion, if later) and flagged ``open_at_end``: the outage lasted
at least that long. A workload's windows are the union of its endpoints' windows (time during
which at least one endpoint was failing). Over all workloads, ``total`` is the union too (time
during which any workload was down), never a sum, and ``count`` is the number of windows of
that union (two workloads down at once are one window, as their total is one span). Times
are seconds since the start of the load.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lab.history import DUPLICATE_KEY_CODES, NS, Completed, Op
from lab.judge.checkers.base import CheckContext, CheckResult
from lab.judge.checkers.columns import error_labels

NAME = "downtime"
MAX_WINDOWS = 1000
STALL = 200_000_000  # ns: an operation slower than this is a stall the client sees
_NO_OK = np.iinfo(np.int64).min


@dataclass(slots=True)
class Window:
    start: int  # ns
    end: int  # ns
    failures: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    from_start: bool = False
    open_at_end: bool = False

    def as_json(self, t0: int) -> dict[str, Any]:
        return {
            "start": (self.start - t0) / NS,
            "end": (self.end - t0) / NS,
            "duration": (self.end - self.start) / NS,
            "failures": self.failures,
            "errors": dict(self.errors),
            "from_start": self.from_start,
            "open_at_end": self.open_at_end,
            "kind": "error" if self.failures else "stall",
        }


def error_label(c: Completed) -> str:
    if c.incomplete:
        return "incomplete"
    if c.error is not None:
        return str(c.error)
    return "timeout" if c.type == "info" else "fail"


def outage_windows(
    events: Sequence[Completed], load_end: int, *, ordered: bool = False
) -> list[Window]:
    """Outage windows over one endpoint's operations. ``ordered``: the events are already in
    completion order (as ``pair_ops`` returns them); otherwise they are sorted here."""
    if not events:
        return []
    ordered_events = events if ordered else sorted(events, key=lambda c: _end_of(c, load_end))
    tracker = _Tracker(min(c.start for c in events))
    for c in ordered_events:
        tracker.add(c, load_end)
    return tracker.finish(load_end)


def _end_of(c: Completed, load_end: int) -> int:
    return c.end if c.end is not None else max(load_end, c.start)


class _Tracker:
    """The outage state of one endpoint, fed completions in order."""

    __slots__ = ("first_start", "last_ok", "cur", "last_fail_end", "windows")

    def __init__(self, first_start: int) -> None:
        self.first_start = first_start
        self.last_ok: int | None = None
        self.cur: Window | None = None
        self.last_fail_end = 0
        self.windows: list[Window] = []

    def add(self, c: Completed, load_end: int) -> None:
        end = c.end
        if end is None:
            end = max(load_end, c.start)
        good = c.type == "ok" or (c.error is not None and c.error in DUPLICATE_KEY_CODES)
        self.step(c.start, end, good, "" if good else error_label(c))

    def step(self, start: int, end: int, good: bool, label: str) -> None:
        """One completion: its invoke and completion times (never completed: the end of the
        load), whether the server answered (ok or duplicate key), else its error label."""
        if start < self.first_start:
            self.first_start = start
        if good:
            if self.cur is not None:
                self.cur.end = end
                self.windows.append(self.cur)
                self.cur = None
            elif end - start > STALL:  # a hang that ended in success
                last = self.last_ok
                opened = last if last is not None and start - last <= STALL else start
                if last is None:
                    self.windows.append(Window(self.first_start, end, from_start=True))
                elif end - opened > STALL:  # another client's success during the hang
                    self.windows.append(Window(opened, end))  # leaves less: no outage
            if self.last_ok is None or end > self.last_ok:
                self.last_ok = end
            return
        cur = self.cur
        if cur is None:
            if self.last_ok is None:
                cur = self.cur = Window(self.first_start, self.first_start, from_start=True)
            else:
                cur = self.cur = Window(self.last_ok, self.last_ok)
        cur.failures += 1
        cur.errors[label] = cur.errors.get(label, 0) + 1
        if end > self.last_fail_end:
            self.last_fail_end = end

    def finish(self, load_end: int) -> list[Window]:
        if self.cur is not None:
            self.cur.end = max(load_end, self.last_fail_end, self.cur.start)
            self.cur.open_at_end = True
            self.windows.append(self.cur)
            self.cur = None
        for w in self.windows:
            if w.from_start:  # an earlier-invoked op may have completed later
                w.start = min(w.start, self.first_start)
        return self.windows


def _merged(windows: Sequence[Window]) -> list[Window]:
    """Windows of one endpoint may overlap (a stall window beside an error window of another
    client): one union, in time order."""
    ordered = all(a.end <= b.start for a, b in zip(windows, windows[1:], strict=False))
    return list(windows) if ordered else merge_windows([windows], join_touching=False)


def merge_windows(groups: Sequence[Sequence[Window]], *,
                  join_touching: bool = True) -> list[Window]:
    """The union of several endpoints' windows (``join_touching``: a window that starts where
    another ends joins it)."""
    every = sorted((w for g in groups for w in g), key=lambda w: w.start)
    out: list[Window] = []
    for w in every:
        if out and (w.start < out[-1].end or (join_touching and w.start == out[-1].end)):
            m = out[-1]
            m.end = max(m.end, w.end)
            m.failures += w.failures
            for k, n in w.errors.items():
                m.errors[k] = m.errors.get(k, 0) + n
            m.from_start = m.from_start or w.from_start
            m.open_at_end = m.open_at_end or w.open_at_end
        else:
            out.append(
                Window(w.start, w.end, w.failures, dict(w.errors), w.from_start, w.open_at_end)
            )
    return out


def summarize(windows: Sequence[Window], t0: int) -> dict[str, Any]:
    windows = _merged(windows)
    longest = max(windows, key=lambda w: w.end - w.start, default=None)
    return {
        "longest": (longest.end - longest.start) / NS if longest else 0.0,
        "longest_open_at_end": bool(longest and longest.open_at_end),
        "total": sum(w.end - w.start for w in windows) / NS,
        "count": len(windows),
        "stalls": sum(1 for w in windows if not w.failures),
        "error_windows": sum(1 for w in windows if w.failures),
        "open_at_end": any(w.open_at_end for w in windows),
        "from_start": any(w.from_start for w in windows),
        "windows": [w.as_json(t0) for w in windows[:MAX_WINDOWS]],
        "windows_truncated": len(windows) > MAX_WINDOWS,
    }


def windows_by_endpoint(history: Sequence[Op], ctx: CheckContext
                        ) -> dict[str, dict[str, list[Window]]]:
    """Per workload and endpoint, its outage windows (one pass over the completions, once per
    history: ``check`` and warmup's ``outage_spans`` share it; neither changes a window)."""
    return ctx.memo("downtime.windows", history, lambda: _windows_by_endpoint(history, ctx))


def _windows_by_endpoint(history: Sequence[Op], ctx: CheckContext
                         ) -> dict[str, dict[str, list[Window]]]:
    """A tracker per (workload, endpoint) fed only the completions that can change its state:
    failures, hangs, and the success after a failure. Any other success only moves the last
    success forward: the running maximum of the successes' ends, set before each step."""
    col = ctx.columns(history)
    _, load_end = ctx.bounds(history)
    nd = col.n_done
    end = col.end.copy()
    end[nd:] = np.maximum(load_end, col.start[nd:])  # never completed: the end of the load
    bad = np.flatnonzero(~col.ok)
    good = col.ok.copy()
    dup = [e is not None and e in DUPLICATE_KEY_CODES for e in col.errors(bad)]
    good[bad[np.array(dup, np.bool_)] if dup else bad[:0]] = True
    labels = dict(zip(bad.tolist(), error_labels(col, bad), strict=True))
    hang = (end - col.start) > STALL
    by_workload: dict[str, dict[str, list[Window]]] = {}
    for (wc, ec), g in col.groups(col.workload, col.endpoint):
        gg, ge, gs = good[g], end[g], col.start[g]
        fail = ~gg
        after_fail = np.concatenate([[False], fail[:-1]])
        steps = np.flatnonzero(fail | (gg & (hang[g] | after_fail)))
        tr = _Tracker(int(gs.min()))
        if len(steps):
            best = np.maximum.accumulate(np.where(gg, ge, _NO_OK))  # last success so far
            for j in steps.tolist():
                before = int(best[j - 1]) if j > 0 else _NO_OK
                tr.last_ok = None if before == _NO_OK else before
                tr.step(int(gs[j]), int(ge[j]), bool(gg[j]), labels.get(int(g[j]), ""))
        by_workload.setdefault(col.name(wc), {})[col.name(ec)] = tr.finish(load_end)
    return by_workload


def outage_spans(history: Sequence[Op], ctx: CheckContext) -> dict[str, list[tuple[int, int]]]:
    """Per workload, the spans (ns) in which one of its endpoints was down, as ``check``
    finds them (the union over its endpoints: a second inside one is no steady load)."""
    return {w: [(win.start, win.end) for ws in eps.values() for win in ws]
            for w, eps in windows_by_endpoint(history, ctx).items()}


def check(history: Sequence[Op], ctx: CheckContext) -> CheckResult:
    t0, _ = ctx.bounds(history)
    by_workload = windows_by_endpoint(history, ctx)

    subjects: dict[str, dict[str, Any]] = {}
    overall: list[dict[str, Any]] = []
    all_windows: list[list[Window]] = []
    for workload, endpoints in by_workload.items():
        per_ep: list[list[Window]] = []
        for endpoint, ws in sorted(endpoints.items()):
            per_ep.append(ws)
            subjects[f"{workload} on {endpoint}"] = summarize(ws, t0)
        merged = merge_windows(per_ep) if len(per_ep) > 1 else _merged(per_ep[0])
        all_windows.append(merged)
        s = summarize(merged, t0)
        s["endpoints"] = sorted(endpoints)
        subjects[workload] = s
        overall.append(s)

    longest = max(overall, key=lambda s: s["longest"], default=None)
    union = merge_windows(all_windows)
    metrics: dict[str, Any] = {
        "longest": longest["longest"] if longest else 0.0,
        "longest_open_at_end": bool(longest and longest["longest_open_at_end"]),
        "total": sum(w.end - w.start for w in union) / NS,  # the union: any workload down
        "count": len(union),  # windows of the union, as total: two overlapping are one
        "stalls": sum(1 for w in union if not w.failures),
        "error_windows": sum(1 for w in union if w.failures),
        "open_at_end": any(s["open_at_end"] for s in overall),
        "subjects": subjects,
    }
    notes = [
        f"{w}: outage still open at the end of the load"
        for w, s in subjects.items()
        if " on " not in w and s["open_at_end"]
    ]
    return CheckResult(NAME, True, metrics, "; ".join(notes))
