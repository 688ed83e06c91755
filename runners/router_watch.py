"""Watch which nodes the router sends writes to: the router_failover checker's evidence.

``RouterWatcher`` asks the router (``runners.router.Router.server_states("writer")``: ProxySQL's
``stats_mysql_connection_pool`` for the writer hostgroup, HAProxy's ``show stat`` for the
writer backend) every ``interval`` seconds (50 ms) and calls::

    emit("router", "router.writer", time_ns, {"up:g1": 1.0, "down:g2": 2.0})

(each value is the node's rank in topology order). ``up:NODE`` names a node the router routes
writes to at that moment (ProxySQL: ONLINE in the writer hostgroup; HAProxy: UP); ``down:NODE``
a node the writer backend lists in any other state (SHUNNED, OFFLINE_SOFT, OFFLINE_HARD; DOWN,
MAINT). A node absent from both has left the writer hostgroup (ProxySQL moved it to another).
A router that cannot be asked gives ``{"unreadable": 1.0}``. ``time_ns`` is
``time.monotonic_ns()`` half way through the question.

Nothing here imports ``lab``: the engine passes ``emit``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence

log = logging.getLogger(__name__)

SERIES = "router"
SUBJECT = "router.writer"
Emit = Callable[[str, str, int, dict[str, float]], None]


def sample_values(states: Mapping[str, str], order: Sequence[str]) -> dict[str, float]:
    """One sample from ``{node: the router's status word}``; each value is the node's rank in
    ``order`` (topology order, from 1), so that the writer is the ``up:`` key of least value."""
    out: dict[str, float] = {}
    for node, state in states.items():
        word = state.upper()
        up = word == "ONLINE" or word.startswith("UP")
        rank = order.index(node) + 1 if node in order else len(order) + 1
        out[("up:" if up else "down:") + node] = float(rank)
    return out


class RouterWatcher:
    """Samples the router's writer backend until ``stop`` is set."""

    def __init__(self, states: Callable[[], Mapping[str, str]], order: Sequence[str],
                 emit: Emit, interval: float = 0.05,
                 stop: threading.Event | None = None) -> None:
        self.states = states
        self.order = list(order)
        self.emit = emit
        self.interval = interval
        self.stop = stop or threading.Event()
        self.thread = threading.Thread(target=self._run, name="router-watch", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the thread (set ``stop`` first)."""
        self.thread.join(timeout)

    def _run(self) -> None:
        next_tick = time.monotonic()
        while not self.stop.is_set():
            t0 = time.monotonic_ns()
            try:
                values = sample_values(self.states(), self.order)
            except Exception as e:  # noqa: BLE001 - a router that is down or paused
                log.debug("router states: %s", e)
                values = {"unreadable": 1.0}
            t1 = time.monotonic_ns()
            self.emit(SERIES, SUBJECT, (t0 + t1) // 2, values)
            next_tick += self.interval
            delay = next_tick - time.monotonic()
            if delay < 0:
                next_tick = time.monotonic()
                delay = 0
            self.stop.wait(delay)
