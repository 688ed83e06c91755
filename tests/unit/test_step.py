"""`lab run --step` / `--step-delay`: the run pauses before each timeline action, shows it as
written and the live figures, goes on on Enter (or after the delay); the timeline's clock stops
while paused, so actions keep their spacing and the load is lengthened; the notes say it once.
Everything here runs on a fake clock and a fake keyboard."""

from __future__ import annotations

import io
import math
import re
import threading
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from rich.console import Console

from dsl.api import plan_text
from dsl.models import Action
from lab.cli import main
from lab.cli.run import make_stepper
from lab.run.load import Load
from lab.run.outcome import View
from lab.run.step import Pause, Stepper, StepUsageError, parse_step_delay, stepped_note

EXP = """experiment "stepped" {
  duration 30s
  topology single { node db1 }
  at 10s pause db1   # freeze it
  at 20s resume db1
}
"""


class FakeTime:
    """time.monotonic / monotonic_ns / sleep on a clock that only moves when slept on."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def monotonic_ns(self) -> int:
        return int(self.now * 1e9)

    def sleep(self, dt: float) -> None:
        self.now += dt


def enter_after(clock: FakeTime, seconds: float) -> Callable[[float], bool]:
    """A keyboard on which Enter is pressed `seconds` after each prompt."""
    state = {"waited": 0.0}

    def read(timeout: float) -> bool:
        left = seconds - state["waited"]
        if left <= timeout:
            clock.sleep(left)
            state["waited"] = 0.0
            return True
        clock.sleep(timeout)
        state["waited"] += timeout
        return False

    return read


def _run_load(monkeypatch: pytest.MonkeyPatch, stepper: Stepper | None,
              clock: FakeTime) -> tuple[Load, list[tuple[str, float]]]:
    import lab.run.load

    monkeypatch.setattr(lab.run.load, "time", clock)
    plan = plan_text(EXP, "stepped.exp")
    applied: list[tuple[str, float]] = []
    t0 = clock.now

    def apply(a: Action, shown: str) -> None:
        applied.append((shown, clock.now - t0))

    recorder = SimpleNamespace(_ops=[], _samples=[])
    topo = SimpleNamespace(primary=None, nodes={"db1": object()})
    load = Load(plan, plan.cells[0], topo, View(), recorder, None,  # type: ignore[arg-type]
                apply, lambda: None, threading.Event(), stepper)
    load.run()
    return load, applied


def test_without_stepping_actions_fire_at_their_times(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeTime()
    load, applied = _run_load(monkeypatch, None, clock)
    assert [s for s, _ in applied] == ["at 10s: pause db1", "at 20s: resume db1"]
    assert applied[0][1] == pytest.approx(10, abs=0.05)
    assert applied[1][1] == pytest.approx(20, abs=0.05)
    assert load.slips == []


def test_each_action_waits_for_enter_and_keeps_its_spacing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeTime()
    out = io.StringIO()
    stepper = Stepper(read_line=enter_after(clock, 3.0), console=Console(file=out, width=200),
                      clock=clock.monotonic, source_lines=EXP.splitlines())
    load, applied = _run_load(monkeypatch, stepper, clock)
    # paused 3 s before each: the first fires 3 s late, the second 6 s late, 10 s apart
    assert applied[0][1] == pytest.approx(13, abs=0.05)
    assert applied[1][1] == pytest.approx(26, abs=0.05)
    # the load is lengthened by the pauses: the time after the last action is kept
    assert load.load_start is not None and load.load_end is not None
    assert (load.load_end - load.load_start) / 1e9 == pytest.approx(36, abs=0.05)
    shown = out.getvalue()
    assert "at 10s pause db1   # freeze it" in shown  # as written in the file
    assert "press Enter" in shown and "the workloads keep running" in shown
    # one note, first, naming the pauses and the real starts; no per-action slip notes
    assert len(load.slips) == 1
    note = load.slips[0]
    assert note.startswith("stepped run: paused before each of 2 timeline actions, 6.0s")
    assert re.search(r"\(at 10s pause db1 at 13\.0\ds, at 20s resume db1 at 26\.0\ds\)",
                     note), note


def test_step_delay_pauses_that_long_without_a_keyboard(
        monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeTime()
    out = io.StringIO()
    stepper = Stepper(delay=1.0, console=Console(file=out, width=200), clock=clock.monotonic)
    import lab.run.step

    monkeypatch.setattr(lab.run.step, "time", clock)
    _, applied = _run_load(monkeypatch, stepper, clock)
    assert applied[0][1] == pytest.approx(11, abs=0.05)
    assert applied[1][1] == pytest.approx(22, abs=0.05)
    assert "continuing in 1s" in out.getvalue()
    assert [p.paused for p in stepper.pauses] == [pytest.approx(1.0), pytest.approx(1.0)]


def test_stepped_workloads_of_the_whole_load_run_until_it_ends() -> None:
    plan = plan_text("""experiment "w" {
  duration 30s
  topology single { node db1 }
  workload whole: probe { target db1 }
  workload same: probe { target db1  duration 30s }
  workload short: probe { target db1  duration 10s }
  workload rows: unique_writes { target db1  rows 100 }
}
""", "w.exp")
    specs = {w.name: w for w in plan.cells[0].workloads}

    def durations(stepper: Stepper | None) -> dict[str, float]:
        load = Load(plan, plan.cells[0], SimpleNamespace(), View(), None,  # type: ignore[arg-type]
                    None, lambda a, s: None, lambda: None, threading.Event(), stepper)
        return {n: load._workload_duration(s) for n, s in specs.items()}

    assert durations(None) == {"whole": 30, "same": 30, "short": 10, "rows": 30}
    stepped = durations(Stepper(delay=1.0, console=Console(file=io.StringIO())))
    assert stepped == {"whole": math.inf, "same": math.inf, "short": 10, "rows": 30}


def test_the_figures_are_refreshed_while_paused() -> None:
    clock = FakeTime()
    calls: list[float] = []

    def figures() -> dict[str, dict[str, float]]:
        calls.append(clock.now)
        return {"writes": {"ops": 98.0, "errors": 0.0}}

    out = io.StringIO()
    plan = plan_text(EXP, "stepped.exp")
    stepper = Stepper(read_line=enter_after(clock, 4.5), console=Console(file=out, width=200),
                      clock=clock.monotonic)
    waited = stepper.pause(plan.timeline[0], 10.0, figures)
    assert waited == pytest.approx(4.5)
    assert len(calls) >= 5  # once when shown, then about every second
    assert "writes 98/s" in out.getvalue() or "writes 98.0/s" in out.getvalue()


def test_step_delay_is_a_duration() -> None:
    assert parse_step_delay("2s") == 2.0
    assert parse_step_delay("500ms") == 0.5
    for bad in ("2", "0s", "fast", "1M"):
        with pytest.raises(StepUsageError, match="--step-delay needs a duration"):
            parse_step_delay(bad)


class _Stdin(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__("")
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def test_step_needs_a_terminal_or_a_delay() -> None:
    console = Console(file=io.StringIO())
    assert make_stepper(False, None, console, None) is None
    with pytest.raises(StepUsageError, match="stdin is not one; use --step-delay"):
        make_stepper(True, None, console, None, stdin=_Stdin(tty=False))
    s = make_stepper(True, None, console, None, stdin=_Stdin(tty=True))
    assert s is not None and s.delay is None and s.read_line is not None
    s = make_stepper(False, "3s", console, None, stdin=_Stdin(tty=False))
    assert s is not None and s.delay == 3.0 and s.read_line is None


def test_lab_run_step_without_a_terminal_is_a_usage_error(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Any) -> None:
    monkeypatch.setattr("sys.stdin", _Stdin(tty=False))
    exp = tmp_path / "x.exp"
    exp.write_text(EXP)
    assert main(["run", str(exp), "--step", "--db", str(tmp_path / "r.db")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Error: --step waits for Enter on a terminal")
    assert not (tmp_path / "r.db").exists()  # nothing was started or created
    assert main(["run", str(exp), "--step-delay", "soon"]) == 2


def test_no_note_without_pauses() -> None:
    assert stepped_note([]) is None
    note = stepped_note([Pause("at 5s kill db2", 5.0, 7.5, 2.5)])
    assert note is not None and "at 5s kill db2 at 7.50s" in note and "2.5s in all" in note
    assert note.startswith("stepped run: paused before its one timeline action, 2.5s")
