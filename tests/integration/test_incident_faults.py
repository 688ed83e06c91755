"""CPU starvation, memory pressure, clock skew, stalled I/O (lab-iofs) and `when` triggers on
real servers (the cgroup and lab-iofs ones need root). Each is a short run through ``lab
run``: the fault's effect is read back from the history, and nothing is left behind (no cgroup
named for the run, no mount, no process).
Not run by the author (written without servers); each is well under 60 s of server time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lab.store.db import Store
from runners import cgroups

from .conftest import ROOT, assert_capped, lab_iofs_left, our_processes, require

LAB = [sys.executable, "-m", "lab.cli"]
pytestmark = pytest.mark.integration


def run_lab(tmp_path: Path, text: str) -> tuple[dict[str, Any], list[Any]]:
    exp = tmp_path / "it.exp"
    exp.write_text(text)
    home = tmp_path / "home"
    env = dict(os.environ, LAB_HOME=str(home))
    out = subprocess.run([*LAB, "run", str(exp), "--json"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=240)
    assert out.returncode in (0, 1), out.stderr[-3000:]
    summary = json.loads(out.stdout)
    cell = summary["cells"][0]
    assert cell["status"] in ("passed", "failed"), cell.get("error")
    store = Store(home / "results.db")
    rid = store.conn.execute("select id from runs order by rowid desc limit 1").fetchone()[0]
    return cell, store.operations(rid, 1)


def last_run_id(tmp_path: Path) -> str:
    store = Store(tmp_path / "home" / "results.db")
    return str(store.conn.execute("select id from runs order by rowid desc limit 1").fetchone()[0])


def needs_cgroups() -> None:
    if os.geteuid() != 0:
        pytest.skip("cgroups need root")
    if not (cgroups.available("cpu") and cgroups.available("memory")):
        pytest.skip("cgroup v1 cpu and memory controllers not mounted")


def test_a_cpu_limit_caps_the_server_and_holds_back_a_cpu_bound_query(tmp_path: Path) -> None:
    """The limit, read from the kernel's accounting (cpu heal's detail): the server used at
    most its quota of CPU while limited, and its group was throttled in most periods the
    query ran; the query is slower than free. Wall-time ratios alone depend on what else
    runs: a free query slowed by tests beside it (4 s instead of 0.7 s) made a 3x ratio fail."""
    needs_cgroups()
    require("mariadbd", "dbdeployer")
    # about 0.7 s of CPU: about 7 s under a 10 % quota, inside the 11 s before the heal
    query = "SELECT BENCHMARK(1500000, MD5('x'))"
    cell, ops = run_lab(tmp_path, f"""experiment "cpu-it" {{
  duration 18s
  topology single {{ node db1 }}
  at 1s execute "{query}" on db1
  at 5s cpu limit db1 to 10%
  at 6s execute "{query}" on db1
  at 17s cpu heal db1
}}
""")
    done = [o for o in ops if o.is_fault() and o.f == "sql" and o.type == "ok"]
    started = [o for o in ops if o.is_fault() and o.f == "sql" and o.type == "invoke"]
    assert len(done) == 2 and len(started) == 2
    # execute records what it did: the node that answered and the result's rows
    assert [(d.value["node"], d.value["row_count"], d.value["rows"]) for d in done] == [
        ("db1", 1, [["0"]])] * 2
    free, limited = ((d.time - s.time) / 1e9 for s, d in zip(started, done, strict=True))
    limit = next(o for o in ops if o.f == "cpu_limit" and o.type == "ok")
    assert limit.value["quota_us"] == 10_000
    assert_capped(next(o for o in ops if o.f == "cpu_heal" and o.type == "ok").value,
                  0.10, free, limited)
    run_id = last_run_id(tmp_path)
    assert Path(limit.value["cgroup"]).name == cgroups.group_name(run_id, "db1")
    # the run's group is gone after it (only this run's: the suite runs several tests at a time)
    assert cgroups.run_groups(run_id) == []
    assert not our_processes()


# The OOM kill (recorded as `oom_kill`, counted by the kernel) and the skewed clock (NOW() ahead
# by the skew, back after heal) are checked on the catalogue's cpu-memory.exp and clock-skew.exp,
# run as the workshop's lessons: tests/integration/test_catalogue.py.


def test_when_fires_at_the_state_it_names(tmp_path: Path) -> None:
    require("mariadbd", "dbdeployer")
    cell, ops = run_lab(tmp_path, """experiment "when-it" {
  duration 15s
  topology replication { primary db1  replicas db2 }
  workload w: unique_writes { target db1  rate 100/s }
  at 1s stop replication db2 for 10s
  when replication_lag(db2) > 2s kill db1 for 2s within 12s
  when rows(db1) >= 100000 kill db2 within 5s
}
""")
    fired = [o for o in ops if o.f == "when" and o.type == "ok"]
    assert len(fired) == 1, fired
    assert fired[0].value["observed"] > 2 and fired[0].value["fires"] == "kill db1"
    assert 2.5 <= fired[0].value["after_seconds"] <= 4.5, fired[0].value
    kill = next(o for o in ops if o.f == "kill" and o.type == "invoke")
    assert kill.time >= fired[0].time
    assert any("rows(db1) >= 100000 did not happen within 5 s" in n for n in cell["notes"]), \
        cell["notes"]


def test_an_fsync_delay_slows_a_commit_and_heal_and_teardown_leave_nothing(
        tmp_path: Path) -> None:
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse"):
        pytest.skip("lab-iofs mounts a FUSE filesystem: needs root and /dev/fuse")
    require("mariadbd", "dbdeployer", "lab-iofs")
    insert = "INSERT INTO test.io_it (v) VALUES (1)"
    create = "CREATE TABLE test.io_it (id INT AUTO_INCREMENT PRIMARY KEY, v INT) ENGINE=InnoDB"
    cell, ops = run_lab(tmp_path, f"""experiment "iofs-it" {{
  duration 7s
  topology single {{ node db1 }}
  at 0s execute "{create}" on db1
  at 1s io delay db1 300ms on fsyncs
  at 2s execute "{insert}" on db1
  at 3s io heal db1
  at 4s execute "{insert}" on db1
}}
""")
    started = [o for o in ops if o.is_fault() and o.f == "sql" and o.type == "invoke"]
    done = [o for o in ops if o.is_fault() and o.f == "sql" and o.type == "ok"]
    assert len(started) == len(done) == 3, [(o.type, o.f, o.error_msg) for o in ops]
    # execute records what it did: the node that answered, the rows each statement changed
    assert [(d.value["node"], d.value["affected_rows"]) for d in done] == [
        ("db1", 0), ("db1", 1), ("db1", 1)]
    _, delayed, healed = ((d.time - s.time) / 1e9 for s, d in zip(started, done, strict=True))
    assert delayed >= 0.3, delayed  # the commit waited for at least one delayed fsync
    assert healed < 0.1, healed  # normal I/O again after the heal
    heal = next(o for o in ops if o.f == "io_heal" and o.type == "ok")
    assert heal.value["since_previous"]["fsyncs"]["delayed"] >= 1, heal.value
    assert heal.value["faults"] == {"delay_ms": {}, "fail": []}
    assert not lab_iofs_left()  # teardown unmounted it and the daemon is gone
    assert not our_processes()


def test_a_primary_on_lab_iofs_ships_its_binary_log_intact(tmp_path: Path) -> None:
    """A primary whose data directory is on lab-iofs, under a probe and a 4-client write
    load for 25 s with its fsyncs stalled for 10 of them: its replica's IO thread never
    stops. With the kernel's page cache on lab-iofs files, the
    dump thread read bogus data from the binary log being appended (error 1236 on the
    replica in 4 of 5 such runs, measured); every file but those the server maps is
    direct_io since."""
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse"):
        pytest.skip("lab-iofs mounts a FUSE filesystem: needs root and /dev/fuse")
    require("mariadbd", "dbdeployer", "lab-iofs")
    cell, _ = run_lab(tmp_path, """experiment "iofs-binlog" {
  duration 25s
  topology replication { primary db1  replicas db2 }
  workload p: probe { target db1  every 10ms }
  workload uw: unique_writes { target db1  clients 4 }
  at 5s io delay db1 200ms on fsyncs for 10s
  expect replication_errors(db2) == 0
  expect missing_transactions(db2) == 0
}
""")
    failed = [e["explanation"] for e in cell["expectations"] if e["passed"] is not True]
    assert not failed, failed
    assert not lab_iofs_left()


def test_divergence_compares_a_table_an_execute_made_in_another_schema(tmp_path: Path) -> None:
    """A table of the user's (here in dbdeployer's `test` schema) that a replica changed on its
    own is compared too: the divergence checker looked only at the lab's schema before."""
    require("mariadbd", "dbdeployer")
    cell, ops = run_lab(tmp_path, """experiment "dv-it" {
  duration 4s
  topology replication { primary db1  replicas db2 }
  at 0s execute "CREATE TABLE test.own (id INT PRIMARY KEY) ENGINE=InnoDB" on db1
  at 1s execute "INSERT INTO test.own VALUES (1), (2), (3)" on db1
  at 2s execute "DELETE FROM test.own WHERE id = 2" on db2
}
""")
    tables = cell["measurements"]["divergence"]["subjects"]
    assert tables["test.own"]["rows"] == 1 and tables["test.own"]["missing"] == 1, tables
    assert not our_processes()
