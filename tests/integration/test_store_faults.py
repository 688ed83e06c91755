"""`lab run` on real servers under faults of the lab itself: the results database's disk
filling mid-run, and `kill -9` of `lab run` in each phase. Nothing measured is lost without
saying so, no traceback, no server left running; a killed run ends up `abandoned` after
`lab gc`, with what it recorded.

The same faults without servers: tests/unit/test_store_faults.py, test_abandoned_runs.py."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.store.fallback import read_fallback

from .conftest import ROOT, our_processes, require

LAB = [sys.executable, "-m", "lab.cli"]
FULL = "database or disk is full"


def _env(home: Path) -> dict[str, str]:
    return dict(os.environ, LAB_HOME=str(home), PYTHONPATH=str(ROOT))


def _ops(db: Path) -> int:
    try:
        with sqlite3.connect(db, timeout=1) as c:
            return int(c.execute("select count(*) from operations").fetchone()[0])
    except sqlite3.Error:
        return 0


def _runtime_dirs() -> list[Path]:
    rt = Path(os.environ["LAB_RUNTIME"])
    return [p for p in rt.iterdir() if (p / "run.json").exists()] if rt.exists() else []


@pytest.fixture
def small_home(tmp_path: Path) -> Iterator[Path]:
    """LAB_HOME on a 64 MB tmpfs of its own (the servers' run directories are elsewhere)."""
    if os.geteuid() != 0:
        pytest.skip("a tmpfs for the results database needs root")
    d = tmp_path / "home"
    d.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(d)],
                       capture_output=True, text=True)  # fmt: skip
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield d
    finally:
        if subprocess.run(["umount", str(d)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(d)], capture_output=True)


