"""The lab's unique-key write workload against `sysbench oltp_insert` at the same client count
on the same node, measured in the same round (target: ratio >= 0.5), and the same workload with
the history streamed to SQLite against recording in memory only (target: ratio >= 0.9).

Each round runs the lab workload streaming to SQLite, then in memory only, then sysbench; every
figure is the median of the rounds (``--rounds``, else $BENCH_ROUNDS, at least 3) with its
min–max, and the ratios are taken round by round. $BENCH_CLIENTS (4) and $BENCH_SECONDS (10)
set the load. Exit status 1 when a target is missed. Starts a server.

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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import Bench, Target, rounds, run_rounds  # noqa: E402

from dsl.models import Engine  # noqa: E402
from dsl.plan import Cell, Plan, PlannedNode, PlannedWorkload  # noqa: E402
from lab.recorder import Recorder  # noqa: E402
from runners.components import require  # noqa: E402
from runners.mysql import execute_all  # noqa: E402
from runners.runtime import Run  # noqa: E402
from runners.topology import Topology  # noqa: E402
from runners.workloads import ClientEnv, UniqueWritesWorkload, table_ddl  # noqa: E402

CLIENTS = int(os.environ.get("BENCH_CLIENTS", "4"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "10"))


def lab_writes(topo: Topology, name: str, db_path: str | None) -> float:
    spec = PlannedWorkload(name=name, kind="unique_writes", targets=["db1"], clients=CLIENTS,
                           duration=SECONDS)
    execute_all(topo.nodes["db1"].addr, topo.admin,
                ["CREATE DATABASE IF NOT EXISTS lab", *table_ddl(spec)])
    rec = Recorder(db_path, "bench", 1)
    stop = threading.Event()
    env = ClientEnv(topo.address, topo.node_by_server_id, topo.app, rec.record, stop, 1)
    wl = UniqueWritesWorkload(spec, env, 0, SECONDS)
    t0 = time.monotonic()
    wl.start()
    wl.join()
    took = time.monotonic() - t0
    rec.close()
    ok = sum(1 for op in rec.history if op.type == "ok")
    return ok / took


def sysbench_insert(topo: Topology) -> float:
    a = topo.nodes["db1"].addr
    execute_all(a, topo.admin, ["CREATE DATABASE IF NOT EXISTS sbtest"])
    base = [require("sysbench"), "oltp_insert", "--db-driver=mysql", f"--mysql-host={a.host}",
            f"--mysql-port={a.port}", f"--mysql-user={topo.app.user}",
            f"--mysql-password={topo.app.password}", "--mysql-db=sbtest", "--tables=1",
            "--table-size=1000", f"--threads={CLIENTS}"]
    subprocess.run([*base, "cleanup"], capture_output=True)
    subprocess.run([*base, "prepare"], capture_output=True, check=True)
    out = subprocess.run([*base, f"--time={int(SECONDS)}", "run"], capture_output=True,
                         text=True, check=True)
    m = re.search(r"transactions:\s+\d+\s+\(([\d.]+) per sec", out.stdout)
    assert m, out.stdout
    return float(m.group(1))


TARGET_VS_SYSBENCH = 0.5
TARGET_KEEP = 0.9


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=None, help="rounds (default $BENCH_ROUNDS or 3)")
    args = ap.parse_args(argv)
    n = rounds(args.rounds)
    nodes = [PlannedNode(name="db1", role="single", index=1, server_id=1, port_offset=1, port=1)]
    plan = Plan(name="bench", duration=SECONDS, topology="single", engine=Engine(),
                cells=[Cell(index=1, label="b", nodes=nodes, workloads=[])])
    print(f"{CLIENTS} clients, {SECONDS:g} s per measure; {n} rounds of: lab unique_writes "
          "streaming to SQLite, the same in memory only, sysbench oltp_insert")
    with Run(experiment="bench") as run, tempfile.TemporaryDirectory() as tmp:
        topo = Topology.deploy(plan, plan.cells[0], run)
        try:
            done = {"sqlite": 0, "memory": 0}  # each measure writes to a table of its own

            def lab(mode: str) -> float:
                k = done[mode] = done[mode] + 1
                if mode == "sqlite":
                    return lab_writes(topo, f"w{k}", str(Path(tmp) / f"r{k}.db"))
                return lab_writes(topo, f"m{k}", None)

            s = run_rounds(n, [("lab sqlite", lambda: lab("sqlite")),
                               ("lab memory", lambda: lab("memory")),
                               ("sysbench", lambda: sysbench_insert(topo))])  # fmt: skip
        finally:
            topo.teardown()
    b = Bench("bench_workload")
    b.figure(
        f"lab unique_writes, SQLite streaming ({CLIENTS} clients)",
        s["lab sqlite"],
        "ops/s",
        peer="sysbench oltp_insert",
        peer_samples=s["sysbench"],
        peer_unit="tx/s",
        target=Target(
            ">=",
            TARGET_VS_SYSBENCH,
            on="ratio",
            text=f"ratio >= {TARGET_VS_SYSBENCH:g} (>= 50 % of sysbench)",
        ),
    )
    b.figure(
        f"lab unique_writes, SQLite streaming vs in memory only ({CLIENTS} clients)",
        s["lab sqlite"],
        "ops/s",
        peer="lab unique_writes, in memory only",
        peer_samples=s["lab memory"],
        target=Target(
            ">=", TARGET_KEEP, on="ratio", text=f"ratio >= {TARGET_KEEP:g} (keeps >= 90 %)"
        ),
    )
    return b.finish()


if __name__ == "__main__":
    sys.exit(main())
