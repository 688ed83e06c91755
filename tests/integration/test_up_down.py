"""`lab up` keeps a topology up and prints its endpoints; `lab status` lists it; `lab down`
removes it completely; `lab gc` cleans what a killed `lab up` left."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runners import runtime
from runners.mysql import Address, Credentials, scalar

from .conftest import ROOT, our_processes, require

LAB = [sys.executable, "-m", "lab.cli"]


def _up(tmp_path: Path) -> tuple[subprocess.Popen[str], str, str]:
    env = dict(os.environ, LAB_HOME=str(tmp_path / "home"), COLUMNS="250")
    proc = subprocess.Popen([*LAB, "up", "experiments/quickstart.exp"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if "Stop with Ctrl-C" in line:
            break
    text = "".join(lines)
    m = re.search(r"run ([0-9a-f]{12})", text)
    assert m and "router.writer" in text, text
    return proc, m.group(1), text


def test_up_status_down(tmp_path: Path) -> None:
    require("mariadbd", "dbdeployer", "haproxy")
    proc, run_id, text = _up(tmp_path)
    try:
        m = re.search(r"router\.writer\s*│\s*127\.0\.0\.1:(\d+)", text)
        admin = re.search(r"admin user: (\S+) / (\S+)", text)
        assert m and admin, text
        port = scalar(Address("127.0.0.1", int(m.group(1))),
                      Credentials(admin.group(1), admin.group(2)), "SELECT @@read_only")
        assert int(port) == 0  # the router's writer is the writable primary
        status = subprocess.run([*LAB, "status"], cwd=ROOT, capture_output=True, text=True,
                                env=dict(os.environ, COLUMNS="250"))
        assert run_id in status.stdout and "alive" in status.stdout
        down = subprocess.run([*LAB, "down", run_id], cwd=ROOT, capture_output=True,
                              text=True, timeout=60)
        assert down.returncode == 0 and f"run {run_id} is down" in down.stdout
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not (Path(os.environ["LAB_RUNTIME"]) / run_id).exists()
    assert not our_processes()


@pytest.mark.parametrize("clean", ["gc", "down"])
def test_gc_or_down_removes_what_a_killed_lab_up_left(tmp_path: Path, clean: str) -> None:
    """After `kill -9` of `lab up`, `lab gc` (every dead run) and `lab down RUN` (that one)
    put back the same: its processes, its directory and its ports' claim (`lab down` once
    removed only the first two, leaving a kept Galera run's cgroups behind)."""
    require("mariadbd", "dbdeployer", "haproxy")
    proc, run_id, _ = _up(tmp_path)
    proc.send_signal(signal.SIGKILL)  # no teardown: the servers stay
    proc.wait(timeout=10)
    assert our_processes()
    status = subprocess.run([*LAB, "status"], cwd=ROOT, capture_output=True, text=True,
                            env=dict(os.environ, COLUMNS="250"))
    assert "dead" in status.stdout
    run_dir = Path(os.environ["LAB_RUNTIME"]) / run_id
    claims = [c for c in runtime.ports_dir().iterdir() if run_id in c.read_text()]
    assert claims
    argv = [*LAB, "gc"] if clean == "gc" else [*LAB, "down", run_id]
    out = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and run_id in out.stdout, out
    deadline = time.monotonic() + 10
    while our_processes() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not our_processes()
    assert not run_dir.exists()
    assert not [c for c in claims if c.exists()]
