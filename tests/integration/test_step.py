"""`lab run --step-delay` on real servers: the run pauses before each timeline action while
the probe keeps writing, each action starts at least the delay after its `at` (in the history),
the time between the actions is kept, and the notes say once that the run was stepped."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from .conftest import ROOT, our_processes, require

LAB = [sys.executable, "-m", "lab.cli"]
EXP = """experiment "stepped" {
  duration 4s
  topology single { node db1 }
  workload writes: probe { target db1  every 10ms }
  at 1s pause db1
  at 1.5s resume db1
}
"""


def test_step_delay_starts_each_action_after_its_pause(tmp_path: Path) -> None:
    require("mariadbd", "dbdeployer")
    exp = tmp_path / "stepped.exp"
    exp.write_text(EXP)
    env = dict(os.environ, LAB_HOME=str(tmp_path / "home"))
    out = subprocess.run([*LAB, "run", str(exp), "--step-delay", "1s", "--json"], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=120,
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "paused at" in out.stderr and "at 1s pause db1" in out.stderr
    summary = json.loads(out.stdout)
    cell = summary["cells"][0]
    notes = [n for n in cell["notes"] if n.startswith("stepped run:")]
    assert len(notes) == 1, cell["notes"]
    db = sqlite3.connect(tmp_path / "home" / "results.db")
    load_start, load_end = db.execute(
        "select load_start_ns, load_end_ns from cells where run_id = ?",
        [summary["run_id"]]).fetchone()
    starts = {name: (start - load_start) / 1e9 for name, start in db.execute(
        "select name, start_ns from faults where run_id = ? order by start_ns",
        [summary["run_id"]])}
    assert starts["pause"] >= 1 + 1.0, starts  # its at, plus the 1 s pause
    assert starts["resume"] >= 1.5 + 2.0, starts  # two pauses before it
    assert abs((starts["resume"] - starts["pause"]) - 1.5) < 0.3  # the spacing is kept
    assert (load_end - load_start) / 1e9 >= 4 + 2.0  # the load grew by the pauses
    # the probe kept writing during the pause before the first action
    writes = db.execute(
        "select count(*) from operations where run_id = ? and type = 'ok' and time_ns > ? "
        "and time_ns < ?", [summary["run_id"], load_start + int(1.05e9),
                            load_start + int(1.95e9)]).fetchone()[0]
    assert writes > 20
    assert not our_processes()
