"""The lab's unique-key write workload against `sysbench oltp_insert` at the same client count
on the same node, in the same run (target >= 50 %), and the same workload with the history
streamed to SQLite against recording in memory only (target >= 90 %). Prints the figures."""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

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
    env = ClientEnv(topo.address, topo.node_by_port, topo.app, rec.record, stop, 1)
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


def main() -> int:
    nodes = [PlannedNode(name="db1", role="single", index=1, server_id=1, port_offset=1, port=1)]
    plan = Plan(name="bench", duration=SECONDS, topology="single", engine=Engine(),
                cells=[Cell(index=1, label="b", nodes=nodes, workloads=[])])
    rounds = int(os.environ.get("BENCH_REPEAT", "3"))
    with Run(experiment="bench") as run, tempfile.TemporaryDirectory() as tmp:
        topo = Topology.deploy(plan, plan.cells[0], run)
        try:
            sb, lab, mem = [], [], []
            for i in range(rounds):
                sb.append(sysbench_insert(topo))
                lab.append(lab_writes(topo, f"w{i}", str(Path(tmp) / f"r{i}.db")))
                mem.append(lab_writes(topo, f"m{i}", None))
        finally:
            topo.teardown()
    med = statistics.median
    r1 = med(lab) / med(sb)
    r2 = med(lab) / med(mem)
    print(f"{CLIENTS} clients, {SECONDS:g} s, median of {rounds}:")
    print(f"  sysbench oltp_insert     {med(sb):8.0f} tx/s")
    print(f"  lab unique_writes (SQLite streaming) {med(lab):8.0f} ops/s -> "
          f"{r1:.0%} of sysbench (target >= 50 %: {'met' if r1 >= 0.5 else 'NOT met'})")
    print(f"  lab unique_writes (in memory only)   {med(mem):8.0f} ops/s -> streaming keeps "
          f"{r2:.0%} (target >= 90 %: {'met' if r2 >= 0.9 else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
