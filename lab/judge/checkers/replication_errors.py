"""replication_errors: when each replication thread stopped, and on which error.

Sample contract (written by ``runners.replication_watch.ReplicationWatcher``, every 200 ms per
node): ``Sample(series="replication", subject=<node>, time=<ns>, values={"io_running",
"sql_running" (1.0 running / 0.0 not), "sql_errno", "io_errno", "seconds_behind" (NaN when
unknown), "configured" (0.0: the node replicates from nothing)})``; a node that could not be
read gives ``{"unreadable": 1.0}``. The error texts come from the engine:
``ctx.facts["replication_messages"] = {node: {"1062": "Duplicate entry ..."}}``.

Per node and thread (SQL, IO), a *stop* starts at the first sample showing the thread not
running after a sample showing it running (``..._stopped_after`` is that last running sample:
the stop happened in between), and ends at the next sample showing it running. A stop *on an
error* has a non-zero errno; a stop with errno 0 (the lab's ``stop replication``, a replica
still connecting) is not an error, and when its errno becomes non-zero later (``start
replication`` failing straight away) a new stop on an error starts there. A thread already
stopped on an error at the first sample counts, with an unknown stop time (None). An IO thread
``Connecting`` (``io_connecting``: not running, retrying by itself because its primary is
unreachable) is not stopped: such a period is a *reconnect* (``io_reconnects``,
``reconnects``: at, restarted_at, errno), not a stop, so a primary's restart does not count as a
replication error; a thread that gives up (``No``) stops from there. Unreadable
samples (the node is down or paused) change nothing; a node that stops replicating from
anything (``RESET SLAVE ALL`` at a promote) ends its stops.

Per node: ``sql_stopped_at`` / ``io_stopped_at`` (seconds since the start of the load, first
stop on an error), ``sql_errno`` / ``io_errno`` (the first non-zero errno, 0 when none),
``message`` (the text of the first error, SQL first), ``stopped`` (a thread was not running,
nor reconnecting, at the last readable sample), ``io_reconnects``, ``io_reconnect_errno``,
``io_reconnecting`` (still at the last sample), ``reconnects``, ``stopped_on_error`` (and its
errno was not 0), ``count`` (stops on an error, both threads), ``stopped_at`` (the earliest
of the two stop times), ``stops`` (every stop: thread, at, after, errno, restarted_at),
``samples``, ``unreadable``. Over every node:
``count`` = nodes with at least one stop on an error, ``nodes`` (their names), ``stops``.
No samples at all (a topology without replication, or the watcher did not run): ``valid`` is
True as for ``replication_lag`` but every figure is None (unknown), with a note.
Resolution: the watcher's interval (200 ms), plus the time a paused or dead node cannot be read.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lab.history import NS, Op, Sample
from lab.judge.checkers.base import CheckContext, CheckResult

NAME = "replication_errors"
SERIES = "replication"
MAX_STOPS = 200
THREADS = ("sql", "io")


def _num(values: dict[str, float], key: str) -> float | None:
    v = values.get(key)
    if v is None or isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        return None
    return float(v)


@dataclass(slots=True)
class _Stop:
    thread: str
    at: int | None  # ns; None: already stopped at the first sample
    after: int | None  # the last sample showing it running
    errno: int
    restarted_at: int | None = None
    errnos: list[int] = field(default_factory=list)


@dataclass(slots=True)
class _Thread:
    name: str
    seen_running: int | None = None  # time of the last sample showing it running
    seen_any: bool = False
    cur: _Stop | None = None
    stops: list[_Stop] = field(default_factory=list)
    retry: _Stop | None = None  # reconnecting now
    reconnects: list[_Stop] = field(default_factory=list)

    def feed(self, t: int, running: bool, errno: int, retrying: bool = False) -> None:
        if running or retrying:
            if self.cur is not None:
                self.cur.restarted_at = t
                self.cur = None
            if retrying:
                if self.retry is None:
                    self.retry = _Stop(self.name, t if self.seen_any else None,
                                       self.seen_running, errno)
                    self.reconnects.append(self.retry)
                self.retry.errno = self.retry.errno or errno
                if errno != 0 and errno not in self.retry.errnos:
                    self.retry.errnos.append(errno)
            else:
                self.end_retry(t)
                self.seen_running = t
            self.seen_any = True
            return
        self.end_retry(t)  # it gave up (or was stopped): a stop from here
        cur = self.cur
        if cur is None or (cur.errno == 0 and errno != 0):
            if cur is not None:
                cur.restarted_at = t  # the errno-0 stop ends where the error stop begins
            at = t if self.seen_any else None  # stopped already at the first sample
            cur = self.cur = _Stop(self.name, at, self.seen_running, errno)
            self.stops.append(cur)
        if errno != 0 and errno not in cur.errnos:
            cur.errnos.append(errno)
        self.seen_any = True

    def end_retry(self, t: int) -> None:
        if self.retry is not None:
            self.retry.restarted_at = t
            self.retry = None

    def unconfigured(self, t: int) -> None:
        self.end_retry(t)
        if self.cur is not None:
            self.cur.restarted_at = t
            self.cur = None
        self.seen_any = True

    def error_stops(self) -> list[_Stop]:
        return [s for s in self.stops if s.errno != 0]


def check(history: Sequence[Op], ctx: CheckContext) -> CheckResult:
    t0, _ = ctx.bounds(history)
    per_node: dict[str, list[Sample]] = {}
    for s in ctx.samples:
        if s.series == SERIES:
            per_node.setdefault(s.subject, []).append(s)
    if not per_node:
        # like replication_lag: nothing to judge is not a failed checker; the figures are
        # unknown (None) and expectations on them say so
        return CheckResult(
            NAME, True, {"count": None, "nodes": [], "stops": None, "subjects": {}},
            "no replication status samples were recorded (the replication watcher did not run)",
        )  # fmt: skip
    raw_messages = ctx.facts.get("replication_messages")
    messages: dict[str, Any] = raw_messages if isinstance(raw_messages, dict) else {}

    def at(t: int | None) -> float | None:
        return None if t is None else round((t - t0) / NS, 6)

    subjects: dict[str, dict[str, Any]] = {}
    error_nodes: list[str] = []
    total_stops = 0
    for node in sorted(per_node):
        samples = sorted(per_node[node], key=lambda s: s.time)
        threads = {name: _Thread(name) for name in THREADS}
        unreadable = 0
        last: dict[str, float] | None = None
        for s in samples:
            v = s.values
            if _num(v, "unreadable") or (_num(v, "sql_running") is None
                                         and _num(v, "configured") != 0.0):  # fmt: skip
                unreadable += 1
                continue
            last = v
            if _num(v, "configured") == 0.0:
                for th in threads.values():
                    th.unconfigured(s.time)
                continue
            for name, th in threads.items():
                running = (_num(v, f"{name}_running") or 0.0) >= 1.0
                retrying = (_num(v, f"{name}_connecting") or 0.0) >= 1.0
                th.feed(s.time, running, int(_num(v, f"{name}_errno") or 0), retrying)

        node_msgs = messages.get(node)
        node_msgs = node_msgs if isinstance(node_msgs, dict) else {}
        subj: dict[str, Any] = {"samples": len(samples), "unreadable": unreadable}
        every: list[_Stop] = []
        first_msg: str | None = None
        for name, th in threads.items():
            errs = th.error_stops()
            every.extend(th.stops)
            first = errs[0] if errs else None
            subj[f"{name}_stopped_at"] = at(first.at) if first else None
            subj[f"{name}_stopped_after"] = at(first.after) if first else None
            subj[f"{name}_errno"] = first.errno if first else 0
            subj[f"{name}_count"] = len(errs)
            msg = node_msgs.get(str(first.errno)) if first else None
            subj[f"{name}_message"] = msg if isinstance(msg, str) else None
            if first_msg is None and isinstance(msg, str):
                first_msg = msg
        count = subj["sql_count"] + subj["io_count"]
        subj["count"] = count
        subj["message"] = first_msg
        times = [subj[f"{n}_stopped_at"] for n in THREADS if subj[f"{n}_stopped_at"] is not None]
        subj["stopped_at"] = min(times) if times else None
        configured = last is not None and _num(last, "configured") != 0.0
        stopped_threads = [
            n for n in THREADS
            if configured and last is not None and (_num(last, f"{n}_running") or 0.0) < 1.0
            and (_num(last, f"{n}_connecting") or 0.0) < 1.0
        ]  # fmt: skip
        io = threads["io"]
        subj["io_reconnects"] = len(io.reconnects)
        subj["io_reconnect_errno"] = next((r.errno for r in io.reconnects if r.errno), 0)
        subj["io_reconnecting"] = io.retry is not None
        subj["reconnects"] = [
            {"at": at(r.at), "restarted_at": at(r.restarted_at), "errno": r.errno,
             "errnos": list(r.errnos)}
            for r in io.reconnects[:MAX_STOPS]
        ]  # fmt: skip
        subj["stopped"] = bool(stopped_threads)
        subj["stopped_on_error"] = any(
            int(_num(last, f"{n}_errno") or 0) != 0 for n in stopped_threads if last is not None
        )
        subj["replicating"] = configured
        every.sort(key=lambda s: (s.at is not None, s.at or 0))
        subj["stops"] = [
            {"thread": s.thread, "at": at(s.at), "after": at(s.after), "errno": s.errno,
             "errnos": list(s.errnos), "restarted_at": at(s.restarted_at),
             "error": s.errno != 0}
            for s in every[:MAX_STOPS]
        ]  # fmt: skip
        subj["stops_truncated"] = len(every) > MAX_STOPS
        subjects[node] = subj
        total_stops += count
        if count:
            error_nodes.append(node)

    metrics: dict[str, Any] = {
        "count": len(error_nodes),
        "nodes": error_nodes,
        "stops": total_stops,
        "subjects": subjects,
    }
    notes = []
    for node in error_nodes:
        fig = subjects[node]
        parts = []
        for n in THREADS:
            if fig[f"{n}_count"]:
                when = fig[f"{n}_stopped_at"]
                shown = "before the first sample" if when is None else f"at {when:.1f} s"
                parts.append(f"{n.upper()} thread stopped {shown} on error {fig[f'{n}_errno']}")
        notes.append(f"{node}: " + ", ".join(parts))
    return CheckResult(NAME, True, metrics, "; ".join(notes))
