"""What the lab's per-node samplers share (``ReplicationWatcher``, ``GaleraWatcher``): one
daemon thread per node reading on a fixed cadence until ``stop`` is set, a connection per
thread (``connect_fn``: default ``runners.mysql.connect`` with a 1 s timeout; tests pass a
fake), each reading timed half way through its query, and samples given to ``emit`` — a
recorder problem never stops the watch.

Nothing here imports ``lab``: the engine passes ``emit``.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from runners.mysql import Address, Credentials, connect

log = logging.getLogger(__name__)

Emit = Callable[[str, str, int, dict[str, float]], None]


class NodeSampler:
    SERIES: ClassVar[str]  # the series name given to ``emit`` (and the threads' names)

    def __init__(self, nodes: Mapping[str, Address], creds: Credentials, emit: Emit,
                 interval: float = 0.2, stop: threading.Event | None = None, *,
                 connect_fn: Callable[[Address, Credentials], Any] | None = None) -> None:
        self.nodes = dict(nodes)
        self.creds = creds
        self.emit = emit
        self.interval = interval
        self.stop = stop if stop is not None else threading.Event()
        self._connect = connect_fn or (lambda a, c: connect(a, c, timeout=1))
        self.ticks: dict[str, int] = {}
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for name in self.nodes:
            t = threading.Thread(target=self._run, args=(name,), daemon=True,
                                 name=f"{self.SERIES}-watch-{name}")
            t.start()
            self._threads.append(t)

    def join(self, timeout: float | None = None) -> None:
        """Wait for the threads (set ``stop`` first); ``timeout`` bounds the whole wait."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for t in self._threads:
            t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))

    def _run(self, name: str) -> None:
        raise NotImplementedError

    def _emit(self, name: str, t_ns: int, values: dict[str, float]) -> None:
        try:
            self.emit(self.SERIES, name, t_ns, values)
        except Exception:  # noqa: BLE001 - a recorder problem must not stop the watch
            log.exception("emitting a %s sample for %s", self.SERIES, name)

    def _next_tick(self, name: str, next_tick: float) -> float:
        """Count the tick, then wait for the next one on the cadence (a slow read skips the
        missed ticks); the next tick's time."""
        self.ticks[name] = self.ticks.get(name, 0) + 1
        next_tick += self.interval
        now = time.monotonic()
        if next_tick < now:
            next_tick = now + self.interval - (now - next_tick) % self.interval
        self.stop.wait(next_tick - now)
        return next_tick


def timed_rows(conn: Any, sql: str, cursorclass: Any = None) -> tuple[int, list[Any]]:
    """``sql``'s rows and ``time.monotonic_ns()`` half way through the query."""
    t_a = time.monotonic_ns()
    cur = conn.cursor(cursorclass) if cursorclass is not None else conn.cursor()
    try:
        cur.execute(sql)
        rows = list(cur.fetchall()) if cur.description else []
    finally:
        with contextlib.suppress(Exception):
            cur.close()
    t_b = time.monotonic_ns()
    return (t_a + t_b) // 2, rows
