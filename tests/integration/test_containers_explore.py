"""`lab explore --backend containers` of a native file on this machine's podman: the drawn
schedule runs in containers (the run records it, its stored .exp says `backend containers`),
`lab replay` of that run runs there again without being told, and nothing is left: no
container, network or podman service of the runs, the host's iptables chains and ip_forward
as before."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from dsl.api import load_experiment

from .conftest import ROOT, our_processes
from .test_containers import _host_state, _left_by, _podman_services, _require_podman

LAB = [sys.executable, "-m", "lab.cli"]

SPACE = """\
experiment "ctr-explore" {
  duration 6s
  topology replication { primary db1  replicas db2 }
  workload w: probe { target db1  every 20ms  timeout 5s }
  faults {
    between 1s and 3s
    pause any replica for 500ms..1s
  }
  expect downtime(w).error_windows == 0
}
"""
# the primary's client gets no error from a replica's pause; a stall of the host (with four
# tests at a time, a write on db1 took over a second once, 0.5 s after the resume) may slow it
# but not fail it (5 s). `downtime(w) < 1s` read 1.27 s then: the machine's, not the pause's.


@pytest.mark.host_network
def test_explore_on_containers_then_replay_there(tmp_path: Path) -> None:
    _require_podman()
    before = _host_state()
    env = dict(os.environ, LAB_HOME=str(tmp_path / "home"))
    f = tmp_path / "space.exp"
    f.write_text(SPACE, encoding="utf-8")
    x = subprocess.run([*LAB, "explore", str(f), "--runs", "1", "--seed", "3", "--backend",
                        "containers"], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=600)
    assert x.returncode == 0, (x.stdout + x.stderr)[-3000:]  # a replica's pause: no error
    m = re.search(r"schedule 1: run ([0-9a-f]{12}) passed: at [\d.]+s pause db2 for", x.stdout)
    assert m, x.stdout[-3000:]
    rid = m.group(1)
    stored = tmp_path / "home" / "schedules" / f"{rid}.exp"
    assert load_experiment(stored).backend == "containers"
    r = subprocess.run([*LAB, "replay", rid], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert f"replaying run {rid}: {stored} on containers" in r.stdout
    db = sqlite3.connect(tmp_path / "home" / "results.db")
    runs = db.execute("select id, backend, status from runs order by started_at").fetchall()
    assert [(b, s) for _, b, s in runs] == [("containers", "passed")] * 2, runs
    for run_id, _, _ in runs:
        assert _left_by(run_id) == []
    assert _podman_services() == []
    assert not our_processes()
    assert _host_state() == before
