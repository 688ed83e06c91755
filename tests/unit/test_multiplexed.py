"""Many clients in one thread (runners/multiplexed.py): the unpaced unique_writes workload, whose
clients are shared between ``probe.multiplex_threads`` such threads.

The connections are fakes over socket pairs (the poll watches real sockets): a statement sent is
answered by a byte written to the other end, at once, or never (a server that hangs). What
``read_query_result`` raises is scripted. ``connect_within`` and the ``SELECT @@server_id``
a new connection runs are faked as in test_workloads.py; everything else is the real code.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import MySQLdb
import pytest

import runners.multiplexed as mux
import runners.probe_workloads as probe
import runners.workloads as wl
from dsl.plan import PlannedWorkload
from lab.history import CONNECT_TIMEOUT, NOT_SENT_PREFIX, Op, never_sent
from runners.mysql import Address, Credentials, LabTimeout, Result
from tests.unit.test_workloads import NODE_BY_PORT, History, make_env


class SockConn:
    """What the multiplexer uses of a MySQLdb connection, over one end of a socket pair."""

    def __init__(self, server: Server, node: str) -> None:
        self.server = server
        self.node = node
        self.port = {v: k for k, v in NODE_BY_PORT.items()}[node]
        self.mine, self.theirs = socket.socketpair()
        self.closed = False
        self.sent: list[bytes] = []

    def fileno(self) -> int:
        return self.mine.fileno()

    def literal(self, a: Any) -> bytes:
        return repr(a).encode()

    def send_query(self, q: bytes) -> None:
        assert not self.closed, "statement on a closed connection"
        err = self.server.send_errors.pop(self.server.statements() + 1, None)
        if err is not None:
            raise err
        self.sent.append(q)
        if not self.server.hang.is_set():
            self.theirs.send(b"x")

    def read_query_result(self) -> None:
        assert self.mine.recv(1) == b"x"
        err = self.server.errors.pop(self.server.statements(), None)
        if err is not None:
            raise err

    def field_count(self) -> int:
        return 0  # a write's OK: no result set

    def store_result(self) -> None:
        return None

    def insert_id(self) -> int:
        return 0

    def affected_rows(self) -> int:
        return 1

    def close(self) -> None:
        self.closed = True
        self.mine.close()
        self.theirs.close()


class Server:
    """Every node's fake: ``errors[n]`` is what the n-th statement answered raises (1-based
    over every connection); ``hang``: statements sent get no answer; ``connect_error``: what
    opening a connection raises; ``connect_delay[node]``: how long opening one takes."""

    def __init__(self) -> None:
        self.conns: list[SockConn] = []
        self.errors: dict[int, BaseException] = {}
        self.send_errors: dict[int, BaseException] = {}  # raised by send_query instead
        self.hang = threading.Event()
        self.connect_error: BaseException | None = None
        self.connect_delay: dict[str, float] = {}
        self.lock = threading.Lock()

    def statements(self) -> int:
        return sum(len(c.sent) for c in self.conns)

    def connect_within(self, addr: Address, creds: Credentials, timeout: float) -> SockConn:
        node = NODE_BY_PORT[addr.port]
        delay = self.connect_delay.get(node, 0.0)
        if delay:
            time.sleep(min(delay, timeout))
            if delay >= timeout:
                raise LabTimeout("connect", timeout, sent=False)
        if self.connect_error is not None:
            raise self.connect_error
        c = SockConn(self, node)
        with self.lock:
            self.conns.append(c)
        return c

    def run_within(self, conn: SockConn, sql: str, args: Any = (),
                   timeout: float = 1.0) -> Result:
        if sql == "SELECT @@server_id":  # the fake's server ids are its ports
            return Result(((conn.port,),), 0, 0)
        conn.sent.append(sql.encode())  # a paced client's statement: not through the poll
        return Result(None, 0, 1)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Server:
    s = Server()
    monkeypatch.setattr(wl, "connect_within", s.connect_within)
    monkeypatch.setattr(wl, "run_within", s.run_within)
    return s


def writes(n: int) -> mux.NextStatement:
    """Each client writes keys 1..n in turn (shared), then stops."""
    keys = iter(range(1, n + 1))

    def nxt(_i: int, c: wl.Client) -> mux.Statement | None:
        k = next(keys, None)
        if k is None:
            return None
        return mux.Statement("write", "INSERT INTO t (k, v, c) VALUES (%s, %s, %s)",
                             (k, k, c.process), k, k)
    return nxt


def clients(hist: History, endpoints: list[str], timeout: float = 0.5) -> list[wl.Client]:
    env = make_env(hist)
    return [wl.Client(env, "w", i, ep, timeout) for i, ep in enumerate(endpoints)]


def pairs(hist: History) -> dict[int, list[Op]]:
    """Each process's records, checked to alternate invoke / completion."""
    by: dict[int, list[Op]] = {}
    for op in hist.ops:
        by.setdefault(op.process, []).append(op)
    for ops in by.values():
        assert [o.type == "invoke" for o in ops] == [k % 2 == 0 for k in range(len(ops))]
    return by


