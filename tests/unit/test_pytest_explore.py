"""Exploration and search as pytest items (lab.pytest.explore), run with pytester and a fake
runner in place of real servers: one item per drawn schedule, a failing one showing its
schedule and the command to shrink it (or the shrunk schedule with --lab-shrink), a search
item printing its boundary or failing when there is none."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from lab.explore import schedules as explore_mod
from lab.explore.schedules import Runner, Trial
from lab.run import cell_run

pytest_plugins = ["pytester"]

PLUGIN = ("-p", "lab.pytest_plugin", "-p", "no:randomly", "-p", "no:cacheprovider")

SPACE = """\
experiment "space" {
  duration 13s
  seed 22
  topology replication { primary db1  replicas db2, db3 }
  workload writes: unique_writes { target db1  rate 100/s }
  at 9s kill db1 for good
  at 11s promote db2
  faults {
    between 5s and 8s
    pause any replica for 1s..2s
    stop replication any replica for 1s..2s
  }
  expect lost_writes(writes) == 0
}
"""

DELAY = """\
experiment "delay" {
  duration 11s
  topology replication { primary db1  replicas db2  delay db2 by 2s }
  workload writes: unique_writes { target db1  rate 100/s }
  at 6s kill db1 for good
  at 9s promote db2
  expect lost_writes(writes) == 0
}
"""
PROMOTE_LINE = 6  # `at 9s promote db2` in DELAY


def _pause_db2_over_the_kill(text: str) -> bool:
    """The planted truth of SPACE: a pause of db2 that still holds at 9s loses writes."""
    for m in re.finditer(r"at ([\d.]+)s pause db2 for ([\d.]+)s", text):
        if float(m.group(1)) < 9 <= float(m.group(1)) + float(m.group(2)):
            return True
    return False


def _promote_before(limit: float) -> Callable[[str], bool]:
    def fails(text: str) -> bool:
        m = re.search(r"at ([\d.]+)(m?s) promote db2", text)
        assert m, text
        at = float(m.group(1)) / (1000 if m.group(2) == "ms" else 1)
        return at < limit
    return fails


@dataclass
class Fake:
    """The texts run; a text fails its expectation when ``fails(text)``."""

    fails: Callable[[str], bool] = _pause_db2_over_the_kill
    ran: list[str] = field(default_factory=list)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Fake:
    """The real runner replaced: each run's text stored as a real one is, judged by
    ``Fake.fails``."""
    f = Fake()

    def real_runner(store: object, view: object | None = None) -> Runner:
        def run(text: str, label: str) -> Trial:
            f.ran.append(text)
            rid = f"run{len(f.ran):02d}"
            path = tmp_path / "schedules" / f"{rid}.exp"
            path.parent.mkdir(exist_ok=True)
            path.write_text(text, encoding="utf-8")
            if f.fails(text):
                return Trial(rid, path, "failed", ("expect lost_writes(writes) == 0",),
                             measured={"expect lost_writes(writes) == 0": "143"})
            return Trial(rid, path, "passed")
        return run

    monkeypatch.setattr(explore_mod, "real_runner", real_runner)
    monkeypatch.setattr(cell_run, "why_not_runnable", lambda plan: None)
    return f


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*PLUGIN, "--lab-db", str(pytester.path / "results.db"), *args)


def test_nothing_is_added_unless_asked(pytester: pytest.Pytester) -> None:
    pytester.makefile(".exp", space=SPACE)
    out = pytester.runpytest(*PLUGIN, "--collect-only", "-q").stdout.str()
    assert "space.exp::space" in out and "explore" not in out


def test_one_item_per_schedule_named_by_seed_and_index(pytester: pytest.Pytester) -> None:
    pytester.makefile(".exp", space=SPACE, delay=DELAY)
    out = pytester.runpytest(*PLUGIN, "--collect-only", "-q", "--lab-explore", "3",
                             "--lab-explore-seed", "7").stdout.str()
    for i in (1, 2, 3):
        assert f"space.exp::explore[seed7-{i}]" in out
    assert "delay.exp::explore" not in out  # no fault space: nothing to draw
    assert "space.exp::space" in out  # the cells stay


def test_a_failing_schedule_shows_it_and_how_to_shrink_it(
        pytester: pytest.Pytester, fake: Fake) -> None:
    pytester.makefile(".exp", space=SPACE)
    result = _run(pytester, "--lab-explore", "2", "-k", "explore[")
    result.assert_outcomes(passed=1, failed=1)  # seed 22: schedule 2 pauses db2 at 7.7s for 1.6s
    out = result.stdout.str()
    assert "schedule 2 of seed 22: run run02 failed: " in out
    assert "at 7.7s pause db2 for 1.6s" in out
    assert "FAIL expect lost_writes(writes) == 0 (measured 143)" in out
    assert "shrink it: lab shrink run02 --db" in out and "again: lab replay run02" in out
    assert "Traceback" not in out
    assert len(fake.ran) == 2


def test_with_lab_shrink_the_failure_shows_the_smallest_schedule(
        pytester: pytest.Pytester, fake: Fake) -> None:
    pytester.makefile(".exp", space=SPACE)
    result = _run(pytester, "--lab-explore", "2", "-k", "explore[seed22-2]",
                  "--lab-shrink", "1/1")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    m = re.search(r"shrunk \((\d+) statements -> (\d+).*\): (.*)", out)
    assert m, out
    assert m.group(2) == "1" and m.group(3).startswith("at ") and "pause db2" in m.group(3)
    written = re.search(r"written to (\S+-shrunk\.exp)", out)
    assert written and _pause_db2_over_the_kill(Path(written.group(1)).read_text())


def test_a_search_item_prints_the_boundary(pytester: pytest.Pytester, fake: Fake,
                                           ) -> None:
    fake.fails = _promote_before(7.6)
    pytester.makefile(".exp", delay=DELAY)
    result = _run(pytester, "--lab-search", f"{PROMOTE_LINE}:at=6.2s..9s",
                  "--lab-search-repeats", "1/1", "--lab-search-resolution", "200ms",
                  "-k", "search[")
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    m = re.search(r"flips over 6:at between ([\d.]+)s and ([\d.]+)s: holds at ([\d.]+)s "
                  r"\(0 of 1 runs failed\), fails at ([\d.]+)s \(1 of 1\)", out)
    assert m, out
    low, high, holds, fails = (float(x) for x in m.groups())
    assert low < 7.6 <= high + 1e-9 and high - low <= 0.2 + 1e-9
    # promoting earlier loses writes: the failing value is the lower one (on real servers the
    # line called the lower value the holding one)
    assert (fails, holds) == (low, high)


def test_a_search_fails_outside_within_and_without_a_flip(pytester: pytest.Pytester,
                                                          fake: Fake) -> None:
    fake.fails = _promote_before(7.6)
    pytester.makefile(".exp", delay=DELAY)
    outside = _run(pytester, "--lab-search", f"{PROMOTE_LINE}:at=6.2s..9s",
                   "--lab-search-repeats", "1/1", "--lab-search-within", "8s..9s", "-k", "search[")
    outside.assert_outcomes(failed=1)
    assert "the boundary is not within 8s..9s" in outside.stdout.str()
    none = _run(pytester, "--lab-search", f"{PROMOTE_LINE}:at=8s..9s",
                "--lab-search-repeats", "1/1", "-k", "search[")
    none.assert_outcomes(failed=1)
    assert "holds at both ends: no flip between them" in none.stdout.str()


def test_a_bad_option_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(".exp", delay=DELAY)
    result = pytester.runpytest(*PLUGIN, "--collect-only", "--lab-search", "6:at=9s")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "give a range, A..B" in result.stderr.str()
