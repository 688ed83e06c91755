"""ProxySQL on the container back-end in front of replication and of two primaries, each with
a writer failure, and the faults of ProxySQL's own process (its container killed, started,
frozen, restarted): the catalogue's native files (experiments/proxysql-replication-failover.exp,
proxysql-two-primaries.exp, proxysql-router-faults.exp) run again with ``lab run --backend
containers`` and every expectation must hold there too (Galera behind ProxySQL on containers
is the catalogue's containers-proxysql.exp). ProxySQL runs in a container of its own, made
from this machine's binary; nothing of the run is left afterwards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT, our_processes, require
from .test_containers import _left_by, _require_podman

pytestmark = pytest.mark.integration
LAB = [sys.executable, "-m", "lab.cli"]


@pytest.mark.parametrize("name", ["proxysql-replication-failover", "proxysql-two-primaries",
                                  "proxysql-router-faults"])
def test_proxysql_experiment_holds_on_containers(name: str, tmp_path: Path) -> None:
    _require_podman()
    require("proxysql")
    env = dict(os.environ, LAB_HOME=str(tmp_path / "home"))
    out = subprocess.run([*LAB, "run", str(ROOT / "experiments" / f"{name}.exp"),
                          "--backend", "containers", "--json"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode in (0, 1), out.stderr[-3000:]
    summary = json.loads(out.stdout)
    cell = summary["cells"][0]
    failed = [(e["text"], e["explanation"]) for e in cell["expectations"]
              if e["passed"] is not True]
    assert not cell.get("error") and not failed, (cell.get("error"), failed,
                                                  out.stderr[-3000:])
    assert out.returncode == 0
    assert _left_by(summary["run_id"]) == []
    assert not [p for p in our_processes() if "proxysql" in p]
