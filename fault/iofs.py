"""Stalled and failing I/O: ``io delay NODE 200ms [on reads|writes|fsyncs]``, ``io fail NODE
[on ...]`` (EIO) and ``io heal NODE [on ...]``. The node's data directory is on lab-iofs, the
lab's passthrough FUSE filesystem, since the topology started (``runners.iofs``); the fault
writes its control file, which the daemon reads at every operation: the next read, write or
fsync of the server waits, or fails.

The detail records what the daemon counted since the previous io action on that node
(``since_previous``: per class, operations, those delayed and those failed; ``delayed`` and
``failed``: their sums), so the ``io heal`` that ends a fault says how many operations it
stalled or failed, and the faults now in force.

Heal state: the nodes with a fault in force (healed: every class back to normal), the mapped
control files.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import cast

from dsl.models import IoFault
from fault.context import ActionFailed, Context, Detail, Handler, Needs
from runners import iofs
from runners.capabilities import IoFaults, Need, UnsyncedLoss
from runners.errors import ComponentError


@dataclass
class IoState:
    faulty: set[str] = field(default_factory=set)
    controls: dict[str, iofs.Control] = field(default_factory=dict)
    last: dict[str, iofs.Counts] = field(default_factory=dict)  # counts at the last io action


def control(ctx: Context, name: str) -> iofs.Control:
    st = ctx.state(IoState)
    got = st.controls.get(name)
    if got is not None:
        return got
    path = iofs.control_file(ctx.topo.run.dir, name)
    if not path.exists():
        raise ActionFailed(f"{name}'s data directory is not on lab-iofs: the topology mounts "
                           f"it when the experiment has `io delay {name} ...` or `io fail "
                           f"{name}`")
    got = st.controls[name] = iofs.Control(path)
    return got


def apply(faults: iofs.Faults, a: IoFault) -> iofs.Faults:
    """The faults after ``a``: the named classes (all three by default) delayed, failing or
    back to normal; the other classes as they were."""
    ops = iofs.OP_CLASSES if a.ops == "all" else (a.ops,)
    for op in ops:
        if a.verb == "delay":
            assert a.delay is not None
            faults = faults.delay(op, a.delay)
        elif a.verb == "fail":
            faults = faults.fail(op)
        else:
            faults = faults.heal(op)
    return faults


def io_fault(ctx: Context, a: IoFault) -> Detail:
    name = a.node.name
    ctl = control(ctx, name)
    st = ctx.state(IoState)
    faults = apply(ctl.faults, a)
    now = ctl.counts()
    since = now.minus(st.last.get(name, iofs.Counts()))
    ctl.set(faults)
    st.last[name] = now
    if faults.active:
        st.faulty.add(name)
    else:
        st.faulty.discard(name)
    return {"faults": faults.describe(), "since_previous": since.as_dict(),
            "delayed": sum(since.delayed), "failed": sum(since.failed)}


def heal(ctx: Context) -> list[str]:
    """Every node's reads, writes and fsyncs back to normal."""
    done: list[str] = []
    st = ctx.state(IoState)
    for name in sorted(st.faulty):
        with contextlib.suppress(ActionFailed, OSError, ValueError):
            control(ctx, name).set(iofs.Faults())
            done.append(f"io heal {name}")
    st.faulty.clear()
    return done


def drop_unsynced(ctx: Context, name: str) -> dict[str, int]:
    """``kill NODE losing unsynced writes``, once the server is dead: lab-iofs puts every file
    of its data directory back as of its last sync (``runners.iofs.drop_unsynced``); what it
    dropped, for the kill's value."""
    fs = cast(UnsyncedLoss, ctx.topo).iofs.get(name) if ctx.has(UnsyncedLoss) else None
    if not isinstance(fs, iofs.IoFs):
        raise ActionFailed(f"{name}'s data directory is not on lab-iofs: the topology mounts "
                           f"it when the experiment has `kill {name} losing unsynced writes`")
    try:
        return iofs.drop_unsynced(fs)
    except ComponentError as e:
        raise ActionFailed(f"{name}: dropping the unsynced writes: {e}") from e


HANDLERS: dict[type, Handler] = {IoFault: io_fault}
NEEDS: dict[type, Needs] = {IoFault: lambda a, _: [Need(IoFaults, f"io {a.verb}")]}
