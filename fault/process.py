"""Process faults: kill, pause/resume, stop/start/restart, cold restart.

Heal state: the paused nodes (resumed first when healing) and ``ctx.down`` (started again
last, a former primary rejoining the current one as a replica).
"""

from __future__ import annotations

import contextlib
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from dsl.actions import ROUTER_PROCESS, spread
from dsl.models import NodeAction, NodeGroupAction, NodeRef
from fault import replication
from fault.cache import evict_files, in_memory_note
from fault.context import ActionFailed, Context, Detail, Handler, Needs
from runners import settings_in_force
from runners.capabilities import (
    GroupRecovery,
    Need,
    PageCache,
    Pause,
    Process,
    RouterProcess,
    UnsyncedLoss,
)
from runners.galera_recovery import recover_cluster

log = logging.getLogger(__name__)

GOES_DOWN = frozenset({"kill", "stop", "restart", "cold_restart"})  # the node stops answering
COMES_UP = frozenset({"start", "restart", "cold_restart"})  # the node starts again


@dataclass
class ProcessState:
    paused: set[str] = field(default_factory=set)
    left_paused: set[str] = field(default_factory=set)  # ``pause NODE for good``


@dataclass
class RouterState:
    """The router's own process, as ``kill router`` ... left it."""

    paused: bool = False
    down: bool = False


class OwnProcess(Protocol):
    """A router whose own process the faults address (ProxySQL's)."""

    proc: Any
    start_crashes: list[str]  # the last start_process's attempts a signal ended

    def kill_process(self) -> None: ...
    def pause_process(self) -> None: ...
    def resume_process(self) -> None: ...
    def stop_process(self) -> None: ...
    def start_process(self) -> float: ...


def _router(ctx: Context) -> OwnProcess:
    """The router, when its back-end can fault its own process (``RouterProcess``) and it is
    ProxySQL (``lab check`` refuses the rest)."""
    planned = ctx.topo.plan.router
    if ctx.topo.router is None or not ctx.has(RouterProcess) or planned is None \
            or planned.kind != "proxysql":
        raise ActionFailed("this router's own process cannot be faulted (router proxysql "
                           "can, natively)")
    return cast(OwnProcess, ctx.topo.router)


def router_action(ctx: Context, a: NodeAction) -> Detail:
    """``kill router``, ``pause router`` ...: ProxySQL's own process (``dsl.actions.
    ROUTER_VERBS``). A start reads the configuration it saved in its datadir."""
    router, st = _router(ctx), ctx.state(RouterState)
    verb = a.verb
    if verb == "kill":
        router.kill_process()
        st.down, st.paused = True, False
    elif verb == "pause":
        router.pause_process()
        st.paused = True
    elif verb == "resume":
        router.resume_process()
        st.paused = False
    elif verb == "stop":
        router.stop_process()
        st.down, st.paused = True, False
    elif verb in ("start", "restart"):
        if verb == "restart":
            router.stop_process()
        ready = router.start_process()
        st.down, st.paused = False, False
        ctx.left_down.discard(ROUTER_PROCESS)
        detail: dict[str, Any] = {"ready_seconds": round(ready, 3)}
        crashes = list(router.start_crashes)
        if crashes:  # it died while starting and was started again (start_process)
            detail.update(start_crashes=crashes, note=f"crashed while starting: {crashes[0]}; "
                          "started again")
        return detail
    else:
        raise ActionFailed(f"{verb} router: not a router fault")
    return {"pid": router.proc.pid if router.proc is not None else None}


def heal_router(ctx: Context) -> list[str]:
    """The router's process resumed, or started again (unless down ``for good``)."""
    st = ctx.state(RouterState)
    done: list[str] = []
    try:
        if st.paused and ROUTER_PROCESS not in ctx.state(ProcessState).left_paused:
            _router(ctx).resume_process()
            st.paused = False
            done.append("resume router")
        if st.down and ROUTER_PROCESS not in ctx.left_down:
            _router(ctx).start_process()
            st.down = False
            done.append("start router")
    except Exception as e:  # noqa: BLE001
        log.warning("could not bring the router back while healing: %s", e)
    return done


def node_action(ctx: Context, a: NodeAction) -> Detail:
    """The topology's process primitives (``Topology.kill`` ...), remembered for healing."""
    if a.node.name == ROUTER_PROCESS:
        return router_action(ctx, a)
    topo, name = ctx.topo, a.node.name
    verb = a.verb
    opts = dict(a.options)
    paused = ctx.state(ProcessState).paused
    if verb == "kill":
        topo.kill(name)
        ctx.down.add(name)
        if a.lose_unsynced:
            return {"pid": None, "unsynced": drop_unsynced(ctx, name)}
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
    elif verb == "start" and galera_all_down(ctx):
        return recover_galera(ctx, [name])
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
        return {"evicted_bytes": evicted, "ready_seconds": ready,
                **in_memory_note(name, list(dirs))}
    retries = ctx.node(name).pause_retries if verb == "pause" else []
    if retries:  # the engine's freeze failed and was made once more (ContainerNode.pause)
        return {"pid": ctx.node(name).pid(), "pause_retries": retries,
                "note": f"the engine's pause failed once ({retries[0][:160]}); paused again"}
    return {"pid": ctx.node(name).pid()}


