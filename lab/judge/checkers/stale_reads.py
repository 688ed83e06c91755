"""stale_reads: reads that returned an older value than a write already acknowledged.

Within one workload, writes (``write``/``insert`` ops completed ``ok``) carry an integer version
per key. An ``ok`` read of key k invoked at time t is *eligible* when some write to k was
acknowledged before t; it is *stale* when it returned an older version than the newest such
write (an absent row, ``None``, is older than anything). A write still in flight when the read
began is not required to be visible, so it never makes a read stale. Reads of keys with no
acknowledged write before them are not eligible (not stale).

Per read: versions behind = how many of the writes acknowledged before the read began it did not
see; time behind = read invoke time - acknowledgement of the newest write it missed.

Visibility, per node: for each acknowledged write and each node that read its key, the time from
the acknowledgement to the completion of the first read on that node that returned it (or a
newer version); 0 when a read that began before the acknowledgement already saw it. Writes whose
key was read on a node but never seen there are counted as ``never_seen``. The workload's
``visibility`` pools every node's times.

``rate`` (= ``ratio``) = stale reads / eligible reads.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lab.history import NS, READ_FS, REREAD_FS, WRITE_FS, Completed, Op
from lab.judge.checkers import stale_columns as sc
from lab.judge.checkers.base import CheckContext, CheckResult, summary
from lab.judge.checkers.columns import I64, group_rows, summary_ints

NAME = "stale_reads"
MAX_EXAMPLES = 50
VERSIONS_BEHIND_CAP = 10  # the distribution groups 10 and more together
NOTHING_SEEN = -(2**63)


def version(value: Any) -> int | None:
    """The integer version of a value; None for an absent row or a value that is no version."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


@dataclass(slots=True)
class KeyWrites:
    """Acknowledged writes of one key, in acknowledgement order."""

    acks: list[int] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)
    prefix_max: list[int] = field(default_factory=list)
    monotonic: bool = True  # versions non-decreasing in ack order

    @classmethod
    def build(cls, pairs: list[tuple[int, int]]) -> KeyWrites:
        pairs.sort()
        kw = cls()
        best: int | None = None
        for ack, v in pairs:
            kw.acks.append(ack)
            kw.versions.append(v)
            if best is not None and v < kw.versions[-2]:
                kw.monotonic = False
            best = v if best is None else max(best, v)
            kw.prefix_max.append(best)
        return kw

    def missed(self, i: int, seen: int | None) -> tuple[int, int]:
        """Among the first i writes, how many have a version newer than ``seen``, and the ack
        time of the newest (latest acknowledged) of those."""
        if self.monotonic:
            lo = 0 if seen is None else bisect_right(self.versions, seen, 0, i)
            return i - lo, self.acks[i - 1]
        n, newest = 0, self.acks[0]
        for j in range(i):
            if seen is None or self.versions[j] > seen:
                n += 1
                newest = self.acks[j]
        return n, newest


@dataclass(slots=True)
class Tally:
    reads: int = 0
    eligible: int = 0
    stale: int = 0
    without_prior_write: int = 0
    incomparable: int = 0
    time_behind: list[int] = field(default_factory=list)  # ns
    versions_behind: dict[str, int] = field(default_factory=dict)

    def merge(self, o: Tally) -> None:
        self.reads += o.reads
        self.eligible += o.eligible
        self.stale += o.stale
        self.without_prior_write += o.without_prior_write
        self.incomparable += o.incomparable
        self.time_behind.extend(o.time_behind)
        for b, n in o.versions_behind.items():
            self.versions_behind[b] = self.versions_behind.get(b, 0) + n

    def add_stale(self, versions_behind: int, time_behind: int) -> None:
        self.stale += 1
        self.time_behind.append(time_behind)
        b = str(versions_behind) if versions_behind < VERSIONS_BEHIND_CAP else "10+"
        self.versions_behind[b] = self.versions_behind.get(b, 0) + 1

    def as_json(self) -> dict[str, Any]:
        return {
            "count": self.stale,
            "reads": self.reads,
            "eligible_reads": self.eligible,
            "rate": self.stale / self.eligible if self.eligible else None,
            "ratio": self.stale / self.eligible if self.eligible else None,
            "without_prior_write": self.without_prior_write,
            "incomparable": self.incomparable,
            "versions_behind": dict(sorted(self.versions_behind.items(), key=_bucket_order)),
            "time_behind": summary(self.time_behind, scale=1 / NS),
        }


