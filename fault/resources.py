"""CPU starvation and memory pressure: ``cpu limit NODE to 20%`` / ``cpu heal NODE`` and
``memory limit NODE to 200M`` / ``memory heal NODE``, with cgroup v1 groups
(``runners.cgroups``) named for the run and the node.

A limit moves the node's server (its ``mariadbd`` pid, all threads) into the group and writes
the limit (on a back-end with ``ContainerLimits``, ``backend containers``, the container's own
cgroup takes it, through the engine's API); heal moves it back where it came from and removes the
group. A memory limit also
starts a watcher (``OomWatcher``) that polls the group every ``OOM_POLL`` seconds: when the
kernel's OOM killer kills in the group (``memory.oom_control``'s ``oom_kill`` grows) or the
server dies while limited, it records an ``oom_kill`` fault op in the history (``info`` for
a death without the kernel's count: the server died, cause unknown). A killed node is taken
as down (``ctx.down``) so that healing starts it again; a dbdeployer sandbox's mysqld_safe
restarts it by itself, outside the group (mysqld_safe was never moved).

Memory already charged when the limit starts stays charged where it was (kernels since 6.x no
longer move charges between v1 groups): the limit caps what the server allocates afterwards.

Heal state: the groups in force, per node and controller.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from dsl.models import CpuLimit, MemoryLimit
from fault.context import ActionFailed, Context, Detail, Handler, Needs
from runners import cgroups
from runners.capabilities import CgroupLimits, ContainerLimits, EngineLimit, Need, NodeLimit
from runners.errors import ComponentError
from runners.ops import NEMESIS, Op
from runners.runtime import alive

log = logging.getLogger(__name__)

OOM_POLL = 0.1  # seconds between two looks at a limited group
# a node's limit: a cgroup of this machine (``NodeGroup``), or a node container's own
Limit = NodeLimit


@dataclass
class ResourceState:
    groups: dict[tuple[str, str], Limit] = field(default_factory=dict)
    watchers: dict[str, OomWatcher] = field(default_factory=dict)
    left: dict[tuple[str, str], Limit] = field(default_factory=dict)  # for good
    # a node's cpu limit: when it started, and its CPU reading then (``cpu heal`` reports since)
    cpu_since: dict[str, tuple[float, cgroups.CpuUse]] = field(default_factory=dict)
    root: Path = cgroups.CGROUP_ROOT


class OomWatcher:
    """Records an ``oom_kill`` op when the kernel kills in a node's memory group, or the server
    dies while limited."""

    def __init__(self, ctx: Context, node: str, group: Limit, pid: int | None,
                 alive: Callable[[], bool] | None = None) -> None:
        self.ctx, self.node, self.group, self.pid = ctx, node, group, pid
        self.alive = alive  # a container's limit (``ContainerLimits``): its container runs
        self.seen = group.oom_kills()
        self.stop = threading.Event()
        self.kills = 0
        self.thread = threading.Thread(target=self._run, daemon=True, name=f"oom-{node}")

    def start(self) -> None:
        self.thread.start()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(2)

    def poll(self) -> bool:
        """One look; True when the server is gone (the watcher ends)."""
        count = self.group.oom_kills()
        if self.alive is not None:
            dead = not self.alive()
        else:
            dead = self.pid is None or not alive(self.pid)
        # A container's group counts the kernel's kill a moment before the container is seen
        # dead (its init exits after the server): that death is the same event, not another.
        same_event = self.alive is not None and self.kills > 0 and count <= self.seen
        if count > self.seen or (dead and not same_event):
            kernel = count > self.seen
            value = {"pid": self.pid, "kernel_oom_kills": count - self.seen,
                     "limit_bytes": self.group.limit, "usage_bytes": self.group.memory_usage()}
            t = time.monotonic_ns()
            self.ctx.record(Op("invoke", "oom_kill", NEMESIS, t, "nemesis", "", self.node))
            self.ctx.record(Op("ok" if kernel else "info", "oom_kill", NEMESIS, t, "nemesis",
                               "", self.node, value=value,
                               error_msg=None if kernel else "the server died while its "
                               "memory was limited; the kernel counted no OOM kill"))
            self.seen = count
            self.kills += 1
        if dead:
            self.ctx.down.add(self.node)
        return dead

    def _run(self) -> None:
        while not self.stop.wait(OOM_POLL):
            try:
                if self.poll():
                    return
            except Exception as e:  # noqa: BLE001 - a watcher never takes the run down
                log.warning("oom watcher of %s: %s", self.node, e)


def _server_pid(ctx: Context, name: str) -> int:
    pid = ctx.node(name).pid()
    if pid is None:
        raise ActionFailed(f"{name} is not running: there is no server to limit")
    return pid


def _group(ctx: Context, controller: str, name: str) -> Limit:
    st = ctx.state(ResourceState)
    if ctx.has(ContainerLimits):  # backend containers: the container's own cgroup
        if not ctx.node(name).is_running():
            raise ActionFailed(f"{name} is not running: there is no server to limit")
        limit = cast(ContainerLimits, ctx.topo).container_limit(name, controller)
        st.groups[(controller, name)] = limit
        return limit
    pid = _server_pid(ctx, name)
    old = st.groups.get((controller, name))
    if old is not None and old.pid == pid:
        return old
    try:
        group = cgroups.NodeGroup.make(controller, ctx.topo.run.id, name, pid, st.root)
    except cgroups.CgroupError as e:
        raise ActionFailed(f"{controller} limit {name}: {e} (cgroups need root)") from None
    if isinstance(old, cgroups.NodeGroup):  # the server was restarted since: keep where the
        group.origin = old.origin  # first came from
    st.groups[(controller, name)] = group
    return group


def cpu_limit(ctx: Context, a: CpuLimit) -> Detail:
    name = a.node.name
    st = ctx.state(ResourceState)
    if a.verb == "heal":
        group = st.groups.get(("cpu", name))
        since = st.cpu_since.pop(name, None)
        used = group.cpu_use() if group is not None and since is not None else None
        detail: dict[str, Any] = {"released": release(ctx, "cpu", name)}
        if used is not None and since is not None:
            detail.update(limited_seconds=round(time.monotonic() - since[0], 3),
                          **used.since(since[1]))
            if detail["cpu_seconds"] is not None and detail["throttled_periods"] is not None:
                detail["note"] = (f"{detail['cpu_seconds']:.2f} s of CPU in "
                                  f"{detail['limited_seconds']:.1f} s, throttled in "
                                  f"{detail['throttled_periods']} periods")
        return detail
    assert a.share is not None
    group = _group(ctx, "cpu", name)
    try:
        quota = group.set_cpu(a.share)
    except (cgroups.CgroupError, ComponentError) as e:
        raise ActionFailed(f"cpu limit {name}: {e}") from None
    st.cpu_since.setdefault(name, (time.monotonic(), group.cpu_use()))
    return {"cgroup": str(group.path), "pid": group.pid, "quota_us": quota,
            "period_us": cgroups.CFS_PERIOD_US, "share": a.share}


def memory_limit(ctx: Context, a: MemoryLimit) -> Detail:
    name = a.node.name
    st = ctx.state(ResourceState)
    if a.verb == "heal":
        watcher = st.watchers.pop(name, None)
        if watcher is not None:
            watcher.close()
        return {"released": release(ctx, "memory", name)}
    assert a.limit is not None
    group = _group(ctx, "memory", name)
    try:
        detail = group.set_memory(a.limit)
    except (cgroups.CgroupError, ComponentError) as e:
        usage = group.memory_usage()
        raise ActionFailed(f"memory limit {name}: {e}; the group holds {usage} bytes the "
                           "kernel could not reclaim below the limit") from None
    alive = cast(EngineLimit, group).alive if ctx.has(ContainerLimits) else None
    if name not in st.watchers and (group.pid is not None or alive is not None):
        watcher = OomWatcher(ctx, name, group, group.pid, alive)
        st.watchers[name] = watcher
        watcher.start()
    return {"cgroup": str(group.path), "pid": group.pid, **detail}


def release(ctx: Context, controller: str, name: str) -> bool:
    """Move the node's server back and remove its group; False when it had none."""
    group = ctx.state(ResourceState).groups.pop((controller, name), None)
    if group is None:
        return False
    try:
        group.release()
    except ComponentError as e:
        raise ActionFailed(f"{controller} heal {name}: {e.message}") from None
    return True


def heal(ctx: Context) -> list[str]:
    """Lift every cpu and memory limit still in force and remove the groups (also called
    from the cell's teardown: ``release_all``)."""
    st = ctx.state(ResourceState)
    for watcher in st.watchers.values():
        watcher.close()
    st.watchers.clear()
    st.cpu_since.clear()
    done: list[str] = []
    for controller, name in sorted(st.groups):
        with contextlib.suppress(Exception):
            release(ctx, controller, name)
            done.append(f"{controller} heal {name}")
    return done


HANDLERS: dict[type, Handler] = {CpuLimit: cpu_limit, MemoryLimit: memory_limit}
NEEDS: dict[type, Needs] = {
    CpuLimit: lambda a, _: [Need(CgroupLimits, f"cpu {a.verb}")],
    MemoryLimit: lambda a, _: [Need(CgroupLimits, f"memory {a.verb}")],
}
