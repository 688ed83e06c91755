"""facts: figures the engine measured directly (not from the history), passed through so that
they are stored with the other measurements and expectations can use them.

``ctx.facts[name][subject] = number | {stat: number}`` becomes ``subjects[subject][name]``
(e.g. ``facts["missing_transactions"]["db3"] = 0``, ``facts["relay_log_bytes"]["db3"] =
{"before": 1024, "after": 4096}``); a fact that is not per subject stays at the top level.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lab.history import Op
from lab.judge.checkers.base import CheckContext, CheckResult

NAME = "facts"
PER_SUBJECT = frozenset(
    {"missing_transactions", "relay_log_bytes", "applied_since_restart", "replication_errors"}
)

# facts with a checker of their own (lab.judge.checkers.errant_gtids, lab.judge.checkers.divergence)
OWN_CHECKER = frozenset({"errant_gtids", "errant_gtids_why", "errant_gtids_authority",
                         "divergence", "gtid_baseline"})


def check(history: Sequence[Op], ctx: CheckContext) -> CheckResult:
    subjects: dict[str, dict[str, Any]] = {}
    metrics: dict[str, Any] = {}
    for name, value in ctx.facts.items():
        if name in OWN_CHECKER:
            continue
        if name in PER_SUBJECT and isinstance(value, dict):
            for subject, v in value.items():
                subjects.setdefault(str(subject), {})[name] = v
        else:
            metrics[name] = value
    metrics["subjects"] = subjects
    return CheckResult(NAME, True, metrics)
