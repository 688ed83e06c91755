"""``disk full`` on a real server (root): a probe writes every millisecond, db1's data directory
fills at 3 s and is freed at 6 s. The writes are down for about the time the disk is full,
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
  expect downtime(w) >= 2.5s
  expect downtime(w) <= 4s
  expect errors(w) > 0
}
"""


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
    assert "disk free db1" not in cell["healed"]  # the timeline freed it
    mounts = Path("/proc/self/mounts").read_text()
    assert os.environ["LAB_RUNTIME"] not in mounts  # the tmpfs is unmounted
    assert not our_processes()
