"""``lab run FILE`` reads, parses and validates the file once, and hands the experiment and
its plan down (before: parsed three times and validated four, five with ``--backend``).

The counters wrap the language's parser entry point (``dsl.parser.parse_experiment`` as
``dsl.api`` calls it) and its validator (``dsl.validate.validate`` as ``dsl.api`` and
``dsl.compile`` call it); the run itself stops where the servers would start
(``lab.run.engine.run_plan``), so no server is needed.
"""

from __future__ import annotations

import signal
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import dsl.api
import dsl.compile
import lab.run.engine
import runners.topology
from dsl.plan import Plan
from lab.cli import run as cli_run
from lab.exits import EXIT_LANGUAGE

EXP = """experiment "once" {
  duration 5s
  topology replication { primary db1  replicas db2 }
  workload w: unique_writes { target db1  rate 10/s }
  at 2s kill db2
  expect lost_writes(w) == 0
}
"""


class ServersWouldStart(Exception):
    def __init__(self, plan: Plan) -> None:
        super().__init__("run_plan reached")
        self.plan = plan


def counted(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    calls: Counter[str] = Counter()

    def wrap(module: Any, name: str, key: str) -> None:
        real: Callable[..., Any] = getattr(module, name)

        def counting(*a: Any, **k: Any) -> Any:
            calls[key] += 1
            return real(*a, **k)

        monkeypatch.setattr(module, name, counting)

    wrap(dsl.api, "parse_experiment", "parse")
    wrap(dsl.api, "validate", "validate")
    wrap(dsl.compile, "validate", "validate")

    def run_plan(plan: Plan, *a: Any, **k: Any) -> Any:
        raise ServersWouldStart(plan)

    monkeypatch.setattr(lab.run.engine, "run_plan", run_plan)
    monkeypatch.setattr(runners.topology, "check_components", lambda plan: None)
    monkeypatch.setattr(signal, "signal", lambda *a: None)  # the test process's handlers stay
    return calls


@pytest.mark.parametrize("backend", [None, "containers"])
def test_lab_run_parses_and_validates_the_file_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str | None) -> None:
    path = tmp_path / "once.exp"
    path.write_text(EXP)
    calls = counted(monkeypatch)
    with pytest.raises(ServersWouldStart) as reached:
        cli_run.cmd_run(str(path), db=str(tmp_path / "r.db"), backend=backend)
    assert calls == Counter(parse=1, validate=1)
    plan = reached.value.plan
    assert plan.name == "once" and plan.backend == (backend or "native")


def test_a_bad_file_still_says_every_error_with_its_position(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.exp"
    path.write_text(EXP.replace("at 2s kill db2", "at 2s kill db9"))
    counted(monkeypatch)
    assert cli_run.cmd_run(str(path), db=str(tmp_path / "r.db")) == EXIT_LANGUAGE
    err = capsys.readouterr().err
    assert f"{path}:5:14: error: unknown node 'db9'" in err and "^^^" in err
    assert not (tmp_path / "r.db").exists()  # nothing started, not even the results store
