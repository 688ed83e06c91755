"""A timeline action that starts late (an action before it blocked) is said, not hidden."""

from __future__ import annotations

from lab.run.load import TIMELINE_PRECISION, timeline_slip


def test_on_time_within_the_precision_says_nothing() -> None:
    assert timeline_slip(10.0, 10.0 + TIMELINE_PRECISION, "kill db2") is None
    assert timeline_slip(10.0, 10.02, "kill db2") is None


def test_late_action_is_named_with_its_real_start() -> None:
    note = timeline_slip(21.0, 25.25, "kill db1")
    assert note is not None
    assert note.startswith("at 21s kill db1 started at 25.25s (4.25s late")
