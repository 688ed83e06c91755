"""A timeline action that starts late (an action before it blocked) is said, not hidden."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import ref

from dsl.api import plan_text
from dsl.models import NetworkFault, NodeAction, TimedAction
from lab.run.load import TIMELINE_PRECISION, place_undo, timeline_slip, undo_of


def test_on_time_within_the_precision_says_nothing() -> None:
    assert timeline_slip(10.0, 10.0 + TIMELINE_PRECISION, "kill db2") is None
    assert timeline_slip(10.0, 10.02, "kill db2") is None


def test_late_action_is_named_with_its_real_start() -> None:
    note = timeline_slip(21.0, 25.25, "kill db1")
    assert note is not None
    assert note.startswith("at 21s kill db1 started at 25.25s (4.25s late")


# --- the end of a `for D` fault keeps its place in the plan ----------------------------------


def _galera_conflicts_timeline() -> list[TimedAction]:
    text = (Path(__file__).parents[2] / "experiments" / "galera-conflicts.exp").read_text()
    return sorted(plan_text(text, "galera-conflicts.exp").timeline, key=lambda t: t.at)


def test_a_late_partition_heals_before_the_wait_the_plan_lists_after_its_heal() -> None:
    """Measured in a busy run (run d7a96c8f45f0): `start g1` took 8.25 s, the partition (at
    30s, for 8s) took effect at 34.5 s, its heal was due at 42.5 s, and the wait at 39s (g3
    synced) ran first: it could only time out (60 s), and the run ended in an error. The file
    now has the partition at 32s and the wait at 41s; the same 4.5 s late start."""
    timeline = _galera_conflicts_timeline()
    while not isinstance(timeline[0].action, NetworkFault):  # the kill, start, waits ran
        timeline.pop(0)
    cut = timeline.pop(0)
    assert cut.at == 32 and cut.lasts == 8
    heal = undo_of(cut, 36.5, {})
    assert heal is not None and heal.at == pytest.approx(44.5)
    place_undo(timeline, heal, cut.at + cut.lasts)
    assert timeline[0] is heal  # the plan's order: `at 40s network heal g3` first
    assert [t.at for t in timeline[1:]] == [41]


def test_an_end_on_time_goes_where_its_time_puts_it() -> None:
    timeline = [TimedAction(at=at, action=NodeAction(verb="start", node=ref(n)))
                for at, n in ((5.0, "db1"), (12.0, "db3"))]
    kill = TimedAction(at=2.0, lasts=6.0, action=NodeAction(verb="kill", node=ref("db2")))
    back = undo_of(kill, 2.05, {})
    assert back is not None
    place_undo(timeline, back, 8.0)
    assert [t.at for t in timeline] == [5.0, pytest.approx(8.05), 12.0]
