"""anomalies: transactional anomalies of ``list_append`` workloads, found the way Elle finds them
(jepsen-io/elle, ``elle.list-append`` and ``elle.txn``).

A transaction is one op (``f == "txn"``) whose value is micro-operations ``[f, key, v]``: ``"r"``
reads a key's list (``v``: the list read, on the completion), ``"append"`` appends the integer
``v``, unique in the workload. ``ok``: committed; ``fail``: did not commit; ``info``: unknown.

Version order. Every read of a key shows a prefix of the key's history of appends, so the longest
read (its distinct elements) is the order of the appends it shows; a read that is not a prefix of
it is an *incompatible order*. An append nobody read comes after the last element read.

Dependency graph, over the committed and the unknown (``info``) transactions as Elle builds it:
``ww`` T1 -> T2 when T2 appended the element right after T1's; ``wr`` T1 -> T2 when T2 read a
list ending with T1's append; ``rw`` T1 -> T2 when T1 read a list ending with element e (or
empty) and T2 appended the element right after e (the first). ``realtime`` T1 -> T2 when T1
completed (ok) before T2 was invoked: represented by a chain of time points (T1 -> its
completion point -> later points -> T2), so it costs two edges a transaction, not n².

Cycles. Strongly connected components (networkx) of the data graph (ww, wr, rw): in each, a
short cycle of each class, as Elle searches them: G0 (ww only), G1c (ww and wr, at least one
wr; not searched when a G0 is found), G-single (exactly one rw), G2-item (two or more rw; Elle's
G-nonadjacent when no two rw edges are adjacent). Then, in each component of the graph with
realtime edges, the ``-realtime`` variants not implied by a data cycle found there: a cycle that
needs a realtime edge is a stale read (it rules out strict serializability, not
serializability). Each search is bounded (``SEARCH_BUDGET`` node visits); a component whose
search ran out still counts one cycle (any cycle in it, classified by its edges) and is counted
in ``search_incomplete``.

Without cycles: G1a (a committed read shows an element appended by a failed transaction), G1b (a
committed read ends with an append its transaction later followed with another append to the
same key), lost update (two or more committed transactions read the same version of a key and
both appended to it), internal (a read disagrees with its own transaction's earlier reads and
appends of the key), future read (a read shows an element its own transaction appends later),
duplicate (an element twice in one read), garbage (a read shows an element nobody appended),
incompatible order (two reads of a key neither of which is a prefix of the other).

Counts are Elle's cases, deduplicated where one fault shows in many reads: cycles count one per
component and class; G1a, G1b, duplicate and garbage count distinct (key, element); lost update
counts (key, version read) groups; internal and future read count transactions; incompatible
order counts keys. ``count`` adds them all up. See docs/results.md.

Modules: this one builds each workload's version orders and dependency graph, finds the cases
without cycles, explains each cycle found, and computes the figures; the cycle search and its
classification are in ``lab.judge.checkers.anomalies_cycles``; a transaction's
micro-operations, the cases within one transaction and how values are shown are in
``lab.judge.checkers.anomalies_txns``.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# networkx (0.1 s to import) is imported in the functions that build graphs: a `lab` process
# that checks no transactions never pays for it
from lab.history import NS, Completed, Op
from lab.judge.checkers.anomalies_cycles import (
    _PROJECTIONS,
    _REL,
    DATA,
    RT,
    RW,
    WR,
    WW,
    Cycle,
    _data_cycles,
    _Found,
    _realtime_cycles,
)
from lab.judge.checkers.anomalies_txns import (
    _counts,
    _future_read,
    _internal_case,
    _last,
    _mops,
    _secs,
    _short,
    _text,
    _Txn,
)
from lab.judge.checkers.base import CheckContext, CheckResult
from lab.judge.checkers.consistency_models import ruled_out

NAME = "anomalies"
KIND = "list_append"
KINDS = ("g0", "g1a", "g1b", "g1c", "g_single", "g2_item", "lost_update", "internal",
         "future_read", "duplicate", "garbage", "incompatible_order", "stale_read")  # fmt: skip
MAX_EXAMPLES = 2  # per kind and workload
MAX_MOPS = 8  # micro-operations of a transaction shown in an example

# Elle's cycle types -> our kinds; "-realtime" variants are stale reads
_KIND_OF_TYPE = {"G0": "g0", "G1c": "g1c", "G-single": "g_single", "G2-item": "g2_item",
                 "G-nonadjacent": "g2_item"}  # fmt: skip
_ELLE_NAME = {"g1a": "G1a", "g1b": "G1b", "lost_update": "lost-update", "internal": "internal",
              "future_read": "future-read", "duplicate": "duplicate-elements",
              "incompatible_order": "incompatible-order"}  # fmt: skip



# --- one workload ---------------------------------------------------------------------------


@dataclass
class _Case:
    kind: str
    size: int  # for choosing the smallest example
    example: dict[str, Any]


class _Workload:
    """Everything about one list_append workload's transactions."""

    def __init__(self, name: str, ops: Sequence[Completed], t0: int) -> None:
        self.name = name
        self.t0 = t0
        self.txns: list[_Txn] = []
        self.malformed = 0
        for c in ops:
            mops = _mops(c.value)
            if mops is None:
                self.malformed += 1
                continue
            self.txns.append(_Txn(len(self.txns), c, mops))
        self.counts: dict[str, int] = dict.fromkeys(KINDS, 0)
        self.cases: dict[str, list[_Case]] = {}
        self.types: set[str] = set()  # Elle anomaly names seen
        self.order: dict[Any, list[int]] = {}  # key -> version order
        self.pos: dict[Any, dict[int, int]] = {}
        self.writer: dict[tuple[Any, int], int] = {}  # (key, element) -> txn (ok/info)
        self.sccs = 0
        self.largest_scc = 0
        self.incomplete = 0
        self.edges: dict[tuple[int, int], int] = {}  # data and realtime edges, as bit masks
        self.succ: Any = {}  # the graph's successors: node -> {successor: ...}
        self.duplicate_appends: list[tuple[Any, int]] = []

    # -- bookkeeping

    def found(self, kind: str, size: int, example: dict[str, Any], n: int = 1) -> None:
        self.counts[kind] += n
        cases = self.cases.setdefault(kind, [])
        cases.append(_Case(kind, size, example))
        if len(cases) > 4 * MAX_EXAMPLES:  # keep the smallest few
            cases.sort(key=lambda c: c.size)
            del cases[MAX_EXAMPLES:]

    def seconds(self, t: int | None) -> float | None:
        return None if t is None else round((t - self.t0) / NS, 6)

    def txn_json(self, t: _Txn, name: str) -> dict[str, Any]:
        c = t.c
        return {"name": name, "index": c.index, "node": c.node, "process": c.process,
                "time": self.seconds(c.start), "end": self.seconds(c.end), "outcome": t.type,
                "ops": [[f, k, _short(v)] for f, k, v in t.mops[:MAX_MOPS]]}  # fmt: skip

    # -- the checks

    def run(self) -> None:
        txns = self.txns
        possible = [t for t in txns if t.type in ("ok", "info")]
        appended: dict[tuple[Any, int], int] = {}  # (key, element) -> txn, every outcome
        failed: dict[tuple[Any, int], int] = {}
        intermediate: dict[tuple[Any, int], int] = {}
        for t in txns:
            last: dict[Any, int] = {}
            for f, k, v in t.mops:
                if f != "append":
                    continue
                kv = (k, v)
                if kv in appended:
                    self.duplicate_appends.append(kv)
                appended[kv] = t.id
                if t.type == "fail":
                    failed[kv] = t.id
                elif t.type in ("ok", "info"):
                    self.writer[kv] = t.id
                prev = last.get(k)
                if prev is not None:
                    intermediate[(k, prev)] = t.id
                last[k] = v
        if self.duplicate_appends:
            return
        self._internal_and_lost_updates()
        reads = self._reads(possible, appended, failed, intermediate)
        self._graph(possible, reads)

    def _internal_and_lost_updates(self) -> None:
        groups: dict[tuple[Any, int, Any], list[tuple[_Txn, list[int], int]]] = {}
        for t in self.txns:
            if t.type != "ok":
                continue
            case = _internal_case(t.mops)
            if case is not None:
                i, expected = case
                f, k, v = t.mops[i]
                self.found("internal", len(t.mops), {
                    "txns": [self.txn_json(t, "T1")], "key": k, "read": _short(v),
                    "expected": expected,
                    "explanation": f"T1 read key {k} = {_text(v)}, but its own earlier reads "
                                   f"and appends of key {k} mean it should read "
                                   f"{_text(expected)}"})  # fmt: skip
                self.types.add("internal")
            fr = _future_read(t.mops)
            if fr is not None:
                k, e, v = fr
                self.found("future_read", len(t.mops), {
                    "txns": [self.txn_json(t, "T1")], "key": k, "element": e,
                    "explanation": f"T1 read key {k} = {_text(v)}, which shows {e}, an element "
                                   "T1 itself appends later"})  # fmt: skip
                self.types.add("future-read")
            # Elle's lost-update-cases: the first read of a key, then the first append to it
            rd: dict[Any, list[int]] = {}
            written: set[Any] = set()
            for f, k, v in t.mops:
                if f == "r":
                    if k not in rd and v is not None:
                        rd[k] = v
                elif k not in written and k in rd:
                    written.add(k)
                    r = rd[k]
                    groups.setdefault((k, len(r), r[-1] if r else None), []).append((t, r, v))
        for (k, _, _), members in groups.items():
            if len(members) < 2:
                continue
            by_value: dict[tuple[int, ...], list[tuple[_Txn, list[int], int]]] = {}
            for m in members:
                by_value.setdefault(tuple(m[1]), []).append(m)
            for same in by_value.values():
                if len(same) < 2:
                    continue
                shown = same[:2]
                names = [f"T{i + 1}" for i in range(len(shown))]
                r = shown[0][1]
                more = f" (and {len(same) - 2} more)" if len(same) > 2 else ""
                shown_json = [self.txn_json(m[0], n) for m, n in zip(shown, names, strict=True)]
                added = ", ".join(str(a) for _, _, a in shown)
                self.found("lost_update", len(same), {
                    "txns": shown_json,
                    "key": k, "read": _short(r), "transactions": len(same),
                    "appended": [a for _, _, a in shown],
                    "explanation": f"{' and '.join(names)}{more} all read key {k} = {_text(r)} "
                                   f"and each appended to it ({added}), and all committed: "
                                   "one update is lost"})  # fmt: skip
                self.types.add("lost-update")

    def _reads(self, possible: list[_Txn], appended: dict[tuple[Any, int], int],
               failed: dict[tuple[Any, int], int],
               intermediate: dict[tuple[Any, int], int],
               ) -> dict[tuple[Any, Any], list[int]]:  # fmt: skip
        """Version orders, then the anomalies of reads: incompatible order, duplicates, garbage,
        G1a, G1b. Returns (key, last element or None) -> the transactions that read it."""
        by_key: dict[Any, list[tuple[_Txn, list[int]]]] = {}
        index: dict[tuple[Any, Any], list[int]] = {}
        for t in possible:
            for f, k, v in t.mops:
                if f == "r" and v is not None:
                    by_key.setdefault(k, []).append((t, v))
                    index.setdefault((k, v[-1] if v else None), []).append(t.id)
        seen_dup: set[tuple[Any, int]] = set()
        seen_garbage: set[tuple[Any, int]] = set()
        seen_g1a: set[tuple[Any, int]] = set()
        seen_g1b: set[tuple[Any, int]] = set()
        txns = self.txns
        for k, reads in by_key.items():
            longest = max((v for _, v in reads), key=len)
            order = list(dict.fromkeys(longest))
            self.order[k] = order
            self.pos[k] = {e: i for i, e in enumerate(order)}
            # marks on the longest read: (index, element) of duplicates, garbage, aborted
            dup_marks: list[tuple[int, int]] = []
            if len(order) != len(longest):
                seen: set[int] = set()
                for i, e in enumerate(longest):
                    if e in seen:
                        dup_marks.append((i, e))
                    seen.add(e)
            garbage_marks = [(i, e) for i, e in enumerate(longest) if (k, e) not in appended]
            g1a_marks = [(i, e) for i, e in enumerate(longest) if (k, e) in failed]
            incompatible = False
            for t, v in reads:
                n = len(v)
                prefix = v is longest or longest[:n] == v
                ok = t.type == "ok"
                if prefix:
                    dups = [e for i, e in dup_marks if i < n]
                    garbage = [e for i, e in garbage_marks if i < n] if ok else []
                    aborted = [e for i, e in g1a_marks if i < n] if ok else []
                else:
                    if not incompatible:
                        incompatible = True
                        other = next(x for x, lv in reads if lv is longest)
                        self.found("incompatible_order", 2, {
                            "txns": [self.txn_json(t, "T1"), self.txn_json(other, "T2")],
                            "key": k, "values": [_short(v), _short(longest)],
                            "explanation": f"T1 read key {k} = {_text(v)} and T2 read "
                                           f"{_text(longest)}: neither is a prefix of the other, "
                                           "so no one order of appends explains both"})  # fmt: skip
                        self.types.add("incompatible-order")
                    dups = [e for e, c in _counts(v).items() if c > 1] if len(set(v)) != n else []
                    garbage = [e for e in v if (k, e) not in appended] if ok else []
                    aborted = [e for e in v if (k, e) in failed] if ok else []
                for e in dups:
                    if (k, e) not in seen_dup:
                        seen_dup.add((k, e))
                        self.found("duplicate", 1, {
                            "txns": [self.txn_json(t, "T1")], "key": k, "element": e,
                            "explanation": f"T1 read key {k} = {_text(v)}: {e} appears "
                                           f"{v.count(e)} times, appended once"})  # fmt: skip
                        self.types.add("duplicate-elements")
                for e in garbage:
                    if (k, e) not in seen_garbage:
                        seen_garbage.add((k, e))
                        self.found("garbage", 1, {
                            "txns": [self.txn_json(t, "T1")], "key": k, "element": e,
                            "explanation": f"T1 read key {k} = {_text(v)}, but no transaction "
                                           f"appended {e} to key {k}"})  # fmt: skip
                for e in aborted:
                    if (k, e) not in seen_g1a:
                        seen_g1a.add((k, e))
                        w = txns[failed[(k, e)]]
                        self.found("g1a", 2, {
                            "txns": [self.txn_json(w, "T1"), self.txn_json(t, "T2")],
                            "key": k, "element": e,
                            "explanation": f"T2 (committed) read key {k} = {_text(v)}, which "
                                           f"shows {e}, appended by T1, which failed (did not "
                                           "commit): an aborted read"})  # fmt: skip
                        self.types.add("G1a")
                if ok and v:
                    e = v[-1]
                    im = intermediate.get((k, e))
                    if im is not None and im != t.id and (k, e) not in seen_g1b:
                        seen_g1b.add((k, e))
                        w = txns[im]
                        later = [a for f, kk, a in w.mops if f == "append" and kk == k]
                        self.found("g1b", 2, {
                            "txns": [self.txn_json(w, "T1"), self.txn_json(t, "T2")],
                            "key": k, "element": e,
                            "explanation": f"T2 read key {k} = {_text(v)}, ending with {e}, but "
                                           f"T1 appended {', '.join(map(str, later))} to key {k}: "
                                           f"{e} was not T1's final append, an intermediate "
                                           "read"})  # fmt: skip
                        self.types.add("G1b")
        return index

    def _prev(self, k: Any, e: int) -> int | None:
        """The element appended just before ``e`` to ``k`` (None: e was the first). An element
        never read comes after the last element read."""
        order = self.order.get(k)
        if not order:
            return None
        i = self.pos[k].get(e)
        if i is None:
            return order[-1]
        return order[i - 1] if i > 0 else None

    def _graph(self, possible: list[_Txn], index: dict[tuple[Any, Any], list[int]]) -> None:
        import networkx as nx
        edges: dict[tuple[int, int], int] = {}
        writer = self.writer
        for t in possible:
            me = t.id
            for f, k, v in t.mops:
                if f == "r":
                    if v:
                        w = writer.get((k, v[-1]))
                        if w is not None and w != me:
                            edges[(w, me)] = edges.get((w, me), 0) | WR
                    continue
                prev = self._prev(k, v)
                if prev is not None:
                    w = writer.get((k, prev))
                    if w is not None and w != me:
                        edges[(w, me)] = edges.get((w, me), 0) | WW
                for r in index.get((k, prev), ()):
                    if r != me:
                        edges[(r, me)] = edges.get((r, me), 0) | RW
        # realtime: ok txn -> its completion point -> later points -> txns invoked after
        done = sorted((t.c.end, t.id) for t in possible if t.type == "ok" and t.c.end is not None)
        ends = [e for e, _ in done]
        for i, (_, tid) in enumerate(done):
            edges[(tid, -1 - i)] = RT
            if i:
                edges[(-i, -1 - i)] = RT
        for t in possible:
            j = bisect.bisect_left(ends, t.c.start) - 1
            if j >= 0:
                edges[(-1 - j, t.id)] = RT
        self.edges = edges
        g = nx.DiGraph()
        g.add_edges_from(edges)
        self.succ = g.succ
        try:
            for comp in nx.strongly_connected_components(g):
                if len(comp) > 1:
                    self._component(comp)
        finally:
            _PROJECTIONS.clear()  # nothing of this run stays alive after it

    def _component(self, comp: set[int]) -> None:
        import networkx as nx
        edges = self.edges
        succ = self.succ
        inner = {(u, v): edges[(u, v)] for u in comp for v in succ[u] if v in comp}
        data = {e: m & DATA for e, m in inner.items() if m & DATA}
        data_types: set[str] = set()
        if data:
            dg = nx.DiGraph()
            dg.add_edges_from(data)
            dcomps = [c for c in nx.strongly_connected_components(dg) if len(c) > 1]
            which = {n: i for i, c in enumerate(dcomps) for n in c}
            subs: list[dict[tuple[int, int], int]] = [{} for _ in dcomps]
            for (u, v), m in data.items():
                i = which.get(u)
                if i is not None and which.get(v) == i:
                    subs[i][(u, v)] = m
            for dcomp, sub in zip(dcomps, subs, strict=True):
                self.sccs += 1
                self.largest_scc = max(self.largest_scc, len(dcomp))
                found, complete = _data_cycles(sub, dcomp)
                self.incomplete += not complete
                data_types |= set(found.cycles)
                self._report(found)
        if any(n < 0 for n in comp):
            found, complete = _realtime_cycles(inner, comp, data_types)
            self.incomplete += not complete
            for t in data_types:  # found again only when a data search ran out of budget
                found.cycles.pop(t, None)
            self._report(found)

    def _report(self, found: _Found) -> None:
        for t, cycle in found.cycles.items():
            kind = "stale_read" if t.endswith("-realtime") else _KIND_OF_TYPE[t]
            self.types.add(t)
            self.found(kind, len(cycle[0]), self._cycle_example(t, cycle))

    # -- cycle examples

    def _cycle_example(self, t: str, cycle: Cycle) -> dict[str, Any]:
        nodes, rels = cycle
        names = [f"T{i + 1}" for i in range(len(nodes))]
        steps = []
        texts = []
        for i, r in enumerate(rels):
            j = (i + 1) % len(nodes)
            step, text = self._explain(nodes[i], nodes[j], r, names[i], names[j])
            steps.append(step)
            texts.append(text)
        txns = [self.txn_json(self.txns[n], nm) for n, nm in zip(nodes, names, strict=True)]
        return {"type": t, "txns": txns,
                "steps": steps,
                "explanation": "; ".join(texts) + f": a cycle, so no order of the transactions "
                               f"explains what they saw ({t})"}  # fmt: skip

    def _explain(self, a: int, b: int, rel: int, an: str, bn: str) -> tuple[dict[str, Any], str]:
        ta, tb = self.txns[a], self.txns[b]
        step: dict[str, Any] = {"from": an, "to": bn, "type": _REL[rel]}
        if rel == RT:
            step.update(completed=self.seconds(ta.c.end), invoked=self.seconds(tb.c.start))
            return step, (f"{an} completed at {_secs(self.seconds(ta.c.end))} before {bn} began "
                          f"at {_secs(self.seconds(tb.c.start))}")  # fmt: skip
        for f, k, v in tb.mops:
            if rel == WR and f == "r" and v and self.writer.get((k, v[-1])) == a:
                step.update(key=k, value=v[-1])
                return step, f"{bn} read key {k} = {_text(v)}, which shows {an}'s append of {v[-1]}"
            if f != "append":
                continue
            prev = self._prev(k, v)
            if rel == WW and prev is not None and self.writer.get((k, prev)) == a:
                step.update(key=k, value=prev, next=v)
                return step, f"{bn} appended {v} to key {k} right after {an}'s {prev}"
            if rel == RW:
                for fa, ka, va in ta.mops:
                    if fa == "r" and ka == k and va is not None and _last(va) == prev:
                        step.update(key=k, value=prev, next=v)
                        if prev is None:
                            return step, (f"{an} read key {k} empty, and {bn} appended its "
                                          f"first element {v}")  # fmt: skip
                        return step, (f"{an} read key {k} = {_text(va)}, and {bn} appended {v} "
                                      f"right after {prev}: {an} did not see it")  # fmt: skip
        return step, f"{an} -{_REL[rel]}-> {bn}"

    # -- the figures

    def metrics(self) -> dict[str, Any]:
        ok = sum(1 for t in self.txns if t.type == "ok")
        out: dict[str, Any] = {
            "transactions": ok,
            "unknown": sum(1 for t in self.txns if t.type == "info"),
            "aborted": sum(1 for t in self.txns if t.type == "fail"),
        }
        reason = self.undecided_reason()
        if reason:
            out.update(decided=False, reason=reason, count=None, **dict.fromkeys(KINDS),
                       not_models=None, weakest_not=None, examples={})  # fmt: skip
            return out
        not_models, weakest_not = ruled_out(
            {_ELLE_NAME.get(k, k) for k in self.types})
        out.update(
            decided=True, reason=None, count=sum(self.counts.values()), **self.counts,
            not_models=not_models, weakest_not=weakest_not, sccs=self.sccs,
            largest_scc=self.largest_scc, search_incomplete=self.incomplete,
            malformed=self.malformed,
            examples={k: [c.example for c in sorted(cs, key=lambda c: c.size)[:MAX_EXAMPLES]]
                      for k, cs in sorted(self.cases.items())},
        )  # fmt: skip
        return out

    def undecided_reason(self) -> str | None:
        if self.duplicate_appends:
            k, v = self.duplicate_appends[0]
            return (f"value {v} was appended to key {k} more than once: the version order "
                    "cannot be inferred (every append must be unique)")
        if not any(t.type == "ok" and any(f == "r" and v is not None for f, _, v in t.mops)
                   for t in self.txns):  # fmt: skip
            return "no committed transaction read a key"
        return None


