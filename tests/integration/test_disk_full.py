"""``disk full`` on a real server (root): a probe writes every millisecond, db1's data directory
fills at 3 s and is freed at 6 s. The writes are down for the time the disk is full (from the
server's next allocation after the fill until the free, as the run recorded them),
they fail with the server's disk-full error, and the tmpfs is gone after the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT, our_processes, require

LAB = [sys.executable, "-m", "lab.cli"]
# What MariaDB answers a write that needs space it cannot get: ER_DISK_FULL, ER_ERROR_ON_WRITE,
# ER_GET_ERRNO (errno 28 from the engine), ER_RECORD_FILE_FULL ("the table is full").
DISK_FULL_CODES = {"1021", "1026", "1030", "1114"}

EXPERIMENT = """experiment "disk-full-it" {
  duration 10s
  topology single { node db1 }
  workload w: probe { target db1  every 1ms }
  at 3s disk full db1
  at 6s disk free db1
  expect downtime(w) >= 2s
  expect downtime(w) <= 4s
  expect errors(w) > 0
}
"""
# s: a full filesystem stops the writes at the server's next allocation (InnoDB extends the
# table's file when its last extent is used up: 0.34 s after the fill, with a write every
# millisecond, on an idle machine), and the first write after the free succeeds at once
TAKES_EFFECT = 1.0


def test_disk_full_then_free(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("disk full mounts a tmpfs: needs root")
    require("mariadbd", "dbdeployer")
    exp = tmp_path / "disk-full.exp"
    exp.write_text(EXPERIMENT)
    env = dict(os.environ, LAB_HOME=str(tmp_path / "home"))
    out = subprocess.run([*LAB, "run", str(exp), "--json"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=240)
    assert out.returncode in (0, 1), out.stderr[-3000:]
    summary = json.loads(out.stdout)
    cell = summary["cells"][0]
    assert cell["status"] in ("passed", "failed"), cell.get("error")
    by_code = cell["measurements"]["errors"]["subjects"]["w"]["by_code"]
    assert DISK_FULL_CODES & set(by_code), by_code  # the server's disk-full error
    exps = {e["text"]: e for e in cell["expectations"]}
    assert all(e["passed"] is True for e in exps.values()), exps
    # the outage is the disk's fullness as the run recorded it, whatever the machine's load
    # (with six tests at a time one read 2.34 s against a fixed 2.5 s): it begins after the
    # fill started, within TAKES_EFFECT of its end, and ends after the free started, within
    # TAKES_EFFECT of its end
    faults = {f["name"]: f for f in cell["faults"]}
    full, free = faults["disk_full"], faults["disk_free"]
    windows = cell["measurements"]["downtime"]["subjects"]["w"]["windows"]
    w = max(windows, key=lambda x: x["duration"])
    assert full["at"] <= w["start"] <= full["end"] + TAKES_EFFECT, (w, full)
    assert free["at"] <= w["end"] <= free["end"] + TAKES_EFFECT, (w, free)
    assert "disk free db1" not in cell["healed"]  # the timeline freed it
    mounts = Path("/proc/self/mounts").read_text()
    assert os.environ["LAB_RUNTIME"] not in mounts  # the tmpfs is unmounted
    assert not our_processes()
