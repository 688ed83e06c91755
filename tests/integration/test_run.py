"""`lab run` end to end on real servers: Ctrl-C in the middle of a run. (The quickstart runs as
the workshop's first lesson writes it: tests/integration/test_catalogue.py.)"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from .conftest import ROOT, our_processes, require

LAB = [sys.executable, "-m", "lab.cli"]


def _env(tmp_path: Path) -> dict[str, str]:
    return dict(os.environ, LAB_HOME=str(tmp_path / "home"))


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
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, err[-2000:]
    assert not our_processes()
    assert "downtime" in out and "interrupted" in out, out[-2000:]  # the cell's figures shown
    db = sqlite3.connect(db_path)
    status, summary = db.execute("select status, summary from runs").fetchone()
    assert status == "interrupted"
    assert [c["status"] for c in json.loads(summary)["cells"]] == ["interrupted"]
    kept = db.execute("select count(*) from operations").fetchone()[0]
    assert kept >= ops
    runtime = Path(os.environ["LAB_RUNTIME"])
    assert not [p for p in runtime.iterdir() if (p / "run.json").exists()]


def test_a_primary_restart_is_a_reconnect_not_a_replication_error(tmp_path: Path) -> None:
    """db1 restarts at 2 s: db2's IO thread is ``Connecting`` until db1 is back and goes on by
    itself. That is a reconnect (``io_reconnects``), not a stop: ``replication_errors(db2) ==
    0`` holds and the matrix says ``IO reconnected``."""
    require("mariadbd", "dbdeployer")
    exp = tmp_path / "reconnect.exp"
    exp.write_text('experiment "reconnect" {\n  duration 8s\n'
                   '  topology replication {\n    primary db1\n    replicas db2\n  }\n'
                   '  workload w: probe { target db1  every 50ms }\n'
                   '  at 2s restart db1\n'
                   '  expect replication_errors(db2) == 0\n}\n')
    proc = subprocess.run([*LAB, "run", str(exp), "--json"], cwd=ROOT, env=_env(tmp_path),
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    cell = json.loads(proc.stdout)["cells"][0]
    db2 = cell["measurements"]["replication_errors"]["subjects"]["db2"]
    assert db2["count"] == 0 and db2["io_reconnects"] >= 1, db2
    assert db2["reconnects"][0]["at"] >= 1.9 and db2["io_reconnecting"] is False, db2
    assert not our_processes()


def _stopped_run(tmp_path: Path, name: str, topology: str) -> str:
    """``lab run`` of a 5 s probe on two primaries with these topology lines, which must not
    pass; its output on one line (the tables wrap)."""
    require("mariadbd")
    exp = tmp_path / f"{name}.exp"
    exp.write_text(f'experiment "{name}" {{\n  duration 5s\n  topology primary_primary {{\n'
                   f'{topology}  }}\n  workload w: probe {{ target a }}\n}}\n')
    proc = subprocess.run([*LAB, "run", str(exp)], cwd=ROOT, env=_env(tmp_path),
                          capture_output=True, text=True, timeout=120)
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0, out[-2000:]
    return out


def test_a_setting_the_server_adjusted_stops_the_run(tmp_path: Path) -> None:
    """``max_connections = 5`` runs as 10 on MariaDB (its log says so, no client is told): the
    run stops once the servers are up, naming the node, the setting and both values."""
    out = _stopped_run(tmp_path, "clamped", "    nodes a, b\n"
                       "    config { max_connections = 5  innodb_io_capacity = 400 }\n")
    assert "a: max_connections = 5 runs as 10" in out, out[-2000:]
    assert "b: max_connections = 5 runs as 10" in out, out[-2000:]
    assert "adjusted to 10" in out and "innodb_io_capacity" not in out, out[-2000:]
    assert not our_processes()


def test_a_server_that_is_not_the_files_engine_stops_the_run(tmp_path: Path) -> None:
    """``engine mariadb 11.4`` on two primaries (this machine's mariadbd is 10.11): the run
    stops once the servers are up, naming each node and what it runs, and leaves nothing."""
    out = _stopped_run(tmp_path, "wrong-engine", "    engine mariadb 11.4\n    nodes a, b\n")
    assert "asks for engine mariadb 11.4" in out, out[-2000:]
    assert "a runs mariadb 10.11" in out and "b runs mariadb 10.11" in out, out[-2000:]
    assert not our_processes()
