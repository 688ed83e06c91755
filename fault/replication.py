"""Replication faults: stop/start a replica's threads (``stop replication``: the relay-log
lessons), promote a replica to primary, and a former primary rejoining as a replica.

Heal state: the replicas whose threads were stopped (started again when healing) and the
former primaries (a former primary that starts again rejoins the current primary as a
read-only replica). Statements come from ``runners.replication``.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import cast

from dsl.models import Promote, ReplicationControl
from fault.context import Context, Detail, Handler, Needs
from runners import replication as repl
from runners.capabilities import NamedSources
from runners.gtid import rejoin_position
from runners.mysql import execute_all


@dataclass
class ReplicationState:
    stopped: set[str] = field(default_factory=set)  # replicas whose threads were stopped
    former_primaries: set[str] = field(default_factory=set)


def control(ctx: Context, a: ReplicationControl) -> Detail:
    n = ctx.node(a.node.name)
    thread = {"both": "", "io": " IO_THREAD", "sql": " SQL_THREAD"}[a.threads]
    execute_all(n.addr, n.admin, [f"{a.verb.upper()} SLAVE{thread}"])
    st = ctx.state(ReplicationState)
    if a.verb == "stop":
        st.stopped.add(n.name)
    elif a.threads == "both":
        st.stopped.discard(n.name)
    return {"threads": a.threads}


def _source(ctx: Context, replica: str, primary: str) -> tuple[str, int]:
    """Where ``replica`` reaches ``primary`` (host, port): through the replica's replication
    link when links exist (the link is pointed at the primary), else by name on the
    topology's own network when its back-end has ``NamedSources`` (``backend containers``), else
    directly on the loopback."""
    topo = ctx.topo
    primary_port = ctx.node(primary).port
    link = f"{replica}.replication"
    if topo.toxi and link in topo.toxi.links:
        topo.toxi.set_upstream(link, primary_port)
        return topo.toxi.link_host, topo.toxi.links[link].listen
    if ctx.has(NamedSources):
        host, port = cast(NamedSources, topo).source_address(primary)
        return str(host), int(port)
    return repl.LOOPBACK, primary_port


def promote(ctx: Context, a: Promote) -> Detail:
    topo = ctx.topo
    name = a.node.name
    t0 = time.monotonic()
    new = ctx.node(name)
    execute_all(new.addr, new.admin, list(repl.PROMOTE_STATEMENTS))
    t_promoted = time.monotonic()
    others = [n for n in topo.nodes.values()
              if n.name not in (name, topo.primary) and n.name not in ctx.down]
    for other in others:
        host, port = _source(ctx, other.name, name)
        execute_all(other.addr, other.admin, repl.repoint(port, topo.repl, host=host,
                                                          flavor=ctx.flavor))
    t_repointed = time.monotonic()
    switch = 0.0
    if topo.router is not None:
        switch = topo.router.move_writer(name)
    old = topo.primary
    st = ctx.state(ReplicationState)
    if old is not None:
        st.former_primaries.add(old)
    st.former_primaries.discard(name)
    topo.primary = name
    # Workloads that target the old primary by name keep doing so; the router moved.
    return {"old_primary": old, "new_primary": name,
            "promote_seconds": round(t_promoted - t0, 4),
            "repoint_seconds": round(t_repointed - t_promoted, 4),
            "router_switch_seconds": round(switch, 4)}


def was_primary(ctx: Context, name: str) -> bool:
    """``name`` was the primary before a promote (and has not rejoined yet)."""
    return name in ctx.state(ReplicationState).former_primaries


def rejoin(ctx: Context, name: str) -> str:
    """A former primary that comes back joins the current primary as a read-only replica,
    from its own GTID position (transactions only it has make replication stop, honestly)
    except in the lab's heartbeat domain (``runners.gtid.rejoin_position``)."""
    topo = ctx.topo
    assert topo.primary is not None
    n, primary = ctx.node(name), ctx.node(topo.primary)
    host, port = _source(ctx, name, primary.name)
    if ctx.flavor != "mariadb":  # one GTID set, no heartbeat domain: auto-positioned
        execute_all(n.addr, n.admin, repl.repoint(port, topo.repl, "current_pos",
                                                  read_only=True, host=host,
                                                  flavor=ctx.flavor))
    else:  # its own position, but the heartbeat's domain from the new primary
        pos = rejoin_position(repl.read_gtid(n, "gtid_current_pos"),
                              repl.read_gtid(primary, "gtid_binlog_pos"))
        stmts = repl.repoint(port, topo.repl, "slave_pos", read_only=True, host=host)
        stmts.insert(stmts.index("STOP SLAVE") + 1,
                     f"SET GLOBAL gtid_slave_pos = '{pos}'")  # digits, '-' and ',' only
        execute_all(n.addr, n.admin, stmts)
    ctx.state(ReplicationState).former_primaries.discard(name)
    return topo.primary


def caught_up(ctx: Context, name: str) -> bool:
    """The replica has applied everything of the running primary (or, with the primary
    down, everything it downloaded)."""
    primary = ctx.topo.primary
    up = None if primary is None or primary in ctx.down else ctx.node(primary)
    return repl.caught_up(ctx.node(name), up)


def downloaded(ctx: Context, name: str) -> bool:
    assert ctx.topo.primary is not None
    return repl.downloaded(ctx.node(name), ctx.node(ctx.topo.primary))


def heal(ctx: Context) -> list[str]:
    """Start the threads of every replica whose replication was stopped."""
    done: list[str] = []
    st = ctx.state(ReplicationState)
    for name in sorted(st.stopped):
        with contextlib.suppress(Exception):
            execute_all(ctx.node(name).addr, ctx.topo.admin, ["START SLAVE"])
            done.append(f"start replication {name}")
    st.stopped.clear()
    return done


HANDLERS: dict[type, Handler] = {ReplicationControl: control, Promote: promote}
NEEDS: dict[type, Needs] = {}  # SQL on the servers: every back-end