def test_disk_fills_mid_run(small_home: Path) -> None:
    require("mariadbd", "dbdeployer", "haproxy")
    db = small_home / "results.db"
    proc = subprocess.Popen([*LAB, "run", "experiments/quickstart.exp"], cwd=ROOT,
                            env=_env(small_home), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and _ops(db) < 500 and proc.poll() is None:
        time.sleep(0.2)
    assert _ops(db) >= 500, "the load never started"
    filler = small_home / "filler"
    with open(filler, "wb") as f:  # the disk fills while the load runs
        try:
            while True:
                f.write(b"\0" * (1 << 20))
                f.flush()
        except OSError:
            pass
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 3, err[-3000:]
    assert "Traceback" not in err
    assert "— error" in out and ": error (exit 3)" in out  # the report is printed anyway
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"Error: results database {db} cannot be written: {FULL}"), last
    assert "operations stored in the database" in last
    assert not our_processes()
    assert not _runtime_dirs()
    filler.unlink()  # room again: what the database holds is readable, the run is not `running`
    runs = subprocess.run([*LAB, "runs"], cwd=ROOT, env=_env(small_home), capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert runs.returncode == 0, runs.stderr
    with sqlite3.connect(db) as c:
        (status,) = c.execute("select status from runs").fetchone()
    assert status in ("abandoned", "error")
    assert _ops(db) >= 500  # what was stored before the disk filled is still there
    # the cell stopped early: its expectations are measured and judged on none of it
    assert "UNKNOWN" in out and "PASS" not in out and "FAIL" not in out, out
    for fb in small_home.glob("results.db.*.fallback.jsonl"):  # when there was room for it
        for run in [r for r in read_fallback(fb) if r["kind"] == "run"]:
            exps = run["summary"]["cells"][0]["expectations"]
            assert exps and [e["passed"] for e in exps] == [None] * len(exps)
            assert all(e["explanation"].startswith("not judged: the cell was stopped by an "
                                                   "error after ") for e in exps)  # fmt: skip


def test_ctrl_c_mid_load_judges_nothing(tmp_path: Path) -> None:
    """SIGINT (Ctrl-C) 3 s into a real load: exit 3, the run `interrupted`, each expectation
    of its cell measured on the partial load and unknown, with the reason (issue 24 item 7)."""
    require("mariadbd", "dbdeployer", "haproxy")
    home = tmp_path / "home"
    env = _env(home)
    exp = _short_quickstart(tmp_path)
    proc = subprocess.Popen([*LAB, "run", str(exp)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None and proc.stdout is not None
    seen: list[str] = []
    for line in proc.stderr:
        seen.append(line)
        if line.rstrip().endswith(": at 3s: kill db2"):
            break
    else:
        pytest.fail(f"the load never reached 3 s: {''.join(seen)[-2000:]}")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 3, "".join(seen)[-2000:] + err[-2000:]
    assert "Traceback" not in err
    assert not our_processes()
    with sqlite3.connect(home / "results.db") as c:
        (rid, status) = c.execute("select id, status from runs").fetchone()
        rows = c.execute("select text, passed, measured, explanation from expectations "
                         "where run_id = ? order by position", [rid]).fetchall()  # fmt: skip
    assert status == "interrupted"
    assert len(rows) == 4 and [r[1] for r in rows] == [None] * 4, rows
    for text, _, _, why in rows:
        assert why.startswith("not judged: the cell was interrupted after "), (text, why)
        assert "s of its 8 s load (its figures cover part of the cell only); on the load " \
               "until then: " in why
    assert any(r[2] is not None for r in rows)  # the partial figures are kept


def _short_quickstart(tmp_path: Path) -> Path:
    """The quickstart, shortened: 8 s of load, db2 killed at 3 s and started at 5 s."""
    exp = tmp_path / "quickstart.exp"
    exp.write_text((ROOT / "experiments/quickstart.exp").read_text()
                   .replace("duration 30s", "duration 8s").replace("at 10s kill", "at 3s kill")
                   .replace("at 20s start", "at 5s start").replace("at 21s wait", "at 6s wait"))
    return exp


PHASES = ["starting the topology", "preparing tables", "at 3s: kill db2",
          "letting replication settle", "checking"]  # fmt: skip


@pytest.mark.parametrize("phase", PHASES)
def test_kill_9_in_each_phase(tmp_path: Path, phase: str) -> None:
    require("mariadbd", "dbdeployer", "haproxy")
    home = tmp_path / "home"
    db = home / "results.db"
    env = _env(home)
    exp = _short_quickstart(tmp_path)
    proc = subprocess.Popen([*LAB, "run", str(exp)], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    seen: list[str] = []
    for line in proc.stderr:  # the plain live view: "[lab] <cell>: <phase>"
        seen.append(line)
        if line.rstrip().endswith(": " + phase):
            break
    else:
        pytest.fail(f"phase {phase!r} never came: {''.join(seen)[-2000:]}")
    ops_before = _ops(db)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stderr.close()

    gc = subprocess.run([*LAB, "gc"], cwd=ROOT, env=env, capture_output=True, text=True,
                        timeout=120)  # fmt: skip
    assert gc.returncode == 0, gc.stderr
    assert "Traceback" not in gc.stderr
    assert "marked 1 run(s) abandoned" in gc.stdout, gc.stdout
    assert not our_processes()  # no leaked server
    assert not _runtime_dirs()

    with sqlite3.connect(db) as c:
        (rid,) = c.execute("select id from runs").fetchone()
    show = subprocess.run([*LAB, "show", rid[:6], "--json"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert show.returncode == 0, show.stderr
    summary = json.loads(show.stdout)
    assert summary["status"] == "abandoned"
    assert "is gone without finishing it" in summary["message"]
    assert _ops(db) >= ops_before  # what it recorded is kept
    for cell in summary["cells"]:  # killed mid-run: lab show measures what it stored
        if cell["operations"] and cell["status"] == "abandoned":
            assert cell["measurements"].get("throughput"), cell
            assert cell["expectations"] and all(e["passed"] is None
                                                for e in cell["expectations"])  # fmt: skip
    runs = subprocess.run([*LAB, "runs"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert "abandoned" in runs.stdout and "running" not in runs.stdout
