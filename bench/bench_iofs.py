"""lab-iofs overhead with no fault active: sysbench oltp_write_only against a single server
whose data directory is on lab-iofs (FUSE), against the same server on the native disk,
measured in the same rounds (target: ratio >= 0.5, lab-iofs keeps at least half the
transactions a second).

Both servers are up for the whole script (two single topologies, one of them moved onto
lab-iofs as ``io delay`` would); each round runs sysbench for ``SECONDS`` on the native one,
then on the lab-iofs one. Every figure is the median of the rounds (``--rounds``, else
$BENCH_ROUNDS, at least 3) with its min–max, the ratio taken round by round. Needs root (the
mount) and lab-iofs (`make bootstrap`). Starts servers.

    .venv/bin/python bench/bench_iofs.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import Bench, Target, rounds, run_rounds  # noqa: E402

from dsl.models import Engine, IoFault, NodeRef, TimedAction  # noqa: E402
from dsl.plan import Cell, Plan, PlannedNode  # noqa: E402
from runners.components import require  # noqa: E402
from runners.mysql import execute_all, scalar  # noqa: E402
from runners.runtime import Run  # noqa: E402
from runners.topology import Topology  # noqa: E402

SECONDS = 8
THREADS = 4
TARGET_RATIO = 0.5


def plan(on_iofs: bool) -> Plan:
    """One single server; with an io fault on the timeline (never applied here), the topology
    puts its data directory on lab-iofs."""
    nodes = [PlannedNode(name="db1", role="single", index=1, server_id=1, port_offset=1, port=1)]
    timeline = [TimedAction(at=1, action=IoFault(verb="delay", node=NodeRef(name="db1"),
                                                 ops="fsyncs", delay=0.001))] if on_iofs else []
    return Plan(name="bench", duration=SECONDS, topology="single", engine=Engine(),
                timeline=timeline, cells=[Cell(index=1, label="b", nodes=nodes, workloads=[])])


class Sysbench:
    """oltp_write_only on one node: prepared once, then run for ``SECONDS`` per measure."""

    def __init__(self, topo: Topology) -> None:
        a = topo.nodes["db1"].addr
        execute_all(a, topo.admin, ["CREATE DATABASE IF NOT EXISTS sbtest"])
        self.base = [require("sysbench"), "oltp_write_only", "--db-driver=mysql",
                     f"--mysql-host={a.host}", f"--mysql-port={a.port}",
                     f"--mysql-user={topo.app.user}", f"--mysql-password={topo.app.password}",
                     "--mysql-db=sbtest", "--tables=2", "--table-size=10000",
                     f"--threads={THREADS}"]
        subprocess.run([*self.base, "prepare"], capture_output=True, check=True)
        self.buffering = scalar(a, topo.admin, "SELECT @@innodb_log_file_buffering")
        self.flush_method = scalar(a, topo.admin, "SELECT @@innodb_flush_method")

    def once(self) -> dict[str, float]:
        out = subprocess.run([*self.base, f"--time={SECONDS}", "run"], capture_output=True,
                             text=True, check=True)
        tps = re.search(r"transactions:\s+\d+\s+\(([\d.]+) per sec", out.stdout)
        p95 = re.search(r"95th percentile:\s+([\d.]+)", out.stdout)
        assert tps and p95, out.stdout
        return {"tps": float(tps.group(1)), "p95": float(p95.group(1)) / 1000}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=None, help="rounds (default $BENCH_ROUNDS or 3)")
    args = ap.parse_args(argv)
    n = rounds(args.rounds)
    print(f"{THREADS} threads, {SECONDS} s per measure; {n} rounds of: sysbench oltp_write_only "
          "on the native disk, then on lab-iofs")
    with Run(experiment="bench-native") as native_run, Run(experiment="bench-iofs") as iofs_run:
        p_native, p_iofs = plan(False), plan(True)
        native = Topology.deploy(p_native, p_native.cells[0], native_run)
        try:
            fuse = Topology.deploy(p_iofs, p_iofs.cells[0], iofs_run)
            try:
                sb_native, sb_iofs = Sysbench(native), Sysbench(fuse)
                for name, sb in (("native", sb_native), ("lab-iofs", sb_iofs)):
                    print(f"{name}: innodb_flush_method={sb.flush_method}, "
                          f"innodb_log_file_buffering={sb.buffering}")
                s = run_rounds(n, [
                    ("native", lambda: {f"native {k}": v for k, v in sb_native.once().items()}),
                    ("lab-iofs", lambda: {f"iofs {k}": v for k, v in sb_iofs.once().items()}),
                ])
            finally:
                fuse.teardown()
        finally:
            native.teardown()
    b = Bench("bench_iofs")
    b.figure(f"sysbench oltp_write_only on lab-iofs, no fault ({THREADS} threads)",
             s["iofs tps"], "tx/s", peer="the same on the native disk",
             peer_samples=s["native tps"],
             target=Target(">=", TARGET_RATIO, on="ratio",
                           text=f"ratio >= {TARGET_RATIO:g} (keeps >= 50 %)"))
    b.figure(f"its 95th percentile latency on lab-iofs ({THREADS} threads)", s["iofs p95"], "s",
             peer="the same on the native disk", peer_samples=s["native p95"])
    return b.finish()


if __name__ == "__main__":
    sys.exit(main())
