"""`lab run` end to end on real servers: the quickstart (as an unprivileged user when the suite
runs as root: the lab needs no root for anything but a few faults), and Ctrl-C in the middle of a
run."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .conftest import ROOT, SESSION_DIR, our_processes, require

LAB = [sys.executable, "-m", "lab.cli"]


def _env(tmp_path: Path) -> dict[str, str]:
    return dict(os.environ, LAB_HOME=str(tmp_path / "home"))


UNPRIVILEGED = 65534  # nobody / nogroup on Debian


def _unprivileged(tmp_path: Path) -> tuple[list[str], dict[str, str], Path]:
    """The quickstart's command, environment and home for the user ``nobody`` when the suite
    runs as root (as the current user otherwise). The project's interpreter lives under /root
    (pyenv), which nobody cannot enter: Debian's python3 of the same minor version runs the
    lab with the project's installed packages instead."""
    if os.geteuid() != 0:
        return [*LAB], _env(tmp_path), tmp_path / "home"
    base = Path(tempfile.mkdtemp(prefix="nobody-", dir=SESSION_DIR))
    os.chmod(SESSION_DIR, 0o711)  # nobody may pass through to its own directory
    os.chown(base, UNPRIVILEGED, UNPRIVILEGED)
    site = next(Path(sys.prefix).glob("lib/python3*/site-packages"))
    env = dict(os.environ, HOME=str(base), LAB_HOME=str(base / "home"),
               LAB_RUNTIME=str(base / "rt"), PYTHONPATH=f"{ROOT}:{site}")
    cmd = ["setpriv", f"--reuid={UNPRIVILEGED}", f"--regid={UNPRIVILEGED}", "--clear-groups",
           f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}", "-m", "lab.cli"]
    return cmd, env, base / "home"


def test_quickstart_runs_end_to_end_and_measures(tmp_path: Path) -> None:
    require("mariadbd", "dbdeployer", "haproxy")
    lab, env, home = _unprivileged(tmp_path)
    out = subprocess.run([*lab, "run", "experiments/quickstart.exp", "--json"], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=240)
    assert out.returncode in (0, 1), out.stderr[-3000:]
    summary = json.loads(out.stdout)
    cell = summary["cells"][0]
    assert cell["status"] in ("passed", "failed"), cell.get("error")
    exps = {e["text"]: e for e in cell["expectations"]}
    down = exps["expect downtime(writes) < 1s"]
    assert down["measured"] is not None  # the writer probe's downtime was measured
    # every expectation holds: a broken lab or system would fail one of them
    assert all(e["passed"] is True for e in exps.values()), exps
    # the healthy replica was read right after each write, and each write became visible there
    db3 = cell["measurements"]["stale_reads"]["subjects"]["ryw on db3"]
    assert db3["eligible_reads"] > 100 and db3["visibility"]["unseen"] == 0
    assert 0 < db3["visibility"]["p50"] < 1
    # the killed replica shows up as an outage of the readers that read from it
    ryw = cell["measurements"]["downtime"]["subjects"]["ryw on db2"]
    assert ryw["longest"] > 5
    db = sqlite3.connect(home / "results.db")
    if os.geteuid() == 0:  # the run, its servers and its files belonged to nobody
        assert (home / "results.db").stat().st_uid == UNPRIVILEGED
        assert all(p.stat().st_uid == UNPRIVILEGED for p in (home.parent / "rt").iterdir())
    n_ops = db.execute("select count(*) from operations where run_id = ?",
                       [summary["run_id"]]).fetchone()[0]
    assert n_ops > 1000
    faults = [r[0] for r in db.execute("select name from faults where run_id = ?",
                                        [summary["run_id"]])]
    assert "kill" in faults and "start" in faults
    assert not our_processes()
    # the summary's fault timeline, in seconds since the load started (`at 10s kill db2`)
    kill = next(f for f in cell["faults"] if f["name"] == "kill")
    assert kill["node"] == "db2" and 9.9 < kill["at"] < 11 and kill["ok"] is True
    # `lab show` prints the compact matrix, `--all` every figure; no server is involved
    rid = summary["run_id"]
    show = subprocess.run([*LAB, "show", rid], cwd=ROOT, env=_env(tmp_path),
                          capture_output=True, text=True, timeout=60)
    assert show.returncode == 0 and "kill db2" in show.stdout and "lost writes" in show.stdout
    assert "downtime(ryw on db2).longest" not in show.stdout
    show_all = subprocess.run([*LAB, "show", rid, "--all"], cwd=ROOT, env=_env(tmp_path),
                              capture_output=True, text=True, timeout=60)
    assert "downtime(ryw on db2).longest" in show_all.stdout
    # the run against itself: every ratio that is defined is 1
    cmp = subprocess.run([*LAB, "compare", rid, rid, "--last", "10s", "--json"], cwd=ROOT,
                         env=_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert cmp.returncode == 0, cmp.stderr
    rows = {r["figure"]: r for r in json.loads(cmp.stdout)["rows"]}
    tput = rows["throughput(writes).mean last 10s"]
    assert tput["values"][0]["value"] > 0 and tput["ratios"][1]["value"] == 1.0
    assert rows["replication_lag(db3).max"]["ratios"][1]["value"] == 1.0


def test_sigint_tears_down_and_keeps_the_partial_history(tmp_path: Path) -> None:
    require("mariadbd", "dbdeployer", "haproxy")
    exp = tmp_path / "long.exp"
    exp.write_text((ROOT / "experiments/quickstart.exp").read_text()
                   .replace("duration 30s", "duration 5m"))
    env = _env(tmp_path)
    proc = subprocess.Popen([*LAB, "run", str(exp)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    db_path = tmp_path / "home" / "results.db"
    deadline = time.monotonic() + 90
    ops = 0
    while time.monotonic() < deadline and ops < 500:
        time.sleep(0.5)
        if db_path.exists():
            try:
                ops = sqlite3.connect(db_path).execute(
                    "select count(*) from operations").fetchone()[0]
            except sqlite3.Error:
                pass
    assert ops >= 500, "the load never started"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, err[-2000:]
    assert not our_processes()
    db = sqlite3.connect(db_path)
    status, = db.execute("select status from runs").fetchone()
    assert status == "interrupted"
    kept = db.execute("select count(*) from operations").fetchone()[0]
    assert kept >= ops
    runtime = Path(os.environ["LAB_RUNTIME"])
    assert not [p for p in runtime.iterdir() if (p / "run.json").exists()]
