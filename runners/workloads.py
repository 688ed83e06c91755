"""The lab's own workloads: clients over real connections that record every operation.

Each client runs in a thread: it connects (with short timeouts), invokes one operation at a
time and records ``invoke`` then ``ok`` / ``fail`` / ``info``. After an error it drops the
connection and reconnects on the next operation. Outcomes:

- a connection that could not be opened: ``fail`` (nothing was sent);
- a server error (1062 duplicate key, 1290 read-only, 1213 deadlock ...): ``fail``;
- a lost connection or a timeout during a write: ``info`` (it may have been applied);
- any error during a read: ``fail`` (a read changes nothing).

This module holds what every workload shares: the tables (``table_ddl``), the client
(``Client``: connection, one operation or one transaction, its outcome) and the ``Workload``
base (clients in threads, pacing, a budget of operations). The workload families are
``runners.probe_workloads`` (probe, unique_writes, unique_insert, connect: one statement an
operation), ``runners.read_your_writes`` and ``runners.txn_workloads``; ``runners.workload_kinds``
maps each kind to its class.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import MySQLdb

from dsl.models import TXN_WORKLOADS
from dsl.plan import PlannedWorkload
from runners.mysql import (
    Address,
    Credentials,
    LabTimeout,
    connect_within,
    error_code,
    run_within,
)
from runners.ops import CONNECT_TIMEOUT, NOT_SENT_CODES, NOT_SENT_PREFIX, Op, OpType

log = logging.getLogger(__name__)

SCHEMA = "lab"
CONNECT_ERRORS = NOT_SENT_CODES
UNKNOWN_OUTCOME = {2006, 2013, 2027, 2055, 1927, 1158, 1159, 1160, 1161}


def table_name(workload: str) -> str:
    return f"`{SCHEMA}`.`w_{workload}`"


def table_ddl(w: PlannedWorkload) -> list[str]:
    t = table_name(w.name)
    if w.kind in TXN_WORKLOADS:
        from runners.txn_workloads import txn_table_ddl  # it builds on this module

        return txn_table_ddl(w)
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
    node_by_server_id: Callable[[int], str | None]  # who answered: by @@server_id
    creds: Credentials
    record: Record
    stop: threading.Event
    seed: int


class Client:
    """One connection's worth of a workload, with reconnects.

    Every connect and statement is bounded by the workload's ``timeout`` exactly (fractions of
    a second included): see ``runners.mysql.connect_within`` / ``run_within``."""

    def __init__(self, env: ClientEnv, workload: str, process: int, endpoint: str,
                 timeout: float) -> None:
        self.env = env
        self.workload = workload
        self.process = process
        self.endpoint = endpoint
        self.timeout = timeout
        self.conn: Any = None
        self.node: str | None = None
        self.session_sql: tuple[str, ...] = ()  # run on every new connection (isolation level)
        # after a connection that could not be opened, the next attempt waits until this long
        # after it (``Workload.new_client``: an unpaced client's ``RETRY_WAIT``)
        self.retry_wait = 0.0
        self._not_opened_at: float | None = None

    def _ensure(self) -> Any:
        """The client's connection, opened if it has none; a failure to open it is noted
        (``retry_wait``) and raised."""
        if self.conn is None:
            try:
                self._open()
            except BaseException:
                self._not_opened_at = time.monotonic()
                raise
            self._not_opened_at = None
        return self.conn

    def _open(self) -> None:
        addr = self.env.address(self.endpoint)
        conn = connect_within(addr, self.env.creds, self.timeout)
        try:
            got = run_within(conn, "SELECT @@server_id", timeout=self.timeout)
        except BaseException:
            with contextlib.suppress(Exception):
                conn.close()
            raise
        for stmt in self.session_sql:
            try:
                run_within(conn, stmt, timeout=self.timeout)
            except BaseException:
                with contextlib.suppress(Exception):
                    conn.close()
                raise
        self.conn = conn
        rows = got.rows
        self.node = self.env.node_by_server_id(int(rows[0][0])) if rows else None

    def close(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(Exception):
                self.conn.close()
        self.conn = None
        self.node = None  # the next connection may reach another node

    def op(self, f: str, sql: str, args: tuple[Any, ...] = (), key: int | None = None,
           value: Any = None, is_write: bool = True,
           result: Callable[[Any], Any] | None = None, key_from_insert: bool = False) -> Op:
        """Invoke one statement and record its outcome. Returns the completion op.

        Outcomes: the connection could not be opened (refused, or not within the timeout):
        ``fail`` with its message starting ``not sent:`` (nothing reached the server); a server
        error: ``fail`` (nothing was applied); the connection lost or the timeout passed after
        the statement was sent: ``info`` for a write (it may have been applied), ``fail`` for a
        read."""

        def work(conn: Any, _txn: Txn) -> tuple[Any, int | None]:
            got = run_within(conn, sql, args, self.timeout)
            out = result(got.rows) if result else value
            return out, (got.insert_id if key_from_insert else key)  # auto-increment: the server's

        return self.call(f, work, key=key, value=value, is_write=is_write)

    def txn(self, f: str, body: Callable[[Txn], Any], value: Any = None,
            key: int | None = None) -> Op:
        """One transaction: ``START TRANSACTION``, ``body(txn)`` (its statements through
        ``txn.run``; it returns the completed value), ``COMMIT``. Outcomes: any error or timeout
        before ``COMMIT`` was sent is ``fail`` (the connection is closed, so the server rolls
        back: nothing was applied); a server error answering ``COMMIT`` (a Galera certification
        failure, 1213) is ``fail``; a lost connection or the timeout after ``COMMIT`` was sent
        is ``info``: it may have committed."""

        def work(conn: Any, txn: Txn) -> tuple[Any, int | None]:
            txn.run("START TRANSACTION")
            out = body(txn)
            txn.committing = True
            txn.run("COMMIT")
            return out, key

        return self.call(f, work, key=key, value=value, is_write=True, transaction=True)

    def call(self, f: str, work: Callable[[Any, Txn], tuple[Any, int | None]],
             key: int | None = None, value: Any = None, is_write: bool = True,
             transaction: bool = False) -> Op:
        """Record ``invoke``, run ``work(conn, txn)`` on the (re)opened connection, record the
        outcome (see ``op`` and ``txn``). A client with a ``retry_wait`` whose last attempt
        to open a connection failed waits until ``retry_wait`` after it before invoking."""
        if self.conn is None and self._not_opened_at is not None and self.retry_wait:
            left = self._not_opened_at + self.retry_wait - time.monotonic()
            if left > 0:
                self.env.stop.wait(left)
        self.invoke(f, key, value)
        sent = False
        txn = Txn(self)
        try:
            conn = self._ensure()
            sent = True
            out, key = work(conn, txn)
            return self.done(f, key, out)
        except LabTimeout as e:
            return self.timed_out(f, e, sent, key, value, is_write, transaction, txn.committing)
        except MySQLdb.Error as e:
            return self.failed(f, e, sent, key, value, is_write, transaction, txn.committing)

    # The records of one operation, for ``call`` and for ``runners.multiplexed`` (which runs
    # many clients' statements in one thread): ``invoke`` first, then exactly one of ``done``,
    # ``timed_out`` or ``failed``.

    def invoke(self, f: str, key: int | None, value: Any, at: int | None = None) -> Op:
        """``at``: when it was invoked (monotonic ns), if not now."""
        return self.env.record(Op("invoke", f, self.process, at or time.monotonic_ns(),
                                  self.workload, self.endpoint, self.node, key, value))

    def done(self, f: str, key: int | None, out: Any, at: int | None = None) -> Op:
        """``at``: when the answer came (monotonic ns), if not now."""
        return self.env.record(Op("ok", f, self.process, at or time.monotonic_ns(),
                                  self.workload, self.endpoint, self.node, key, out))

    def timed_out(self, f: str, e: LabTimeout, sent: bool, key: int | None, value: Any,
                  is_write: bool, transaction: bool = False, committing: bool = False) -> Op:
        """The outcome of a connect or statement that did not finish within the timeout
        (``sent``: the connection had been opened). The connection is closed."""
        node = self.node
        self.close()
        self.node = node  # the node that did not answer, in the completion
        was_sent = sent and e.sent  # a timeout while opening the connection sent nothing
        may_apply = is_write and was_sent and (not transaction or committing)
        typ: OpType = "info" if may_apply else "fail"
        code = None if was_sent else CONNECT_TIMEOUT
        msg = str(e) if was_sent else NOT_SENT_PREFIX + str(e)
        if transaction and was_sent:
            msg = f"{'COMMIT' if committing else 'before COMMIT'}: {msg}"
        op = self.env.record(Op(typ, f, self.process, time.monotonic_ns(), self.workload,
                                self.endpoint, self.node, key, value, code, msg))
        self.node = None
        return op

    def failed(self, f: str, e: MySQLdb.Error, sent: bool, key: int | None, value: Any,
               is_write: bool, transaction: bool = False, committing: bool = False) -> Op:
        """The outcome of an error while connecting (``sent`` False) or from the statement;
        the connection is closed unless the server answered with an error and kept it."""
        code = error_code(e)
        msg = str(e.args[1]) if len(e.args) > 1 else str(e)
        if code == 0:  # mysqlclient's "connection unusable": the outcome is unknown
            code = None
        never_sent = not sent or code in CONNECT_ERRORS
        outcome: OpType = "fail"
        unknown = code in UNKNOWN_OUTCOME or code is None
        if is_write and not never_sent and unknown and (not transaction or committing):
            outcome = "info"
        node = self.node
        # a transaction that failed leaves the connection in it: close it (rolled back)
        if unknown or never_sent or transaction:
            self.close()
            self.node = node
        if never_sent:
            msg = NOT_SENT_PREFIX + msg
        elif transaction:
            msg = f"{'COMMIT' if committing else 'before COMMIT'}: {msg}"
        op = self.env.record(Op(outcome, f, self.process, time.monotonic_ns(), self.workload,
                                self.endpoint, self.node, key, value, code, msg[:200]))
        if self.conn is None:
            self.node = None  # the next connection may reach another node
        return op


class Txn:
    """The statements of one transaction on a client's connection (see ``Client.txn``)."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.committing = False  # COMMIT was sent: from here an unknown outcome is ``info``

    def run(self, sql: str, args: tuple[Any, ...] = ()) -> Any:
        """The rows of one statement (None for a statement without a result set)."""
        return run_within(self.client.conn, sql, args, self.client.timeout).rows


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
        """The wait after each operation of a paced client (``every``, or ``rate`` shared by
        the clients). Slots are counted from the workload's start, client ``i`` offset by
        ``i / clients`` of an interval (the clients take turns instead of firing together),
        and the client waits for its first slot: ``rate 50/s`` for 10 s is 500 operations, not
        one or two fewer because a client started a few milliseconds late."""
        interval = self.spec.every
        if interval is None and self.spec.rate:
            interval = self.n_clients() / self.spec.rate
        if not interval:
            return lambda: None
        start = self.started_at if self.started_at is not None else time.monotonic()
        first = start + interval * client_index / self.n_clients()
        if first > time.monotonic():
            self.env.stop.wait(first - time.monotonic())
        nxt = [first]

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

    def paced(self) -> bool:
        """Each client waits between its operations (``every`` or ``rate``)."""
        return bool(self.spec.every or self.spec.rate)

    # an unpaced client whose connection could not be opened (refused: a server down) tries
    # again 10 ms later, not at once: thousands of refused connects a second (72,000 in 8 s
    # from one read_your_writes writer while its node was dead) cost a core and resolve an
    # outage no better than the 10 ms a probe does
    RETRY_WAIT = 0.01

    def new_client(self, i: int) -> Client:
        """Client ``i``: process ``first_process + i``, on the targets in turn."""
        endpoint = self.targets()[i % len(self.targets())]
        c = Client(self.env, self.name, self.first_process + i, endpoint, self.spec.timeout)
        if not self.paced():
            c.retry_wait = self.RETRY_WAIT
        return c

    def _client_main(self, i: int) -> None:
        client = self.new_client(i)
        pace = self._pace(i)
        try:
            self.run_client(i, client, pace)
        except Exception:  # noqa: BLE001 - a client bug must not hang the run
            log.exception("workload %s client %d crashed", self.name, i)
        finally:
            client.close()

    def run_client(self, i: int, client: Client, pace: Callable[[], None]) -> None:
        raise NotImplementedError