def drop_unsynced(ctx: Context, name: str) -> dict[str, Any]:
    """``kill NODE losing unsynced writes``: lab-iofs throws away what the killed server had
    written and not synced (``fault.iofs.drop_unsynced``)."""
    from fault import iofs

    return dict(iofs.drop_unsynced(ctx, name))


def galera_all_down(ctx: Context) -> bool:
    """A Galera cluster none of whose nodes runs: starting a node means recovering the
    cluster (``runners.galera_recovery``), not joining a primary component."""
    if ctx.topo.plan.topology != "galera":
        return False
    return not any(n.is_running() for n in ctx.topo.nodes.values())


def recover_galera(ctx: Context, names: list[str]) -> dict[str, Any]:
    """Positions recovered, the most advanced of ``names`` bootstrapped, the others joined;
    each phase a fault of its own in the history (``runners.galera_recovery``)."""
    if not ctx.has(GroupRecovery):
        raise ActionFailed("recovering a whole Galera cluster (--wsrep-recover, bootstrap) "
                           "is not declared by this back-end")
    detail = recover_cluster([ctx.node(n) for n in names], ctx.fault)
    for n in names:
        ctx.down.discard(n)
        ctx.left_down.discard(n)
    return detail


def group_action(ctx: Context, a: NodeGroupAction) -> Detail:
    """``kill g1, g2, g3 within 2s [losing unsynced writes]``: each node killed at its moment
    of the window (``dsl.actions.spread`` from the run's seed; nodes of one moment at once,
    side by side), each kill a fault of its own in the history. ``start g1, g2, g3``: a
    Galera cluster none of whose nodes runs is recovered (``recover_galera``); otherwise each
    node starts in turn (a replication topology's primary first), each start in the history."""
    names = [r.name for r in a.nodes]
    if a.verb == "start":
        if galera_all_down(ctx):
            return recover_galera(ctx, names)
        primary = ctx.topo.primary
        order = sorted(names, key=lambda n: n != primary)
        starts: dict[str, Any] = {}
        for name in order:
            with ctx.fault("start", name) as d:
                d.update(node_action(ctx, NodeAction(verb="start", node=NodeRef(name=name)))
                         or {})
                starts[name] = d.get("ready_seconds")
        return {"nodes": order, "ready_seconds": starts}
    seed = ctx.topo.plan.seed
    moments = spread(seed, names, a.within)
    t0 = time.monotonic()
    unsynced: dict[str, Any] = {}

    def kill_one(name: str) -> None:
        with ctx.fault("kill", name):
            ctx.topo.kill(name)
            ctx.down.add(name)

    def drop_one(name: str) -> None:  # once every node is dead: a drop waits 1 s
        with ctx.fault("drop_unsynced", name) as d:
            d.update(drop_unsynced(ctx, name))
            unsynced[name] = dict(d)
            d["note"] = f"{d['restored_files']} files put back, {d['old_bytes']} bytes " \
                        f"rewritten, {d['cut_bytes']} cut"

    batches: dict[float, list[str]] = {}
    for name, at in moments:
        batches.setdefault(at, []).append(name)
    for at, batch in sorted(batches.items()):
        wait = t0 + at - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        with ThreadPoolExecutor(len(batch)) as pool:
            for f in [pool.submit(kill_one, n) for n in batch]:
                f.result()
    if a.lose_unsynced:  # after the last kill, so that no drop delays a kill
        with ThreadPoolExecutor(len(names)) as pool:
            for f in [pool.submit(drop_one, n) for n in names]:
                f.result()
    out: dict[str, Any] = {"nodes": names, "within": a.within,
                           "moments": {n: at for n, at in moments}}
    if a.lose_unsynced:
        out["unsynced"] = unsynced
    return out


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
    healing = sorted(ctx.down - ctx.left_down)  # a node down `for good` stays down
    if healing and galera_all_down(ctx):
        try:
            detail = recover_galera(ctx, healing)
            return [f"recover the Galera cluster: {detail['note']}"]
        except Exception as e:  # noqa: BLE001
            log.warning("could not recover the Galera cluster while healing: %s", e)
            return [f"recover the Galera cluster: failed ({e})"]
    for name in healing:
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


def needs(a: NodeAction | NodeGroupAction, topology: str) -> list[Need]:
    """What a process action needs of the back-end: its process primitives (``Pause`` for
    pause and resume), the page cache for a cold restart, lab-iofs for a kill losing
    unsynced writes, the whole-cluster recovery for several Galera nodes at once, ProxySQL's
    own process for ``kill router`` ... (the first one a back-end lacks is what ``lab check``
    says)."""
    verb = a.verb.replace("_", " ")
    if isinstance(a, NodeAction) and a.node.name == ROUTER_PROCESS:
        return [Need(RouterProcess, f"{verb} router")]
    out = [Need(Pause if a.verb in ("pause", "resume") else Process, verb)]
    if a.verb == "cold_restart":
        out.append(Need(PageCache, "cold restart"))
    if a.lose_unsynced:
        out.insert(0, Need(UnsyncedLoss, "a kill losing unsynced writes"))
    if isinstance(a, NodeGroupAction) and topology == "galera":
        out.append(Need(GroupRecovery, f"{verb} of several Galera nodes at once"))
    return out


HANDLERS: dict[type, Handler] = {NodeAction: node_action, NodeGroupAction: group_action}
NEEDS: dict[type, Needs] = {NodeAction: needs, NodeGroupAction: needs}
