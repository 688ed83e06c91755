"""lab explore and lab shrink without servers: the ddmin core on pure predicates, shrinking a
planted failure through a noisy fake runner, exploration's aggregate, and the commands with the
runner replaced (every trial stored, the result written as an .exp that fails)."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from dsl.api import parse_text
from dsl.space import Entry, timeline_entries
from lab.cli import main
from lab.explore import schedules as explore_mod
from lab.explore.schedules import Runner, Trial, exploration_lines, explore, schedule_path
from lab.explore.shrink import Shrinking, bisect_down, ddmin
from lab.store.db import Store

# --- ddmin ----------------------------------------------------------------------------------------


def _counting(pred: Callable[[list[int]], bool]) -> tuple[Callable[[list[int]], bool], list[int]]:
    calls: list[int] = []

    def f(xs: list[int]) -> bool:
        calls.append(len(xs))
        return pred(xs)

    return f, calls


def test_ddmin_a_planted_failure_where_one_action_matters_shrinks_to_it() -> None:
    f, calls = _counting(lambda xs: 7 in xs)
    assert ddmin(list(range(10)), f) == [7]
    assert len(calls) <= 12  # ~2 log2(10) + the empty set, not 2^10


def test_ddmin_keeps_two_actions_that_only_fail_together() -> None:
    assert ddmin(list(range(16)), lambda xs: 3 in xs and 12 in xs) == [3, 12]


def test_ddmin_result_is_one_minimal() -> None:
    def pred(xs: list[int]) -> bool:
        return sum(xs) >= 20

    out = ddmin(list(range(1, 11)), pred)
    assert pred(out)
    assert all(not pred(out[:i] + out[i + 1:]) for i in range(len(out)))


def test_ddmin_says_when_nothing_at_all_is_needed() -> None:
    assert ddmin([1, 2, 3], lambda xs: True) == []
    assert ddmin([1, 2, 3], lambda xs: True, try_empty=False) == [1]


def test_bisect_down_finds_the_threshold_on_the_resolution() -> None:
    assert bisect_down(0.1, 4.0, lambda d: d > 1.55, steps=10) == pytest.approx(1.6)
    assert bisect_down(0.1, 4.0, lambda d: d > 1.55, steps=2) == pytest.approx(2.0)


# --- shrinking a schedule through a noisy runner --------------------------------------------------

PLANTED = """experiment "planted" {
  duration 30s
  topology replication { primary db1  replicas db2, db3 }
  workload w: probe { target db1 }
  at 3s pause db2 for 2s
  at 5.5s network latency db3 80ms on replication for 2s
  at 8s kill db1 for 3.5s
  at 14s stop replication db3 for 1s
  at 17s pause db3 for 1.5s
  expect downtime(w) < 2s
  expect lost_writes == 0
}
"""
TARGET = "expect downtime(w) < 2s"


def fake_runner(store: Store, noise: float = 0.0, seed: int = 1) -> tuple[Runner, list[str]]:
    """Fails TARGET when a kill of db1 lasts more than 1.5 s (the planted truth), wrong with
    probability ``noise``; every run stored with its .exp, as the real runner does."""
    rng = random.Random(seed)
    texts: list[str] = []

    def run(text: str, label: str) -> Trial:
        exp = parse_text(text, "t.exp")
        truth = any(e.action == "kill db1" and (e.lasts or 0) > 1.5
                    for e in timeline_entries(text, exp))
        fails = truth != (rng.random() < noise)
        rid = store.create_run(exp.name, None)
        path = schedule_path(store.path, rid)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        store.conn.execute("update runs set source = ? where id = ?", [str(path), rid])
        store.finish_run(rid, "failed" if fails else "passed", 1 if fails else 0)
        texts.append(text)
        return Trial(rid, path, "failed" if fails else "passed",
                     (TARGET,) if fails else ())

    return run, texts


def test_a_planted_failure_shrinks_to_its_one_action_through_noise(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    runner, texts = fake_runner(store, noise=0.15, seed=4)
    exp = parse_text(PLANTED, "p.exp")
    s = Shrinking(PLANTED, exp, TARGET, runner, k=2, n=3, max_candidates=60)
    out = s.shrink(timeline_entries(PLANTED, exp))
    assert [e.action for e in out] == ["kill db1"]
    assert out[0].lasts is not None and 1.5 < out[0].lasts <= 1.8
    assert out[0].at <= 1.0  # moved earlier: the time does not matter here
    assert all(len(j.trials) <= 3 for j in s.judged)  # k of n, stopped early when known
    assert all(j.fails == (j.failures >= 2) for j in s.judged if j.invalid is None)
    assert len(store.list_runs()) == len(texts) == sum(len(j.trials) for j in s.judged)


def test_invalid_candidates_run_nothing(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    runner, texts = fake_runner(store)
    exp = parse_text(PLANTED, "p.exp")
    s = Shrinking(PLANTED, exp, TARGET, runner, k=1, n=1)
    j = s.judge([Entry(3.0, "kill db9", 1.0)])
    assert not j.fails and j.trials == [] and texts == []
    assert j.invalid is not None and j.invalid.startswith("unknown node 'db9'")
    assert j.line().startswith("not an experiment (unknown node 'db9'")
    assert s.judge([Entry(3.0, "kill db9", 1.0)]) is j  # judged once


# --- exploration --------------------------------------------------------------------------------

SPACE = """experiment "space" {
  duration 20s
  topology replication { primary db1  replicas db2, db3 }
  workload w: probe { target db1 }
  faults {
    between 2s and 10s
    kill the writer for 500ms..4s  at most 1 time
    pause any replica for 1s..2s  at most 2 times
  }
  expect downtime(w) < 2s
}
"""


def test_exploration_runs_each_drawn_schedule_and_aggregates(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    runner, texts = fake_runner(store)
    exp = parse_text(SPACE, "s.exp")
    x = explore(SPACE, exp, "s.exp", 12, 5, runner)
    again = explore(SPACE, exp, "s.exp", 12, 5, fake_runner(Store(tmp_path / "b.db"))[0])
    assert [d.entries for d in x.drawn] == [d.entries for d in again.drawn]
    failing = [d for d in x.drawn if d.trial.status == "failed"]
    assert failing and len(failing) < 12
    for d in x.drawn:  # the stored .exp is the schedule: its timeline is what was drawn
        stored = d.trial.path.read_text()
        assert [e.text for e in timeline_entries(stored, parse_text(stored))] == [
            e.text for e in d.entries]
        assert f"schedule {d.index} of 12, seed 5" in stored
    assert x.failures() == {TARGET: [d.trial.run_id for d in failing]}
    lines = exploration_lines(x, store.path)
    assert lines[0] == "failed expectations:"
    assert lines[1].startswith(f"  {TARGET}   failed in {len(failing)} of 12 runs: ")
    assert f"passed: {12 - len(failing)} of 12 runs" in lines
    assert x.exit_code == 1


# --- the commands, with the runner replaced -------------------------------------------------------


@pytest.fixture
def fake_servers(monkeypatch: pytest.MonkeyPatch) -> None:
    def real_runner(store: object, view: object | None = None,
                    backend: str | None = None) -> Runner:
        assert isinstance(store, Store)
        return fake_runner(store)[0]

    monkeypatch.setattr(explore_mod, "real_runner", real_runner)


def test_lab_explore_dry_run_prints_the_schedules(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "s.exp"
    f.write_text(SPACE)
    assert main(["explore", str(f), "--runs", "3", "--seed", "5", "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [ln.split(":")[0] for ln in out] == ["schedule 1", "schedule 2", "schedule 3"]
    assert main(["explore", str(f), "--runs", "3", "--seed", "5", "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines() == out


def test_lab_explore_without_a_fault_space_says_so(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "p.exp"
    f.write_text(PLANTED)
    assert main(["explore", str(f), "--dry-run"]) == 2
    assert "has no fault space (faults { ... }): nothing to draw" in capsys.readouterr().err


def test_explore_then_shrink_then_replay(tmp_path: Path, fake_servers: None,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "s.exp"
    f.write_text(SPACE)
    db = str(tmp_path / "r.db")
    assert main(["explore", str(f), "--runs", "8", "--seed", "5", "--db", db]) == 1
    out = capsys.readouterr().out
    assert f"each run's .exp is kept in {tmp_path / 'schedules'}" in out
    failed = re.findall(r"schedule \d+: run (\w+) failed", out)
    assert failed and f"{TARGET}   failed in {len(failed)} of 8 runs" in out
    # the stored failing run: shrink it (its row holds the failed expectation)
    store = Store(db)
    store.conn.execute(
        "insert into expectations (run_id, cell, position, text, line, metric, passed) "
        "values (?, 1, 0, ?, 9, 'downtime', 0)", [failed[0], TARGET])
    store.conn.commit()
    dest = tmp_path / "smallest.exp"
    assert main(["shrink", failed[0], "--fails", "1", "--of", "1", "--out", str(dest),
                 "--db", db]) == 0
    out = capsys.readouterr().out
    assert "a candidate fails when it fails in 1 of 1 runs" in out
    assert f"written to {dest}" in out
    shrunk = dest.read_text()
    exp = parse_text(shrunk)
    entries = timeline_entries(shrunk, exp)
    assert [e.action for e in entries] == ["kill db1"]
    assert f"# shrunk by lab shrink from run {failed[0]}" in shrunk
    assert "faults" not in shrunk
    assert len(store.list_runs()) > 8  # the exploration's runs and every trial's
    assert "the budget of" not in out
    # a budget too small to finish: said, as on real servers (lesson 28's shrink ran out of 12)
    assert main(["shrink", failed[0], "--fails", "1", "--of", "1", "--max-candidates", "3",
                 "--out", str(tmp_path / "early.exp"), "--db", db]) == 0
    assert ("the budget of 3 candidates was spent before the end: its faults may shorten or "
            "move earlier still (--max-candidates)") in capsys.readouterr().out


def test_replay_runs_the_stored_schedule(tmp_path: Path, fake_servers: None,
                                         monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    import lab.cli.run

    f = tmp_path / "s.exp"
    f.write_text(SPACE)
    db = str(tmp_path / "r.db")
    main(["explore", str(f), "--runs", "2", "--seed", "5", "--db", db])
    rid = re.findall(r"schedule 2: run (\w+)", capsys.readouterr().out)[0]
    ran: list[str] = []
    monkeypatch.setattr(lab.cli.run, "cmd_run", lambda path, **kw: ran.append(path) or 0)
    assert main(["replay", rid[:8], "--db", db]) == 0
    assert ran == [str(schedule_path(Path(db), rid))]
    assert "schedule 2 of 2, seed 5" in Path(ran[0]).read_text()
    assert f"replaying run {rid}: {ran[0]}" in capsys.readouterr().out
    Path(ran[0]).unlink()
    assert main(["replay", rid, "--db", db]) == 2
    assert "has no .exp to replay" in capsys.readouterr().err


def test_shrink_refuses_what_it_cannot_do(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "r.db")
    store = Store(db)
    f = tmp_path / "p.exp"
    f.write_text(PLANTED)
    rid = store.create_run("planted", str(f))
    store.finish_run(rid, "passed", 0)
    assert main(["shrink", rid, "--db", db]) == 2
    assert "failed no expectation: nothing to shrink" in capsys.readouterr().err
    assert main(["shrink", rid, "--expect", "downtime(w) < 9s", "--db", db]) == 2
    assert "'expect downtime(w) < 9s' is not an expectation of" in capsys.readouterr().err
    assert main(["shrink", rid, "--fails", "3", "--of", "2", "--db", db]) == 2
    s = tmp_path / "s.exp"
    s.write_text(SPACE)
    rid2 = store.create_run("space", str(s))
    assert main(["shrink", rid2, "--expect", TARGET, "--db", db]) == 2
    assert "has a fault space: shrink a run of lab explore" in capsys.readouterr().err


def test_entry_text_round_trips() -> None:
    e = Entry(8.0, "kill db1", 1.6)
    assert e.text == "at 8s kill db1 for 1.6s"