def _bucket_order(item: tuple[str, int]) -> int:
    return VERSIONS_BEHIND_CAP if item[0] == "10+" else int(item[0])


def check(history: Sequence[Op], ctx: CheckContext) -> CheckResult:
    t0, _ = ctx.bounds(history)
    col = ctx.columns(history)
    # every look at a key per workload and node; the workloads in the order of their first
    # read (then those only polled): the order of the subjects and of the examples
    g = sc.gather(col, version)
    if g is None:
        return _check_objects(history, ctx)
    fast = sc.write_arrays(col, set(g.nodes))
    write_pairs = sc.write_pairs(col, set(g.nodes), version) if fast is None else fast[1]

    subjects: dict[str, dict[str, Any]] = {}
    total = Tally()
    examples: list[dict[str, Any]] = []
    for workload in g.order:
        by_node = g.nodes[workload]
        pairs = write_pairs.get(workload, {})
        arrays = _arrays(pairs) if fast is None else (
            None if workload in fast[1] else fast[0].get(workload, {}))
        keys = {k: KeyWrites.build(list(p)) for k, p in pairs.items()} if arrays is None else {}
        acc = _WorkloadSubjects(workload)
        for node, nl in sorted(by_node.items()):
            if arrays is None:  # the per-object path: many keys, or versions beyond 64 bits
                rs, looks = nl.objects(g, col)
                nt = _check_node(workload, node, rs, keys, examples, t0)
                vis = _visibility(keys, looks)
            else:
                nt, vis = _node_arrays(workload, node, nl, g, arrays, examples, t0)
            acc.add(node, nt, vis)
        acc.into(sorted(by_node), subjects, total)
    return _result(total, examples, subjects)


class _WorkloadSubjects:
    """One workload's figures as its nodes are checked: its tally, each node's subject and the
    visibility over all its nodes (both paths, arrays and objects, fill it the same way)."""

    def __init__(self, workload: str) -> None:
        self.workload = workload
        self.tally = Tally()
        self.node_subjects: dict[str, dict[str, Any]] = {}
        self.times: list[int] = []
        self.bounds: list[int] = []
        self.gaps: list[int] = []

    def add(self, node: str, nt: Tally, vis: Visibility) -> None:
        self.times.extend(vis.times)
        self.bounds.extend(vis.bounds)
        self.gaps.extend(vis.gaps)
        sj = nt.as_json()
        sj["visibility"] = vis.as_json()
        self.node_subjects[f"{self.workload} on {node}"] = sj
        self.tally.merge(nt)

    def into(self, nodes: list[str], subjects: dict[str, dict[str, Any]], total: Tally) -> None:
        subj = self.tally.as_json()
        subj["nodes"] = nodes
        subj["visibility"] = Visibility(self.times, self.bounds, self.gaps).as_json()
        subjects[self.workload] = subj
        subjects.update(self.node_subjects)
        total.merge(self.tally)


def _result(total: Tally, examples: list[dict[str, Any]],
            subjects: dict[str, dict[str, Any]]) -> CheckResult:
    metrics = total.as_json()
    metrics["examples"] = examples
    metrics["examples_truncated"] = total.stale > len(examples)
    metrics["subjects"] = subjects
    details = (
        f"{total.stale} stale of {total.eligible} eligible reads"
        if total.eligible
        else "no read had an acknowledged write to compare with"
    )
    return CheckResult(NAME, total.stale == 0, metrics, details)