# --- the checker ----------------------------------------------------------------------------


def check(history: Sequence[Op], ctx: CheckContext) -> CheckResult:
    names = sorted(n for n, info in ctx.workloads.items() if info.kind == KIND)
    if not names:
        return CheckResult(NAME, None, {}, "no list_append workload: nothing to check")
    wanted = set(names)
    per: dict[str, list[Completed]] = {n: [] for n in names}
    for c in ctx.by_f(history).get("txn", ()):
        if c.workload in wanted:
            per[c.workload].append(c)
    t0 = ctx.bounds(history)[0]
    subjects: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    for name in names:
        w = _Workload(name, per[name], t0)
        w.run()
        m = w.metrics()
        subjects[name] = m
        if not m["decided"]:
            notes.append(f"{name}: unknown: {m['reason']}")
        elif m["count"]:
            kinds = ", ".join(f"{m[k]} {k}" for k in KINDS if m[k])
            notes.append(f"{name}: {m['count']} anomalies ({kinds}); rules out "
                         f"{', '.join(m['weakest_not'])} and stronger")  # fmt: skip
        if m.get("search_incomplete"):
            notes.append(f"{name}: the cycle search ran out of budget in "
                         f"{m['search_incomplete']} component(s): cycle counts are lower bounds")
        if m.get("malformed"):
            notes.append(f"{name}: {m['malformed']} transactions were not list_append "
                         "micro-operations and were skipped")
    decided = [m for m in subjects.values() if m["decided"]]
    anomalous = any(m["count"] for m in decided)
    all_decided = len(decided) == len(subjects)
    top: dict[str, Any] = {
        "transactions": sum(m["transactions"] for m in subjects.values()),
        "unknown": sum(m["unknown"] for m in subjects.values()),
        "aborted": sum(m["aborted"] for m in subjects.values()),
    }
    if all_decided:
        top["count"] = sum(m["count"] for m in decided)
        top.update({k: sum(m[k] for m in decided) for k in KINDS})
        top["not_models"] = sorted({x for m in decided for x in m["not_models"]})
    else:
        top["count"] = None
        top.update(dict.fromkeys(KINDS))
        top["not_models"] = None
    top["subjects"] = subjects
    valid: bool | None = False if anomalous else (True if all_decided else None)
    return CheckResult(NAME, valid, top, "\n".join(notes))
