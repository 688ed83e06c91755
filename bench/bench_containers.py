"""The container back-end against the native one, in the same run: a 2-node replication
topology's bring-up (every node answering, replication running) and teardown, and the faults'
latency (a kill seen by a client, start after a kill to the first query, pause, resume to the
first query, restart to the first query); then the largest lab of this machine: N single nodes
on containers (default 24; target: all answering in < 20 s), with the memory of each.

Each round runs the native topology, then the containers one, the same steps on each; a
ratio is containers over native in the same round. Starts servers and a podman service (or
uses $DOCKER_HOST). Skips nothing silently: without podman/runc it fails saying so.

    .venv/bin/python bench/bench_containers.py [--rounds 3] [--nodes 24 | --no-large]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import Bench, Target, rounds, run_rounds  # noqa: E402

from dsl.api import plan_text  # noqa: E402
from dsl.plan import Plan  # noqa: E402
from runners.mysql import Address, Credentials, connect  # noqa: E402
from runners.runtime import Run  # noqa: E402
from runners.topology import Topology, deploy  # noqa: E402

BUFFER_POOL = "64M"
TARGET_LARGE_S = 20.0
DEFAULT_NODES = 24

REPLICATION = """
experiment "bench-containers" {{
  backend {backend}
  topology replication {{
    primary db1
    replicas db2
    config {{ innodb_buffer_pool_size = {pool} }}
  }}
}}
"""

SINGLE = """
experiment "bench-containers-large" {{
  backend containers
  topology single {{
    node n1
    config {{ innodb_buffer_pool_size = {pool} }}
  }}
}}
"""


def replication_plan(backend: str) -> Plan:
    return plan_text(REPLICATION.format(backend=backend, pool=BUFFER_POOL))


def large_plan(n: int) -> Plan:
    """``n`` single nodes on containers: the one-node plan's node, n times (node i at the
    run's port base + i; no toxiproxy or Galera ports are used on containers)."""
    p = plan_text(SINGLE.format(pool=BUFFER_POOL))
    cell = p.cells[0]
    one = cell.nodes[0]
    nodes = [one.model_copy(update={"name": f"n{i}", "index": i, "server_id": 100 * i,
                                    "port_offset": i, "port": p.base_port + i})
             for i in range(1, n + 1)]
    return p.model_copy(update={"cells": [cell.model_copy(update={"nodes": nodes})]})


def first_query(addr: Address, creds: Credentials, timeout: float = 30.0) -> float:
    """Seconds until ``SELECT 1`` succeeds on ``addr``."""
    t0 = time.monotonic()
    while True:
        try:
            c = connect(addr, creds, timeout=1)
            try:
                c.cursor().execute("SELECT 1")
                return time.monotonic() - t0
            finally:
                c.close()
        except Exception:  # noqa: BLE001 - not answering yet
            if time.monotonic() - t0 > timeout:
                raise TimeoutError(f"{addr} did not answer in {timeout:g} s") from None
            time.sleep(0.005)


def timed(fn: Callable[[], Any]) -> float:
    t0 = time.monotonic()
    fn()
    return time.monotonic() - t0


def kill_seen(topo: Topology, name: str) -> tuple[float, float]:
    """A ``SELECT SLEEP(10)`` in flight on ``name``, then ``kill``: (seconds from the kill's
    call until the client's error, seconds the call took)."""
    node = topo.nodes[name]
    conn = connect(node.addr, topo.admin, timeout=15)
    seen: list[float] = []
    started = threading.Event()

    def client() -> None:
        cur = conn.cursor()
        started.set()
        with contextlib.suppress(Exception):
            cur.execute("SELECT SLEEP(10)")
        seen.append(time.monotonic())

    th = threading.Thread(target=client, daemon=True)
    th.start()
    started.wait()
    time.sleep(0.2)  # the query is in the server
    t0 = time.monotonic()
    topo.kill(name)
    call = time.monotonic() - t0
    th.join(15)
    with contextlib.suppress(Exception):
        conn.close()
    if not seen:
        raise RuntimeError(f"the client on {name} never saw the kill")
    return seen[0] - t0, call


def one_round(backend: str) -> dict[str, float]:
    """Bring-up, faults and teardown of replication 1+1 on ``backend``; every figure of one
    round, named ``<backend> <figure>``."""
    plan = replication_plan(backend)
    run = Run(experiment=f"bench-{backend}")
    got: dict[str, float] = {}
    topo: Topology | None = None
    try:
        t0 = time.monotonic()
        topo = deploy(plan, plan.cells[0], run)
        got["ready"] = time.monotonic() - t0
        db1, db2 = topo.nodes["db1"], topo.nodes["db2"]
        got["kill seen"], got["kill call"] = kill_seen(topo, "db2")
        got["start after kill"] = timed(lambda: topo.start("db2")) + first_query(db2.addr,
                                                                                 topo.admin)
        got["pause"] = timed(lambda: topo.pause("db1"))
        got["resume"] = timed(lambda: topo.resume("db1")) + first_query(db1.addr, topo.admin)
        got["restart"] = timed(lambda: topo.restart("db2")) + first_query(db2.addr, topo.admin)
        t1 = time.monotonic()
        topo.teardown()
        got["teardown"] = time.monotonic() - t1
        topo = None
    finally:
        if topo is not None:
            topo.teardown()
        run.close()
    return {f"{backend} {k}": v for k, v in got.items()}


