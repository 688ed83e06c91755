"""Process faults: kill, pause/resume, stop/start/restart, cold restart.

Heal state: the paused nodes (resumed first when healing) and ``ctx.down`` (started again
last, a former primary rejoining the current one as a replica).
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from dsl.models import NodeAction
from fault import replication
from fault.cache import evict_files
from fault.context import ActionFailed, Context, Detail, Handler
from runners import settings_in_force

log = logging.getLogger(__name__)

GOES_DOWN = frozenset({"kill", "stop", "restart", "cold_restart"})  # the node stops answering
COMES_UP = frozenset({"start", "restart", "cold_restart"})  # the node starts again


@dataclass
class ProcessState:
    paused: set[str] = field(default_factory=set)
    left_paused: set[str] = field(default_factory=set)  # ``pause NODE for good``


def node_action(ctx: Context, a: NodeAction) -> Detail:
    """The topology's process primitives (``Topology.kill`` ...), remembered for healing."""
    topo, name = ctx.topo, a.node.name
    verb = a.verb
    opts = dict(a.options)
    paused = ctx.state(ProcessState).paused
    if verb == "kill":
        topo.kill(name)
        ctx.down.add(name)
    elif verb == "pause":
        topo.pause(name)
        paused.add(name)
    elif verb == "resume":
        topo.resume(name)
        paused.discard(name)
        ctx.state(ProcessState).left_paused.discard(name)
    elif verb == "stop":
        topo.stop(name)
        ctx.down.add(name)
    elif verb in ("start", "restart"):
        t0 = time.monotonic()
        if verb == "start":
            topo.start(name, opts)
        else:
            topo.restart(name, opts)
        ctx.down.discard(name)
        ctx.left_down.discard(name)
        ready = round(time.monotonic() - t0, 3)
        _options_in_force(ctx, verb, name, opts)
        out: dict[str, Any] = {"ready_seconds": ready, "options": opts}
        if replication.was_primary(ctx, name):
            out["rejoined_as_replica_of"] = replication.rejoin(ctx, name)
        return out
    elif verb == "cold_restart":
        # The buffer pool is not reloaded and the node's files are evicted from the cache.
        dirs = ctx.node(name).cache_dirs()  # before the stop: a node it cannot cool stays up
        topo.stop(name)
        evicted = sum(evict_files(d) for d in dirs)
        opts.setdefault("innodb_buffer_pool_load_at_startup", "OFF")
        t0 = time.monotonic()
        topo.start(name, opts)
        ready = round(time.monotonic() - t0, 3)
        _options_in_force(ctx, "cold restart", name, dict(a.options))
        return {"evicted_bytes": evicted, "ready_seconds": ready}
    return {"pid": ctx.node(name).pid()}


def _options_in_force(ctx: Context, verb: str, name: str, opts: dict[str, str]) -> None:
    """The settings of ``start … with`` are the server's now (``runners.settings_in_force``):
    a value it changed fails the action."""
    if not opts or ctx.topo.plan.topology == "mongodb_replset":
        return
    wrong = settings_in_force.changed(ctx.node(name), settings_in_force.file_settings(opts, {}))
    if wrong:
        raise ActionFailed(f"{verb} {name} with: the server changed what the file gave it: "
                           + "; ".join(wrong))


def heal_paused(ctx: Context) -> list[str]:
    """Resume every paused node."""
    done: list[str] = []
    st = ctx.state(ProcessState)
    for name in sorted(st.paused):
        with contextlib.suppress(Exception):
            ctx.topo.resume(name)
            done.append(f"resume {name}")
    st.paused.clear()
    return done


def heal_down(ctx: Context) -> list[str]:
    """Start every node the faults took down; a former primary rejoins as a replica."""
    done: list[str] = []
    for name in sorted(ctx.down - ctx.left_down):  # a node down `for good` stays down
        try:
            ctx.topo.start(name)
            done.append(f"start {name}")
            if replication.was_primary(ctx, name):
                replication.rejoin(ctx, name)
                done.append(f"rejoin {name} as a replica")
        except Exception as e:  # noqa: BLE001
            log.warning("could not restart %s while healing: %s", name, e)
    ctx.down &= ctx.left_down
    return done


HANDLERS: dict[type, Handler] = {NodeAction: node_action}
