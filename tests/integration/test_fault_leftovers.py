"""No leftovers after Ctrl-C, nor after ``kill -9`` of the lab plus ``lab gc``: a run that holds at
once a CPU limit, a memory limit, a clock skew and a full data directory on one node is
interrupted while all four are in force (with ProxySQL in front when this machine has it).
Afterwards no cgroup named for the run is left, no
tmpfs under its directory, no process of the run (its recorded pids, any process whose command
line or libfaketime offset file points into the run's directory), and the stored run keeps what
was measured (interrupted, or abandoned once ``lab gc`` ran, with its history).

``LEFTOVER_CHECKS`` is the list of what is looked for: each check takes the run's trace and
returns what it found left. A new fault family that leaves something on the host (a FUSE
mount and its daemon) adds its check there; after ``kill -9`` and before ``lab gc`` every
check must find its leftover, so a check that can never fail is caught too.

Two runs of about 20 s of server time each (a primary and a replica).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from runners import cgroups
from runners.components import find
from runners.runtime import alive, mounts_under

from .conftest import ROOT, our_processes, require

LAB = [sys.executable, "-m", "lab.cli"]
pytestmark = pytest.mark.integration

EXPERIMENT = """experiment "leftovers-it" {
  duration 5m
  topology replication { primary db1  replicas db2 }
  workload w: probe { target db1  every 10ms }
ROUTER
  at 1s cpu limit db1 to 50%
  at 2s memory limit db1 to 2G
  at 3s clock skew db1 by +30s
  at 4s disk full db1
  at 4s io delay db2 1ms on reads
}
"""
ROUTER = "  router proxysql { writers db1  readers db2 }"


def experiment_text() -> str:
    """The experiment, with ProxySQL in front when it is here (its leftovers are checked)."""
    return EXPERIMENT.replace("ROUTER\n", ROUTER + "\n" if find("proxysql").ok else "")


# all in force when stopped (lab-iofs cannot share db1's data directory with the tmpfs)
FAULTS = ("cpu_limit", "memory_limit", "clock_skew", "disk_full", "io_delay")


@dataclass
class RunTrace:
    """What the run was, seen from outside while its faults were in force."""

    run_id: str
    run_dir: Path
    pids: list[tuple[int, int | None]] = field(default_factory=list)  # (pid, start time)


def cgroups_left(t: RunTrace) -> list[str]:
    """Groups named for the run (``rcl-<run>-<node>``): cgroup v1 under cpu and memory, and
    the network groups in the cgroup v2 hierarchy."""
    out: list[str] = []
    unified = cgroups.unified_dir()
    for base in [cgroups.CGROUP_ROOT / c for c in cgroups.CONTROLLERS] + (
            [unified] if unified is not None else []):
        if base.is_dir():
            out += [str(d) for d in base.iterdir()
                    if d.name.startswith(cgroups.group_name(t.run_id, ""))]
    return out


def mounts_left(t: RunTrace) -> list[str]:
    """Mounts at or below the run's directory (the data directory's tmpfs)."""
    return [str(p) for p in mounts_under(t.run_dir, Path("/proc/mounts").read_text())]


def recorded_processes_left(t: RunTrace) -> list[str]:
    """The processes the run recorded (processes.json) that still run, same start time."""
    return [f"pid {pid}" for pid, start in t.pids if alive(pid, start)]


def _live_pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and alive(int(p.name))]


def processes_in_run_dir_left(t: RunTrace) -> list[str]:
    """Any live process whose command line names the run's directory (pgrep -f, by hand)."""
    needle = str(t.run_dir).encode()
    out: list[str] = []
    for pid in _live_pids():
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if needle in cmdline:
            words = cmdline.replace(b"\0", b" ").decode(errors="replace")
            out.append(f"pid {pid}: {words}")
    return out


def proxysql_left(t: RunTrace) -> list[str]:
    """ProxySQL processes (its watchdog and its worker) serving the run's directory."""
    return [p for p in processes_in_run_dir_left(t) if "proxysql" in p]


def fuse_daemons_left(t: RunTrace) -> list[str]:
    """lab-iofs daemons serving a directory of the run (the FUSE layer of ``io delay``)."""
    return [p for p in processes_in_run_dir_left(t) if "lab-iofs" in p]


def skewed_clocks_left(t: RunTrace) -> list[str]:
    """Any live process reading its clock through libfaketime from the run's offset file."""
    needle = f"FAKETIME_TIMESTAMP_FILE={t.run_dir}/".encode()
    out: list[str] = []
    for pid in _live_pids():
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if needle in env:
            out.append(f"pid {pid} under libfaketime")
    return out


