"""The workloads of one statement an operation: ``probe`` (one small write, or read, every N ms
per client: the instrument for downtime), ``unique_writes`` (a probe without a pause),
``unique_insert`` (inserts of unique keys, on one or several targets) and ``connect`` (the cost
of a connection). Their clients and base are in ``runners.workloads``."""

from __future__ import annotations

import functools
import itertools
import logging
import os
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from runners.multiplexed import Statement, run_multiplexed
from runners.workloads import Client, Workload, table_name

log = logging.getLogger(__name__)


class ProbeWorkload(Workload):
    """One small write (or read) every N ms per client: the instrument for downtime."""

    def statement(self, client: Client) -> Statement | None:
        """The client's next operation; None once the workload is over."""
        if self._should_stop() or not self._take():
            return None
        if self.spec.operation == "read":
            return Statement("read", "SELECT 1", (), None, None, is_write=False)
        k = next(self._counter)
        args = (k, k, client.process)
        return Statement("write", self._insert, args, k, k, query=self._insert_query % args)

    @functools.cached_property
    def _insert(self) -> str:
        return f"INSERT INTO {table_name(self.name)} (k, v, c) VALUES (%s, %s, %s)"

    @functools.cached_property
    def _insert_query(self) -> bytes:
        """The same, encoded once: its arguments are integers, their own SQL literals."""
        return self._insert.replace("%s", "%d").encode()

    def run_client(self, i: int, client: Client, pace: Callable[[], None]) -> None:
        while (st := self.statement(client)) is not None:
            client.op(st.f, st.sql, st.args, key=st.key, value=st.value, is_write=st.is_write)
            pace()


# The threads an unpaced unique_writes shares its clients between (never more than the
# clients, nor the CPUs). A thread's sends and reads are system calls, made without the
# interpreter's lock, so one thread's statements go on while the other's are in the kernel: on
# this 2-core machine, 16 clients streaming to SQLite wrote 8.8 % faster in two threads than in
# one (29,650 against 25,949 ops/s, medians of 8 paired rounds of 5 s, two ahead in each), in four
# at 27,349 (the threads wait for the lock more than they gain); at 4 clients, two threads
# are level with one (+1.1 %). Measured with bench/bench_workload.py's load.
MULTIPLEX_THREADS = 2


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity: a container's or ``taskset``'s limit),
    else the machine's."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # no sched_getaffinity on this platform
        return os.cpu_count() or 1


def multiplex_threads(clients: int) -> int:
    """How many threads run ``clients`` unpaced clients (``MULTIPLEX_THREADS`` at most)."""
    return max(1, min(MULTIPLEX_THREADS, clients, usable_cpus()))


class UniqueWritesWorkload(ProbeWorkload):
    """Writes with unique keys as fast as allowed (or at ``rate``): a probe without a pause.

    Unpaced (no ``rate``, no ``every``), the clients' statements run in ``multiplex_threads``
    threads, each keeping its clients' statements in flight (``runners.multiplexed``): a
    thread per client spent its time handing the interpreter's lock to the next one, so 16
    of them wrote at 0.67x the rate of sysbench's 16 threads. Client ``i`` is in thread
    ``i % threads``."""

    def start(self) -> None:
        if self.paced():
            super().start()
            return
        self.started_at = time.monotonic()
        n = self.n_clients()
        k = multiplex_threads(n)
        for g in range(k):
            t = threading.Thread(target=self._clients, args=(range(g, n, k),), daemon=True,
                                 name=f"wl-{self.name}-{g}")
            t.start()
            self._threads.append(t)
        threading.Thread(target=self._watch, daemon=True).start()

    def _clients(self, indexes: range) -> None:
        clients = [self.new_client(i) for i in indexes]
        try:
            run_multiplexed(clients, lambda _i, c: self.statement(c), f"wl-{self.name}")
        except Exception:  # noqa: BLE001 - a bug must not hang the run
            log.exception("workload %s crashed", self.name)
        finally:
            for c in clients:
                c.close()


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
