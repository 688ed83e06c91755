"""Disk faults: ``disk full NODE`` takes every free byte of the filesystem of the node's data
directory (its tables, redo, binary and relay logs), so the server's next write that needs
space fails with ENOSPC; ``disk free NODE`` gives the space back. The filesystem is a tmpfs
of limited size the topology mounted for that node when it started (``runners.disk``).

Heal state: the nodes whose disk is full (freed when healing, before stopped nodes start).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from dsl.models import DiskFault
from fault.context import ActionFailed, Context, Detail, Handler
from runners import disk


@dataclass
class DiskState:
    full: set[str] = field(default_factory=set)


def disk_fault(ctx: Context, a: DiskFault) -> Detail:
    name = a.node.name
    path = ctx.node(name).datadir
    if not os.path.ismount(path):
        raise ActionFailed(f"the data directory of {name} is not on a tmpfs of its own "
                           f"({path}): the topology mounts one when the experiment has "
                           f"`disk full {name}`")
    st = ctx.state(DiskState)
    if a.verb == "full":
        taken = disk.fill(path)
        st.full.add(name)
        return {"filled_bytes": taken, "free_bytes": disk.available(path)}
    freed = disk.free(path)
    st.full.discard(name)
    return {"freed_bytes": freed, "free_bytes": disk.available(path)}


def heal(ctx: Context) -> list[str]:
    """Free every full disk."""
    done: list[str] = []
    st = ctx.state(DiskState)
    for name in sorted(st.full):
        disk.free(ctx.node(name).datadir)
        done.append(f"disk free {name}")
    st.full.clear()
    return done


HANDLERS: dict[type, Handler] = {DiskFault: disk_fault}
