"""Issue 11's language on real servers: ``kill router.writer`` resolves to the node the router
sends writes to when it fires, and ``for 2s`` undoes a fault 2 s after it began (both ends in
the history). Each test runs one cell of 15 s (well under 40 s of server time)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from .conftest import ROOT, our_processes, require

LAB = [sys.executable, "-m", "lab.cli"]

HEAD = """experiment "{name}" {{
  duration 15s
  topology replication {{ primary db1  replicas db2 }}
  router haproxy {{ writer db1  reader db2  check every 200ms }}
  workload writes: probe {{ target router.writer  every 10ms }}
"""


def _run(tmp_path: Path, name: str, body: str) -> tuple[dict, sqlite3.Connection]:  # type: ignore[type-arg]
    exp = tmp_path / f"{name}.exp"
    exp.write_text(HEAD.format(name=name) + body + "}\n")
    env = dict(os.environ, LAB_HOME=str(tmp_path / "home"))
    out = subprocess.run([*LAB, "run", str(exp), "--json"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=180)
    assert out.returncode in (0, 1), out.stderr[-3000:]
    summary = json.loads(out.stdout)
    assert summary["cells"][0]["status"] in ("passed", "failed"), summary["cells"][0]["error"]
    return summary, sqlite3.connect(tmp_path / "home" / "results.db")


def _faults(db: sqlite3.Connection, run_id: str) -> list[tuple[str, str, float, float]]:
    return [(r[0], r[1], r[2], r[3]) for r in db.execute(
        "select name, node, start_ns, end_ns from faults where run_id = ? order by start_ns",
        [run_id])]


def test_kill_router_writer_kills_the_node_the_router_writes_to(tmp_path: Path) -> None:
    require("mariadbd", "dbdeployer", "haproxy")
    summary, db = _run(tmp_path, "kill-router-writer", "  at 5s kill router.writer for 2s\n"
                                                       "  expect downtime(writes) > 1s\n")
    faults = _faults(db, summary["run_id"])
    names = [(f[0], f[1]) for f in faults]
    assert ("kill", "db1") in names, names  # the primary: the router's writer at 5 s
    assert ("start", "db1") in names, names  # the undo, on the resolved node
    kill = next(f for f in faults if f[0] == "kill")
    start = next(f for f in faults if f[0] == "start")
    assert 1.9 <= (start[2] - kill[2]) / 1e9 <= 2.5  # 2 s after the kill began (+ precision)
    details = [json.loads(r[0]) for r in db.execute(
        "select detail from faults where run_id = ? and name = 'kill'", [summary["run_id"]])
        if r[0]]
    assert details and details[0]["target"] == "router.writer"
    assert details[0]["resolved"] == "db1"
    assert summary["cells"][0]["expectations"][0]["passed"] is True
    assert not our_processes()


# `network link_down router.writer on clients for 2s` runs as experiments/router-writer-outage.exp
# in the workshop's lesson 3: tests/integration/test_catalogue.py checks its two ends there.
