"""The lab's own workloads: clients over real connections that record every operation.

Each client runs in a thread: it connects (with short timeouts), invokes one operation at a
time and records ``invoke`` then ``ok`` / ``fail`` / ``info``. After an error it drops the
connection and reconnects on the next operation. Outcomes:

- a connection that could not be opened: ``fail`` (nothing was sent);
- a server error (1062 duplicate key, 1290 read-only, 1213 deadlock ...): ``fail``;
- a lost connection or a timeout during a write: ``info`` (it may have been applied);
- any error during a read: ``fail`` (a read changes nothing).
"""

from __future__ import annotations

import itertools
import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import MySQLdb

from dsl.plan import PlannedWorkload
from lab.history import Op
from runners.mysql import Address, Credentials, connect, error_code

log = logging.getLogger(__name__)

SCHEMA = "lab"
CONNECT_ERRORS = {2002, 2003, 2005, 1040, 1045, 1129, 1130, 1203}
UNKNOWN_OUTCOME = {2006, 2013, 2027, 2055, 1927, 1158, 1159, 1160, 1161}


def table_name(workload: str) -> str:
    return f"`{SCHEMA}`.`w_{workload}`"


def table_ddl(w: PlannedWorkload) -> list[str]:
    t = table_name(w.name)
    if w.kind == "unique_insert" and w.keys == "auto_increment":
        return [f"CREATE TABLE IF NOT EXISTS {t} (k BIGINT AUTO_INCREMENT PRIMARY KEY, "
                "v BIGINT NOT NULL, c INT NOT NULL) ENGINE=InnoDB"]
    if w.kind in ("probe", "unique_writes", "read_your_writes", "unique_insert"):
        return [f"CREATE TABLE IF NOT EXISTS {t} (k BIGINT PRIMARY KEY, v BIGINT NOT NULL, "
                "c INT NOT NULL) ENGINE=InnoDB"]
    return []


Record = Callable[[Op], Op]


@dataclass
class ClientEnv:
    """What a workload needs from the topology."""

    address: Callable[[str], Address]
    node_by_port: Callable[[int], str | None]
    creds: Credentials
    record: Record
    stop: threading.Event
    seed: int


class Client:
    """One connection's worth of a workload, with reconnects."""

    def __init__(self, env: ClientEnv, workload: str, process: int, endpoint: str,
                 timeout: float) -> None:
        self.env = env
        self.workload = workload
        self.process = process
        self.endpoint = endpoint
        self.timeout = timeout
        self.conn: Any = None
        self.node: str | None = None

    def _ensure(self) -> Any:
        if self.conn is None:
            addr = self.env.address(self.endpoint)
            self.conn = connect(addr, self.env.creds, self.timeout)
            cur = self.conn.cursor()
            cur.execute("SELECT @@port")
            row = cur.fetchone()
            cur.close()
            self.node = self.env.node_by_port(int(row[0])) if row else None
        return self.conn

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:  # noqa: BLE001
                pass
        self.conn = None

    def op(self, f: str, sql: str, args: tuple[Any, ...] = (), key: int | None = None,
           value: Any = None, is_write: bool = True,
           result: Callable[[Any], Any] | None = None, key_from_insert: bool = False) -> Op:
        """Invoke one statement and record its outcome. Returns the completion op."""
        rec = self.env.record
        rec(Op("invoke", f, self.process, time.monotonic_ns(), self.workload, self.endpoint,
               self.node, key, value))
        connected = self.conn is not None
        try:
            conn = self._ensure()
            connected = True
            cur = conn.cursor()
            cur.execute(sql, args)
            out = cur.fetchall() if cur.description else None
            cur.close()
            got = result(out) if result else value
            if key_from_insert:  # the server picked the key (auto-increment)
                key = int(conn.insert_id())
            return rec(Op("ok", f, self.process, time.monotonic_ns(), self.workload,
                          self.endpoint, self.node, key, got))
        except MySQLdb.Error as e:
            code = error_code(e)
            msg = str(e.args[1]) if len(e.args) > 1 else str(e)
            never_sent = not connected or code in CONNECT_ERRORS
            typ = "fail"
            if is_write and not never_sent and (code in UNKNOWN_OUTCOME or code is None):
                typ = "info"
            if code in UNKNOWN_OUTCOME or never_sent or code is None:
                self.close()
            return rec(Op(typ, f, self.process, time.monotonic_ns(), self.workload,
                          self.endpoint, self.node, key, value, code, msg[:200]))


