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
from fault.context import Context, Detail

log = logging.getLogger(__name__)

GOES_DOWN = frozenset({"kill", "stop", "restart", "cold_restart"})  # the node stops answering
COMES_UP = frozenset({"start", "restart", "cold_restart"})  # the node starts again


@dataclass
class ProcessState:
    paused: set[str] = field(default_factory=set)


def node_action(ctx: Context, a: NodeAction) -> Detail:
    n = ctx.node(a.node.name)
    verb = a.verb
    opts = dict(a.options)
    paused = ctx.state(ProcessState).paused
    if verb == "kill":
        n.kill()
        ctx.down.add(n.name)
    elif verb == "pause":
        n.pause()
        paused.add(n.name)
    elif verb == "resume":
        n.resume()
        paused.discard(n.name)
    elif verb == "stop":
        n.stop()
        ctx.down.add(n.name)
    elif verb in ("start", "restart"):
        t0 = time.monotonic()
        if verb == "start":
            n.start(opts)
        else:
            n.restart(opts)
        ctx.down.discard(n.name)
        out: dict[str, Any] = {"ready_seconds": round(time.monotonic() - t0, 3),
                               "options": opts}
        if replication.was_primary(ctx, n.name):
            out["rejoined_as_replica_of"] = replication.rejoin(ctx, n.name)
        return out
    elif verb == "cold_restart":
        # The buffer pool is not reloaded and the node's files are evicted from the cache.
        n.stop()
        evicted = evict_files(n.datadir)
        opts.setdefault("innodb_buffer_pool_load_at_startup", "OFF")
        t0 = time.monotonic()
        n.start(opts)
        return {"evicted_bytes": evicted, "ready_seconds": round(time.monotonic() - t0, 3)}
    return {"pid": n.pid()}


def heal_paused(ctx: Context) -> list[str]:
    """Resume every paused node."""
    done: list[str] = []
    st = ctx.state(ProcessState)
    for name in sorted(st.paused):
        with contextlib.suppress(Exception):
            ctx.node(name).resume()
            done.append(f"resume {name}")
    st.paused.clear()
    return done


def heal_down(ctx: Context) -> list[str]:
    """Start every node the faults took down; a former primary rejoins as a replica."""
    done: list[str] = []
    for name in sorted(ctx.down):
        try:
            ctx.node(name).start()
            done.append(f"start {name}")
            if replication.was_primary(ctx, name):
                replication.rejoin(ctx, name)
                done.append(f"rejoin {name} as a replica")
        except Exception as e:  # noqa: BLE001
            log.warning("could not restart %s while healing: %s", name, e)
    ctx.down.clear()
    return done


HANDLERS = {NodeAction: node_action}
