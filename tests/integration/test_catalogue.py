"""Every experiment in the catalogue runs with `lab run` where its components exist, and its
expectations hold. Experiments that need what this machine lacks (ProxySQL, mongod, a MySQL
tarball) skip with the reason; the long benchmark sweeps run only with LAB_CATALOGUE_LONG=1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dsl.api import load_plan
from runners.components import MissingComponent
from runners.disk import disk_nodes
from runners.topology import check_components

from .conftest import ROOT, our_processes

# the calibration experiments (faults of known size, expectations = the physical truth within
# a stated tolerance) run here too: docs/validity.md is generated from the same files
EXPERIMENTS = sorted((ROOT / "experiments").glob("*.exp")) + sorted(
    (ROOT / "experiments" / "calibration").glob("*.exp"))
COVERED_ELSEWHERE = {"quickstart.exp"}  # tests/integration/test_run.py
LONG = {"io-capacity-sweep.exp": "27 cells of 60 s", "steps-benchmark.exp": "about 3 minutes"}


def _skip_reason(path: Path) -> str | None:
    if path.name in COVERED_ELSEWHERE:
        return "run end to end by test_run.py"
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


@pytest.mark.parametrize("path", EXPERIMENTS,
                         ids=[str(p.relative_to(ROOT / "experiments"))[:-4] for p in EXPERIMENTS])
def test_experiment_runs_and_its_expectations_hold(path: Path, tmp_path: Path) -> None:
    reason = _skip_reason(path)
    if reason:
        pytest.skip(reason)
    env = dict(os.environ, LAB_HOME=str(tmp_path / "home"))
    out = subprocess.run([sys.executable, "-m", "lab.cli", "run", str(path), "--json"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.stdout, out.stderr[-3000:]
    summary = json.loads(out.stdout)
    failed = [(c["label"], e["text"], e["explanation"]) for c in summary["cells"]
              for e in c["expectations"] if e["passed"] is not True]
    errors = [(c["label"], c["error"]) for c in summary["cells"] if c.get("error")]
    assert not errors, errors
    assert not failed, failed
    assert out.returncode == 0
    assert not our_processes()
