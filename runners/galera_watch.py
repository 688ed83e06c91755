"""Watch the component every Galera node believes it is in: the split-brain checker's evidence.

``GaleraWatcher`` reads, on every node every ``interval`` seconds (200 ms), each node in its
own thread with its own persistent connection::

    SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_cluster_status', 'wsrep_cluster_size',
        'wsrep_cluster_conf_id', 'wsrep_incoming_addresses', 'wsrep_ready')

and calls::

    emit("galera", node, time_ns, {"primary": 1.0 | 0.0, "size": float, "conf_id": float,
                                   "ready": 1.0 | 0.0, "member:g1": 1.0, "member:g2": 1.0})

``primary`` is 1.0 when ``wsrep_cluster_status`` is ``Primary`` (the node's component holds
quorum, or ignores the lack of it: ``pc.ignore_sb``). ``member:NODE`` (1.0) names each of the
lab's nodes in the component's membership (``members``: matched by the client port in
``wsrep_incoming_addresses``); none when the list names none of them. ``conf_id`` is the
component's view number: two components formed by a split may carry the same number, which is
why the membership is read. A node that cannot be read gives ``{"unreadable": 1.0}`` for that
tick and is reconnected on the next one. ``time_ns`` is ``time.monotonic_ns()`` half way
through the status query.

Nothing here imports ``lab``: the engine passes ``emit``.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from runners.mysql import Address, Credentials, connect

log = logging.getLogger(__name__)

SERIES = "galera"
STATUS = ("wsrep_cluster_status", "wsrep_cluster_size", "wsrep_cluster_conf_id",
          "wsrep_incoming_addresses", "wsrep_ready")
QUERY = ("SHOW GLOBAL STATUS WHERE Variable_name IN ("
         + ", ".join(f"'{v}'" for v in STATUS) + ")")
Emit = Callable[[str, str, int, dict[str, float]], None]


MEMBER = "member:"  # a sample's key naming a node of the component: member:g1


def members(addresses: str, ports: Mapping[int, str]) -> list[str]:
    """``wsrep_incoming_addresses`` (``127.0.0.1:23001,127.0.0.1:23002``) as the lab's nodes:
    ``ports`` maps a node's client port to its name. Unknown entries are left out."""
    out: list[str] = []
    for entry in addresses.split(","):
        _, _, port = entry.strip().rpartition(":")
        if port.isdigit() and int(port) in ports and ports[int(port)] not in out:
            out.append(ports[int(port)])
    return out


def status_values(status: Mapping[str, str], ports: Mapping[int, str]) -> dict[str, float]:
    """The sample of one node from its ``wsrep_%`` status (names in lower case)."""

    def num(key: str) -> float:
        try:
            return float(status.get(key) or 0)
        except ValueError:
            return 0.0

    out = {
        "primary": 1.0 if status.get("wsrep_cluster_status", "") == "Primary" else 0.0,
        "size": num("wsrep_cluster_size"),
        "conf_id": num("wsrep_cluster_conf_id"),
        "ready": 1.0 if status.get("wsrep_ready", "").upper() == "ON" else 0.0,
    }
    for name in members(status.get("wsrep_incoming_addresses", ""), ports):
        out[MEMBER + name] = 1.0
    return out


class GaleraWatcher:
    """Samples every node's Galera component until ``stop`` is set. ``connect_fn(addr, creds)``
    opens a connection (default: ``runners.mysql.connect`` with a 1 s timeout)."""

    def __init__(self, nodes: Mapping[str, Address], creds: Credentials, emit: Emit,
                 interval: float = 0.2, stop: threading.Event | None = None, *,
                 connect_fn: Callable[[Address, Credentials], Any] | None = None) -> None:
        self.nodes = dict(nodes)
        self.ports = {addr.port: name for name, addr in self.nodes.items()}
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
                                 name=f"galera-watch-{name}")
            t.start()
            self._threads.append(t)

    def join(self, timeout: float | None = None) -> None:
        deadline = None if timeout is None else time.monotonic() + timeout
        for t in self._threads:
            t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))

    def _run(self, name: str) -> None:
        addr = self.nodes[name]
        conn: Any = None
        next_tick = time.monotonic()
        while not self.stop.is_set():
            t_ns = time.monotonic_ns()
            values: dict[str, float] | None = None
            try:
                if conn is None:
                    conn = self._connect(addr, self.creds)
                t_ns, status = self._read(conn)
                values = status_values(status, self.ports)
            except Exception as e:  # noqa: BLE001 - down, paused, refused: unreadable
                log.debug("galera status of %s: %s", name, e)
                if conn is not None:
                    with contextlib.suppress(Exception):
                        conn.close()
                conn = None
            self._emit(name, t_ns, values if values is not None else {"unreadable": 1.0})
            self.ticks[name] = self.ticks.get(name, 0) + 1
            next_tick += self.interval
            now = time.monotonic()
            if next_tick < now:  # a slow read: skip the missed ticks, keep the cadence
                next_tick = now + self.interval - (now - next_tick) % self.interval
            self.stop.wait(next_tick - now)
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    @staticmethod
    def _read(conn: Any) -> tuple[int, dict[str, str]]:
        t_a = time.monotonic_ns()
        cur = conn.cursor()
        try:
            cur.execute(QUERY)
            rows = list(cur.fetchall())
        finally:
            with contextlib.suppress(Exception):
                cur.close()
        t_b = time.monotonic_ns()
        return (t_a + t_b) // 2, {str(k).lower(): str(v) for k, v in rows}

    def _emit(self, name: str, t_ns: int, values: dict[str, float]) -> None:
        try:
            self.emit(SERIES, name, t_ns, values)
        except Exception:  # noqa: BLE001 - a recorder problem must not stop the watch
            log.exception("emitting a galera sample for %s", name)
