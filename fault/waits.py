"""Waits: ``wait until [NODE] CONDITION [timeout D]`` (caught_up, downloaded, synced,
primary_elected, up, down; a timeout fails the run) and ``wait D``.

A wait that times out says how far it got (``Progress``, sampled every ``SAMPLE_EVERY``
seconds while it waits): for ``caught_up`` each replica's distance from the primary in
transactions (GTID sequence numbers, the heartbeat's domain aside; bytes of binary log on a
MySQL-family server other than MariaDB) and the rate it was closing, e.g. ``db2 was 3,412
transactions behind after 30 s, catching up at 210/s``; for ``downloaded`` the bytes the IO
thread had still to read; for ``synced`` the node's wsrep state; otherwise the last thing
seen (``behind_message``, ``state_message``).

Nothing to heal.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import cast

from dsl.models import Sleep, WaitUntil
from fault import mongo, replication
from fault.context import ActionFailed, Context, Detail, Handler, Needs
from runners import replication as repl
from runners.gtid import behind, parse_gtid
from runners.mongo import MongoNode
from runners.node import Node

POLL = 0.02  # seconds between two looks at the condition
SAMPLE_EVERY = 0.5  # seconds between two readings of how far it got
RATE_WINDOW = 5.0  # the closing rate: over the readings of the last seconds
WSREP_STATES = {"1": "Joining", "2": "Donor/Desynced", "3": "Joined", "4": "Synced"}


def answers(ctx: Context, name: str) -> bool:
    """The server answers (SQL ``SELECT 1``; a MongoDB member: ``ping``)."""
    node = ctx.node(name)
    try:
        if ctx.topo.plan.topology == "mongodb_replset":
            return bool(cast(MongoNode, node).ping())
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


def _replicas(ctx: Context, name: str | None) -> list[str]:
    return [name] if name else [n for n in ctx.topo.nodes if n != ctx.topo.primary]


def _check(ctx: Context, cond: str, name: str | None) -> Callable[[], bool]:
    topo = ctx.topo
    if topo.plan.topology == "mongodb_replset":
        return _mongo_check(ctx, cond, name)
    if cond == "caught_up":
        names = _replicas(ctx, name)
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


# --- how far a wait got ---------------------------------------------------------------------------
@dataclass
class Progress:
    """What a wait read of its condition while it waited, per node (``""``: the whole
    topology): distances (seconds since the start, how far), with their unit, and the last
    state seen (``state_message``'s text: a wsrep state, an error)."""

    unit: str = "transactions"
    distances: dict[str, list[tuple[float, int]]] = field(default_factory=dict)
    states: dict[str, str] = field(default_factory=dict)

    def distance(self, node: str, t: float, value: int) -> None:
        self.distances.setdefault(node, []).append((t, value))
        self.states.pop(node, None)

    def state(self, node: str, text: str) -> None:
        self.states[node] = text


def _count(n: int) -> str:
    return f"{n:,}"


def _per_second(rate: float) -> str:
    return f"{rate:,.0f}/s" if rate >= 10 else f"{rate:.1f}/s"


def behind_message(node: str, samples: Sequence[tuple[float, int]], unit: str,
                   waited: float) -> str:
    """``db2 was 3,412 transactions behind after 30 s, catching up at 210/s (about 16 s more
    at that rate)``: the last distance read and how fast it changed over the readings of the
    last ``RATE_WINDOW`` seconds (falling behind, not moving)."""
    t_last, last = samples[-1]
    head = f"{node} was {_count(last)} {unit} behind after {waited:.0f} s"
    if last == 0:  # e.g. the heartbeat's domain, or a thread stopped at the position
        return f"{head}, yet not caught up"
    recent = [(t, v) for t, v in samples if t >= t_last - RATE_WINDOW]
    t0, first = recent[0]
    if t_last - t0 < SAMPLE_EVERY / 2:
        return head
    rate = (first - last) / (t_last - t0)
    if abs(rate) < 0.05 or first == last:
        return f"{head}, not catching up ({_count(first)} behind {t_last - t0:.0f} s earlier)"
    if rate < 0:
        return f"{head}, falling behind at {_per_second(-rate)}"
    return f"{head}, catching up at {_per_second(rate)} (about {last / rate:,.0f} s more at " \
           "that rate)"


def state_message(node: str, state: str, waited: float) -> str:
    """``g2 after 30 s: wsrep_local_state 1 (Joining), ...`` (no node: the topology's)."""
    return f"{node + ' ' if node else ''}after {waited:.0f} s: {state}"


def progress_message(p: Progress, waited: float) -> str:
    """Every node's last reading: a distance (``behind_message``) or a state (with the last
    distance read before it, if any)."""
    out = [behind_message(n, s, p.unit, waited) for n, s in sorted(p.distances.items())
           if n not in p.states]
    for n, st in sorted(p.states.items()):
        if p.distances.get(n):
            t, last = p.distances[n][-1]
            st += f" (last read: {_count(last)} {p.unit} behind at {t:.0f} s)"
        out.append(state_message(n, st, waited))
    return "; ".join(out) or f"nothing could be read of it in {waited:.0f} s"


def _lag(ctx: Context, name: str) -> tuple[int, str]:
    """How far the replica ``name`` is from the primary: GTID sequence numbers (MariaDB:
    the primary's binlog position against what the replica applied or logged, the heartbeat's
    domain aside), else bytes of binary log (the primary's position against what the replica
    applied; with the primary down, what it downloaded against what it applied)."""
    node = ctx.node(name)
    primary = ctx.topo.primary
    up = None if primary is None or primary in ctx.down else ctx.node(primary)
    if up is not None and ctx.flavor == "mariadb":
        row = node.sql("SELECT @@gtid_slave_pos AS s, @@gtid_binlog_pos AS b", timeout=1)[0]
        mine = parse_gtid(str(row["s"] or ""))
        for dom, seq in parse_gtid(str(row["b"] or "")).items():
            mine[dom] = max(mine.get(dom, 0), seq)
        return behind(repl.gtid(up, "gtid_binlog_pos", timeout=1), mine), "transactions"
    st = repl.slave_status(node, timeout=1)
    if not st:
        raise ValueError("it replicates from nothing")
    if up is None:
        return int(st.get("Read_Master_Log_Pos", 0)) - int(st.get("Exec_Master_Log_Pos", 0)), \
            "bytes of relay log"
    f, pos = repl.binlog_position(up, timeout=1)
    if st.get("Relay_Master_Log_File") != f:
        raise ValueError(f"it applies {st.get('Relay_Master_Log_File')}, the primary writes {f}")
    return pos - int(st.get("Exec_Master_Log_Pos", 0)), "bytes of binary log"


def _undownloaded(ctx: Context, name: str) -> tuple[int, str]:
    assert ctx.topo.primary is not None
    st = repl.slave_status(ctx.node(name), timeout=1)
    f, pos = repl.binlog_position(ctx.node(ctx.topo.primary), timeout=1)
    if not st or st.get("Master_Log_File") != f:
        raise ValueError(f"its IO thread reads {st.get('Master_Log_File')}, the primary "
                         f"writes {f}")
    return pos - int(st.get("Read_Master_Log_Pos", 0)), "bytes of binary log to download"


def _wsrep(ctx: Context, name: str) -> str:
    st = repl.galera_state(ctx.node(name))
    local = st.get("local_state", "?")
    return (f"wsrep_local_state {local} ({WSREP_STATES.get(local, 'unknown')}), "
            f"cluster_status {st.get('cluster_status', '?')}, ready {st.get('ready', '?')}, "
            f"view {st.get('cluster_conf_id', '?')}")


def _threads(ctx: Context, name: str) -> str | None:
    """Why a replica does not move, when its threads say it (stopped, an error)."""
    with contextlib.suppress(Exception):
        st = repl.slave_status(ctx.node(name), timeout=1)
        if not st:
            return "it replicates from nothing"
        io, sql = st.get("Slave_IO_Running"), st.get("Slave_SQL_Running")
        if io == "Yes" and sql == "Yes":
            return None
        errors = [f"{kind} error {st.get(f'Last_{kind}_Errno')}: "
                  f"{str(st.get(f'Last_{kind}_Error') or '')[:200]}"
                  for kind in ("IO", "SQL") if int(st.get(f"Last_{kind}_Errno") or 0)]
        return "; ".join([f"its IO thread {io}, its SQL thread {sql}", *errors])
    return None


def observe(ctx: Context, cond: str, name: str | None, p: Progress, t: float) -> None:
    """One reading of how far the condition is (never raises: what failed is the state)."""
    if ctx.topo.plan.topology == "mongodb_replset":
        return
    if cond == "caught_up":
        nodes = _replicas(ctx, name)
    elif name is not None:
        nodes = [name]
    else:  # synced: every node; primary_elected: the topology
        nodes = list(ctx.topo.nodes) if cond == "synced" else [""]
    for n in nodes:
        try:
            if cond in ("caught_up", "downloaded"):
                value, p.unit = (_lag if cond == "caught_up" else _undownloaded)(ctx, n)
                p.distance(n, t, value)
            elif cond == "synced":
                p.state(n, _wsrep(ctx, n))
            elif cond == "primary_elected":
                p.state("", "no writer up at the router" if ctx.topo.router is not None
                        else "every node that answered was read_only")
            elif cond == "up":
                ctx.node(n).scalar("SELECT 1", timeout=1)
                p.state(n, "it answered")
            else:
                p.state(n, "it still answered")
        except Exception as e:  # noqa: BLE001 - a reading that failed says why
            p.state(n, f"{'it did not answer' if cond != 'down' else 'unread'}: "
                    f"{str(e).splitlines()[0][:200] if str(e) else type(e).__name__}")


def wait_until(ctx: Context, a: WaitUntil) -> Detail:
    cond = a.condition
    name = a.node.name if a.node else None
    check = _check(ctx, cond, name)
    progress = Progress()
    t0 = time.monotonic()
    next_sample = 0.0
    while True:
        with contextlib.suppress(Exception):  # a failure means "not yet"
            if check():
                return {"waited_seconds": round(time.monotonic() - t0, 3)}
        now = time.monotonic() - t0
        if now > a.timeout:
            break
        if now >= next_sample:
            observe(ctx, cond, name, progress, now)
            next_sample = now + SAMPLE_EVERY
        time.sleep(POLL)
    waited = time.monotonic() - t0
    observe(ctx, cond, name, progress, waited)
    how_far = progress_message(progress, waited)
    if cond == "caught_up":
        stuck = [f"{n}: {why}" for n in progress.distances
                 if (why := _threads(ctx, n)) is not None]
        how_far += "".join(f" ({s})" for s in stuck)
    what = " ".join(w for w in ("wait until", name, cond) if w)
    raise ActionFailed(f"{what}: not reached within {a.timeout:g}s: {how_far}")


def sleep(ctx: Context, a: Sleep) -> Detail:
    time.sleep(a.seconds)
    return None


HANDLERS: dict[type, Handler] = {WaitUntil: wait_until, Sleep: sleep}
NEEDS: dict[type, Needs] = {}  # through the servers: every back-end
