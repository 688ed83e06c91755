"""Faults ("nemeses") and the other actions of an experiment, one file per family.

``HANDLERS`` maps each action model (``dsl.models``) to its handler, ``handler(ctx, action) ->
detail``; ``HEALERS`` is the one heal registry: each family's heal, in the order healing runs
(resume paused nodes, heal the network, free full disks, lift cpu and memory limits, set
skewed clocks back, I/O back to normal, start the nodes that are down, start replication).
Each family keeps what it must undo in its own state (``ctx.state(...)``). ``fault.nemesis.
Nemesis`` applies actions and records each one in the history.

``NEEDS`` maps each action model to what it needs of the back-end (``needs(action,
topology)``: ``runners.capabilities.Need``s); ``lab check`` refuses an action whose back-end
lacks one (``dsl.backends``).

A new fault family is one file here (its handlers, its state, its heal, its needs) plus its
grammar rule, model, row in ``dsl.actions`` and docs (docs/faults.md: adding a fault family).
"""

from __future__ import annotations

from fault import (
    cache,
    clock,
    disk,
    iofs,
    mongo,
    network,
    process,
    replication,
    resources,
    sql,
    waits,
)
from fault.context import ActionFailed, Context, Detail, Handler, Healer, Needs
from runners.capabilities import Need

HANDLERS: dict[type, Handler] = {
    **process.HANDLERS,
    **cache.HANDLERS,
    **replication.HANDLERS,
    **network.HANDLERS,
    **disk.HANDLERS,
    **resources.HANDLERS,
    **clock.HANDLERS,
    **iofs.HANDLERS,
    **waits.HANDLERS,
    **sql.HANDLERS,
    **mongo.HANDLERS,
}

NEEDS: dict[type, Needs] = {
    **process.NEEDS,
    **cache.NEEDS,
    **replication.NEEDS,
    **network.NEEDS,
    **disk.NEEDS,
    **resources.NEEDS,
    **clock.NEEDS,
    **iofs.NEEDS,
    **waits.NEEDS,
    **sql.NEEDS,
    **mongo.NEEDS,
}


def needs(action: object, topology: str) -> list[Need]:
    """What ``action`` needs of the back-end on a ``topology`` (``NEEDS``; none: SQL on the
    servers, which every back-end runs)."""
    got = NEEDS.get(type(action))
    return got(action, topology) if got is not None else []


HEALERS: list[tuple[str, Healer]] = [
    ("process: resume paused nodes", process.heal_paused),
    ("network: heal links and partitions", network.heal),
    ("disk: free full disks", disk.heal),
    ("resources: lift cpu and memory limits", resources.heal),
    ("clock: set skewed clocks back", clock.heal),
    ("io: stalled and failing I/O back to normal", iofs.heal),
    ("process: start nodes that are down", process.heal_down),
    ("process: the router's own process back", process.heal_router),
    ("replication: start stopped replication", replication.heal),
]

__all__ = ["HANDLERS", "HEALERS", "NEEDS", "ActionFailed", "Context", "Detail", "Handler",
           "Healer", "Needs", "needs"]
