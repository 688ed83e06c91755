"""lost_writes: acknowledged writes missing from the final state after healing.

``ctx.final_state[workload][node][key] = value`` is read on every node once faults are healed
and replication has settled. For each write (``write``/``insert``) of a workload with a final
state, on each node:

- acknowledged (``ok``) and its key absent, or holding a value that is neither the written one,
  nor a newer integer version, nor the value of a later write to the same key: **lost** there;
- outcome unknown (``info``, or never completed): listed apart with, per node, whether it turned
  out applied (present);
- failed (``fail``, not a duplicate-key error) yet present: counted as ``failed_but_present``
  (a "definitely not applied" that was applied).

Values are compared as equal, or equal as text (the database may return ``"5"`` for ``5``).
An acknowledged write without a key (an auto-increment insert that did not learn its id) cannot
be checked and is counted as ``unkeyed``. ``ratio`` = lost / acknowledged.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lab.checkers.base import CheckContext, CheckResult
from lab.checkers.stale_reads import version
from lab.history import DUPLICATE_KEY_CODES, NS, WRITE_FS, Completed, Op

NAME = "lost_writes"
MAX_LISTED = 100
_MISSING = object()


def same_value(a: Any, b: Any) -> bool:
    return bool(a == b) or (a is not None and b is not None and str(a) == str(b))


@dataclass(slots=True)
class NodeLoss:
    count: int = 0
    keys: list[Any] = field(default_factory=list)
    value_mismatch: int = 0

    def as_json(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "keys": list(self.keys),
            "keys_truncated": self.count > len(self.keys),
            "value_mismatch": self.value_mismatch,
        }


def _present(c: Completed, found: Any, later: list[Completed]) -> bool:
    """Is write ``c`` accounted for by ``found`` (the final value of its key on a node)?"""
    if found is _MISSING:
        return False
    if same_value(found, c.value):
        return True
    v, fv = version(c.value), version(found)
    if v is not None and fv is not None and fv >= v:
        return True  # a newer version of the key
    return any(
        o is not c and o.start >= c.start and same_value(found, o.value) for o in later
    )  # overwritten by a later write


class _LaterWrites:
    """key -> the writes (not failed) of that key; built on first use, only needed when a final
    value differs from the written one."""

    def __init__(self, ws: list[Completed]) -> None:
        self.ws = ws
        self.index: dict[int, list[Completed]] | None = None

    def __getitem__(self, key: int | None) -> list[Completed]:
        if self.index is None:
            self.index = defaultdict(list)
            for c in self.ws:
                if c.key is not None and c.type != "fail":
                    self.index[c.key].append(c)
        return self.index.get(key, []) if key is not None else []


def check(history: Sequence[Op], ctx: CheckContext) -> CheckResult:
    t0, _ = ctx.bounds(history)
    writes: dict[str, list[Completed]] = defaultdict(list)
    for f, cs in ctx.by_f(history).items():
        if f in WRITE_FS:
            for c in cs:
                writes[c.workload].append(c)

    subjects: dict[str, dict[str, Any]] = {}
    unchecked: list[str] = []
    tot = {"count": 0, "acknowledged": 0, "unknown": 0, "unknown_applied": 0,
           "failed_but_present": 0, "unkeyed": 0}  # fmt: skip
    for workload, ws in writes.items():
        final = ctx.final_state.get(workload)
        if not final:
            unchecked.append(workload)
            continue
        nodes = sorted(final)
        node_maps = [(n, final[n]) for n in nodes]
        by_key = _LaterWrites(ws)
        per_node = {n: NodeLoss() for n in nodes}
        lost: list[dict[str, Any]] = []
        unknown_ops: list[dict[str, Any]] = []
        s = {"count": 0, "acknowledged": 0, "unknown": 0, "unknown_applied": 0,
             "failed_but_present": 0, "unkeyed": 0}  # fmt: skip
        for c in ws:
            if c.type == "ok":
                s["acknowledged"] += 1
                if c.key is None:
                    s["unkeyed"] += 1
                    continue
                missing_on: list[str] = []
                key, val = c.key, c.value
                for n, fmap in node_maps:
                    found = fmap.get(key, _MISSING)
                    if found is val or found == val:  # the common case, inline
                        continue
                    if not _present(c, found, by_key[key]):
                        missing_on.append(n)
                        nl = per_node[n]
                        nl.count += 1
                        if found is not _MISSING:
                            nl.value_mismatch += 1
                        if len(nl.keys) < MAX_LISTED:
                            nl.keys.append(c.key)
                if missing_on:
                    s["count"] += 1
                    if len(lost) < MAX_LISTED:
                        lost.append({
                            "key": c.key, "value": c.value, "missing_on": missing_on,
                            "acked_at": ((c.end or c.start) - t0) / NS,
                        })  # fmt: skip
            elif c.type == "info":
                s["unknown"] += 1
                applied = {
                    n: c.key is not None
                    and _present(c, final[n].get(c.key, _MISSING), by_key[c.key])
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
            elif c.key is not None and (c.error is None or c.error not in DUPLICATE_KEY_CODES):
                if any(same_value(final[n].get(c.key, _MISSING), c.value) for n in nodes):
                    s["failed_but_present"] += 1
        subj: dict[str, Any] = dict(s)
        subj["ratio"] = s["count"] / s["acknowledged"] if s["acknowledged"] else None
        subj["nodes"] = nodes
        subj["lost"] = lost
        subj["unknown_ops"] = unknown_ops
        subjects[workload] = subj
        for n, nl in per_node.items():
            subjects[f"{workload} on {n}"] = nl.as_json()
        for k in tot:
            tot[k] += s[k]

    metrics: dict[str, Any] = dict(tot)
    metrics["ratio"] = tot["count"] / tot["acknowledged"] if tot["acknowledged"] else None
    metrics["unchecked_workloads"] = unchecked
    metrics["subjects"] = subjects
    if not subjects:
        if not writes:
            return CheckResult(NAME, True, metrics, "no writes to check")
        return CheckResult(
            NAME, None, metrics, "no final state was read for: " + ", ".join(unchecked)
        )
    valid = tot["count"] == 0 and tot["failed_but_present"] == 0
    notes = [f"{tot['count']} acknowledged writes lost"] if tot["count"] else []
    if unchecked:
        notes.append("no final state for: " + ", ".join(unchecked))
    return CheckResult(NAME, valid, metrics, "; ".join(notes))
