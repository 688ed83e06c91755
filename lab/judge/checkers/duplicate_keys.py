"""duplicate_keys: duplicate-key errors (MySQL/MariaDB 1062, MongoDB 11000) per workload and
node, with the keys (the first ``MAX_KEYS`` of each subject). ``ratio`` = duplicate-key errors /
write and insert operations (``attempts``)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lab.history import DUPLICATE_KEY_CODES, WRITE_FS, Op
from lab.judge.checkers.base import CheckContext, CheckResult

NAME = "duplicate_keys"
MAX_KEYS = 100


@dataclass(slots=True)
class Dups:
    count: int = 0
    attempts: int = 0  # write/insert operations
    keys: list[Any] = field(default_factory=list)
    codes: dict[str, int] = field(default_factory=dict)

    def add(self, key: Any, code: int) -> None:
        self.count += 1
        if len(self.keys) < MAX_KEYS:
            self.keys.append(key)
        c = str(code)
        self.codes[c] = self.codes.get(c, 0) + 1

    def as_json(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "attempts": self.attempts,
            "ratio": self.count / self.attempts if self.attempts else None,
            "by_code": dict(self.codes),
            "keys": list(self.keys),
            "keys_truncated": self.count > len(self.keys),
        }


def check(history: Sequence[Op], ctx: CheckContext) -> CheckResult:
    per_workload: dict[str, Dups] = defaultdict(Dups)
    per_node: dict[tuple[str, str], Dups] = {}
    col = ctx.columns(history)
    writes = col.f_positions(WRITE_FS)
    dup = writes[np.isin(col.error[writes], col.codes(DUPLICATE_KEY_CODES))]
    for (wc, ec), g in col.groups(col.workload, col.where, sel=writes):
        per_node[(col.name(wc), col.name(ec))] = Dups(attempts=len(g))
    # in the order of the writes (``by_f``'s): the keys listed are the first ones
    for w, e, key, code in zip(col.workload[dup].tolist(), col.where[dup].tolist(),
                               col.keys(dup), col.errors(dup), strict=True):
        assert code is not None
        per_workload[col.name(w)].add(key, code)
        per_node[(col.name(w), col.name(e))].add(key, code)
    for (w, _), nd in per_node.items():
        per_workload[w].attempts += nd.attempts
    subjects: dict[str, dict[str, Any]] = {}
    for w, d in per_workload.items():
        subjects[w] = d.as_json()
    for (w, node), d in sorted(per_node.items()):
        subjects[f"{w} on {node}"] = d.as_json()
    # workloads that could see duplicates but saw none still get a row (count 0)
    for name, info in ctx.workloads.items():
        if info.kind in ("unique_insert", "unique_writes") and name not in subjects:
            subjects[name] = Dups().as_json()
    total = sum(d.count for d in per_workload.values())
    return CheckResult(
        NAME,
        total == 0,
        {"count": total, "subjects": subjects},
        f"{total} duplicate-key errors" if total else "",
    )
