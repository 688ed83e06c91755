"""Issue 21, item 4 on real servers: a whole Galera cluster killed in one action and brought back
by the timeline's `start g1, g2, g3` and by the end-of-run heal (positions recovered with
--wsrep-recover, the most advanced node bootstrapped, the others joined), a replication set
crashed and restarted together, and `kill -9` of the lab in the middle of a recovery followed
by `lab gc` leaving nothing running."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from .conftest import ROOT, our_processes, require
from .test_incident_faults import LAB, run_lab

pytestmark = pytest.mark.integration

GALERA = """experiment "crash" {{
  duration {duration}
  seed 3
  topology galera {{
    nodes g1, g2, g3
    config {{ innodb_flush_log_at_trx_commit = {flush} }}
  }}
  workload w: unique_writes {{ target g1, g2  clients 2  rate 300/s }}
{timeline}
  report lost_writes(w)
}}
"""


def reported(cell: dict[str, Any], metric: str) -> Any:
    return next(r["value"] for r in cell["reports"] if r["metric"] == metric)


def faults(ops: list[Any]) -> list[tuple[str, str | None]]:
    """(fault, node) of each nemesis op that ended well, in order."""
    return [(o.f, o.node) for o in ops if o.process == -1 and o.type == "ok"]


def _phases(ops: list[Any]) -> list[str]:
    return [f for f, _ in faults(ops) if f in ("recover_position", "bootstrap", "join")]


def test_the_timeline_recovers_a_galera_cluster_killed_at_once(tmp_path: Path) -> None:
    require("mariadbd", "galera", "rsync")
    cell, ops = run_lab(tmp_path, GALERA.format(duration="25s", flush=2, timeline=(
        "  at 6s kill g1, g2, g3 within 0s\n  at 10s start g1, g2, g3\n")))
    assert cell["status"] == "passed", cell.get("error")
    done = faults(ops)
    assert sorted(n for f, n in done if f == "kill") == ["g1", "g2", "g3"]
    assert _phases(ops) == ["recover_position"] * 3 + ["bootstrap", "join", "join"]
    start = next(o for o in ops if o.f == "start_nodes" and o.type == "ok")
    assert 0 < start.value["writable_after_seconds"] < 30
    assert set(start.value["positions"]) == {"g1", "g2", "g3"}
    # a process kill keeps the OS page cache: with = 2 nothing acknowledged is lost
    assert reported(cell, "lost_writes(w).count") == 0
    assert our_processes() == []


def test_the_heal_recovers_a_galera_cluster_left_down(tmp_path: Path) -> None:
    """No `start` on the timeline: the end-of-run heal recovers the cluster (never a node
    started alone into a new history), and lost_writes is judged on the recovered cluster."""
    require("mariadbd", "galera", "rsync")
    cell, ops = run_lab(tmp_path, GALERA.format(duration="15s", flush=0, timeline=(
        "  at 6s kill g1, g2, g3 within 1s\n")))
    assert cell["status"] in ("passed", "failed"), cell.get("error")
    assert _phases(ops) == ["recover_position"] * 3 + ["bootstrap", "join", "join"]
    lost = reported(cell, "lost_writes(w).count")
    assert isinstance(lost, float) and lost >= 0  # judged, never unknown
    assert any(h.startswith("recover the Galera cluster: bootstrap") for h in cell["healed"])
    assert our_processes() == []


def test_a_replication_set_crashes_and_restarts_together(tmp_path: Path) -> None:
    require("dbdeployer", "mariadbd")
    cell, ops = run_lab(tmp_path, """experiment "rc" {
  duration 20s
  seed 5
  topology replication { primary db1  replicas db2, db3 }
  workload w: unique_writes { target db1  rate 200/s }
  at 5s kill db1, db2, db3 within 1s
  at 9s start db1, db2, db3
  at 11s wait until db2 caught_up timeout 30s
  expect lost_writes(w) == 0
  expect missing_transactions(db3) == 0
}
""")
    assert cell["status"] == "passed", cell.get("error")
    starts = [n for f, n in faults(ops) if f == "start"]
    assert starts == ["db1", "db2", "db3"]  # the primary first
    assert our_processes() == []


def test_kill_9_during_a_recovery_then_gc_leaves_nothing(tmp_path: Path) -> None:
    require("mariadbd", "galera", "rsync")
    exp = tmp_path / "it.exp"
    exp.write_text(GALERA.format(duration="40s", flush=2, timeline=(
        "  at 5s kill g1, g2, g3\n  at 8s start g1, g2, g3\n")))
    # a runtime of its own (short: the servers' sockets are in it): their command lines name
    # it, and `lab gc` looks there
    runtime = Path(tempfile.mkdtemp(prefix="rcl-k9-", dir="/tmp"))
    env = dict(os.environ, LAB_HOME=str(tmp_path / "home"), LAB_RUNTIME=str(runtime))
    with open(tmp_path / "lab.out", "wb") as out:
        lab = subprocess.Popen([*LAB, "run", str(exp)], cwd=ROOT, env=env, stdout=out,
                               stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        seen = ""
        while time.monotonic() < deadline and lab.poll() is None:
            ps = subprocess.run(["ps", "-ewwo", "args="], capture_output=True, text=True).stdout
            seen = next((line for line in ps.splitlines() if str(runtime) in line and (
                "--wsrep-recover" in line or "--wsrep_start_position" in line)), "")
            if seen:
                break
            time.sleep(0.05)
        assert seen, (tmp_path / "lab.out").read_text()[-3000:]
        os.kill(lab.pid, signal.SIGKILL)
        lab.wait(10)
    finally:
        if lab.poll() is None:
            lab.kill()
    out = subprocess.run([*LAB, "gc"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    left = subprocess.run(["ps", "-ewwo", "args="], capture_output=True, text=True).stdout
    assert [line for line in left.splitlines() if str(runtime) in line and "ps -ewwo" not in line
            and ("mariadbd" in line or "lab.cli" in line)] == []
    assert our_processes() == []
    shutil.rmtree(runtime, ignore_errors=True)
