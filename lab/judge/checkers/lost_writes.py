"""lost_writes: acknowledged writes missing from the authoritative state at the end.

``ctx.final_state[workload][node][key] = value`` is read on every running node once faults are
healed and replication has settled. Which node's state is the truth:

- ``ctx.facts["authority"]`` names it when the topology has one writer at the end (the primary
  after settling: replication, a promoted replica, Galera's synced writer);
- when the writer of a replication topology is down at the end (a fault left in place:
  ``for good``, ``leave faults``), ``ctx.facts["survivors"]`` lists the nodes still running:
  a write is lost when none of them has it; with no survivor it is unchecked (unknown);
- otherwise (two primaries) each write is judged on the node that acknowledged it.

For each write (``write``/``insert``) of a workload with a final state:

- acknowledged (``ok``) and absent from the authoritative node, or holding a value that is not
  the written one (nor, for ``read_your_writes`` whose values are versions, a newer version of
  the key; nor the value of a later write to the same key): **lost**. When the authoritative
  node could not be read, the write is **unchecked** (the figure is unknown, not 0);
- acknowledged, present on the authority but missing on another node: **not replicated** there
  (a replica still behind, or stopped), counted per node — never "lost";
- outcome unknown (``info``, or never completed): listed apart with, per node, whether it turned
  out applied (present);
- failed (``fail``) after the statement was sent, not a duplicate-key error, yet its exact
  value is present on some node: **failed_but_present** (a "definitely not applied" that was
  applied). A connect that failed never sent the write: it is not counted.

``divergent``: keys whose final values differ between two running nodes that both hold them
(two primaries that applied different rows under one key).

Values are compared as equal, or equal as text (the database may return ``"5"`` for ``5``).
An acknowledged write without a key (an auto-increment insert that did not learn its id) cannot
be checked and is counted as ``unkeyed``. ``ratio`` = lost / acknowledged.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from lab.history import DUPLICATE_KEY_CODES, NS, WRITE_FS, Completed, Op, never_sent
from lab.judge.checkers.base import CheckContext, CheckResult
from lab.judge.checkers.columns import I64, Bools, Columns
from lab.judge.checkers.stale_reads import version

NAME = "lost_writes"
MAX_LISTED = 100
_MISSING = object()


def same_value(a: Any, b: Any) -> bool:
    return bool(a == b) or (a is not None and b is not None and str(a) == str(b))


@dataclass(slots=True)
class NodeLoss:
    count: int = 0  # acknowledged writes missing on this node
    keys: list[Any] = field(default_factory=list)
    value_mismatch: int = 0
    authoritative: bool = False

    def as_json(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "missing": self.count,
            "not_replicated": 0 if self.authoritative else self.count,
            "authoritative": self.authoritative,
            "keys": list(self.keys),
            "keys_truncated": self.count > len(self.keys),
            "value_mismatch": self.value_mismatch,
        }


def _present(c: Completed, found: Any, later: list[Completed], versioned: bool,
             same_node: bool = False) -> bool:
    """Is write ``c`` accounted for by ``found`` (the final value of its key on a node)?
    ``same_node``: only a later write acknowledged by the same node may have overwritten it
    (two primaries: which of two concurrent writes is "later" is not defined)."""
    if found is _MISSING:
        return False
    if same_value(found, c.value):
        return True
    if versioned:
        v, fv = version(c.value), version(found)
        if v is not None and fv is not None and fv >= v:
            return True  # a newer version of the key
    return any(
        o is not c and o.start >= c.start and same_value(found, o.value)
        and (not same_node or o.node == c.node)
        for o in later
    )  # overwritten by a later write


class _LaterWrites:
    """key -> the writes (not failed) of that key; built on first use, only needed when a final
    value differs from the written one."""

    def __init__(self, ws: _Writes) -> None:
        self.ws = ws
        self.index: dict[Any, list[int]] | None = None
        # key -> its writes: asked once per node for every write whose node holds another
        # value (a probe overwriting a few keys: each key asked thousands of times)
        self.seen: dict[tuple[type, Any], list[Completed]] = {}

    def __getitem__(self, key: int | None) -> list[Completed]:
        if key is None:
            return []
        k = (type(key), key)  # 1 and True are one dict key, not one column value
        try:
            return self.seen[k]
        except KeyError:
            pass
        except TypeError:  # a key that is not hashable: looked up each time
            return self._find(key)
        got = self.seen[k] = self._find(key)
        return got

    def _find(self, key: Any) -> list[Completed]:
        ws = self.ws
        if ws.key_array is not None and type(key) is int and -2**63 <= key < 2**63:
            order, sk = ws.by_key()
            lo, hi = np.searchsorted(sk, key, "left"), np.searchsorted(sk, key, "right")
            return [ws.op(j) for j in sorted(order[lo:hi].tolist()) if not ws.failed[j]]
        if self.index is None:
            self.index = defaultdict(list)
            for j, (k, failed) in enumerate(zip(ws.keys, ws.failed, strict=True)):
                if k is not None and not failed:
                    self.index[k].append(j)
        return [ws.op(j) for j in self.index.get(key, [])]


class _Writes:
    """One workload's writes, in ``by_f``'s order, as columns: their keys and values read once
    (``Completed`` objects made only for the writes that need a closer look)."""

    def __init__(self, col: Columns, pos: I64) -> None:
        self.col = col
        self.pos = pos
        self.kf, self.vf = col.int_field("key", pos), col.int_field("value", pos)
        self._keys: npt.NDArray[np.object_] | None = None
        self.failed = (col.type[pos] == col.code("fail")).tolist()
        self._made: dict[int, Completed] = {}
        self.key_array: I64 | None = None  # every key an int: the keys as an array
        self._by_key: tuple[I64, I64] | None = None

    @property
    def keys(self) -> npt.NDArray[np.object_]:
        """The keys as objects (made on first use: the array path does without)."""
        if self._keys is None:
            self._keys = self.col.objects("key", self.kf.rec)
        return self._keys

    def by_key(self) -> tuple[I64, I64]:
        """The writes in key order (stable) and their keys, sorted."""
        if self._by_key is None:
            assert self.key_array is not None
            o = np.argsort(self.key_array, kind="stable")
            self._by_key = (o, self.key_array[o])
        return self._by_key

    def op(self, j: int) -> Completed:
        c = self._made.get(j)
        if c is None:
            c = self._made[j] = self.col.completed(int(self.pos[j]))
        return c

    def fine(self, final: dict[str, dict[int, Any]], nodes: list[str], cache: States) -> Bools:
        """The acknowledged writes whose key is an int and whose value an int found as such on
        every node: nothing to look at (the common case, found with arrays)."""
        ok = self.col.ok[self.pos]
        kf, vf = self.kf, self.vf
        m = len(self.pos)
        if kf.types <= {int} and vf.types <= {int}:
            if kf.big.any():  # a key beyond 64 bits: nothing is fine
                return np.zeros(m, np.bool_)
            self.key_array = kf.ints
            if vf.big.any():
                return np.zeros(m, np.bool_)
            good = ok.copy()
            sel = np.flatnonzero(good)
            k = kf.ints[sel]
            v = vf.ints[sel]
        else:
            good = ok & kf.is_int & vf.is_int
            sel = np.flatnonzero(good)
            if kf.big[sel].any() or vf.big[sel].any():
                return np.zeros(m, np.bool_)
            k = kf.ints[sel]
            v = vf.ints[sel]
        if not len(sel):
            return good
        same = np.ones(len(sel), np.bool_)
        found: dict[int, Bools] = {}  # per state (by identity: nodes may share one), once
        # the keys searched in order (a binary search per key, each starting where the last
        # ended: several times faster than in the writes' order), the answers put back
        order = np.argsort(k)
        ks, vs = k[order], v[order]
        for n in nodes:
            got = found.get(id(final[n]))
            if got is None:
                fk, fv = _int_state(final[n], cache)
                got = np.zeros(len(sel), np.bool_)
                if len(fk):
                    i = np.minimum(np.searchsorted(fk, ks), len(fk) - 1)
                    got[order] = (fk[i] == ks) & (fv[i] == vs)
                found[id(final[n])] = got
            same &= got
        good[sel[~same]] = False
        return good


States = dict[int, tuple[dict[int, Any], I64, I64]]


def _int_state(state: dict[int, Any], cache: States) -> tuple[I64, I64]:
    """The int keys holding an int value, sorted, and their values (``cache``: the final
    states converted in this check, by identity: a state shared by several nodes once)."""
    hit = cache.get(id(state))
    if hit is not None and hit[0] is state:
        return hit[1], hit[2]
    n = len(state)
    got = None
    if set(map(type, state)) <= {int} and set(map(type, state.values())) <= {int}:
        try:
            got = (np.fromiter(state, np.int64, n), np.fromiter(state.values(), np.int64, n))
        except OverflowError:
            got = None
    if got is None:
        items = [(k, v) for k, v in state.items()
                 if type(k) is int and type(v) is int and -2**63 <= k < 2**63
                 and -2**63 <= v < 2**63]  # fmt: skip
        got = (np.array([k for k, _ in items], np.int64), np.array([v for _, v in items],
                                                                   np.int64))
    o = np.argsort(got[0], kind="stable")
    k, v = got[0][o], got[1][o]
    cache[id(state)] = (state, k, v)
    return k, v


_COUNTS = ("count", "acknowledged", "unknown", "unknown_applied", "failed_but_present",
           "unkeyed", "unchecked", "not_replicated", "divergent")


def check(history: Sequence[Op], ctx: CheckContext) -> CheckResult:
    t0, _ = ctx.bounds(history)
    col = ctx.columns(history)
    wpos = col.f_positions(WRITE_FS)
    writes: dict[str, I64] = {}
    for (wc,), g in col.groups(col.workload, sel=wpos):
        writes[col.name(wc)] = g
    authority = ctx.facts.get("authority")
    # the writer is down at the end (a fault left in place): the surviving nodes hold the truth
    survivors: list[str] | None = ctx.facts.get("survivors")
    # several primaries: each write is judged where it was acked
    multi = authority is None and survivors is None

    subjects: dict[str, dict[str, Any]] = {}
    states: States = {}  # the final states as arrays, converted once in this check
    unchecked: list[str] = []
    tot = dict.fromkeys(_COUNTS, 0)
    for workload, ws in writes.items():
        final = ctx.final_state.get(workload)
        if not final:
            unchecked.append(workload)
            continue
        info = ctx.workloads.get(workload)
        versioned = info is not None and info.kind == "read_your_writes"
        nodes = sorted(final)
        wcol = _Writes(col, ws)
        by_key = _LaterWrites(wcol)
        per_node = {n: NodeLoss(authoritative=n == authority) for n in nodes}
        lost: list[dict[str, Any]] = []
        unknown_ops: list[dict[str, Any]] = []
        s = dict.fromkeys(_COUNTS, 0)
        fine = wcol.fine(final, nodes, states)
        _count_fine(s, fine, col, ws, final, authority, survivors)
        for j in np.flatnonzero(~fine).tolist():
            c = wcol.op(j)
            if c.type == "ok":
                s["acknowledged"] += 1
                if c.key is None:
                    s["unkeyed"] += 1
                    continue
                key, val = c.key, c.value
                missing_on: list[str] = []
                for n in nodes:
                    found = final[n].get(key, _MISSING)
                    if found is val or found == val:  # the common case, inline
                        continue
                    if not _present(c, found, by_key[key], versioned, multi):
                        missing_on.append(n)
                        nl = per_node[n]
                        nl.count += 1
                        if found is not _MISSING:
                            nl.value_mismatch += 1
                        if len(nl.keys) < MAX_LISTED:
                            nl.keys.append(key)
                if survivors is not None:
                    judges = [n for n in survivors if n in final]
                    if not judges:  # nothing survived to read: unknown, not 0
                        s["unchecked"] += 1
                    elif all(n in missing_on for n in judges):
                        s["count"] += 1
                        if len(lost) < MAX_LISTED:
                            lost.append({
                                "key": key, "value": val, "missing_on": missing_on,
                                "judged_on": judges, "acked_by": c.node,
                                "acked_at": ((c.end or c.start) - t0) / NS,
                            })  # fmt: skip
                    continue
                judge = authority if authority is not None else c.node
                if judge is None or judge not in final:
                    s["unchecked"] += 1
                    continue
                if judge in missing_on:
                    s["count"] += 1
                    if len(lost) < MAX_LISTED:
                        lost.append({
                            "key": key, "value": val, "missing_on": missing_on,
                            "judged_on": judge, "acked_by": c.node,
                            "acked_at": ((c.end or c.start) - t0) / NS,
                        })  # fmt: skip
            elif c.type == "info":
                s["unknown"] += 1
                applied = {
                    n: c.key is not None
                    and _present(c, final[n].get(c.key, _MISSING), by_key[c.key], versioned,
                                 multi)
                    for n in nodes
                }
                if any(applied.values()):
                    s["unknown_applied"] += 1
                if len(unknown_ops) < MAX_LISTED:
                    unknown_ops.append({
                        "key": c.key, "value": c.value, "applied": applied,
                        "applied_anywhere": any(applied.values()),
                        "error": c.error, "error_msg": c.error_msg,
                        "at": (c.start - t0) / NS,
                    })  # fmt: skip
            elif (c.key is not None and (c.error is None or c.error not in DUPLICATE_KEY_CODES)
                  and not never_sent(c.error, c.error_msg)):
                if any(same_value(final[n].get(c.key, _MISSING), c.value) for n in nodes):
                    s["failed_but_present"] += 1
        s["not_replicated"] = sum(nl.count for nl in per_node.values() if not nl.authoritative)
        s["divergent"] = _divergent(final, states)
        subj: dict[str, Any] = dict(s)
        subj["ratio"] = s["count"] / s["acknowledged"] if s["acknowledged"] else None
        subj["nodes"] = nodes
        subj["authority"] = authority
        subj["lost"] = lost
        subj["unknown_ops"] = unknown_ops
        subjects[workload] = subj
        for n, nl in per_node.items():
            subjects[f"{workload} on {n}"] = nl.as_json()
        for k in tot:
            tot[k] += s[k]

    metrics: dict[str, Any] = dict(tot)
    metrics["ratio"] = tot["count"] / tot["acknowledged"] if tot["acknowledged"] else None
    metrics["authority"] = authority
    if survivors is not None:
        metrics["survivors"] = survivors
    metrics["unchecked_workloads"] = unchecked
    metrics["subjects"] = subjects
    if not subjects:
        if not writes:
            return CheckResult(NAME, True, metrics, "no writes to check")
        return CheckResult(
            NAME, None, metrics, "no final state was read for: " + ", ".join(unchecked)
        )
    notes = [f"{tot['count']} acknowledged writes lost"] if tot["count"] else []
    if tot["unchecked"]:
        notes.append(f"{tot['unchecked']} acknowledged writes could not be checked (the node "
                     "that holds the truth for them was not running at the end)"
                     if survivors is None else
                     f"{tot['unchecked']} acknowledged writes could not be checked (the writer "
                     "is down at the end and no other node could be read)")
    if unchecked:
        notes.append("no final state for: " + ", ".join(unchecked))
    if tot["unchecked"] and not tot["count"]:
        return CheckResult(NAME, None, metrics, "; ".join(notes))
    valid = tot["count"] == 0 and tot["failed_but_present"] == 0
    return CheckResult(NAME, valid, metrics, "; ".join(notes))


def _count_fine(s: dict[str, int], fine: Bools, col: Columns, ws: I64,
                final: dict[str, dict[int, Any]], authority: Any,
                survivors: list[str] | None) -> None:
    """What the acknowledged writes found on every node add: acknowledged, and unchecked when
    no node can judge them."""
    n = int(np.count_nonzero(fine))
    s["acknowledged"] += n
    if survivors is not None:
        if not [x for x in survivors if x in final]:
            s["unchecked"] += n
    elif authority is not None:
        if authority not in final:
            s["unchecked"] += n
    else:  # judged on the node that acknowledged it
        judges = np.array([c for c, name in enumerate(col.names)
                           if name is not None and name in final], np.int32)
        s["unchecked"] += int(np.count_nonzero(~np.isin(col.node[ws[fine]], judges)))


def _divergent(final: dict[str, dict[int, Any]], cache: States | None = None) -> int:
    """Keys held by two or more nodes with different values."""
    nodes = list(final)
    if len(nodes) < 2:
        return 0
    cache = {} if cache is None else cache
    arrays = [_int_state(final[nd], cache) for nd in nodes]
    if all(len(a[0]) == len(final[nd]) for a, nd in zip(arrays, nodes, strict=True)):
        # every key and value an int: different text, different int; a key's values differ
        # when it has two distinct (key, value) pairs
        ka = np.concatenate([a[0] for a in arrays])
        va = np.concatenate([a[1] for a in arrays])
        o = np.lexsort((va, ka))
        ka, va = ka[o], va[o]
        distinct = np.ones(len(ka), np.bool_)
        distinct[1:] = (ka[1:] != ka[:-1]) | (va[1:] != va[:-1])
        kk = ka[distinct]
        again = kk[1:] == kk[:-1]  # a key's second (third ...) distinct value
        first_again = again & ~np.concatenate([[False], again[:-1]])
        return int(np.count_nonzero(first_again))
    n = 0
    maps = [final[nd] for nd in nodes]
    keys = set(maps[0])
    for other in maps[1:]:
        keys |= set(other)
    for k in keys:
        # fast path: the same int or str on every node that holds the key (their text is
        # then the same); anything else is compared by its text, as ever
        v = None
        same = True
        for m in maps:
            x = m.get(k, _MISSING)
            if x is _MISSING:
                continue
            if v is None:
                v = x
                if type(v) is not int and type(v) is not str:
                    same = False
                    break
            elif x is not v and (type(x) is not type(v) or x != v):
                same = False
                break
        if same:
            continue
        vals = {str(m[k]) for m in maps if k in m}
        if len(vals) > 1:
            n += 1
    return n
