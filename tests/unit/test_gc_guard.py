"""lab/run/gc_guard.py: while a history is recorded, the collector's scans skip it."""

from __future__ import annotations

import gc
import time

from lab.run import gc_guard


class Rec:
    __slots__ = ("a", "b")  # as the history's operations: tracked by the collector

    def __init__(self, a: int) -> None:
        self.a = a
        self.b = None


def _until(cond, within: float = 3.0) -> bool:  # type: ignore[no-untyped-def]
    end = time.monotonic() + within
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.01)
    return cond()


def test_what_is_recorded_while_held_is_frozen_then_handed_back() -> None:
    assert not gc_guard.holding()
    before = [Rec(i) for i in range(20_000)]
    with gc_guard.history_frozen():
        assert gc_guard.holding()
        assert _until(lambda: gc.get_freeze_count() >= 20_000)
        # counted before they are made: the thread may freeze them before the next line runs
        # (read after, the count had them already, and a busy machine's run waited in vain)
        n = gc.get_freeze_count()
        later = [Rec(i) for i in range(20_000)]  # made while held: frozen at the next turn
        assert _until(lambda: gc.get_freeze_count() >= n + 20_000)
    assert not gc_guard.holding()
    assert gc.get_freeze_count() == 0  # everything back to the collector
    assert gc.is_tracked(before[0]) and gc.is_tracked(later[0])


def test_nested_holders_unfreeze_only_at_the_last_release() -> None:
    gc_guard.hold()
    gc_guard.hold()
    try:
        assert _until(lambda: gc.get_freeze_count() > 0)
        gc_guard.release()
        assert gc_guard.holding()
        n = gc.get_freeze_count()  # before they are made, as above
        x = [Rec(i) for i in range(5_000)]
        assert _until(lambda: gc.get_freeze_count() >= n + 5_000)  # still freezing
        assert x
    finally:
        gc_guard.release()
    assert not gc_guard.holding() and gc.get_freeze_count() == 0
    gc_guard.release()  # one too many: nothing happens
    assert not gc_guard.holding()


def test_the_engine_records_its_load_under_the_guard() -> None:
    """The engine's load and its end (healing, the readers' last polls) run while held."""
    import inspect

    from lab.run import engine

    src = inspect.getsource(engine)
    i = src.index("with history_frozen():")
    assert "self.load.run()" in src[i:i + 200] and "self._after_load()" in src[i:i + 200]