Check = Callable[[RunTrace], list[str]]
# name -> check; a FUSE fault family adds e.g. ("fuse mounts and daemons", fuse_left) here
LEFTOVER_CHECKS: list[tuple[str, Check]] = [
    ("cgroups", cgroups_left),
    ("mounts", mounts_left),
    ("recorded processes", recorded_processes_left),
    ("processes in the run directory", processes_in_run_dir_left),
    ("skewed clocks", skewed_clocks_left),
    ("FUSE daemons", fuse_daemons_left),
    ("ProxySQL", proxysql_left),
]


def checks() -> list[tuple[str, Check]]:
    """The checks that apply: ProxySQL's only when the run has it."""
    return [(n, c) for n, c in LEFTOVER_CHECKS if n != "ProxySQL" or find("proxysql").ok]


def leftovers(t: RunTrace) -> dict[str, list[str]]:
    found = {name: check(t) for name, check in checks()}
    return {name: what for name, what in found.items() if what}


def _query(db: Path, sql: str) -> list[tuple[object, ...]]:
    try:
        with sqlite3.connect(db, timeout=5) as c:
            return list(c.execute(sql).fetchall())
    except sqlite3.Error:
        return []


def start_and_wait_for_the_faults(tmp_path: Path) -> tuple[subprocess.Popen[str], RunTrace,
                                                            dict[str, str]]:
    exp = tmp_path / "leftovers.exp"
    exp.write_text(experiment_text())
    env = dict(os.environ, LAB_HOME=str(tmp_path / "home"))
    db = tmp_path / "home" / "results.db"
    proc = subprocess.Popen([*LAB, "run", str(exp)], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 90
    active: set[str] = set()
    while time.monotonic() < deadline and proc.poll() is None:
        rows = _query(db, "select f from operations where type = 'ok' and f in "
                          f"({', '.join(repr(f) for f in FAULTS)})")
        active = {str(r[0]) for r in rows}
        if active == set(FAULTS):
            break
        time.sleep(0.3)
    if active != set(FAULTS):
        proc.kill()
        _, err = proc.communicate(timeout=60)
        subprocess.run([*LAB, "gc"], cwd=ROOT, env=env, capture_output=True, timeout=120)
        pytest.fail(f"the faults never were all in force ({sorted(active)}): {err[-3000:]}")
    run_id = str(_query(db, "select id from runs")[0][0])
    run_dir = Path(os.environ["LAB_RUNTIME"]) / run_id
    records = json.loads((run_dir / "processes.json").read_text())
    trace = RunTrace(run_id, run_dir, [(r["pid"], r["start_time"]) for r in records])
    assert any(r["name"].startswith("mariadbd") for r in records), records
    return proc, trace, env


def assert_the_history_is_kept(db: Path, status: str) -> None:
    assert [r[0] for r in _query(db, "select status from runs")] == [status]
    faults = {str(r[0]) for r in _query(db, "select f from operations where type = 'ok'")}
    assert set(FAULTS) <= faults, faults
    writes = _query(db, "select count(*) from operations where f = 'write'")[0][0]
    assert isinstance(writes, int) and writes > 10


def _needs() -> None:
    if os.geteuid() != 0:
        pytest.skip("cgroups and disk full need root")
    if not (cgroups.available("cpu") and cgroups.available("memory")):
        pytest.skip("cgroup v1 cpu and memory controllers not mounted")
    require("mariadbd", "dbdeployer", "faketime", "lab-iofs")
    if not os.path.exists("/dev/fuse"):
        pytest.skip("io delay mounts lab-iofs (FUSE): /dev/fuse is missing")


def test_ctrl_c_leaves_nothing_behind(tmp_path: Path) -> None:
    _needs()
    proc, trace, _ = start_and_wait_for_the_faults(tmp_path)
    in_force = {"cgroups", "mounts", "skewed clocks", "FUSE daemons"} | (
        {"ProxySQL"} if find("proxysql").ok else set())
    assert leftovers(trace).keys() >= in_force  # all in force
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=90)
    assert proc.returncode == 3, err[-3000:]
    assert leftovers(trace) == {}
    assert not trace.run_dir.exists()
    assert_the_history_is_kept(tmp_path / "home" / "results.db", "interrupted")
    assert not our_processes()


def test_kill_9_then_lab_gc_leaves_nothing_behind(tmp_path: Path) -> None:
    _needs()
    proc, trace, env = start_and_wait_for_the_faults(tmp_path)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    # nothing tore the run down: every check finds what it looks for (none is blind)
    left = leftovers(trace)
    assert set(left) == {name for name, _ in checks()}, left
    gc = subprocess.run([*LAB, "gc"], cwd=ROOT, env=env, capture_output=True, text=True,
                        timeout=120)
    assert gc.returncode == 0, gc.stderr
    assert "marked 1 run(s) abandoned" in gc.stdout, gc.stdout
    assert leftovers(trace) == {}
    assert not trace.run_dir.exists()
    assert_the_history_is_kept(tmp_path / "home" / "results.db", "abandoned")
    assert not our_processes()
