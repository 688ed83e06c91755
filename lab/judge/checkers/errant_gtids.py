"""errant_gtids: transactions a node has that the current primary lacks, after settling.

The engine reads them (``lab.run.cell_facts.read_errant_gtids``, ``runners.errant_gtids``):
``ctx.facts["errant_gtids"][node] = {"count", "at_least", "gtids", "by_source", "ahead",
"error"}`` for every running node but the authority (the primary after settling), and
``ctx.facts["errant_gtids_why"]`` when they were not measured (not a replication topology, the
primary down at the end). Per node (``subjects``): ``count`` (None: unknown, the binary logs
could not be read; ``at_least`` then says how many (domain, server_id) pairs are ahead),
``gtids`` (the first 100, ``domain-server_id-seq_no``), ``by_source``. Over every node:
``count`` (None when one node's is unknown), ``nodes`` (the nodes with errant transactions),
``authority``. Valid when no node has any.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lab.history import Op
from lab.judge.checkers.base import CheckContext, CheckResult

NAME = "errant_gtids"


def check(history: Sequence[Op], ctx: CheckContext) -> CheckResult:
    found = ctx.facts.get("errant_gtids")
    if not isinstance(found, dict):
        why = str(ctx.facts.get("errant_gtids_why") or "errant GTIDs were not read")
        return CheckResult(NAME, None, {"count": None, "why": why, "subjects": {}}, why)
    subjects: dict[str, dict[str, Any]] = {}
    total: int | None = 0
    with_errant: list[str] = []
    for node, rep in sorted(found.items()):
        if not isinstance(rep, dict):
            continue
        subjects[str(node)] = dict(rep)
        c = rep.get("count")
        if isinstance(c, int) and not isinstance(c, bool):
            if total is not None:
                total += c
            if c:
                with_errant.append(str(node))
        else:
            total = None
            if rep.get("at_least"):
                with_errant.append(str(node))
    metrics: dict[str, Any] = {"count": total, "nodes": with_errant,
                               "authority": ctx.facts.get("errant_gtids_authority"),
                               "subjects": subjects}
    if total is None:
        details = "errant GTIDs could not be counted on: " + ", ".join(
            n for n, r in subjects.items() if not isinstance(r.get("count"), int))
        return CheckResult(NAME, None if not with_errant else False, metrics, details)
    notes = [f"{n}: {subjects[n]['count']} errant ({', '.join(subjects[n].get('gtids', [])[:3])}"
             f"{' ...' if subjects[n]['count'] > 3 else ''})" for n in with_errant]
    return CheckResult(NAME, total == 0, metrics, "; ".join(notes))
