"""One run id everywhere: the results database, the run directory, `lab status`, `lab down`,
`lab show`; any unique prefix is accepted; an ambiguous one is an error listing the matches
(exit 2)."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dsl.api import load_plan
from lab.cli import main
from lab.run import engine
from lab.store.db import Store
from lab.store.records import new_run_id
from runners import runtime
from runners.errors import ComponentError

ROOT = Path(__file__).resolve().parents[2]
HEX12 = re.compile(r"^[0-9a-f]{12}$")


@pytest.fixture
def rt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "rt"
    monkeypatch.setenv("LAB_RUNTIME", str(root))
    monkeypatch.setenv("LAB_HOME", str(tmp_path / "home"))
    yield root


def test_one_id_format(rt: Path, tmp_path: Path) -> None:
    assert HEX12.match(new_run_id()) and HEX12.match(runtime.new_run_id())
    with Store(tmp_path / "r.db") as s:
        assert HEX12.match(s.create_run("e"))
    with runtime.Run(experiment="up") as run:  # `lab up`
        assert HEX12.match(run.id)
    assert runtime.cell_dir_id("abc123abc123", 1) == "abc123abc123"
    assert runtime.cell_dir_id("abc123abc123", 3) == "abc123abc123-3"


def test_the_engine_names_the_run_directory_with_the_results_run_id(
    rt: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}

    class NoServers:
        @staticmethod
        def deploy(plan: Any, cell: Any, run: runtime.Run) -> Any:
            seen["id"] = run.id
            seen["meta"] = json.loads((run.dir / "run.json").read_text())
            seen["status"] = [(i.id, i.run) for i in runtime.list_runs()]
            raise ComponentError("mariadbd", "not in this test")

    monkeypatch.setattr(engine, "Topology", NoServers)
    plan = load_plan(str(ROOT / "experiments" / "quickstart.exp"))
    with Store(tmp_path / "r.db") as store:
        outcome = engine.run_plan(plan, store)
    assert outcome.status == "error"
    assert seen["id"] == outcome.run_id
    assert seen["meta"]["run"] == outcome.run_id
    assert seen["meta"]["cell"] == 1
    assert seen["meta"]["db"] == str(tmp_path / "r.db")
    assert seen["status"] == [(outcome.run_id, outcome.run_id)]
    assert runtime.list_runs() == []  # torn down


def _dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def _run_dir(root: Path, dir_id: str, run: str | None = None, cell: int = 1) -> Path:
    d = root / dir_id
    d.mkdir(parents=True)
    meta: dict[str, Any] = {"id": dir_id, "experiment": "exp-" + (run or dir_id)[:4],
                            "owner_pid": _dead_pid(), "owner_start": 1, "state": "kept",
                            "cell": cell}  # fmt: skip
    if run:
        meta["run"] = run
    (d / "run.json").write_text(json.dumps(meta))
    (d / "processes.json").write_text("[]")
    return d


def test_lab_down_takes_every_cell_of_the_run_a_prefix_names(
    rt: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a1 = _run_dir(rt, "aaaa11112222", "aaaa11112222")
    a2 = _run_dir(rt, "aaaa11112222-2", "aaaa11112222", cell=2)
    b = _run_dir(rt, "aaaa33334444", "aaaa33334444")
    up = _run_dir(rt, "bbbb55556666")  # `lab up`: no results run

    assert main(["down", "aaaa"]) == 2
    err = capsys.readouterr().err
    assert "ambiguous" in err and "aaaa11112222" in err and "aaaa33334444" in err
    assert a1.exists() and a2.exists() and b.exists()

    assert main(["down", "aaaa1"]) == 0
    out = capsys.readouterr().out
    assert "aaaa11112222 is down" in out and "aaaa11112222-2 is down" in out
    assert not a1.exists() and not a2.exists() and b.exists()

    assert main(["down", "zzz"]) == 2
    assert "no run that is up matches" in capsys.readouterr().err
    assert main(["down", ""]) == 2
    capsys.readouterr()
    assert main(["down", "bbbb"]) == 0
    assert not up.exists()


def test_lab_status_shows_the_run_id_and_cell(
    rt: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    _run_dir(rt, "cccc11112222-2", "cccc11112222", cell=2)
    assert main(["status"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if "cccc11112222" in line)
    assert "cccc11112222-2" not in row  # the run's id, not the directory's
    assert re.search(r"cccc11112222\s*│\s*2\s*│", row)


def test_lab_show_accepts_any_unique_prefix_and_lists_every_match_of_an_ambiguous_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.db"
    with Store(db) as s:
        ids = [s.create_run(f"exp{i}", run_id=f"abc00000000{i}") for i in range(1, 7)]
        for rid in ids:
            s.finish_run(rid, "passed", 0)
        other = s.create_run("other", run_id="abd000000000")
        s.finish_run(other, "failed", 1)
    assert main(["show", "abd", "--db", str(db), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["run_id"] == other
    assert main(["show", "abc00000000", "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert "run id 'abc00000000' is ambiguous: it matches 6 runs" in err
    for i, rid in enumerate(ids, start=1):
        assert re.search(rf"{rid}\s+exp{i}\s", err)
    assert "Traceback" not in err
    assert main(["show", "nope", "--db", str(db)]) == 2
    assert "no run 'nope'" in capsys.readouterr().err
