"""The lab's unique-key write workload against `sysbench oltp_insert` at the same client count
on the same node, measured in the same round, at 4 and at 16 clients (target, issue 25: ratio
>= 1.0, with every operation recorded: the history streamed to SQLite, and every operation of
the history in the database at the end, or the script fails), and the same workload streaming
to SQLite against recording in memory only (target: ratio >= 0.9).

Each round runs, for each client count, the lab workload streaming to SQLite, then in memory
only, then sysbench; every figure is the median of the rounds (``--rounds``, else
$BENCH_ROUNDS, at least 3) with its min–max, and the ratios are taken round by round.

Every measure starts from the same server state: its own new table (the lab's is dropped after
its measure, sysbench's cleaned up after its run), and the server settled (``settle``: the
dirty pages of the measure before written out, its undo purged). Without it the measure after
a sysbench run paid for that run: 2,034 of the buffer pool's 4,056 pages dirty and 35 MB of the
48 MB redo log unwritten, flushed at idle speed (70 pages/s) while the next measure ran.
$BENCH_CLIENTS ("4,16") and $BENCH_SECONDS (10) set the load. Exit status 1 when a target is
missed. Starts a server.

    .venv/bin/python bench/bench_workload.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import Bench, Target, rounds, run_rounds  # noqa: E402

from dsl.models import Engine  # noqa: E402
from dsl.plan import Cell, Plan, PlannedNode, PlannedWorkload  # noqa: E402
from lab.run.gc_guard import history_frozen  # noqa: E402
from lab.run.recorder import Recorder  # noqa: E402
from runners.components import require  # noqa: E402
from runners.mysql import execute_all, query  # noqa: E402
from runners.probe_workloads import UniqueWritesWorkload  # noqa: E402
from runners.runtime import Run  # noqa: E402
from runners.topology import Topology  # noqa: E402
from runners.workloads import ClientEnv, table_ddl, table_name  # noqa: E402

CLIENT_COUNTS = [int(c) for c in os.environ.get("BENCH_CLIENTS", "4,16").split(",") if c.strip()]
SECONDS = float(os.environ.get("BENCH_SECONDS", "10"))


# settled: at most this share of the buffer pool's pages dirty, and no undo left to purge
SETTLED_DIRTY = 0.05
SETTLE_LIMIT = 60.0  # seconds; a server that has not settled by then fails the bench


def server_state(topo: Topology) -> dict[str, int]:
    rows = query(topo.nodes["db1"].addr, topo.admin,
                 "SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_buffer_pool_pages_dirty', "
                 "'Innodb_buffer_pool_pages_total', 'Innodb_history_list_length')")
    return {r["Variable_name"]: int(r["Value"]) for r in rows}


def settle(topo: Topology, clock: Callable[[], float] = time.monotonic,
           sleep: Callable[[float], None] = time.sleep) -> None:
    """Wait until the server has written out the dirty pages of the measures before (at most
    ``SETTLED_DIRTY`` of the pool's pages dirty) and purged their undo, flushing at full speed
    meanwhile (``innodb_max_dirty_pages_pct`` 0, then back to what it was)."""
    a = topo.nodes["db1"].addr
    was = query(a, topo.admin, "SELECT @@GLOBAL.innodb_max_dirty_pages_pct AS pct")[0]["pct"]
    execute_all(a, topo.admin, ["SET GLOBAL innodb_max_dirty_pages_pct = 0"])
    try:
        t0 = clock()
        while True:
            st = server_state(topo)
            dirty = st["Innodb_buffer_pool_pages_dirty"]
            total = max(1, st["Innodb_buffer_pool_pages_total"])
            purge = st["Innodb_history_list_length"]
            if dirty <= SETTLED_DIRTY * total and purge == 0:
                return
            if clock() - t0 > SETTLE_LIMIT:
                raise RuntimeError(f"the server did not settle in {SETTLE_LIMIT:g} s: {dirty} of "
                                   f"{total} pages dirty, {purge} undo logs to purge")
            sleep(0.2)
    finally:
        execute_all(a, topo.admin, [f"SET GLOBAL innodb_max_dirty_pages_pct = {float(was)}"])


def lab_writes(topo: Topology, name: str, db_path: str | None, clients: int) -> float:
    spec = PlannedWorkload(name=name, kind="unique_writes", targets=["db1"], clients=clients,
                           duration=SECONDS)
    execute_all(topo.nodes["db1"].addr, topo.admin,
                ["CREATE DATABASE IF NOT EXISTS lab", *table_ddl(spec)])
    settle(topo)
    rec = Recorder(db_path, "bench", 1)
    stop = threading.Event()
    env = ClientEnv(topo.address, topo.node_by_server_id, topo.app, rec.record, stop, 1)
    wl = UniqueWritesWorkload(spec, env, 0, SECONDS)
    with history_frozen():  # as the engine records a load
        t0 = time.monotonic()
        wl.start()
        wl.join()
        took = time.monotonic() - t0
    rec.close()
    execute_all(topo.nodes["db1"].addr, topo.admin, [f"DROP TABLE {table_name(name)}"])
    if db_path is not None and rec.written_ops != len(rec.history):
        raise RuntimeError(f"{name}: {rec.written_ops} of {len(rec.history)} operations reached "
                           "the database: not every operation was recorded")
    ok = sum(1 for op in rec.history if op.type == "ok")
    return ok / took


def sysbench_insert(topo: Topology, clients: int) -> float:
    a = topo.nodes["db1"].addr
    execute_all(a, topo.admin, ["CREATE DATABASE IF NOT EXISTS sbtest"])
    base = [require("sysbench"), "oltp_insert", "--db-driver=mysql", f"--mysql-host={a.host}",
            f"--mysql-port={a.port}", f"--mysql-user={topo.app.user}",
            f"--mysql-password={topo.app.password}", "--mysql-db=sbtest", "--tables=1",
            "--table-size=1000", f"--threads={clients}"]
    subprocess.run([*base, "cleanup"], capture_output=True)
    subprocess.run([*base, "prepare"], capture_output=True, check=True)
    settle(topo)
    out = subprocess.run([*base, f"--time={int(SECONDS)}", "run"], capture_output=True,
                         text=True, check=True)
    subprocess.run([*base, "cleanup"], capture_output=True)
    m = re.search(r"transactions:\s+\d+\s+\(([\d.]+) per sec", out.stdout)
    assert m, out.stdout
    return float(m.group(1))


# issue 25's goal, never lowered to what is measured: a miss is printed as one
TARGET_VS_SYSBENCH = 1.0
TARGET_KEEP = 0.9


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=None, help="rounds (default $BENCH_ROUNDS or 3)")
    args = ap.parse_args(argv)
    n = rounds(args.rounds)
    nodes = [PlannedNode(name="db1", role="single", index=1, server_id=1, port_offset=1, port=1)]
    plan = Plan(name="bench", duration=SECONDS, topology="single", engine=Engine(),
                cells=[Cell(index=1, label="b", nodes=nodes, workloads=[])])
    counts = " and ".join(str(c) for c in CLIENT_COUNTS)
    print(f"{counts} clients, {SECONDS:g} s per measure; {n} rounds of, for each: lab "
          "unique_writes streaming to SQLite, the same in memory only, sysbench oltp_insert")
    with Run(experiment="bench") as run, tempfile.TemporaryDirectory() as tmp:
        topo = Topology.deploy(plan, plan.cells[0], run)
        try:
            done = {"sqlite": 0, "memory": 0}  # each measure writes to a table of its own

            def lab(mode: str, clients: int) -> float:
                k = done[mode] = done[mode] + 1
                if mode == "sqlite":
                    return lab_writes(topo, f"w{k}", str(Path(tmp) / f"r{k}.db"), clients)
                return lab_writes(topo, f"m{k}", None, clients)

            steps: list[tuple[str, Callable[[], float]]] = []
            for c in CLIENT_COUNTS:
                steps += [(f"lab sqlite {c}", partial(lab, "sqlite", c)),
                          (f"lab memory {c}", partial(lab, "memory", c)),
                          (f"sysbench {c}", partial(sysbench_insert, topo, c))]  # fmt: skip
            s = run_rounds(n, steps)
        finally:
            topo.teardown()
    b = Bench("bench_workload")
    for c in CLIENT_COUNTS:
        b.figure(
            f"lab unique_writes, every operation recorded (SQLite streaming) ({c} clients)",
            s[f"lab sqlite {c}"],
            "ops/s",
            peer="sysbench oltp_insert",
            peer_samples=s[f"sysbench {c}"],
            peer_unit="tx/s",
            target=Target(
                ">=",
                TARGET_VS_SYSBENCH,
                on="ratio",
                text=f"ratio >= {TARGET_VS_SYSBENCH:g} (at least sysbench's rate)",
            ),
        )
        b.figure(
            f"lab unique_writes, SQLite streaming vs in memory only ({c} clients)",
            s[f"lab sqlite {c}"],
            "ops/s",
            peer="lab unique_writes, in memory only",
            peer_samples=s[f"lab memory {c}"],
            target=Target(
                ">=", TARGET_KEEP, on="ratio", text=f"ratio >= {TARGET_KEEP:g} (keeps >= 90 %)"
            ),
        )
    return b.finish()


if __name__ == "__main__":
    sys.exit(main())
