"""Many clients' statements in one thread: the unpaced single-statement workloads.

A client thread per connection spends most of its time handing the interpreter's lock to the
next one: with 16 clients writing as fast as they can, the lab's threads reached 0.67x the rate
of ``sysbench oltp_insert`` with 16 threads on the same server (issue 25's bench). Here one
thread keeps every client's statement in flight: it sends each client's next statement as soon
as the client's answer is read, waits for any socket to become readable (``poll``) and reads the
answers that are there. Each client is still one connection with at most one statement in
flight, its operations recorded ``invoke`` then exactly one completion, with the outcome table
of ``runners.workloads.Client`` (``Client.done`` / ``timed_out`` / ``failed``: the same code).

What could block the thread is done beside it: opening a connection (``Client._ensure``: the
connect, ``SELECT @@server_id`` and the session's statements, each within the workload's
timeout) runs in a helper thread, so a client whose server does not answer its connect never
holds up the clients of another server. A statement's timeout is measured from its send, as in
``runners.mysql.run_within``, exactly (the poll waits no longer than the earliest deadline).

Reading an answer once its socket is readable does not wait for the server: a write's answer
(an OK or an error packet) arrives in one piece.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, NamedTuple

import MySQLdb

from runners.mysql import LabTimeout, read_answer, send_statement
from runners.workloads import Client

log = logging.getLogger(__name__)

POLL_MS = 100  # the longest poll while nothing is due: how soon a stop is seen when idle


class Statement(NamedTuple):
    """One operation of one statement (``Client.op``'s arguments). A tuple: built once per
    operation, in the thread every client shares."""

    f: str
    sql: str
    args: tuple[Any, ...]
    key: int | None
    value: Any
    is_write: bool = True
    key_from_insert: bool = False
    query: bytes | None = None  # ``sql`` with its arguments, ready to send (else built here)


NextStatement = Callable[[int, Client], "Statement | None"]


class _Slot:
    __slots__ = ("i", "client", "stmt", "connecting", "deadline", "fd")

    def __init__(self, i: int, client: Client) -> None:
        self.i = i
        self.client = client
        self.stmt: Statement | None = None
        self.connecting: Future[Any] | None = None
        self.deadline = 0.0
        self.fd = -1  # registered with the poll while a statement is in flight


def run_multiplexed(clients: list[Client], next_statement: NextStatement,
                    name: str = "lab") -> None:
    """Run every client's statements until ``next_statement(i, client)`` returns None for
    each; every statement invoked is completed before this returns. Closes no connection:
    the caller closes its clients."""
    _Multiplexer(clients, next_statement, name).run()


class _Multiplexer:
    def __init__(self, clients: list[Client], next_statement: NextStatement, name: str) -> None:
        self.slots = [_Slot(i, c) for i, c in enumerate(clients)]
        self.next_statement = next_statement
        self.poll = select.poll()
        self.by_fd: dict[int, _Slot] = {}
        # statements in flight, in the order they were sent: their deadlines are in the same
        # order when the clients share one timeout, so the first is the earliest
        self.waiting: dict[_Slot, None] = {}
        self.connecting: set[_Slot] = set()
        self.pool = ThreadPoolExecutor(max_workers=max(1, len(clients)),
                                       thread_name_prefix=f"{name}-connect")
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        self.poll.register(self.wake_r, select.POLLIN)

    def run(self) -> None:
        try:
            for slot in self.slots:
                self._guarded(self._next, slot)
            while self.waiting or self.connecting:
                self._round()
        finally:
            self.pool.shutdown(wait=True)
            for fd in (self.wake_r, self.wake_w):
                with contextlib.suppress(OSError):
                    os.close(fd)

    # --- one operation ----------------------------------------------------------------------

    def _next(self, slot: _Slot, done: tuple[str, int | None, Any, int] | None = None) -> None:
        """Invoke the client's next statement: send it, or open the connection first.

        ``done``: the ``ok`` of the statement just answered (f, key, value, when its answer
        was read), recorded after the next statement is sent: the server has it sooner, and
        the records keep their order (that ``ok``, then this ``invoke``, with their times)."""
        client = slot.client
        stmt = self.next_statement(slot.i, client)
        slot.stmt = stmt
        if stmt is None or client.conn is None:
            if done is not None:
                client.done(*done)
            if stmt is not None:
                client.invoke(stmt.f, stmt.key, stmt.value)
                fut = self.pool.submit(client._ensure)
                slot.connecting = fut
                self.connecting.add(slot)
                fut.add_done_callback(self._wake)
            return
        at = time.monotonic_ns()
        try:
            error = self._send(slot)
        finally:  # recorded whatever _send raised: a crash leaves this invoke open (unknown)
            if done is not None:
                client.done(*done)
            client.invoke(stmt.f, stmt.key, stmt.value, at)
        if error is not None:
            self._unsent(slot, error)

    def _send(self, slot: _Slot) -> MySQLdb.Error | None:
        """Send the slot's statement and watch its socket; the error if it could not be sent
        (for the caller to record, after the invoke)."""
        client, stmt = slot.client, slot.stmt
        assert stmt is not None
        conn = client.conn
        slot.deadline = time.monotonic() + client.timeout
        try:
            if stmt.query is not None:
                conn.send_query(stmt.query)
            else:
                send_statement(conn, stmt.sql, stmt.args)
        except MySQLdb.Error as e:
            return e
        slot.fd = conn.fileno()
        self.by_fd[slot.fd] = slot
        self.poll.register(slot.fd, select.POLLIN)
        self.waiting[slot] = None
        return None

    def _unsent(self, slot: _Slot, error: MySQLdb.Error) -> None:
        """The statement could not be sent: its outcome as ``Client.call`` records it, and the
        connection closed (its state is unknown), so the next statement opens a new one."""
        client, stmt = slot.client, slot.stmt
        assert stmt is not None
        client.failed(stmt.f, error, True, stmt.key, stmt.value, stmt.is_write)
        client.close()
        self._next(slot)

    def _unwatch(self, slot: _Slot) -> None:
        """Take the slot's socket out of the poll: before its connection may be closed."""
        del self.waiting[slot]
        self.poll.unregister(slot.fd)
        del self.by_fd[slot.fd]
        slot.fd = -1

    def _answer(self, slot: _Slot) -> None:
        client, stmt = slot.client, slot.stmt
        assert stmt is not None
        self._unwatch(slot)
        try:
            insert_id = read_answer(client.conn, stmt.key_from_insert)
        except MySQLdb.Error as e:
            client.failed(stmt.f, e, True, stmt.key, stmt.value, stmt.is_write)
            self._next(slot)
            return
        key = insert_id if stmt.key_from_insert else stmt.key
        self._next(slot, (stmt.f, key, stmt.value, time.monotonic_ns()))

    def _timed_out(self, slot: _Slot) -> None:
        client, stmt = slot.client, slot.stmt
        assert stmt is not None
        self._unwatch(slot)
        client.timed_out(stmt.f, LabTimeout("statement", client.timeout, sent=True), True,
                         stmt.key, stmt.value, stmt.is_write)
        self._next(slot)

    def _connected(self, slot: _Slot) -> None:
        """The helper opening the slot's connection has finished: send, or record why not."""
        fut, slot.connecting = slot.connecting, None
        self.connecting.discard(slot)
        assert fut is not None
        client, stmt = slot.client, slot.stmt
        assert stmt is not None
        try:
            fut.result()
        except LabTimeout as e:
            client.timed_out(stmt.f, e, False, stmt.key, stmt.value, stmt.is_write)
        except MySQLdb.Error as e:
            client.failed(stmt.f, e, False, stmt.key, stmt.value, stmt.is_write)
        else:
            error = self._send(slot)
            if error is None:
                return
            self._unsent(slot, error)
            return
        self._next(slot)

    # --- the loop ---------------------------------------------------------------------------

    def _wake(self, _fut: Future[Any]) -> None:
        with contextlib.suppress(OSError):  # a full pipe: a wake is pending anyway
            os.write(self.wake_w, b"x")

    def _round(self) -> None:
        if self.waiting:
            first = next(iter(self.waiting))
            # rounded down: the poll never sleeps past a deadline (its last millisecond is
            # polled without a wait), so an answer read is one that came in time
            wait_ms = max(0, min(POLL_MS, int((first.deadline - time.monotonic()) * 1000)))
        else:
            wait_ms = POLL_MS
        try:
            events = self.poll.poll(wait_ms)
        except InterruptedError:  # pragma: no cover - retried
            return
        woken = False
        for fd, _ev in events:
            if fd == self.wake_r:
                woken = True
                continue
            slot = self.by_fd.get(fd)
            if slot is not None:
                self._guarded(self._answer, slot)
        if woken:
            with contextlib.suppress(OSError):
                while os.read(self.wake_r, 4096):
                    pass
        for slot in [s for s in self.connecting if s.connecting is not None
                     and s.connecting.done()]:
            self._guarded(self._connected, slot)
        now = time.monotonic()
        late = []
        for slot in self.waiting:  # in deadline order (one timeout for every client)
            if slot.deadline > now:
                break
            late.append(slot)
        for slot in late:
            self._guarded(self._timed_out, slot)

    def _guarded(self, step: Callable[[_Slot], None], slot: _Slot) -> None:
        """One client's step; a bug in it stops that client only, as a client thread's crash
        does (``Workload._client_main``)."""
        try:
            step(slot)
        except Exception:  # noqa: BLE001 - logged; the other clients go on
            log.exception("client %d of %s crashed", slot.client.process, slot.client.workload)
            if slot in self.waiting:
                self._unwatch(slot)
            self.connecting.discard(slot)
            slot.stmt = slot.connecting = None
