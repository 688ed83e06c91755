"""The pytest plugin on real servers: a passing and a failing experiment collected and run by
pytest, a failed cell kept with --lab-keep and taken down with `lab down`, and the
lab_topology fixture killing a replica and tearing down after the test raised."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys

import pytest

from runners.runtime import runtime_root

from .conftest import ROOT, our_processes, require

pytest_plugins = ["pytester"]

# pytester's runs are in a directory of their own, without the project's addopts: they keep
# the files' order too (-p no:randomly), unless a test asks for pytest-randomly itself
PLUGIN = ("-p", "lab.pytest_plugin", "-p", "no:randomly")

PASSES = """\
experiment "tiny-pass" {
  tags smoke
  duration 5s
  topology replication {
    engine mariadb
    primary db1
    replicas db2
  }
  workload writes: probe {
    target db1
    every 10ms
  }
  expect downtime(writes) < 2s
  expect lost_writes == 0
}
"""

# A probe reading on the replica that is killed for 2 s: its downtime cannot be under 500 ms.
FAILS = """\
experiment "tiny-fail" {
  tags smoke
  duration 6s
  topology replication {
    engine mariadb
    primary db1
    replicas db2
  }
  workload reads: probe {
    target db2
    operation read
    every 10ms
  }
  at 1s kill db2
  at 3s start db2
  expect downtime(reads) < 500ms
}
"""
FAILS_EXPECT_LINE = 16


def test_a_passing_and_a_failing_experiment_run_as_tests(pytester: pytest.Pytester) -> None:
    require("mariadbd", "dbdeployer")
    pytester.makefile(".exp", tiny_pass=PASSES, tiny_fail=FAILS)
    db = pytester.path / "results.db"
    result = pytester.runpytest(*PLUGIN, "--lab-db", str(db), "-m", "smoke")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert f"tiny_fail.exp:{FAILS_EXPECT_LINE}:3: expect downtime(reads) < 500ms" in out
    measured = re.search(r"FAIL downtime\(reads\)\.max = ([\d.]+) s \(\d+ outage windows?\); "
                         r"expected < 500ms: fails", out)
    assert measured and float(measured.group(1)) >= 1.5, out[-3000:]
    assert "resolution: ± 10.0 ms" in out and "Traceback" not in out
    runs = {r[0]: r[1:] for r in sqlite3.connect(db).execute(
        "select experiment, status, exit_code from runs")}
    assert runs == {"tiny-pass": ("passed", 0), "tiny-fail": ("failed", 1)}
    cells = sqlite3.connect(db).execute("select count(*) from cells").fetchone()[0]
    assert cells == 2
    assert not our_processes()


def test_lab_keep_keeps_the_failed_cell_until_lab_down(pytester: pytest.Pytester) -> None:
    require("mariadbd", "dbdeployer")
    pytester.makefile(".exp", tiny_fail=FAILS)
    db = pytester.path / "results.db"
    # In a process of its own: the kept run's owner is gone when it ends, as after a session.
    result = pytester.runpytest_subprocess(*PLUGIN, "--lab-db", str(db), "--lab-keep")
    result.assert_outcomes(failed=1)
    found = re.search(r"`lab down ([0-9a-f]{12})` takes them down", result.stdout.str())
    assert found, result.stdout.str()[-3000:]
    assert our_processes(), "the failed cell's servers were not kept"
    down = subprocess.run([sys.executable, "-m", "lab.cli", "down", found.group(1)], cwd=ROOT,
                          env=dict(os.environ), capture_output=True, text=True, timeout=120)
    assert down.returncode == 0, down.stderr
    assert not our_processes()


FIXTURE_TEST = '''
import MySQLdb
import pytest

TEXT = {text!r}


def test_kill_a_replica(lab_topology):
    topo = lab_topology(text=TEXT)
    with open("run_id", "w") as f:
        f.write(topo.run_id)
    db2 = topo.endpoints["db2"]
    MySQLdb.connect(**db2.connect_args(), connect_timeout=2).close()  # up
    topo.fault("kill db2")
    with pytest.raises(MySQLdb.OperationalError):
        MySQLdb.connect(**db2.connect_args(), connect_timeout=2)
    assert [op.type for op in topo.history if op.f == "kill"] == ["invoke", "ok"]
    raise RuntimeError("the application broke")
'''


def test_the_fixture_kills_a_replica_and_tears_down_after_the_test_raised(
        pytester: pytest.Pytester) -> None:
    require("mariadbd", "dbdeployer")
    pytester.makepyfile(test_app=FIXTURE_TEST.format(text=PASSES))
    result = pytester.runpytest(*PLUGIN, "test_app.py")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "RuntimeError: the application broke" in out, out[-3000:]
    run_id = (pytester.path / "run_id").read_text()
    assert not (runtime_root() / run_id).exists()
    assert not our_processes()