def memory_of(topo: Any) -> tuple[float, float]:
    """Median MB per node: (what its container's memory cgroup is charged, page cache
    included — the cgroup's own file when the engine is local, else the engine's ``stats``
    API; the resident memory of its processes, /proc, NaN when the engine is not local)."""
    charged: list[float] = []
    resident: list[float] = []
    for node in topo.nodes.values():
        pid = node.pid()
        got = _cgroup_bytes(pid) if pid is not None and topo.engine.local else None
        if got is None:
            st = node.container.stats(stream=False)
            got = (st.get("memory_stats") or {}).get("usage") if isinstance(st, dict) else None
        if got:
            charged.append(got / 1e6)
        if pid is not None and topo.engine.local:
            resident.append(_tree_rss(pid) / 1e6)
    return (statistics.median(charged) if charged else float("nan"),
            statistics.median(resident) if resident else float("nan"))


def _cgroup_bytes(pid: int) -> int | None:
    """The memory charged to ``pid``'s cgroup: ``memory.usage_in_bytes`` (cgroup v1) or
    ``memory.current`` (v2)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if "memory" in controllers.split(","):
                return int(Path(f"/sys/fs/cgroup/memory{path}/memory.usage_in_bytes")
                           .read_text())
            if controllers == "":
                return int(Path(f"/sys/fs/cgroup{path}/memory.current").read_text())
    return None


def _tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and its descendants (/proc)."""
    total = 0
    todo = [pid]
    while todo:
        p = todo.pop()
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
            for task in Path(f"/proc/{p}/task").iterdir():
                with contextlib.suppress(OSError):
                    todo += [int(c) for c in (task / "children").read_text().split()]
    return total


def large_round(n: int) -> dict[str, float]:
    plan = large_plan(n)
    run = Run(experiment="bench-large")
    topo: Any = None
    got: dict[str, float] = {}
    try:
        t0 = time.monotonic()
        topo = deploy(plan, plan.cells[0], run)
        got["large ready"] = time.monotonic() - t0
        got["large engine"] = topo.timings.get("engine", float("nan"))
        got["large charged MB"], got["large resident MB"] = memory_of(topo)
        t1 = time.monotonic()
        topo.teardown()
        got["large teardown"] = time.monotonic() - t1
        topo = None
    finally:
        if topo is not None:
            topo.teardown()
        run.close()
    return got


FIGURES = (
    ("ready", "replication 1+1 ready (every node answering, replication running)"),
    ("teardown", "replication 1+1 teardown"),
    ("kill seen", "kill seen by a client (a query in flight gets its error)"),
    ("kill call", "kill, the call (until the server is gone)"),
    ("start after kill", "start after a kill, to the first query"),
    ("pause", "pause, the call"),
    ("resume", "resume, to the first query"),
    ("restart", "restart (clean stop, start), to the first query"),
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--rounds", type=int, default=None, help="rounds (default $BENCH_ROUNDS or 3)")
    ap.add_argument("--nodes", type=int, default=DEFAULT_NODES,
                    help=f"nodes of the largest lab (default {DEFAULT_NODES})")
    ap.add_argument("--no-large", action="store_true", help="leave out the largest lab")
    args = ap.parse_args(argv)
    n = rounds(args.rounds)
    steps: list[tuple[str, Callable[[], dict[str, float]]]] = [
        ("native", lambda: one_round("native")), ("containers", lambda: one_round("containers"))]
    if not args.no_large:
        steps.append((f"{args.nodes} nodes", lambda: large_round(args.nodes)))
    print(f"{n} rounds of: replication 1+1 native, the same on containers"
          + ("" if args.no_large else f", {args.nodes} single nodes on containers"))
    s = run_rounds(n, steps)
    b = Bench("bench_containers")
    for key, text in FIGURES:
        b.figure(f"{text}, on containers", s[f"containers {key}"], "s", peer="native",
                 peer_samples=s[f"native {key}"])
    if not args.no_large:
        b.figure(f"{args.nodes} single nodes on containers ready (every node answering)",
                 s["large ready"], "s",
                 target=Target("<", TARGET_LARGE_S, text=f"< {TARGET_LARGE_S:g} s"))
        b.figure(f"{args.nodes} single nodes: of which the engine (podman service) up",
                 s["large engine"], "s")
        b.figure(f"{args.nodes} single nodes teardown", s["large teardown"], "s")
        b.figure(f"memory per node, charged to its container's cgroup (buffer pool "
                 f"{BUFFER_POOL})", s["large charged MB"], "MB")
        b.figure("memory per node, resident (its processes' RSS)", s["large resident MB"],
                 "MB")
    return b.finish()


if __name__ == "__main__":
    sys.exit(main())
