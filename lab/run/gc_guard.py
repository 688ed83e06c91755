"""The cyclic garbage collector kept from stopping the clients while a history is recorded.

Every recorded operation is a long-lived object that Python's cyclic collector tracks. Each
time the objects that survived earlier collections grow by a quarter, the collector scans all of
them at once, holding the interpreter's lock: every client thread of the lab stands still. With
1.5 million operations recorded (3 million records) these scans took 50 ms, then 100 ms, and up
to 0.4 s each on this 2-core machine: a stall of every client that the lab's own figures
(``downtime``'s stalls, latency, visibility) would charge to the database.

While ``history_frozen()`` is held, a thread moves every object the collector tracks into its
permanent generation (``gc.freeze()``, a constant-time move) every ``FREEZE_EVERY`` seconds,
so a scan only ever reads what was made since: the longest stop measured fell from 0.4 s to
0.05 s. The collector still collects the young objects. When the last holder lets go,
everything is handed back (``gc.unfreeze()``) to be collected as usual after the load.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

FREEZE_EVERY = 0.1

_lock = threading.Lock()
_holders = 0
_stop: threading.Event | None = None
_thread: threading.Thread | None = None


def _freeze_until(stop: threading.Event) -> None:
    gc.freeze()
    while not stop.wait(FREEZE_EVERY):
        gc.freeze()


def hold() -> None:
    """Start freezing (the first holder starts the thread)."""
    global _holders, _stop, _thread
    with _lock:
        _holders += 1
        if _holders == 1:
            _stop = threading.Event()
            _thread = threading.Thread(target=_freeze_until, args=(_stop,), daemon=True,
                                       name="lab-gc-freeze")
            _thread.start()


def release() -> None:
    """Stop freezing when no one holds it any more, and hand every object back."""
    global _holders, _stop, _thread
    with _lock:
        if _holders == 0:
            return
        _holders -= 1
        if _holders:
            return
        stop, thread, _stop, _thread = _stop, _thread, None, None
    assert stop is not None and thread is not None
    stop.set()
    thread.join()
    gc.unfreeze()


def holding() -> bool:
    return _holders > 0


@contextlib.contextmanager
def history_frozen() -> Iterator[None]:
    """Hold for the block: while a load is recorded."""
    hold()
    try:
        yield
    finally:
        release()