def _check_objects(history: Sequence[Op], ctx: CheckContext) -> CheckResult:
    """The per-object path, for histories whose keys are not all ints."""
    t0, _ = ctx.bounds(history)
    write_pairs: dict[str, dict[int, list[tuple[int, int]]]] = {}
    reads: dict[str, dict[str, list[Completed]]] = {}  # workload -> node -> first reads
    looks: dict[str, dict[str, list[Look]]] = {}  # workload -> node -> every look at a key
    groups = ctx.by_f(history)
    # reads first: only workloads that read a key need their writes indexed
    # each (workload, node)'s lists looked up once, created where they always were (the
    # dicts' order is the order of the subjects and of the examples)
    look_lists: dict[tuple[str, str], list[Look]] = {}
    read_lists: dict[tuple[str, str], list[Completed]] = {}
    for f, cs in groups.items():
        if f not in READ_FS and f not in REREAD_FS:
            continue
        first = f in READ_FS
        for c in cs:
            if c.type != "ok":
                continue
            wn = (c.workload, c.node or c.endpoint)
            lk = look_lists.get(wn)
            if lk is None:
                lk = look_lists[wn] = looks.setdefault(wn[0], {}).setdefault(wn[1], [])
            v = c.value
            if isinstance(v, list):  # a poll: [[key, version or None], ...]
                for pair in v:
                    if isinstance(pair, list | tuple) and len(pair) == 2:
                        lk.append((int(pair[0]), c.start, c.end, pair[1]))  # type: ignore[arg-type]
                continue
            if c.key is None:
                continue
            lk.append((c.key, c.start, c.end, v))  # type: ignore[arg-type]
            if first:
                rl = read_lists.get(wn)
                if rl is None:
                    rl = read_lists[wn] = reads.setdefault(wn[0], {}).setdefault(wn[1], [])
                rl.append(c)
    for w, per_node in looks.items():  # a node polled but never read first still counts
        for node in per_node:
            reads.setdefault(w, {}).setdefault(node, [])
    for f, cs in groups.items():
        if f not in WRITE_FS:
            continue
        for c in cs:
            if c.type != "ok" or c.key is None or c.workload not in reads:
                continue
            v = c.value
            if type(v) is not int:
                v = version(v)
                if v is None:
                    continue
            per_key = write_pairs.get(c.workload)
            if per_key is None:
                per_key = write_pairs[c.workload] = {}
            lst = per_key.get(c.key)
            if lst is None:
                per_key[c.key] = [(c.end, v)]  # type: ignore[list-item]
            else:
                lst.append((c.end, v))  # type: ignore[arg-type]

    subjects: dict[str, dict[str, Any]] = {}
    total = Tally()
    examples: list[dict[str, Any]] = []
    for workload, by_node in reads.items():
        keys = {k: KeyWrites.build(p) for k, p in write_pairs.get(workload, {}).items()}
        acc = _WorkloadSubjects(workload)
        for node, rs in sorted(by_node.items()):
            nt = _check_node(workload, node, rs, keys, examples, t0)
            acc.add(node, nt, _visibility(keys, looks.get(workload, {}).get(node, [])))
        acc.into(sorted(by_node), subjects, total)
    return _result(total, examples, subjects)


def _arrays(pairs: dict[Any, list[tuple[int, int]]]) -> dict[int, sc.KeyArrays] | None:
    """Each key's writes as arrays; None when the per-object path serves better (very many
    keys, a key that is no int, a version beyond 64 bits)."""
    if len(pairs) > sc.MANY_KEYS or not all(type(k) is int for k in pairs):
        return None
    out = {}
    for k, p in pairs.items():
        a = sc.key_arrays(p)
        if a is None:
            return None
        out[k] = a
    return out


