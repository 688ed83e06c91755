"""Checkers of the transactional workloads whose truth is in the rows: ``lost_updates``
(read_modify_write counters) and ``bank`` (the total of the accounts).

``lost_updates``, per read_modify_write workload and key: ``acknowledged`` increments (``ok``),
``unknown`` ones (``info``: the COMMIT's answer was lost), and the counter's ``growth`` (its
final value on the authoritative node, after settling; every counter starts at 0). Lost updates
= acknowledged − growth when every unknown increment failed, acknowledged + unknown − growth
when every one committed: ``count`` is exact when there are no unknown increments, otherwise
``at_least``/``at_most`` bound it and ``count`` is None. ``same_read`` counts acknowledged
increments that read a value another acknowledged increment of the same key had already read
(both wrote the same new value: at least one of them was overwritten) — evidence without the
final state; ``examples`` are such pairs. A growth beyond every attempt (``phantom``) is an
increment nobody made.

``bank``, per bank workload: every acknowledged read of all balances (``balances``) must sum to
``accounts × BALANCE``; ``count`` = reads whose total is wrong (read skew, write skew, a lost
transfer), ``negative`` = reads with a negative balance (transfers never overdraw), and the final
rows on the authoritative node: ``final_total`` and ``created`` (final − expected; negative:
money destroyed). ``examples``: the first wrong reads with their node, time and balances.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from lab.history import NS, Completed, Op
from lab.judge.checkers.base import CheckContext, CheckResult
from runners.txn_workloads import BALANCE

MAX_EXAMPLES = 3


def _final_rows(ctx: CheckContext, workload: str) -> tuple[str | None, dict[int, Any] | None]:
    """(node, rows) of the authoritative node's final state; (None, None) when unread."""
    final = ctx.final_state.get(workload) or {}
    authority = ctx.facts.get("authority")
    if authority in final:
        return authority, final[authority]
    survivors = ctx.facts.get("survivors") or []
    for n in survivors:
        if n in final:
            return n, final[n]
    if authority is None and not survivors and final:  # two primaries: the first node read
        n = sorted(final)[0]
        return n, final[n]
    return None, None


def _txn_json(c: Completed, t0: int) -> dict[str, Any]:
    return {"process": c.process, "node": c.node, "type": c.type,
            "start": round((c.start - t0) / NS, 6),
            "end": None if c.end is None else round((c.end - t0) / NS, 6),
            "key": c.key, "value": c.value}


def check_lost_updates(history: Sequence[Op], ctx: CheckContext) -> CheckResult:
    t0, _ = ctx.bounds(history)
    ops: dict[str, list[Completed]] = defaultdict(list)
    for c in ctx.by_f(history).get("rmw", []):
        ops[c.workload].append(c)
    for w, info in ctx.workloads.items():
        if info.kind == "read_modify_write":
            ops.setdefault(w, [])
    if not ops:
        return CheckResult("lost_updates", None, {}, "no read_modify_write workload")
    subjects: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    decided = True
    for w, cs in sorted(ops.items()):
        acked: dict[int, int] = defaultdict(int)
        unknown: dict[int, int] = defaultdict(int)
        reads: dict[tuple[int, int], Completed] = {}
        same_read = 0
        examples: list[list[dict[str, Any]]] = []
        for c in cs:
            if c.key is None:
                continue
            if c.type == "ok":
                acked[c.key] += 1
                read = c.value[0] if isinstance(c.value, list | tuple) else None
                if read is None:
                    continue
                first = reads.get((c.key, read))
                if first is None:
                    reads[(c.key, read)] = c
                else:
                    same_read += 1
                    if len(examples) < MAX_EXAMPLES:
                        examples.append([_txn_json(first, t0), _txn_json(c, t0)])
            elif c.type == "info":
                unknown[c.key] += 1
        node, rows = _final_rows(ctx, w)
        subj: dict[str, Any] = {
            "acknowledged": sum(acked.values()), "unknown": sum(unknown.values()),
            "same_read": same_read, "examples": examples, "node": node,
        }
        if rows is None:
            decided = False
            notes.append(f"{w}: no final state was read: lost updates cannot be counted")
            subj.update(count=None, at_least=same_read, at_most=None, growth=None, phantom=None)
            subjects[w] = subj
            continue
        lo = hi = phantom = growth = 0
        for k in set(acked) | set(unknown) | set(rows):
            g = int(rows.get(k, 0))
            growth += g
            a, u = acked.get(k, 0), unknown.get(k, 0)
            lo += max(0, a - g)
            hi += max(0, a + u - g)
            phantom += max(0, g - a - u)
        lo = max(lo, same_read)  # same_read is a lower bound whatever the unknown ones did
        exact = not unknown
        subj.update(count=lo if exact else None, at_least=lo, at_most=max(hi, lo),
                    growth=growth, phantom=phantom,
                    ratio=(lo / subj["acknowledged"]) if exact and subj["acknowledged"] else None)
        if not exact:
            notes.append(f"{w}: {subj['unknown']} increments have an unknown outcome: lost "
                         f"updates are between {lo} and {max(hi, lo)}")
        subjects[w] = subj
    total_lo = sum(int(s["at_least"] or 0) for s in subjects.values())
    exact_all = decided and all(s["count"] is not None for s in subjects.values())
    metrics: dict[str, Any] = {"count": total_lo if exact_all else None, "at_least": total_lo,
                               "subjects": subjects}
    phantoms = sum(int(s.get("phantom") or 0) for s in subjects.values())
    if total_lo > 0 or phantoms > 0:
        valid: bool | None = False
    elif exact_all:
        valid = True
    else:
        valid = None
    return CheckResult("lost_updates", valid, metrics, "; ".join(notes))