class Workload:
    """Base: threads of clients, bounded by time, rows or operations, or the stop event."""

    def __init__(self, spec: PlannedWorkload, env: ClientEnv, first_process: int,
                 default_duration: float) -> None:
        self.spec = spec
        self.env = env
        self.first_process = first_process
        self.duration = spec.duration if spec.duration is not None else default_duration
        self.finished = threading.Event()
        self.started_at: float | None = None
        self._threads: list[threading.Thread] = []
        self._counter = itertools.count(1)
        self._budget_lock = threading.Lock()
        self._done_ops = 0
        limit = spec.rows if spec.rows is not None else spec.ops
        self.limit = limit

    @property
    def name(self) -> str:
        return self.spec.name

    def n_clients(self) -> int:
        return max(1, self.spec.clients)

    def start(self) -> None:
        self.started_at = time.monotonic()
        for i in range(self.n_clients()):
            t = threading.Thread(target=self._client_main, args=(i,), daemon=True,
                                 name=f"wl-{self.name}-{i}")
            t.start()
            self._threads.append(t)
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        for t in self._threads:
            t.join()
        self.finished.set()

    def join(self, timeout: float | None = None) -> None:
        deadline = None if timeout is None else time.monotonic() + timeout
        for t in self._threads:
            t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))

    def _should_stop(self) -> bool:
        if self.env.stop.is_set():
            return True
        if self.started_at is not None and self.limit is None and \
                time.monotonic() - self.started_at >= self.duration:
            return True
        return False

    def _take(self) -> bool:
        """Claim one unit of the rows/ops budget; False when it is used up."""
        if self.limit is None:
            return True
        with self._budget_lock:
            if self._done_ops >= self.limit:
                return False
            self._done_ops += 1
            return True

    def _pace(self, client_index: int) -> Callable[[], None]:
        interval = self.spec.every
        if interval is None and self.spec.rate:
            interval = self.n_clients() / self.spec.rate
        if not interval:
            return lambda: None
        nxt = [time.monotonic()]

        def wait() -> None:
            nxt[0] += interval
            delay = nxt[0] - time.monotonic()
            if delay > 0:
                self.env.stop.wait(delay)
            else:
                nxt[0] = time.monotonic()
        return wait

    def targets(self) -> list[str]:
        return self.spec.targets

    def _client_main(self, i: int) -> None:
        endpoint = self.targets()[i % len(self.targets())]
        client = Client(self.env, self.name, self.first_process + i, endpoint,
                        self.spec.timeout)
        pace = self._pace(i)
        try:
            self.run_client(i, client, pace)
        except Exception:  # noqa: BLE001 - a client bug must not hang the run
            log.exception("workload %s client %d crashed", self.name, i)
        finally:
            client.close()

    def run_client(self, i: int, client: Client, pace: Callable[[], None]) -> None:
        raise NotImplementedError


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


class ReadYourWritesWorkload(Workload):
    """Write a new version of a key on the write endpoint, then read it on every read
    endpoint, polling until each sees it (or the timeout): stale reads and visibility time."""

    KEYS_PER_CLIENT = 16
    POLL = 0.001

    def run_client(self, i: int, client: Client, pace: Callable[[], None]) -> None:
        t = table_name(self.name)
        readers = [Client(self.env, self.name, client.process + 10000 * (j + 1), ep,
                          self.spec.timeout) for j, ep in enumerate(self.spec.reads)]
        versions: dict[int, int] = {}
        n = 0
        try:
            while not self._should_stop() and self._take():
                k = client.process * 1000 + (n % self.KEYS_PER_CLIENT)
                n += 1
                v = versions.get(k, 0) + 1
                done = client.op("write", f"INSERT INTO {t} (k, v, c) VALUES (%s, %s, %s) "
                                 "ON DUPLICATE KEY UPDATE v = VALUES(v)",
                                 (k, v, client.process), key=k, value=v)
                if done.type == "fail":
                    pace()
                    continue
                versions[k] = v
                if done.type != "ok":
                    pace()
                    continue
                deadline = time.monotonic() + self.spec.timeout
                for r in readers:
                    f = "read"  # the first read after the write; polls after it: "reread"
                    while not self.env.stop.is_set():
                        got = r.op(f, f"SELECT (SELECT v FROM {t} WHERE k = %s)",
                                   (k,), key=k, is_write=False,
                                   result=lambda rows: None if not rows or rows[0][0] is None
                                   else int(rows[0][0]))
                        if got.type != "ok" or (got.value is not None and got.value >= v) \
                                or time.monotonic() > deadline:
                            break
                        f = "reread"
                        time.sleep(self.POLL)
                pace()
        finally:
            for r in readers:
                r.close()


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
                client.op("insert", f"INSERT INTO {t} (v, c) VALUES (%s, %s)",
                          (client.process, client.process), value=client.process,
                          key_from_insert=True)
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


KINDS: dict[str, type[Workload]] = {
    "probe": ProbeWorkload,
    "unique_writes": UniqueWritesWorkload,
    "read_your_writes": ReadYourWritesWorkload,
    "unique_insert": UniqueInsertWorkload,
    "connect": ConnectWorkload,
}
