"""semi_sync: whether a primary's semi-synchronous replication held, or fell back to
asynchronous, and how many commits went on without a replica's acknowledgement.

Sample contract (``runners.replication_watch.ReplicationWatcher`` with ``semi_sync=True``, the
plan's ``semi_sync on``; every 200 ms per node, series ``replication``): besides the replication
threads' figures, ``semi_sync_enabled`` (the primary side is enabled: 1.0 / 0.0),
``semi_sync_on`` (``Rpl_semi_sync_master_status``: operational, 0.0 once fallen back),
``semi_sync_yes_tx`` and ``semi_sync_no_tx`` (the server's counters of commits acknowledged by
a replica / committed without one, from the server's start). A node that cannot be read gives
``{"unreadable": 1.0}``.

Per node with the primary side enabled at some sample:
- ``fallbacks``: how many times semi-sync stopped being operational: a readable sample reading
  it on, then one reading it off (the fall happened in between); and an interval between two
  samples that both read on while the commits without acknowledgement grew (a fall and a
  recovery within one interval, which no sample saw). Windows: ``windows`` (at: the first
  sample reading off, or the interval's end for an unseen one; after: the last sample reading
  on; back: the first sample reading on again, None when it never came back).
- ``off``: seconds from each window's first sample reading off to its ``back`` (or to the last
  sample when it never came back), added up; unseen windows add nothing. Resolution: the
  watcher's interval (200 ms) at each end. A node asynchronous from its first sample (it fell
  back before the load, or its replica never connected) counts a fallback there
  (``off_from_start``) and its ``off`` is a lower bound.
- ``unacknowledged`` / ``acknowledged``: the growth of ``Rpl_semi_sync_master_no_tx`` /
  ``_yes_tx`` over the load, from its first readable sample to its last: exact while the
  server ran throughout. A counter that went down restarted with the server: what it counted
  from the restart is added, and the commits between the last sample before and the crash are
  not seen, so the figure is then a lower bound (``restarted`` > 0, ``lower_bound``); so is it
  when the node could not be read for a while after its first sample (``unread_gaps``: down,
  paused, killed for good).
Every commit counts, the lab's heartbeat (a beat every 50 ms on the primary) included.
A node whose primary side was never enabled (a replica; a replica ``promote`` made the primary
keeps only the replica's side) has ``enabled`` False and no figures: its commits never wait for
a replica. No semi-sync samples at all (``semi_sync off``, or a server without semi-sync):
``valid`` True with no subjects, and a note.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lab.history import NS, Op, Sample
from lab.judge.checkers.base import CheckContext, CheckResult

NAME = "semi_sync"
SERIES = "replication"


def _node(samples: list[Sample], t0: int, t_end: int) -> dict[str, Any]:
    def at(t: int | None) -> float | None:
        return None if t is None else round((t - t0) / NS, 6)

    readable = [s for s in samples if "semi_sync_on" in s.values]
    enabled = any(s.values.get("semi_sync_enabled") == 1.0 for s in readable)
    out: dict[str, Any] = {"enabled": enabled, "samples": len(samples),
                           "unreadable": sum(1 for s in samples if "unreadable" in s.values)}
    if not enabled:
        return out
    windows: list[dict[str, Any]] = []
    prev: Sample | None = None
    cur: dict[str, Any] | None = None  # the window open now
    # asynchronous from the first sample: it fell back before the load (or never held)
    first_off = bool(readable) and readable[0].values.get("semi_sync_on") != 1.0
    if first_off:
        cur = {"at": readable[0].time, "after": None, "back": None, "seen": True}
        windows.append(cur)
    for s in readable:
        on = s.values.get("semi_sync_on") == 1.0
        if prev is not None:
            was_on = prev.values.get("semi_sync_on") == 1.0
            no_prev, no_now = prev.values.get("semi_sync_no_tx"), s.values.get("semi_sync_no_tx")
            if was_on and not on and cur is None:
                cur = {"at": s.time, "after": prev.time, "back": None, "seen": True}
                windows.append(cur)
            elif (was_on and on and no_prev is not None and no_now is not None
                  and no_now > no_prev):
                windows.append({"at": s.time, "after": prev.time, "back": s.time,
                                "seen": False})  # fell and recovered between two samples
        if on and cur is not None:
            cur["back"] = s.time
            cur = None
        prev = s
    last = readable[-1].time if readable else t_end
    off = sum(((w["back"] if w["back"] is not None else last) - w["at"]) / NS
              for w in windows if w["seen"])
    # the counters' growth: a pair of samples where either went down spans a restart (both
    # counters began again at 0): what they counted since is added
    restarted = 0
    counts = {"no_tx": 0.0, "yes_tx": 0.0}
    counted = [s for s in readable
               if "semi_sync_no_tx" in s.values and "semi_sync_yes_tx" in s.values]
    for a, b in zip(counted, counted[1:], strict=False):
        va = {k: a.values[f"semi_sync_{k}"] for k in counts}
        vb = {k: b.values[f"semi_sync_{k}"] for k in counts}
        restart = any(vb[k] < va[k] for k in counts)
        restarted += restart
        for k in counts:
            counts[k] += vb[k] if restart else vb[k] - va[k]
    # a node not read for a while (down, paused, killed for good) may have committed unseen
    first_read = readable[0].time if readable else None
    gaps = first_read is not None and any(
        "unreadable" in s.values and s.time > first_read for s in samples)
    out.update({
        "fallbacks": len(windows),
        "off_from_start": first_off,
        "off_lower_bound": first_off,
        "unseen_fallbacks": sum(1 for w in windows if not w["seen"]),
        "off": round(off, 6),
        "still_off": cur is not None,
        "unacknowledged": counts["no_tx"],
        "acknowledged": counts["yes_tx"],
        "restarted": restarted,
        "unread_gaps": gaps,
        "lower_bound": restarted > 0 or gaps,
        "windows": [{"at": at(w["at"]), "after": at(w["after"]), "back": at(w["back"]),
                     "seen": w["seen"]} for w in windows[:100]],
    })
    return out


def check(history: Sequence[Op], ctx: CheckContext) -> CheckResult:
    t0, t_end = ctx.bounds(history)
    per_node: dict[str, list[Sample]] = {}
    for s in ctx.samples:
        if s.series == SERIES and ("semi_sync_on" in s.values or "unreadable" in s.values):
            per_node.setdefault(s.subject, []).append(s)
    subjects = {node: _node(sorted(samples, key=lambda s: s.time), t0, t_end)
                for node, samples in sorted(per_node.items())
                if any("semi_sync_on" in s.values for s in samples)}
    if not subjects:
        return CheckResult(NAME, True, {"subjects": {}},
                           "no semi-sync samples were recorded (semi_sync off, or the servers "
                           "have no semi-synchronous replication)")
    enabled = [n for n, v in subjects.items() if v["enabled"]]
    return CheckResult(NAME, True, {
        "subjects": subjects,
        "nodes": enabled,
        "fallbacks": sum(subjects[n]["fallbacks"] for n in enabled),
    })
