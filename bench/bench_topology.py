"""Time to ready for replication 1+2 through the lab, against `dbdeployer deploy replication
--concurrent` alone measured in the same round (target: ratio <= 1.2); Galera 3 nodes ready
(target <= 12 s); teardown of either (target <= 2 s).

Each round runs the lab's replication, then dbdeployer's, then the lab's Galera; every figure is
the median of the rounds (``--rounds``, else $BENCH_ROUNDS, at least 3) with its min–max, and
the ratio is taken round by round. Exit status 1 when a target is missed. Starts servers.

    .venv/bin/python bench/bench_topology.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import Bench, Target, rounds, run_rounds  # noqa: E402

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


TARGET_RATIO = 1.2
TARGET_GALERA_S = 12.0
TARGET_TEARDOWN_S = 2.0
DBDEPLOYER = "dbdeployer deploy replication --concurrent"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=None, help="rounds (default $BENCH_ROUNDS or 3)")
    args = ap.parse_args(argv)
    n = rounds(args.rounds)

    def lab_replication() -> dict[str, float]:
        r, t = lab_once("replication")
        return {"lab ready": r, "lab teardown": t}

    def lab_galera() -> dict[str, float]:
        r, t = lab_once("galera")
        return {"galera ready": r, "galera teardown": t}

    print(f"{n} rounds of: lab replication 1+2, {DBDEPLOYER}, lab Galera 3")
    s = run_rounds(n, [("lab replication", lab_replication),
                       ("dbdeployer", lambda: {"dbdeployer ready": dbdeployer_once()}),
                       ("lab galera", lab_galera)])  # fmt: skip
    b = Bench("bench_topology")
    b.figure(
        "replication 1+2 ready",
        s["lab ready"],
        "s",
        peer=DBDEPLOYER,
        peer_samples=s["dbdeployer ready"],
        target=Target("<=", TARGET_RATIO, on="ratio", text=f"ratio <= {TARGET_RATIO:g}"),
    )
    b.figure(
        "Galera 3 ready",
        s["galera ready"],
        "s",
        target=Target("<=", TARGET_GALERA_S, text=f"<= {TARGET_GALERA_S:g} s"),
    )
    teardown = Target("<=", TARGET_TEARDOWN_S, text=f"<= {TARGET_TEARDOWN_S:g} s")
    b.figure("replication 1+2 teardown", s["lab teardown"], "s", target=teardown)
    b.figure("Galera 3 teardown", s["galera teardown"], "s", target=teardown)
    return b.finish()


if __name__ == "__main__":
    sys.exit(main())
