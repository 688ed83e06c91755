"""`lab show` of an abandoned run (issue 24 item 7): a real child process plays `lab run`, stores
a cell's operations (10 s of writes, refused for 3 s) and is killed with SIGKILL before it
checks them. `lab show` measures that cell from the stored operations, as `lab report --html`
reads them, instead of printing an empty matrix; its expectations are not judged."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lab.cli import main
from lab.report.data import load_report
from lab.store.db import Store

ROOT = Path(__file__).resolve().parents[2]
EXP = """experiment "killed" {
  duration 10s
  topology single { node db1 }
  workload w: probe { target db1  every 100ms }
  expect downtime(w) < 1s
}
"""
CHILD = textwrap.dedent(
    """
    import sys, time
    from lab.history import Op
    from lab.store.db import Store

    db, source = sys.argv[1], sys.argv[2]
    store = Store(db)
    rid = store.create_run("killed", source)
    store.create_cell(rid, 1, "#1")
    ops, t0 = [], 1_000_000_000
    for i in range(100):  # a write every 100 ms for 10 s, refused from 4 s to 7 s
        t = t0 + i * 100_000_000
        ops.append(Op("invoke", "write", 0, t, "w", "db1", None, i, i, index=len(ops)))
        if 40 <= i < 70:
            ops.append(Op("fail", "write", 0, t + 1_000_000, "w", "db1", None, i, i,
                          error=2003, index=len(ops)))
        else:
            ops.append(Op("ok", "write", 0, t + 2_000_000, "w", "db1", "db1", i, i,
                          index=len(ops)))
    store.insert_operations(rid, 1, ops)
    print(rid, flush=True)
    time.sleep(300)
    """
)


@pytest.fixture
def abandoned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    monkeypatch.setenv("LAB_RUNTIME", str(tmp_path / "rt"))
    monkeypatch.setenv("LAB_HOME", str(tmp_path / "home"))
    src = tmp_path / "killed.exp"
    src.write_text(EXP)
    db = tmp_path / "results.db"
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(db), str(src)],
                            env=dict(os.environ, PYTHONPATH=str(ROOT)), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    line = proc.stdout.readline()
    assert line, proc.stderr.read()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    proc.stdout.close()
    proc.stderr.close()
    return db, line.strip()


def test_lab_show_of_an_abandoned_run_measures_its_cell(
    abandoned: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    db, rid = abandoned
    assert main(["show", rid, "--db", str(db), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["status"] == "abandoned"
    [cell] = s["cells"]
    assert cell["status"] == "abandoned" and cell["operations"] == 100
    windows = cell["measurements"]["downtime"]["subjects"]["w"]["windows"]
    assert [round(w["duration"], 1) for w in windows] == [3.1]  # last ok 3.9 s, next 7.0 s
    [e] = cell["expectations"]
    assert e["passed"] is None and e["measured"] == pytest.approx(3.1, abs=0.01)
    assert e["explanation"].startswith("not judged: the run was abandoned while this cell ran")
    assert any("measured by lab show from the 100 operations" in n for n in cell["notes"])


def test_the_figures_are_the_html_report_s(
    abandoned: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    db, rid = abandoned
    assert main(["show", rid, "--db", str(db), "--all"]) == 0
    out = capsys.readouterr().out
    assert "3.10 s" in out  # the outage
    with Store(db, write=False) as store:
        report = load_report(store, rid)
    [cell] = report.cells
    per_second = cell.throughput["w"]  # what the HTML report draws
    assert per_second[4:7] == [0, 0, 0]
    assert sum(per_second) == 70  # the successful writes


def test_the_stored_summary_has_no_figure_and_lab_show_measures(
    abandoned: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    db, rid = abandoned
    with Store(db, write=False) as store:
        stored = store.summary(rid)
    assert stored["cells"][0]["measurements"] == {}  # nothing was checked: lab show measures
    assert main(["show", rid, "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "3.10 s" in out
