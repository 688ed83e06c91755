"""Time to ready for replication 1+2 through the lab, against `dbdeployer deploy replication
--concurrent` alone in the same run (target ratio <= 1.2); Galera 3 nodes ready (target
<= 12 s); teardown of either (target <= 2 s). Prints the figures; exits 0."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dsl.models import Engine  # noqa: E402
from dsl.plan import Cell, Plan, PlannedNode  # noqa: E402
from runners.components import require  # noqa: E402
from runners.runtime import Run, reap_children  # noqa: E402
from runners.sandbox import debian_basedir  # noqa: E402
from runners.topology import Topology  # noqa: E402


def plan(kind: str) -> Plan:
    if kind == "replication":
        nodes = [
            PlannedNode(
                name=f"db{i}",
                role="primary" if i == 1 else "replica",
                index=i,
                server_id=i,
                port_offset=i,
                port=i,
            )
            for i in (1, 2, 3)
        ]
    else:
        nodes = [
            PlannedNode(name=f"g{i}", role="galera", index=i, server_id=i, port_offset=i, port=i)
            for i in (1, 2, 3)
        ]
    return Plan(
        name="bench",
        duration=1,
        topology=kind,
        engine=Engine(),  # type: ignore[arg-type]
        replication_mode="gtid",
        cells=[Cell(index=1, label="b", nodes=nodes, workloads=[])],
    )


def lab_once(kind: str) -> tuple[float, float]:
    p = plan(kind)
    run = Run(experiment="bench")
    t0 = time.monotonic()
    topo = Topology.deploy(p, p.cells[0], run)
    ready = time.monotonic() - t0
    t1 = time.monotonic()
    topo.teardown()
    run.close()
    return ready, time.monotonic() - t1


def dbdeployer_once() -> float:
    root, version = debian_basedir()
    with tempfile.TemporaryDirectory(dir="/tmp") as d:
        env = dict(os.environ, HOME=d)
        t0 = time.monotonic()
        subprocess.run(
            [
                require("dbdeployer"),
                f"--sandbox-binary={root}",
                f"--sandbox-home={d}/sb",
                "deploy",
                "replication",
                version,
                "--concurrent",
                "--base-port=45100",
                "--socket-in-datadir",
            ],
            env=env,
            check=True,
            capture_output=True,
        )
        took = time.monotonic() - t0
        subprocess.run(
            [f"{d}/sb/rsandbox_{version.replace('.', '_')}/send_kill_all"], capture_output=True
        )
        subprocess.run(["pkill", "-9", "-f", f"{d}/sb"], capture_output=True)
        time.sleep(0.3)
        reap_children()
    return took


def main() -> int:
    n = int(os.environ.get("BENCH_REPEAT", "3"))
    lab_r, dd_r, td_r, gal, td_g = [], [], [], [], []
    for _ in range(n):
        dd_r.append(dbdeployer_once())
        r, t = lab_once("replication")
        lab_r.append(r)
        td_r.append(t)
    for _ in range(max(1, n - 1)):
        r, t = lab_once("galera")
        gal.append(r)
        td_g.append(t)
    med = statistics.median
    ratio = med(lab_r) / med(dd_r)
    print(
        f"replication 1+2 ready: lab {med(lab_r):.2f}s vs dbdeployer alone {med(dd_r):.2f}s "
        f"-> ratio {ratio:.2f} (target <= 1.2: {'met' if ratio <= 1.2 else 'NOT met'})"
    )
    print(
        f"galera 3 ready: {med(gal):.2f}s (target <= 12s: {'met' if med(gal) <= 12 else 'NOT met'})"
    )
    print(f"teardown: replication {med(td_r):.2f}s, galera {med(td_g):.2f}s (target <= 2s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