def _node_arrays(workload: str, node: str, nl: sc.NodeLooks, g: sc.Gathered,
                 keys: dict[int, sc.KeyArrays], examples: list[dict[str, Any]], t0: int
                 ) -> tuple[Tally, Visibility]:
    """``_check_node`` and ``_visibility`` for one node, with arrays."""
    nt = Tally()
    nt.reads = len(nl.first_rows)
    nt.incomparable = nl.incomparable
    stale: list[sc.Stale] = []
    rows = np.arange(len(nl.read_rows))
    for key, gk in _by_key(nl.read_key):
        kw = keys.get(key)
        if kw is None:
            nt.without_prior_write += len(gk)
            continue
        e, w, st = sc.stale_of_key(kw, nl.read_start[gk], nl.read_seen[gk], nl.read_none[gk],
                                   rows[gk])
        nt.eligible += e
        nt.without_prior_write += w
        stale.extend(st)
    stale.sort(key=lambda x: x.j)
    for x in stale:
        nt.add_stale(x.missed, x.behind)
        if len(examples) < MAX_EXAMPLES:
            row = int(nl.read_rows[x.j])
            start = int(nl.read_start[x.j])
            examples.append({
                "workload": workload, "node": node, "key": g.keys[row],
                "read": g.values[row], "required": x.required,
                "versions_behind": x.missed, "time_behind": x.behind / NS,
                "at": (start - t0) / NS,
            })  # fmt: skip
    vis = Visibility([], [], [])
    for key, gk in _by_key(nl.look_key):
        kw = keys.get(key)
        if kw is not None:
            sc.visibility_of_key(kw, nl.look_end[gk], nl.look_start[gk], nl.look_seen[gk],
                                 vis.times, vis.bounds, vis.gaps)
    return nt, vis


def _by_key(keys: I64) -> list[tuple[int, I64]]:
    """Row numbers per key (rows in order within each)."""
    if not len(keys):
        return []
    uniq, inv = np.unique(keys, return_inverse=True)
    return [(int(uniq[c]), rows) for (c,), rows in group_rows(inv.astype(np.int64))]


def _check_node(
    workload: str,
    node: str,
    rs: list[Completed],
    keys: dict[int, KeyWrites],
    examples: list[dict[str, Any]],
    t0: int,
) -> Tally:
    """The reads one node answered for one workload."""
    nt = Tally()
    nt.reads = len(rs)
    eligible = without = incomparable = 0
    get = keys.get
    for r in rs:
        v = r.value
        if v is None:
            seen = None
        elif type(v) is int:
            seen = v
        else:
            seen = version(v)
            if seen is None:
                incomparable += 1
                continue
        kw = get(r.key)  # type: ignore[arg-type]
        if kw is None:
            without += 1
            continue
        start = r.start
        i = bisect_left(kw.acks, start)
        if i == 0:
            without += 1
            continue
        eligible += 1
        required = kw.prefix_max[i - 1]
        if seen is not None and seen >= required:
            continue
        n_missed, newest = kw.missed(i, seen)
        behind = start - newest
        nt.add_stale(n_missed, behind)
        if len(examples) < MAX_EXAMPLES:
            examples.append({
                "workload": workload, "node": node, "key": r.key, "read": v,
                "required": required, "versions_behind": n_missed,
                "time_behind": behind / NS, "at": (start - t0) / NS,
            })  # fmt: skip
    nt.eligible = eligible
    nt.without_prior_write = without
    nt.incomparable = incomparable
    return nt


Look = tuple[int, int, int, Any]  # key, read start, read end, value read


