"""CPU starvation, memory pressure, clock skew and `when` triggers on real servers (the
cgroup ones need root). Each is a short run through ``lab run``: the fault's effect is read
back from the history, and nothing is left behind (no cgroup named for the run, no process).
Not run by the author (written without servers); each is well under 60 s of server time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lab.store import Store
from runners import cgroups

from .conftest import ROOT, our_processes, require

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


def no_lab_cgroups() -> list[Path]:
    out: list[Path] = []
    unified = cgroups.unified_dir()
    for base in [cgroups.CGROUP_ROOT / c for c in cgroups.CONTROLLERS] + (
            [unified] if unified is not None else []):
        if base.is_dir():
            out += [d for d in base.iterdir() if d.name.startswith(cgroups.PREFIX)]
    return out


def needs_cgroups() -> None:
    if os.geteuid() != 0:
        pytest.skip("cgroups need root")
    if not (cgroups.available("cpu") and cgroups.available("memory")):
        pytest.skip("cgroup v1 cpu and memory controllers not mounted")


def test_a_cpu_limit_makes_a_cpu_bound_query_at_least_3x_slower(tmp_path: Path) -> None:
    needs_cgroups()
    require("mariadbd", "dbdeployer")
    before = no_lab_cgroups()
    query = "SELECT BENCHMARK(3000000, MD5('x'))"
    cell, ops = run_lab(tmp_path, f"""experiment "cpu-it" {{
  duration 14s
  topology single {{ node db1 }}
  at 1s execute "{query}" on db1
  at 5s cpu limit db1 to 20%
  at 6s execute "{query}" on db1
  at 13s cpu heal db1
}}
""")
    done = [o for o in ops if o.is_fault() and o.f == "sql" and o.type == "ok"]
    started = [o for o in ops if o.is_fault() and o.f == "sql" and o.type == "invoke"]
    assert len(done) == 2 and len(started) == 2
    free, limited = ((d.time - s.time) / 1e9 for s, d in zip(started, done, strict=True))
    assert limited >= 3 * free, (free, limited)
    limit = next(o for o in ops if o.f == "cpu_limit" and o.type == "ok")
    assert limit.value["quota_us"] == 20_000
    assert no_lab_cgroups() == before  # the group is gone after the run
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
