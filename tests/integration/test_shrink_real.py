"""`lab shrink` on real servers, a planted failure (issue 26, "Done when"): of a timeline's three
statements only one makes the expectation fail, and the shrink returns that one.

The file: replication 1+1, 100 writes/s on db1 for 7 s, ``expect downtime(writes) < 1.5s``.
A kill of db1 for 2 s stops every write for at least 2 s (measured 2.24 s); pausing db2 for
300 ms and stopping its replication for 1 s leave the writes on db1 untouched (asynchronous
replication: the primary never waits for its replica). Without a sync at commit: four tests
at a time on two cores once stalled a write for over 1 s with no fault at all (the sync of a
busy disk), and the shrink then rightly returned "no fault". ddmin judges four candidates: no
fault (passes), the pause (passes), the kill and the stop (fails), the kill alone (fails):
``--max-candidates 4`` ends it there, before the kill's ``for`` is shortened (below about
1 s the verdict would hang on how fast db1 restarts), so the written file holds exactly the
planted statement. Five runs in all, about 13 s each.
"""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

from dsl.api import load_experiment
from dsl.space import Entry, timeline_entries

from .conftest import ROOT, our_processes, require

LAB = [sys.executable, "-m", "lab.cli"]

PLANTED = """\
experiment "planted-kill" {
  duration 7s
  topology replication {
    primary db1
    replicas db2
    config { innodb_flush_log_at_trx_commit = 2  sync_binlog = 0 }  # the disk's stalls: not ours
  }
  workload writes: unique_writes { target db1  rate 100/s  clients 2 }
  at 1s pause db2 for 300ms
  at 2s kill db1 for 2s
  at 5s stop replication db2 for 1s
  expect downtime(writes) < 1.5s
}
"""


def _lab(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LAB, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)


def test_shrinking_a_planted_failure_returns_the_one_action_that_matters(
        tmp_path: Path) -> None:
    require("mariadbd", "dbdeployer")
    env = dict(os.environ, LAB_HOME=str(tmp_path / "home"))
    source = tmp_path / "planted.exp"
    source.write_text(PLANTED, encoding="utf-8")
    db_path = tmp_path / "home" / "results.db"

    first = _lab(env, "run", str(source))
    assert first.returncode == 1, (first.stdout + first.stderr)[-3000:]
    m = re.search(r"run ([0-9a-f]{12}): failed", first.stdout)
    assert m, first.stdout[-3000:]
    failing = m.group(1)

    shrunk = _lab(env, "shrink", failing, "--fails", "1", "--of", "1", "--max-candidates", "4")
    out = shrunk.stdout + shrunk.stderr
    assert shrunk.returncode == 0, out[-3000:]
    assert "Traceback" not in out
    assert "(3 statements -> 1): at 2s kill db1 for 2s" in out, out[-3000:]
    dest = tmp_path / "home" / "schedules" / f"{failing}-shrunk.exp"
    assert f"written to {dest}" in out

    # the written file: a valid experiment whose timeline is the planted statement alone
    checked = _lab(env, "check", str(dest))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    text = dest.read_text(encoding="utf-8")
    exp = load_experiment(str(dest))
    assert timeline_entries(text, exp) == [Entry(2.0, "kill db1", 2.0, node="db1")]
    assert [e.text for e in exp.expectations] == ["expect downtime(writes) < 1.5s"]

    # every trial stored, with its verdict and its .exp
    verdicts = re.findall(r"candidate (\d+): (.*)\n\s+(passes|fails): failed \d+ of 1 runs "
                          r"\(([0-9a-f]{12})\)", shrunk.stdout)
    assert [(i, v) for i, _, v, _ in verdicts] == [
        ("1", "passes"), ("2", "passes"), ("3", "fails"), ("4", "fails")], shrunk.stdout[-3000:]
    assert [s for _, s, _, _ in verdicts] == [
        "no fault", "at 1s pause db2 for 0.3s",
        "at 2s kill db1 for 2s; at 5s stop replication db2 for 1s", "at 2s kill db1 for 2s"]
    runs = dict(sqlite3.connect(db_path).execute("select id, status from runs").fetchall())
    trials = {rid: ("failed" if v == "fails" else "passed") for _, _, v, rid in verdicts}
    assert runs == {failing: "failed", **trials}
    for rid in trials:
        assert (tmp_path / "home" / "schedules" / f"{rid}.exp").is_file()
    listed = _lab(env, "runs")
    assert listed.returncode == 0
    assert all(rid in listed.stdout for rid in runs), listed.stdout
    assert not our_processes()