@dataclass(slots=True)
class Visibility:
    """Ack-to-visibility times (ns) of the writes whose key a node was read for; ``bounds``:
    for writes never seen there, the time from the ack to the last read that still missed
    them (the true time is at least that); ``gaps``: for each seen write, the time between the
    read that saw it and the look before it (the resolution of that figure)."""

    times: list[int]
    bounds: list[int]
    gaps: list[int]

    def as_json(self) -> dict[str, Any]:
        try:  # the figures of int64 arrays (``summary_ints``: the same to the bit), sorted once
            times = np.array(self.times, np.int64)
            pooled = np.concatenate([times, np.array(self.bounds, np.int64)])
            gaps = np.array(self.gaps, np.int64)
        except OverflowError:
            out: dict[str, Any] = summary(self.times + self.bounds, scale=1 / NS)
            res = summary(self.gaps, scale=1 / NS)
            sorted_times = sorted(self.times)
        else:
            out = summary_ints(pooled, scale=1 / NS)
            res = summary_ints(gaps, scale=1 / NS)
            sorted_times = np.sort(times).tolist()
        out["seen"] = len(self.times)
        out["unseen"] = out["never_seen"] = len(self.bounds)
        out["unseen_min_bound"] = min(self.bounds) / NS if self.bounds else None
        out["upper"] = percentile_uppers(sorted_times, len(self.bounds), scale=1 / NS)
        out["resolution"] = res["p50"]
        out["resolution_max"] = res["max"]
        return out


PERCENTILES = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "max": 100.0}


def percentile_uppers(times: list[int], unseen: int, *, scale: float) -> dict[str, float | None]:
    """What each percentile can at most be when the ``unseen`` writes (their times unknown,
    longer than a bound) are all longer than every time seen: the percentile of the seen times
    with them put last; None where the percentile's rank falls among the unseen (no upper
    bound). With none unseen, the percentiles themselves."""
    xs = sorted(times)
    n = len(xs) + unseen
    out: dict[str, float | None] = {}
    for stat, q in PERCENTILES.items():
        rank = min(max(math.ceil(q / 100.0 * n), 1), n) if n else 0
        out[stat] = float(xs[rank - 1]) * scale if 0 < rank <= len(xs) else None
    return out


def visibility_upper(vis: dict[str, Any], stat: str) -> float | None:
    """The upper end of a visibility statistic that is a lower bound (None: unbounded)."""
    upper = vis.get("upper")
    got = upper.get(stat) if isinstance(upper, dict) else None
    return float(got) if isinstance(got, int | float) else None


def visibility_lower_bound(vis: dict[str, Any], stat: str, value: float) -> bool:
    """Whether a visibility statistic is only a lower bound: writes never seen pool in with
    the time to the last read that missed them (their true time is longer), so a percentile
    (or max) at or above the smallest of those bounds could be higher, and a mean with any of
    them is."""
    unseen = int(vis.get("unseen") or 0)
    bound = vis.get("unseen_min_bound")
    if unseen <= 0 or not isinstance(bound, int | float):
        return False
    return stat == "mean" or float(bound) <= value


def _visibility(keys: dict[int, KeyWrites], looks: list[Look]) -> Visibility:
    """For one node: when did each acknowledged write of a key it was read for become visible
    there? The time is from the write's acknowledgement to the completion of the first read
    that returned its version (or a newer one); 0 when a read that began before the
    acknowledgement already saw it."""
    by_key: dict[int, list[tuple[int, int, int]]] = {}
    for key, start, end, v in looks:
        seen = NOTHING_SEEN if v is None else (v if type(v) is int else version(v))
        if seen is None:
            continue
        lst = by_key.get(key)
        if lst is None:
            by_key[key] = [(end, start, seen)]
        else:
            lst.append((end, start, seen))
    out = Visibility([], [], [])
    for key, triples in by_key.items():
        kw = keys.get(key)
        if kw is None:
            continue
        triples.sort()
        ends: list[int] = []
        best: list[int] = []  # the newest version seen so far, non-decreasing
        m = NOTHING_SEEN
        for end, _start, v in triples:
            if v > m:
                m = v
            ends.append(end)
            best.append(m)
        for ack, v in zip(kw.acks, kw.versions, strict=True):
            j = bisect_left(best, v)
            if j == len(best):
                if ends[-1] > ack:  # read after the ack and still not seen
                    out.bounds.append(ends[-1] - ack)
                continue
            out.times.append(max(0, ends[j] - ack))
            prev = ends[j - 1] if j > 0 and ends[j - 1] > ack else ack
            out.gaps.append(max(0, ends[j] - prev))
    return out
