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

from runners.mysql import Address, Credentials
from runners.node_sampler import Emit, NodeSampler, timed_rows

log = logging.getLogger(__name__)

SERIES = "galera"
STATUS = ("wsrep_cluster_status", "wsrep_cluster_size", "wsrep_cluster_conf_id",
          "wsrep_incoming_addresses", "wsrep_ready")
QUERY = ("SHOW GLOBAL STATUS WHERE Variable_name IN ("
         + ", ".join(f"'{v}'" for v in STATUS) + ")")


MEMBER = "member:"  # a sample's key naming a node of the component: member:g1


def members(addresses: str, ports: Mapping[int, str]) -> list[str]:
    """``wsrep_incoming_addresses`` as the lab's nodes: natively every node is on 127.0.0.1
    (``127.0.0.1:23001,127.0.0.1:23002``) and ``ports`` maps a node's client port to its
    name; on containers each names itself (``g1:3306,g2:3306``: the host is the node's name).
    Unknown entries are left out."""
    names = set(ports.values())
    out: list[str] = []
    for entry in addresses.split(","):
        host, _, port = entry.strip().rpartition(":")
        name = host if host in names else (
            ports.get(int(port)) if port.isdigit() else None)
        if name is not None and name not in out:
            out.append(name)
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


class GaleraWatcher(NodeSampler):
    """Samples every node's Galera component until ``stop`` is set (``NodeSampler``)."""

    SERIES = SERIES

    def __init__(self, nodes: Mapping[str, Address], creds: Credentials, emit: Emit,
                 interval: float = 0.2, stop: threading.Event | None = None, *,
                 connect_fn: Callable[[Address, Credentials], Any] | None = None) -> None:
        super().__init__(nodes, creds, emit, interval, stop, connect_fn=connect_fn)
        self.ports = {addr.port: name for name, addr in self.nodes.items()}

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
            next_tick = self._next_tick(name, next_tick)
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    @staticmethod
    def _read(conn: Any) -> tuple[int, dict[str, str]]:
        t_ns, rows = timed_rows(conn, QUERY)
        return t_ns, {str(k).lower(): str(v) for k, v in rows}

