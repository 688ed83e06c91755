"""Disk faults: ``disk full NODE`` takes every free byte of the filesystem of the node's data
directory (its tables, redo, binary and relay logs), so the server's next write that needs
space fails with ENOSPC; ``disk free NODE`` gives the space back. ``disk full NODE binlog``
(``disk free NODE binlog``) does the same to the filesystem of the node's binary logs alone.
Each filesystem is a tmpfs of limited size the topology mounted for that node when it started
(``runners.disk``).

Heal state: the (node, target) pairs whose disk is full (freed when healing, before stopped
nodes start).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from dsl.models import DiskFault
from fault.context import ActionFailed, Context, Detail, Handler, Needs
from runners import disk
from runners.capabilities import Disk, Need


@dataclass
class DiskState:
    full: set[tuple[str, str]] = field(default_factory=set)  # (node, "datadir" | "binlog")


def _path(ctx: Context, name: str, target: str) -> Path:
    return ctx.node(name).tmpfs_dir(target)


def disk_fault(ctx: Context, a: DiskFault) -> Detail:
    name = a.node.name
    path = _path(ctx, name, a.target)
    if not os.path.ismount(path):
        what, words = ("binary logs", " binlog") if a.target == "binlog" else \
            ("data directory", "")
        raise ActionFailed(f"the {what} of {name} is not on a tmpfs of its own "
                           f"({path}): the topology mounts one when the experiment has "
                           f"`disk full {name}{words}`")
    st = ctx.state(DiskState)
    if a.verb == "full":
        taken = disk.fill(path)
        st.full.add((name, a.target))
        return {"filled_bytes": taken, "free_bytes": disk.available(path), "path": str(path)}
    freed = disk.free(path)
    st.full.discard((name, a.target))
    return {"freed_bytes": freed, "free_bytes": disk.available(path), "path": str(path)}


def heal(ctx: Context) -> list[str]:
    """Free every full disk."""
    done: list[str] = []
    st = ctx.state(DiskState)
    for name, target in sorted(st.full):
        disk.free(_path(ctx, name, target))
        done.append(f"disk free {name}" + (" binlog" if target == "binlog" else ""))
    st.full.clear()
    return done


HANDLERS: dict[type, Handler] = {DiskFault: disk_fault}
NEEDS: dict[type, Needs] = {DiskFault: lambda a, _: [Need(Disk, f"disk {a.verb}")]}
