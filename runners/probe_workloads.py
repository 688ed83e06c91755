"""The workloads of one statement an operation: ``probe`` (one small write, or read, every N ms
per client: the instrument for downtime), ``unique_writes`` (a probe without a pause),
``unique_insert`` (inserts of unique keys, on one or several targets) and ``connect`` (the cost
of a connection). Their clients and base are in ``runners.workloads``."""

from __future__ import annotations

import itertools
import random
import threading
from collections.abc import Callable
from typing import Any

from runners.workloads import Client, Workload, table_name


class ProbeWorkload(Workload):
    """One small write (or read) every N ms per client: the instrument for downtime."""

    def run_client(self, i: int, client: Client, pace: Callable[[], None]) -> None:
        t = table_name(self.name)
        while not self._should_stop() and self._take():
            if self.spec.operation == "read":
                client.op("read", "SELECT 1", is_write=False)
            else:
                k = next(self._counter)
                client.op("write", f"INSERT INTO {t} (k, v, c) VALUES (%s, %s, %s)",
                          (k, k, client.process), key=k, value=k)
            pace()


class UniqueWritesWorkload(ProbeWorkload):
    """Writes with unique keys as fast as allowed (or at ``rate``): a probe without a pause."""


class UniqueInsertWorkload(Workload):
    """Inserts on several primaries. ``keys sequential``: each target's clients insert the
    same sequence 1, 2, 3 ... (so two primaries collide: duplicate keys); ``auto_increment``:
    the server picks the key; ``random``: keys drawn from a range."""

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self._per_target: dict[str, itertools.count[int]] = {
            t: itertools.count(1) for t in self.spec.targets}
        self._rng_lock = threading.Lock()
        self._rng = random.Random(self.env.seed)

    def run_client(self, i: int, client: Client, pace: Callable[[], None]) -> None:
        t = table_name(self.name)
        while not self._should_stop() and self._take():
            if self.spec.keys == "auto_increment":
                v = next(self._counter)  # unique per insert: a row is this insert's or not
                client.op("insert", f"INSERT INTO {t} (v, c) VALUES (%s, %s)",
                          (v, client.process), value=v, key_from_insert=True)
            else:
                if self.spec.keys == "random":
                    with self._rng_lock:
                        k = self._rng.randint(1, 1_000_000)
                else:
                    k = next(self._per_target[client.endpoint])
                client.op("insert", f"INSERT INTO {t} (k, v, c) VALUES (%s, %s, %s)",
                          (k, k, client.process), key=k, value=k)
            pace()


class ConnectWorkload(Workload):
    """Open a connection, run ``SELECT 1``, close it: the cost of a connection."""

    def run_client(self, i: int, client: Client, pace: Callable[[], None]) -> None:
        while not self._should_stop() and self._take():
            client.close()
            client.op("connect", "SELECT 1", is_write=False)
            client.close()
            pace()
