"""Waits: ``wait until [NODE] CONDITION [timeout D]`` (caught_up, downloaded, synced,
primary_elected, up, down; a timeout fails the run) and ``wait D``.

Nothing to heal.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

from dsl.models import Sleep, WaitUntil
from fault import mongo, replication
from fault.context import ActionFailed, Context, Detail, Handler
from runners import replication as repl
from runners.errors import ComponentError
from runners.mysql import wait_until as poll
from runners.node import Node


def answers(ctx: Context, name: str) -> bool:
    """The server answers (SQL ``SELECT 1``; a MongoDB member: ``ping``)."""
    node = ctx.node(name)
    ping = getattr(node, "ping", None)
    try:
        if ping is not None:  # a MongoDB member
            return bool(ping())
        return bool(node.scalar("SELECT 1", timeout=1) == 1)
    except Exception:  # noqa: BLE001
        return False


def primary_elected(ctx: Context) -> bool:
    """The router has a writer up, or (without a router) some node is writable."""
    if ctx.topo.router is not None:
        return bool(ctx.topo.router.up_servers("writer"))
    for n in ctx.topo.nodes.values():
        with contextlib.suppress(Exception):
            if int(n.scalar("SELECT @@read_only", timeout=1)) == 0:
                return True
    return False


def _mongo_check(ctx: Context, cond: str, name: str | None) -> Callable[[], bool]:
    topo = ctx.topo
    checks: dict[str, Callable[[], bool]] = {
        "primary_elected": lambda: mongo.primary_elected(topo),
        "caught_up": lambda: all(mongo.caught_up(topo, n) for n in (
            [name] if name else list(topo.nodes))),
        "up": lambda: name is not None and answers(ctx, name),
        "down": lambda: name is not None and not answers(ctx, name),
    }
    if cond not in checks:
        raise ActionFailed(f"wait until {cond} does not apply to a MongoDB replica set")
    return checks[cond]


def _check(ctx: Context, cond: str, name: str | None) -> Callable[[], bool]:
    topo = ctx.topo
    if topo.plan.topology == "mongodb_replset":
        return _mongo_check(ctx, cond, name)
    if cond == "caught_up":
        names = [name] if name else [n for n in topo.nodes if n != topo.primary]
        return lambda: all(replication.caught_up(ctx, n) for n in names)
    if cond == "downloaded":
        assert name is not None
        return lambda: replication.downloaded(ctx, name)
    if cond == "synced":
        synced = [name] if name else list(topo.nodes)

        def others(n: str) -> list[Node]:
            return [ctx.node(o) for o in topo.nodes if o != n and o not in ctx.down]

        return lambda: all(repl.synced_in_cluster(ctx.node(n), others(n)) for n in synced)
    if cond == "primary_elected":
        return lambda: primary_elected(ctx)
    assert name is not None
    if cond == "up":
        return lambda: bool(ctx.node(name).scalar("SELECT 1", timeout=1) == 1)
    return lambda: not answers(ctx, name)  # down


def wait_until(ctx: Context, a: WaitUntil) -> Detail:
    cond = a.condition
    name = a.node.name if a.node else None
    check = _check(ctx, cond, name)
    try:
        waited = poll(check, a.timeout, cond.replace("_", " "),
                      f"wait until {name or 'all'} {cond}", interval=0.02)
    except ComponentError as e:
        raise ActionFailed(f"wait until {name or ''} {cond}: not reached within "
                           f"{a.timeout:g}s ({e.message})") from None
    return {"waited_seconds": round(waited, 3)}


def sleep(ctx: Context, a: Sleep) -> Detail:
    time.sleep(a.seconds)
    return None


HANDLERS: dict[type, Handler] = {WaitUntil: wait_until, Sleep: sleep}