def check_bank(history: Sequence[Op], ctx: CheckContext) -> CheckResult:
    t0, _ = ctx.bounds(history)
    banks = {w: info for w, info in ctx.workloads.items() if info.kind == "bank"}
    if not banks:
        return CheckResult("bank", None, {}, "no bank workload")
    reads: dict[str, list[Completed]] = defaultdict(list)
    for c in ctx.by_f(history).get("balances", []):
        if c.type == "ok":
            reads[c.workload].append(c)
    subjects: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    valid: bool | None = True
    for w, info in sorted(banks.items()):
        if info.key_count is None:
            notes.append(f"{w}: the number of accounts is not known: totals cannot be judged")
            valid = None if valid else valid
            subjects[w] = {"count": None, "reads": len(reads[w])}
            continue
        expected = info.key_count * BALANCE
        wrong = negative = 0
        examples: list[dict[str, Any]] = []
        for c in reads[w]:
            balances = [int(b) for _, b in (c.value or ())]
            total = sum(balances)
            if total != expected or any(b < 0 for b in balances):
                wrong += total != expected
                negative += any(b < 0 for b in balances)
                if len(examples) < MAX_EXAMPLES:
                    examples.append({**_txn_json(c, t0), "total": total})
        node, rows = _final_rows(ctx, w)
        final_total = sum(int(v) for v in rows.values()) if rows is not None else None
        subj = {"count": wrong, "reads": len(reads[w]), "negative": negative,
                "expected_total": expected, "final_total": final_total, "node": node,
                "created": None if final_total is None else final_total - expected,
                "examples": examples}
        subjects[w] = subj
        if wrong or negative or (final_total is not None and final_total != expected):
            valid = False
        elif not reads[w] and final_total is None:
            notes.append(f"{w}: no read completed and no final state: nothing to judge")
            valid = None if valid else valid
    count = sum(int(s["count"] or 0) for s in subjects.values())
    return CheckResult("bank", valid, {"count": count, "subjects": subjects}, "; ".join(notes))


def check_lost_appends(history: Sequence[Op], ctx: CheckContext) -> CheckResult:
    """``lost_writes`` of a list_append workload: acknowledged appends (of committed
    transactions) missing from their key's list on the authoritative node after settling.

    ``count`` (acknowledged appends missing), ``acknowledged``, ``ratio``, ``unknown``
    (appends of transactions of unknown outcome) and ``unknown_applied`` (those present),
    ``failed_but_present`` (appends of failed transactions that are there: an abort that
    committed), ``examples`` (the first lost appends with their transaction)."""
    t0, _ = ctx.bounds(history)
    ws = {w for w, info in ctx.workloads.items() if info.kind == "list_append"}
    if not ws:
        return CheckResult("lost_appends", None, {}, "no list_append workload")
    by_w: dict[str, list[Completed]] = defaultdict(list)
    for c in ctx.by_f(history).get("txn", []):
        if c.workload in ws:
            by_w[c.workload].append(c)
    subjects: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    valid: bool | None = True
    for w in sorted(ws):
        node, rows = _final_rows(ctx, w)
        if rows is None:
            notes.append(f"{w}: no final state was read: lost appends cannot be counted")
            subjects[w] = {"count": None, "node": None}
            valid = None if valid else valid
            continue
        present = {k: set(v) if isinstance(v, list) else set() for k, v in rows.items()}
        acked = lost = unknown = unknown_applied = failed_present = 0
        examples: list[dict[str, Any]] = []
        for c in by_w[w]:
            mops = c.inv.value if c.type != "ok" else c.value
            for mop in mops or ():
                if not isinstance(mop, list | tuple) or len(mop) != 3 or mop[0] != "append":
                    continue
                _, k, v = mop
                there = v in present.get(int(k), ())
                if c.type == "ok":
                    acked += 1
                    if not there:
                        lost += 1
                        if len(examples) < MAX_EXAMPLES:
                            examples.append({**_txn_json(c, t0), "key": k, "appended": v})
                elif c.type == "info":
                    unknown += 1
                    unknown_applied += there
                else:
                    failed_present += there
        subjects[w] = {"count": lost, "acknowledged": acked,
                       "ratio": lost / acked if acked else None, "unknown": unknown,
                       "unknown_applied": unknown_applied,
                       "failed_but_present": failed_present, "node": node,
                       "examples": examples}
        if lost or failed_present:
            valid = False
    total = sum(int(s.get("count") or 0) for s in subjects.values())
    return CheckResult("lost_appends", valid, {"count": total, "subjects": subjects},
                       "; ".join(notes))