def test_unpaced_unique_writes_run_every_client_in_one_thread(
        server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    """200 writes by 4 clients: one thread, each client one statement at a time, every key
    once, every invoke completed, the statements' literals as sent."""
    monkeypatch.setattr(probe, "MULTIPLEX_THREADS", 1)
    hist = History()
    spec = PlannedWorkload(name="w", kind="unique_writes", targets=["db1", "db2"], clients=4,
                           ops=200)
    w = probe.UniqueWritesWorkload(spec, make_env(hist), 10, 1.0)
    w.start()
    w.join(5.0)
    assert w.finished.wait(1.0)
    assert len(w._threads) == 1
    by = pairs(hist)
    assert sorted(by) == [10, 11, 12, 13]
    done = [o for o in hist.ops if o.type != "invoke"]
    assert [o.type for o in done] == ["ok"] * 200
    assert sorted(o.key for o in done) == list(range(1, 201))
    assert {o.node for o in done if o.process in (10, 12)} == {"db1"}  # the targets in turn
    assert {o.node for o in done if o.process in (11, 13)} == {"db2"}
    assert all(c.closed for c in server.conns) and len(server.conns) == 4
    assert b"INSERT INTO `lab`.`w_w` (k, v, c) VALUES (1, 1, 1" in b"".join(
        q for c in server.conns for q in c.sent)


def test_unpaced_clients_are_shared_between_two_threads(
        server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    """5 clients in two threads (clients 0, 2, 4 and 1, 3): each key written once by one
    client, every invoke completed, on as many connections as clients. The five connections
    open together (a barrier in the fake's connect): a client whose connection opened after
    the others had used up the budget would do no operation (seen in two CI runs: clients 2
    and 4, then 1 and 3), so the test holds each client that did one to its thread and both
    threads to having done some."""
    monkeypatch.setattr(probe, "usable_cpus", lambda: 2)
    together = threading.Barrier(5, timeout=10)

    def connect_together(addr: Address, creds: Credentials, timeout: float) -> SockConn:
        together.wait()
        return server.connect_within(addr, creds, timeout)

    monkeypatch.setattr(wl, "connect_within", connect_together)
    hist = History()
    spec = PlannedWorkload(name="w", kind="unique_writes", targets=["db1"], clients=5, ops=2000)
    w = probe.UniqueWritesWorkload(spec, make_env(hist), 0, 1.0)
    seen: dict[int, set[str]] = {}
    record = w.env.record

    def by_thread(op: Op) -> Op:
        seen.setdefault(op.process, set()).add(threading.current_thread().name)
        return record(op)

    w.env.record = by_thread
    w.start()
    w.join(5.0)
    assert w.finished.wait(1.0)
    assert len(w._threads) == 2
    assert set(seen) <= set(range(5))
    assert all(names == {f"wl-w-{c % 2}"} for c, names in seen.items()), seen
    assert set().union(*seen.values()) == {"wl-w-0", "wl-w-1"}, seen
    pairs(hist)
    done = [o for o in hist.ops if o.type != "invoke"]
    assert [o.type for o in done] == ["ok"] * 2000
    assert sorted(o.key for o in done) == list(range(1, 2001))
    assert len(server.conns) == 5 and all(c.closed for c in server.conns)


@pytest.mark.parametrize(("clients", "cpus", "threads"),
                         [(1, 2, 1), (4, 2, 2), (16, 2, 2), (16, 1, 1), (16, 64, 2)])
def test_multiplex_threads(monkeypatch: pytest.MonkeyPatch, clients: int, cpus: int,
                           threads: int) -> None:
    monkeypatch.setattr(probe, "usable_cpus", lambda: cpus)
    assert probe.multiplex_threads(clients) == threads


def test_usable_cpus_are_the_process_s_affinity(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process allowed one CPU of many (``taskset``, a container's cpuset) gets one thread;
    where the platform has no affinity, the machine's CPU count."""
    monkeypatch.setattr(probe.os, "sched_getaffinity", lambda _pid: {3}, raising=False)
    monkeypatch.setattr(probe.os, "cpu_count", lambda: 8)
    assert probe.usable_cpus() == 1
    assert probe.multiplex_threads(16) == 1
    monkeypatch.delattr(probe.os, "sched_getaffinity")
    assert probe.usable_cpus() == 8
    monkeypatch.setattr(probe.os, "cpu_count", lambda: None)
    assert probe.usable_cpus() == 1


def test_a_paced_unique_writes_keeps_a_thread_per_client(server: Server) -> None:
    hist = History()
    spec = PlannedWorkload(name="w", kind="unique_writes", targets=["db1"], clients=3,
                           ops=6, rate=600)
    w = probe.UniqueWritesWorkload(spec, make_env(hist), 0, 1.0)
    w.start()
    w.join(5.0)
    assert len(w._threads) == 3
    assert len([o for o in hist.ops if o.type == "ok"]) == 6


LOST = MySQLdb.OperationalError(2013, "Lost connection to server during query")
CASES = [
    # name, where, error, type, code, not sent, connection dropped
    ("lost after send", "statement", LOST, "info", 2013, False, True),
    ("duplicate key", "statement",
     MySQLdb.IntegrityError(1062, "Duplicate entry '1' for key 'PRIMARY'"), "fail", 1062,
     False, False),
    ("refused", "connect", MySQLdb.OperationalError(2003, "Can't connect to server"),
     "fail", 2003, True, True),
    ("no connection in time", "connect", LabTimeout("connect", 0.1, sent=False), "fail",
     CONNECT_TIMEOUT, True, True),
    ("no answer in time", "hang", None, "info", None, False, True),
    # an error sending: Client.call's outcome (2014 is not an unknown outcome), then a new
    # connection (the old one's state is unknown), never a loop of sends on it
    ("not sent, out of sync", "send", MySQLdb.ProgrammingError(2014, "Commands out of sync"),
     "fail", 2014, False, True),
]


@pytest.mark.parametrize(("name", "where", "error", "typ", "code", "not_sent", "dropped"),
                         CASES, ids=[c[0] for c in CASES])
def test_outcomes_are_the_client_s(server: Server, name: str, where: str,
                                   error: BaseException | None, typ: str, code: int | None,
                                   not_sent: bool, dropped: bool) -> None:
    """The second of three writes goes wrong: its completion is what ``Client.op`` records
    for the same failure (test_workloads.py's table), and the third write succeeds, on a new
    connection when the first was dropped. A statement that gets no answer times out after
    the client's timeout, measured from its send."""
    hist = History()
    (c,) = clients(hist, ["db1"], timeout=0.15)
    steps = writes(3)
    n = [0]

    def nxt(i: int, cl: wl.Client) -> mux.Statement | None:
        n[0] += 1
        if n[0] == 2:  # the failure, as the second statement is invoked
            if where == "statement":
                server.errors[2] = error  # type: ignore[assignment]
            elif where == "send":
                server.send_errors[2] = error  # type: ignore[assignment]
            elif where == "connect":
                server.conns[0].close()  # as a lost connection would leave it
                cl.conn = None
                server.connect_error = error
            else:
                server.hang.set()
        elif n[0] == 3:
            server.connect_error = None
            server.hang.clear()
        return steps(i, cl)

    mux.run_multiplexed([c], nxt)
    done = [o for o in hist.ops if o.type != "invoke"]
    assert [o.key for o in done] == [1, 2, 3]
    bad = done[1]
    assert (bad.type, bad.error) == (typ, code)
    assert never_sent(bad.error, bad.error_msg) is not_sent
    assert bool(bad.error_msg and bad.error_msg.startswith(NOT_SENT_PREFIX)) is not_sent
    assert done[2].type == "ok" and done[2].node == "db1"
    if where == "hang":
        took = (bad.time - hist.ops[2].time) / 1e9  # from its invoke
        assert 0.15 <= took < 0.3, took
    if where != "connect":
        assert server.conns[0].closed is dropped
        assert len(server.conns) == (2 if dropped else 1)
    pairs(hist)


def test_a_connect_that_hangs_holds_up_no_other_client(server: Server) -> None:
    """db2's connect takes 0.4 s (then times out); db1's client writes all the while."""
    hist = History()
    cs = clients(hist, ["db1", "db2"], timeout=0.4)
    server.connect_delay["db2"] = 0.4
    t0 = time.monotonic_ns()
    stop_at = t0 + 600_000_000
    keys = iter(range(1, 1_000_000))

    def nxt(i: int, c: wl.Client) -> mux.Statement | None:
        if time.monotonic_ns() > stop_at:
            server.connect_delay.clear()
            return None
        k = next(keys)
        return mux.Statement("write", "INSERT %s", (k,), k, k)

    mux.run_multiplexed(cs, nxt)
    by = pairs(hist)
    db2 = [o for o in by[1] if o.type != "invoke"]
    assert db2[0].error == CONNECT_TIMEOUT
    during = [o for o in by[0] if o.type == "ok" and o.time < db2[0].time]
    assert len(during) >= 50, len(during)
    assert during[0].time - t0 < 100_000_000  # db1 began at once


def test_a_stop_completes_every_invoked_statement(server: Server) -> None:
    """The workload's stop event ends it within a poll; no invoke is left without its
    completion, even one whose server hangs."""
    hist = History()
    stop = threading.Event()
    spec = PlannedWorkload(name="w", kind="unique_writes", targets=["db1"], clients=8,
                           timeout=0.2)
    w = probe.UniqueWritesWorkload(spec, make_env(hist, stop), 0, 30.0)
    w.start()
    time.sleep(0.2)
    server.hang.set()  # the statements in flight now never get an answer
    t = time.monotonic()
    stop.set()
    assert w.finished.wait(2.0)
    assert time.monotonic() - t < 0.5
    by = pairs(hist)
    assert len(by) == 8
    assert all(len(ops) % 2 == 0 for ops in by.values())
    assert {o.type for o in hist.ops if o.type != "invoke"} <= {"ok", "info"}
    assert all(c.closed for c in server.conns)
