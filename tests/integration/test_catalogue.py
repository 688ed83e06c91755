"""The workshop's lessons run as written, and with them the catalogue: every `$ lab ...` line
of docs/workshop/NN-*.md is run in order (RUN is the id of the lesson's last `lab run`), each
must exit 0, and every expectation of each run must hold. An experiment no lesson runs (the
calibration files) runs on its own here. Experiments that need what this machine lacks
(ProxySQL, mongod, a MySQL tarball) skip with the reason; the long benchmark sweeps run only
with LAB_CATALOGUE_LONG=1. Each experiment runs once in the whole suite."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dsl.api import load_plan
from runners.components import MissingComponent
from runners.disk import disk_nodes
from runners.topology import check_components
from tests.lessons import Command, commands, lessons, substitute

from .conftest import ROOT, our_processes

LAB = [sys.executable, "-m", "lab.cli"]
LESSONS = lessons()
TAUGHT = {(ROOT / f).resolve() for p in LESSONS for c in commands(p) if c.sub == "run"
          for f in c.files}
# the calibration experiments (faults of known size, expectations = the physical truth within
# a stated tolerance) run here too: docs/validity.md is generated from the same files
EXPERIMENTS = [p for p in sorted((ROOT / "experiments").glob("*.exp")) + sorted(
    (ROOT / "experiments" / "calibration").glob("*.exp")) if p.resolve() not in TAUGHT]
LONG = {"io-capacity-sweep.exp": "27 cells of 60 s",
        "steps-benchmark.exp": "2 cells of about 2 minutes"}


def _skip_reason(path: Path) -> str | None:
    if path.name in LONG and not os.environ.get("LAB_CATALOGUE_LONG"):
        return f"long benchmark ({LONG[path.name]}): set LAB_CATALOGUE_LONG=1 to run it"
    plan = load_plan(str(path))
    try:
        check_components(plan)
    except MissingComponent as e:
        return str(e)
    if disk_nodes(plan.actions()) and os.geteuid() != 0:
        return "disk full mounts a tmpfs: needs root"
    if plan.engine.flavor != "mariadb" and not os.environ.get("LAB_SANDBOX_BINARY"):
        return f"engine {plan.engine.flavor} needs its tarball in LAB_SANDBOX_BINARY"
    return None


def _last_run(home: Path) -> dict[str, Any]:
    db = sqlite3.connect(home / "results.db")
    try:
        rid, summary = db.execute(
            "select id, summary from runs order by started_at desc, rowid desc limit 1").fetchone()
    finally:
        db.close()
    out: dict[str, Any] = json.loads(summary)
    out["run_id"] = rid
    return out


def _assert_every_expectation_holds(summary: dict[str, Any], where: str) -> None:
    failed = [(c["label"], e["text"], e["explanation"]) for c in summary["cells"]
              for e in c["expectations"] if e["passed"] is not True]
    errors = [(c["label"], c["error"]) for c in summary["cells"] if c.get("error")]
    assert not errors, (where, errors)
    assert not failed, (where, failed)


def _quickstart(summary: dict[str, Any], home: Path) -> None:
    """What the tour promises, beyond its expectations: the measurements behind them."""
    cell = summary["cells"][0]
    # the healthy replica was read right after each write, and each write became visible there
    db3 = cell["measurements"]["stale_reads"]["subjects"]["ryw on db3"]
    assert db3["eligible_reads"] > 100 and db3["visibility"]["unseen"] == 0
    assert 0 < db3["visibility"]["p50"] < 1
    # the killed replica shows up as an outage of the readers that read from it
    assert cell["measurements"]["downtime"]["subjects"]["ryw on db2"]["longest"] > 5
    db = sqlite3.connect(home / "results.db")
    try:
        n_ops = db.execute("select count(*) from operations where run_id = ?",
                           [summary["run_id"]]).fetchone()[0]
        faults = [r[0] for r in db.execute("select name from faults where run_id = ?",
                                            [summary["run_id"]])]
    finally:
        db.close()
    assert n_ops > 1000
    assert "kill" in faults and "start" in faults


MORE_CHECKS = {"quickstart.exp": _quickstart}


def _run(argv: list[str], env: dict[str, str], where: str) -> subprocess.CompletedProcess[str]:
    out = subprocess.run([*LAB, *argv[1:]], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, (where, out.returncode, out.stderr[-3000:])
    return out


@pytest.mark.parametrize("lesson", LESSONS, ids=[p.stem for p in LESSONS])
def test_lesson_runs_as_written(lesson: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = dict(os.environ, LAB_HOME=str(home))
    run_id: str | None = None
    skipped: list[str] = []
    ran = 0
    for cmd in commands(lesson):
        where = f"{cmd.lesson}:{cmd.line}: $ {cmd.text}"
        if cmd.sub == "run":
            path = ROOT / cmd.files[0]
            reason = _skip_reason(path)
            if reason:
                skipped.append(f"{cmd.text}: {reason}")
                run_id = None
                continue
            _run(cmd.argv, env, where)
            summary = _last_run(home)
            assert summary["source"] and Path(summary["source"]).name == path.name, where
            _assert_every_expectation_holds(summary, where)
            if path.name in MORE_CHECKS:
                MORE_CHECKS[path.name](summary, home)
            run_id = summary["run_id"]
            ran += 1
            assert not our_processes()
        elif _needs_a_run(cmd) and run_id is None:
            skipped.append(f"{cmd.text}: its run did not run here")
        else:
            out = _run(substitute(cmd, run_id), env, where)
            assert out.stdout.strip(), where
            ran += 1
    if not ran:
        pytest.skip("; ".join(skipped))


def _needs_a_run(cmd: Command) -> bool:
    return "RUN" in cmd.argv or cmd.sub in ("runs", "show")


@pytest.mark.parametrize("path", EXPERIMENTS,
                         ids=[str(p.relative_to(ROOT / "experiments"))[:-4] for p in EXPERIMENTS])
def test_experiment_no_lesson_runs_holds(path: Path, tmp_path: Path) -> None:
    reason = _skip_reason(path)
    if reason:
        pytest.skip(reason)
    env = dict(os.environ, LAB_HOME=str(tmp_path / "home"))
    out = subprocess.run([*LAB, "run", str(path), "--json"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.stdout, out.stderr[-3000:]
    _assert_every_expectation_holds(json.loads(out.stdout), path.name)
    assert out.returncode == 0
    assert not our_processes()
