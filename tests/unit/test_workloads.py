"""The lab's own workloads (runners/workloads.py, probe_workloads.py, read_your_writes.py)
against an in-memory fake database.

``runners.workloads.connect_within`` and ``runners.workloads.run_within`` are replaced by fakes
over ``FakeCluster``: a primary holding {key: version} and replicas that apply every write a
fixed delay D after it was committed on the primary (a replica read at time t sees the newest
version committed at or before t - D). The fake ``run_within`` understands just the statements
the workloads send. Everything else (clients, pacing, reader threads, recording, the
stale_reads checker) is the real code.

``runners.mysql.run_within`` / ``connect_within`` themselves are tested against a real socket
and a slow fake ``connect``: their sub-second timeouts are exact.
"""

from __future__ import annotations

import dataclasses
import itertools
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import MySQLdb
import pytest

import runners.mysql as rmysql
import runners.probe_workloads as probe
import runners.read_your_writes as rywmod
import runners.workloads as wl
from dsl.plan import PlannedWorkload
from lab.history import CONNECT_TIMEOUT, NOT_SENT_PREFIX, Op, never_sent
from lab.judge.checkers import stale_reads
from lab.judge.checkers.base import CheckContext, WorkloadInfo
from lab.run import gc_guard
from runners.mysql import Address, Credentials, LabTimeout, Result

PORTS = {"db1": 31001, "db2": 31002, "db3": 31003}
NODE_BY_PORT = {p: n for n, p in PORTS.items()}


# --- the fake database --------------------------------------------------------------------


class FakeConn:
    """A connection to one fake node; records close()."""

    def __init__(self, node: str) -> None:
        self.node = node
        self.port = PORTS[node]
        self.closed = threading.Event()
        self.statements: list[tuple[str, tuple[Any, ...]]] = []

    def close(self) -> None:
        self.closed.set()


class FakeCluster:
    """A primary and replicas that apply each write ``delays[node]`` seconds after its commit.

    ``latency``: every statement takes this long (so client threads interleave like real ones).
    ``fail_writes``: (key, version) pairs whose write fails with 1290 (read only)."""

    def __init__(self, delays: dict[str, float], primary: str = "db1",
                 latency: float = 0.001) -> None:
        self.delays = delays
        self.primary = primary
        self.latency = latency
        self.lock = threading.Lock()
        self.rows: dict[int, int] = {}  # the primary: key -> version (or value)
        self.commits: dict[int, list[tuple[float, int]]] = {}  # key -> [(commit time, v)]
        self.auto = itertools.count(1)
        self.fail_writes: set[tuple[int, int]] = set()
        self.conns: list[FakeConn] = []

    # the version a node shows at time t
    def _visible(self, node: str, key: int, t: float) -> int | None:
        horizon = t - self.delays.get(node, 0.0)
        for at, v in reversed(self.commits.get(key, ())):
            if at <= horizon:
                return v
        return None

    def _commit(self, key: int, v: int) -> None:
        self.rows[key] = v
        self.commits.setdefault(key, []).append((time.monotonic(), v))

    def connect_within(self, addr: Address, creds: Credentials, timeout: float) -> FakeConn:
        node = NODE_BY_PORT[addr.port]
        c = FakeConn(node)
        with self.lock:
            self.conns.append(c)
        return c

    def run_within(self, conn: FakeConn, sql: str, args: Any = (),
                   timeout: float = 1.0) -> Result:
        if conn.closed.is_set():
            raise MySQLdb.OperationalError(2006, "Server has gone away")
        args = tuple(args)
        conn.statements.append((sql, args))
        if sql == "SELECT @@server_id":  # the fake's server ids are its ports
            return Result(((conn.port,),), 0, 0)
        t = time.monotonic()  # a read sees the state at the moment it arrives
        time.sleep(self.latency)
        with self.lock:
            if sql.startswith("SELECT (SELECT v FROM "):
                return Result(((self._visible(conn.node, args[0], t),),), 0, 0)
            if sql.startswith("SELECT k, v FROM ") and " WHERE k IN (" in sql:
                rows = tuple((k, v) for k in args
                             if (v := self._visible(conn.node, k, t)) is not None)
                return Result(rows, 0, 0)
            if sql == "SELECT 1":
                return Result(((1,),), 0, 0)
            if sql.startswith("INSERT INTO "):
                if conn.node != self.primary:
                    raise MySQLdb.OperationalError(
                        1290, "The server is running with the --read-only option")
                if " (v, c) VALUES " in sql:  # auto-increment
                    k = next(self.auto)
                    self._commit(k, int(args[0]))
                    return Result(None, k, 1)
                assert " (k, v, c) VALUES " in sql, sql
                k, v = int(args[0]), int(args[1])
                if (k, v) in self.fail_writes:
                    self.fail_writes.discard((k, v))
                    raise MySQLdb.OperationalError(
                        1290, "The server is running with the --read-only option")
                if "ON DUPLICATE KEY UPDATE" in sql:
                    self._commit(k, v)
                    return Result(None, 0, 1)
                if k in self.rows:
                    raise MySQLdb.IntegrityError(1062, f"Duplicate entry '{k}' for key 'PRIMARY'")
                self._commit(k, v)
                return Result(None, 0, 1)
        raise AssertionError(f"fake database: unexpected statement {sql!r}")


class History:
    """ClientEnv.record without a Recorder: a list under a lock, indices assigned."""

    def __init__(self) -> None:
        self.ops: list[Op] = []
        self.lock = threading.Lock()

    def record(self, op: Op) -> Op:
        with self.lock:
            op = dataclasses.replace(op, index=len(self.ops))
            self.ops.append(op)
        return op

    def completions(self, f: str, type: str | None = None) -> list[Op]:
        return [o for o in self.ops
                if o.f == f and o.type != "invoke" and (type is None or o.type == type)]


def make_env(history: History, stop: threading.Event | None = None) -> wl.ClientEnv:
    return wl.ClientEnv(
        address=lambda ep: Address("127.0.0.1", PORTS[ep]),
        node_by_server_id=NODE_BY_PORT.get,
        creds=Credentials("app", "secret"),
        record=history.record,
        stop=stop or threading.Event(),
        seed=7,
    )


def patch_cluster(mp: pytest.MonkeyPatch, cluster: Any) -> None:
    mp.setattr(wl, "connect_within", cluster.connect_within)
    mp.setattr(wl, "run_within", cluster.run_within)


def run_workload(cls: type[wl.Workload], spec: PlannedWorkload, cluster: FakeCluster,
                 first_process: int = 0, limit: float = 10.0) -> History:
    hist = History()
    stop = threading.Event()
    # as the engine runs a load: the collector's scans skip what is already there (in a full
    # unit run this process holds some 360 k objects of earlier tests: a full scan of them took
    # 0.21 s, and stopped the workload's threads for as long)
    with pytest.MonkeyPatch.context() as mp, gc_guard.history_frozen():
        patch_cluster(mp, cluster)
        w = cls(spec, make_env(hist, stop), first_process, 1.0)
        w.start()
        w.join(limit)
        alive = any(t.is_alive() for t in w._threads)
        stop.set()
        w.join(2.0)
    assert not alive, "the workload did not finish in time"
    return hist


# --- read_your_writes: one run shared by tests 1-3 -----------------------------------------

D = 0.3  # replication delay of db2 and db3
TIMEOUT = 0.1  # the workload's statement timeout: below D on purpose
RATE = 20.0
DURATION = 1.5
READS = ["db2", "db3", "db1"]  # two delayed replicas, and the primary
POLL = rywmod.ReadYourWritesWorkload.POLL  # 0.01 s


@pytest.fixture(scope="module")
def ryw() -> tuple[History, FakeCluster]:
    cluster = FakeCluster({"db1": 0.0, "db2": D, "db3": D})
    spec = PlannedWorkload(name="w", kind="read_your_writes", targets=["db1"], reads=READS,
                           clients=1, rate=RATE, duration=DURATION, timeout=TIMEOUT)
    hist = run_workload(rywmod.ReadYourWritesWorkload, spec, cluster)
    return hist, cluster


def test_ryw_rate_is_honoured(ryw: tuple[History, FakeCluster]) -> None:
    """rate 20/s for 1.5 s with two replicas 0.3 s behind -> about 30 acknowledged writes.

    The previous design read every replica after each write, polling until the write showed
    or the timeout (0.1 s) passed, before the next write: at most 1/timeout = 10 writes per
    second (about 14 here), whatever the rate asked for."""
    hist, cluster = ryw
    writes = hist.completions("write", "ok")
    assert 24 <= len(writes) <= 33, len(writes)  # a loaded machine may start late
    assert not hist.completions("write", "fail") and not hist.completions("write", "info")
    # the primary holds exactly what was acknowledged
    last: dict[int, int] = {}
    for o in writes:
        last[o.key] = o.value  # type: ignore[index]
    assert cluster.rows == last


def _first_reads_by_process(hist: History) -> dict[int, list[Op]]:
    out: dict[int, list[Op]] = {}
    for o in hist.ops:
        if o.f == "read" and o.type == "invoke":
            out.setdefault(o.process, []).append(o)
    return out


def test_ryw_readers_read_at_the_same_moment(ryw: tuple[History, FakeCluster]) -> None:
    """Every acknowledged write gets its first ``read`` on every read endpoint within 20 ms of
    the acknowledgement and of each other.

    The previous design read the second replica only after the first had shown the write (or
    the timeout passed): its first read came 0.1 s or more after the ack, so two identical
    replicas measured very different stale rates (100 % and 24 %)."""
    hist, _ = ryw
    writes = hist.completions("write", "ok")
    by_proc = _first_reads_by_process(hist)
    assert sorted(by_proc) == [10000, 20000, 30000]  # one reader per read endpoint
    invoke_nodes = {p: {o.endpoint for o in ops} for p, ops in by_proc.items()}
    assert invoke_nodes == {10000: {"db2"}, 20000: {"db3"}, 30000: {"db1"}}
    for p, reads in by_proc.items():
        # one first read per acknowledged write, in the order of the writes
        assert [r.key for r in reads] == [w.key for w in writes], p
    worst = 0.0
    for i, w in enumerate(writes):
        starts = [by_proc[p][i].time for p in sorted(by_proc)]
        assert min(starts) >= w.time  # after the ack, never before
        worst = max(worst, (max(starts) - w.time) / 1e9)
    assert worst < 0.020, f"a first read began {worst * 1000:.1f} ms after the ack"


def test_ryw_visibility_measured_per_write(ryw: tuple[History, FakeCluster]) -> None:
    """The stale_reads checker on the recorded history: on the replicas 0.3 s behind, every
    first read is stale and the time to visibility is D (+ one poll interval and the read's
    latency), although D is above the statement timeout (0.1 s); on the primary, nothing is
    stale and every write is visible at once.

    The previous design stopped polling a write at the timeout, so with D above it no write
    was ever seen on a replica: visibility was only the bound (~0.1 s), and the second
    replica, read late, was mostly fresh."""
    hist, _ = ryw
    n = len(hist.completions("write", "ok"))
    ctx = CheckContext(workloads={"w": WorkloadInfo("read_your_writes")})
    r = stale_reads.check(hist.ops, ctx)
    subjects = r.metrics["subjects"]
    assert r.valid is False
    for node in ("db2", "db3"):
        s = subjects[f"w on {node}"]
        assert s["eligible_reads"] == n, (node, s)
        assert s["rate"] == pytest.approx(1.0), (node, s)
        vis = s["visibility"]
        assert vis["seen"] == n and vis["never_seen"] == 0, (node, vis)
        assert D <= vis["p50"] <= D + POLL + 0.05, (node, vis)
        assert vis["resolution"] <= 2 * POLL, (node, vis)  # the polls came every POLL
        # D, one poll interval, and the read's own latency (the docstring), with the longest
        # the poller was held up as recorded: in `make test`'s pool its thread stood still
        # 0.2-0.27 s after the load ended, and the write it then saw read that much later
        assert vis["max"] <= D + POLL + 0.1 + _longest_hold_up(hist, node), (node, vis)
    s = subjects["w on db1"]
    assert s["eligible_reads"] == n and s["count"] == 0 and s["rate"] == 0.0, s
    assert s["visibility"]["seen"] == n and s["visibility"]["p50"] < 0.02, s["visibility"]
    # reads only in the first reads; polls are not counted as reads
    assert subjects["w"]["reads"] == 3 * n


def _longest_hold_up(hist: History, node: str) -> float:
    """The longest a reader on ``node`` was held up once its polling began: the longest time
    between one of its records and its next (a read's own latency, or the wait before its next
    read). Every POLL normally; longer only when this machine held the thread up."""
    last: dict[int, int] = {}
    polling: set[int] = set()
    worst = 0
    for o in hist.ops:
        if o.f not in ("read", "poll"):
            continue
        p = o.process
        if p in polling:
            worst = max(worst, o.time - last[p])
        if o.f == "poll" and o.type != "invoke" and o.node == node:
            polling.add(p)
        last[p] = o.time
    return worst / 1e9


# --- a failed write uses up its version ----------------------------------------------------


def test_failed_write_uses_up_its_version() -> None:
    """The first write of key 7000 (version 1) fails with 1290; the next write of that key
    (the 17th write: 16 keys per client) carries version 2, not 1 again.

    The previous design kept a failed write's version for the next write of the key: a
    retried write reused the value of one reported failed, so a read of that value could not
    tell which of the two it saw."""
    cluster = FakeCluster({"db1": 0.0})
    k0 = 7 * 1000
    cluster.fail_writes.add((k0, 1))
    spec = PlannedWorkload(name="w", kind="read_your_writes", targets=["db1"], clients=1, ops=17)
    hist = run_workload(rywmod.ReadYourWritesWorkload, spec, cluster, first_process=7)
    done = [o for o in hist.completions("write") if o.key == k0]
    assert [(o.type, o.value, o.error) for o in done] == [("fail", 1, 1290), ("ok", 2, None)]
    assert not never_sent(done[0].error, done[0].error_msg)  # it reached the server
    assert cluster.rows[k0] == 2
    assert len(hist.completions("write", "ok")) == 16
    # a server error does not drop the connection
    assert len(cluster.conns) == 1


# --- Client.op: the outcome table ----------------------------------------------------------


class Scripted:
    """connect_within / run_within raising what the test says."""

    def __init__(self) -> None:
        self.conns: list[FakeConn] = []
        self.connect_error: BaseException | None = None
        self.statement_error: BaseException | None = None

    def connect_within(self, addr: Address, creds: Credentials, timeout: float) -> FakeConn:
        if self.connect_error is not None:
            raise self.connect_error
        c = FakeConn(NODE_BY_PORT[addr.port])
        self.conns.append(c)
        return c

    def run_within(self, conn: FakeConn, sql: str, args: Any = (),
                   timeout: float = 1.0) -> Result:
        assert not conn.closed.is_set(), "statement on a closed connection"
        if sql == "SELECT @@server_id":  # the fake's server ids are its ports
            return Result(((conn.port,),), 0, 0)
        conn.statements.append((sql, tuple(args)))
        if self.statement_error is not None:
            raise self.statement_error
        return Result(((5,),), 0, 1)


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Scripted:
    s = Scripted()
    patch_cluster(monkeypatch, s)
    return s


LOST = MySQLdb.OperationalError(2013, "Lost connection to server during query")
CASES = [
    # name, is_write, where, error, type, code, not sent, connection dropped
    ("write lost after send", True, "statement", LOST, "info", 2013, False, True),
    ("write duplicate key", True, "statement",
     MySQLdb.IntegrityError(1062, "Duplicate entry '1' for key 'PRIMARY'"),
     "fail", 1062, False, False),
    ("write refused", True, "connect",
     MySQLdb.OperationalError(2003, "Can't connect to server on '127.0.0.1'"),
     "fail", 2003, True, True),
    ("write timed out after send", True, "statement",
     LabTimeout("statement", 0.1, sent=True), "info", None, False, True),
    ("write no connection in time", True, "connect",
     LabTimeout("connect", 0.1, sent=False), "fail", CONNECT_TIMEOUT, True, True),
    ("read lost", False, "statement", LOST, "fail", 2013, False, True),
    ("read timed out", False, "statement",
     LabTimeout("statement", 0.1, sent=True), "fail", None, False, True),
]


@pytest.mark.parametrize(("name", "is_write", "where", "error", "typ", "code", "not_sent",
                          "dropped"), CASES, ids=[c[0] for c in CASES])
def test_client_op_outcomes(scripted: Scripted, name: str, is_write: bool, where: str,
                            error: BaseException, typ: str, code: int | None, not_sent: bool,
                            dropped: bool) -> None:
    """Client.op records ok / fail / info by where the error happened and what it was; after
    an unknown outcome (or no connection) the next op opens a new connection.

    The previous Client had no lab-measured timeouts (a LabTimeout escaped and killed the
    client thread, leaving an invoke without completion) and no ``not sent:`` mark on a
    refused connect, so a refused write could be counted as a write that may have happened."""
    hist = History()
    c = wl.Client(make_env(hist), "w", 3, "db1", 0.1)
    f = "write" if is_write else "read"

    def go() -> Op:
        return c.op(f, "INSERT INTO t (k, v, c) VALUES (%s, %s, %s)" if is_write
                    else "SELECT (SELECT v FROM t WHERE k = %s)", (1, 1, 3) if is_write else (1,),
                    key=1, value=1 if is_write else None, is_write=is_write,
                    result=None if is_write else (lambda rows: rows[0][0]))

    if where == "statement":
        assert go().type == "ok"  # a connection is open before the failing op
        first = scripted.conns[0]
        scripted.statement_error = error
    else:
        scripted.connect_error = error
    done = go()
    assert (done.type, done.error) == (typ, code)
    assert (done.f, done.process, done.key) == (f, 3, 1)
    assert never_sent(done.error, done.error_msg) is not_sent
    assert bool(done.error_msg and done.error_msg.startswith(NOT_SENT_PREFIX)) is not_sent
    assert hist.ops[-2].type == "invoke" and hist.ops[-1] == done  # invoke, then completion
    if where == "statement":
        assert first.closed.is_set() is dropped
        assert (c.conn is None) is dropped
    else:
        assert scripted.conns == [] and c.conn is None
    # the next op succeeds: on a new connection when the old one was dropped
    scripted.statement_error = scripted.connect_error = None
    n_before = len(scripted.conns)
    ok = go()
    assert ok.type == "ok" and ok.node == "db1"
    assert len(scripted.conns) == n_before + (1 if dropped else 0)
    assert not scripted.conns[-1].closed.is_set()


# --- runners.mysql: exact sub-second timeouts ----------------------------------------------


class _Res:
    def __init__(self, rows: tuple[tuple[Any, ...], ...]) -> None:
        self.rows = rows

    def fetch_row(self, n: int) -> tuple[tuple[Any, ...], ...]:
        assert n == 0
        return self.rows


class SocketConn:
    """What run_within uses of a MySQLdb connection, over one end of a socketpair."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.sent: list[bytes] = []
        self.read_result = 0

    def fileno(self) -> int:
        return self.sock.fileno()

    def literal(self, a: Any) -> bytes:
        return repr(a).encode()

    def send_query(self, q: bytes) -> None:
        self.sent.append(q)

    def read_query_result(self) -> None:
        self.read_result += 1

    def store_result(self) -> _Res:
        return _Res(((42,),))

    def insert_id(self) -> int:
        return 9

    def affected_rows(self) -> int:
        return 1


@pytest.fixture
def sockpair() -> Iterator[tuple[socket.socket, socket.socket]]:
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


def test_run_within_times_out_exactly(sockpair: tuple[socket.socket, socket.socket]) -> None:
    """A statement whose answer never comes: LabTimeout(sent=True) after 0.3 s, not later.

    The previous design left timeouts to the C client, which takes whole seconds (0.3 s
    became 1 s or more), so a sub-second workload timeout was never what was measured."""
    a, _b = sockpair
    conn = SocketConn(a)
    t0 = time.monotonic()
    with pytest.raises(LabTimeout) as ei:
        rmysql.run_within(conn, "SELECT %s", (1,), timeout=0.3)
    took = time.monotonic() - t0
    assert 0.3 <= took <= 0.4, took
    assert ei.value.sent is True and ei.value.timeout == 0.3
    assert conn.sent == [b"SELECT 1"]
    assert conn.read_result == 0  # never blocked in the C client


def test_run_within_returns_when_the_answer_arrives(
        sockpair: tuple[socket.socket, socket.socket]) -> None:
    """With data on the socket, run_within reads the result and returns it at once; with data
    arriving after 0.1 s (timeout 1 s), it returns then."""
    a, b = sockpair
    conn = SocketConn(a)
    b.sendall(b"x")
    t0 = time.monotonic()
    got = rmysql.run_within(conn, "SELECT 42", timeout=0.3)
    assert time.monotonic() - t0 < 0.1
    assert got == Result(((42,),), 9, 1)
    assert conn.read_result == 1 and conn.sent == [b"SELECT 42"]
    a.recv(16)

    timer = threading.Timer(0.1, b.sendall, (b"y",))
    t0 = time.monotonic()
    timer.start()
    try:
        got = rmysql.run_within(conn, "SELECT 42", timeout=1.0)
    finally:
        timer.cancel()
    took = time.monotonic() - t0
    assert 0.09 <= took < 0.5, took
    assert got.rows == ((42,),) and conn.read_result == 2


class SlowConnect:
    """runners.mysql.connect taking ``delay`` seconds; the connection records who closed it."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.made: list[FakeConn] = []
        self.closed_by: list[str] = []

    def __call__(self, addr: Address, creds: Credentials, timeout: float = 2.0,
                 **kw: Any) -> FakeConn:
        time.sleep(self.delay)
        c = FakeConn("db1")
        orig = c.close

        def close() -> None:
            self.closed_by.append(threading.current_thread().name)
            orig()
        c.close = close  # type: ignore[method-assign]
        self.made.append(c)
        return c


def test_connect_within_fractional_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """A connect that takes 1 s with a 0.25 s timeout: LabTimeout(sent=False) after 0.25 s;
    the connection made late is closed by the helper thread (no leak).

    The previous design rounded the connect timeout to whole seconds (at least 1 s)."""
    slow = SlowConnect(1.0)
    monkeypatch.setattr(rmysql, "connect", slow)
    t0 = time.monotonic()
    with pytest.raises(LabTimeout) as ei:
        rmysql.connect_within(Address("127.0.0.1", 1), Credentials("u", "p"), 0.25)
    took = time.monotonic() - t0
    assert 0.25 <= took < 0.5, took
    assert ei.value.sent is False
    deadline = time.monotonic() + 3.0
    while not slow.made and time.monotonic() < deadline:
        time.sleep(0.01)
    assert slow.made, "the helper never finished connecting"
    assert slow.made[0].closed.wait(2.0), "the late connection was not closed"
    assert slow.closed_by == ["lab-connect"]


def test_connect_within_fast_connect_and_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Within the timeout the connection is returned (open); a connect error is re-raised."""
    fast = SlowConnect(0.0)
    monkeypatch.setattr(rmysql, "connect", fast)
    c = rmysql.connect_within(Address("127.0.0.1", 1), Credentials("u", "p"), 0.25)
    assert c is fast.made[0] and not c.closed.is_set()

    def refused(*a: Any, **kw: Any) -> None:
        raise MySQLdb.OperationalError(2003, "Can't connect")
    monkeypatch.setattr(rmysql, "connect", refused)
    with pytest.raises(MySQLdb.OperationalError) as ei:
        rmysql.connect_within(Address("127.0.0.1", 1), Credentials("u", "p"), 0.25)
    assert ei.value.args[0] == 2003


# --- unique_insert auto_increment ----------------------------------------------------------


def test_auto_increment_inserts_carry_unique_values() -> None:
    """Two clients, 20 auto-increment inserts: 20 distinct values, each op's key (the one the
    server chose) holding that op's value.

    The previous design inserted the client id as the value, so the 10 rows of a client were
    indistinguishable: a row could not be tied to the insert that made it (lost or phantom
    inserts were invisible)."""
    cluster = FakeCluster({"db1": 0.0})
    spec = PlannedWorkload(name="u", kind="unique_insert", targets=["db1"], clients=2, ops=20,
                           keys="auto_increment")
    hist = run_workload(probe.UniqueInsertWorkload, spec, cluster)
    ok = hist.completions("insert", "ok")
    assert len(ok) == 20
    values = [o.value for o in ok]
    assert len(set(values)) == 20
    assert sorted(values) == list(range(1, 21))  # not the client ids (0 and 1)
    assert {o.process for o in ok} == {0, 1}  # both clients inserted
    assert len({o.key for o in ok}) == 20
    assert all(cluster.rows[o.key] == o.value for o in ok)  # type: ignore[index]
    assert len(cluster.rows) == 20


def test_a_timeout_while_opening_the_connection_never_makes_an_unknown_write(
        scripted: Scripted, monkeypatch: pytest.MonkeyPatch) -> None:
    """The connection opened, then its first ``SELECT @@server_id`` timed out: the write itself was
    never sent, so it is a ``fail`` marked ``not sent:``, not an ``info`` (a write that may have
    happened). Found by this file's first version: Client.op trusted LabTimeout.sent alone."""
    real = scripted.run_within

    def port_times_out(conn: FakeConn, sql: str, args: Any = (), timeout: float = 1.0) -> Result:
        if sql == "SELECT @@server_id":  # the fake's server ids are its ports
            raise LabTimeout("statement", timeout, sent=True)
        return real(conn, sql, args, timeout)

    monkeypatch.setattr(wl, "run_within", port_times_out)
    c = wl.Client(make_env(History()), "w", 3, "db1", 0.1)
    done = c.op("write", "INSERT INTO t (k, v, c) VALUES (%s, %s, %s)", (1, 1, 3), key=1, value=1)
    assert done.type == "fail" and never_sent(done.error, done.error_msg)
    assert scripted.conns[0].statements == []  # the INSERT never left
    assert c.conn is None and c.node is None


def test_a_paced_workload_makes_its_rate_times_its_duration() -> None:
    """``rate 50/s`` for 1 s is 50 slots counted from the workload's start, whenever its
    client began (here 30 ms late); two clients at ``rate 10/s`` take turns, 100 ms apart."""
    spec = PlannedWorkload(name="p", kind="probe", targets=["db1"], clients=1, rate=50.0,
                           duration=1.0)
    w = probe.ProbeWorkload(spec, make_env(History()), 0, 1.0)
    w.started_at = time.monotonic() - 0.03
    pace, n = w._pace(0), 0
    while not w._should_stop():
        n += 1
        pace()
    assert n == 50
    two = probe.ProbeWorkload(spec.model_copy(update={"clients": 2, "rate": 10.0}),
                           make_env(History()), 0, 1.0)
    two.started_at = time.monotonic()
    two._pace(1)  # waits for client 1's first slot
    assert time.monotonic() - two.started_at >= 0.099


def test_the_live_view_counts_operations_as_throughput_does() -> None:
    """A read_your_writes workload's ops/s are its writes (its first reads and polls are how it
    measures visibility: the live view showed 273/s for 20 writes a second); its failed reads
    are errors all the same. A probe's reads count."""
    from types import SimpleNamespace

    from lab.run.load import Load
    from runners.ops import Op

    ops = [Op("ok", "write", 1, 1, "ryw"), Op("ok", "read", 2, 2, "ryw"),
           Op("ok", "poll", 2, 3, "ryw"), Op("fail", "read", 3, 4, "ryw", error=2003),
           Op("ok", "read", 4, 5, "p"), Op("invoke", "read", 4, 6, "p")]
    fake = SimpleNamespace(recorder=SimpleNamespace(_ops=ops, _samples=[]), workloads={
        "ryw": object.__new__(rywmod.ReadYourWritesWorkload),
        "p": object.__new__(probe.ProbeWorkload)})
    out = Load._stats(fake, {}, 1.0)  # type: ignore[arg-type]
    assert out == {"ryw": {"ops": 1.0, "errors": 1.0}, "p": {"ops": 1.0, "errors": 0.0}}


# --- Client.txn: where in the transaction the error came decides fail or info ---------------


class ScriptedTxn(Scripted):
    """Raises ``statement_error`` only at the statement that starts with ``fail_at``."""

    fail_at = ""

    def run_within(self, conn: FakeConn, sql: str, args: Any = (),
                   timeout: float = 1.0) -> Result:
        if self.statement_error is not None and sql.startswith(self.fail_at):
            conn.statements.append((sql, tuple(args)))
            raise self.statement_error
        err, self.statement_error = self.statement_error, None
        try:
            return super().run_within(conn, sql, args, timeout)
        finally:
            self.statement_error = err


TXN_CASES = [
    # name, failing statement, error, type, connection dropped
    ("deadlock in the body", "UPDATE",
     MySQLdb.OperationalError(1213, "Deadlock found"), "fail"),
    ("timeout in the body", "UPDATE", LabTimeout("statement", 0.1, sent=True), "fail"),
    ("lost in the body", "SELECT", LOST, "fail"),
    ("certification failure at COMMIT", "COMMIT",
     MySQLdb.OperationalError(1213, "Deadlock: wsrep aborted transaction"), "fail"),
    ("COMMIT's answer lost", "COMMIT", LOST, "info"),
    ("COMMIT timed out", "COMMIT", LabTimeout("statement", 0.1, sent=True), "info"),
]


@pytest.mark.parametrize(("name", "at", "error", "typ"), TXN_CASES,
                         ids=[c[0] for c in TXN_CASES])
def test_client_txn_outcomes(monkeypatch: pytest.MonkeyPatch, name: str, at: str,
                             error: BaseException, typ: str) -> None:
    """A transaction that failed before COMMIT was sent never committed (``fail``: the
    connection is closed, so the server rolls it back); a server error answering COMMIT is an
    abort (``fail``); only a COMMIT whose answer was lost is ``info``."""
    s = ScriptedTxn()
    s.fail_at = at
    patch_cluster(monkeypatch, s)
    hist = History()
    c = wl.Client(make_env(hist), "w", 3, "db1", 0.1)

    def body(txn: wl.Txn) -> list[int]:
        rows = txn.run("SELECT v FROM t WHERE k = %s", (1,))
        txn.run("UPDATE t SET v = %s WHERE k = %s", (rows[0][0] + 1, 1))
        return [rows[0][0], rows[0][0] + 1]

    assert c.txn("rmw", body, key=1).type == "ok"
    assert [q for q, _ in s.conns[0].statements] == [
        "START TRANSACTION", "SELECT v FROM t WHERE k = %s", "UPDATE t SET v = %s WHERE k = %s",
        "COMMIT"]
    s.statement_error = error
    done = c.txn("rmw", body, key=1)
    assert done.type == typ
    assert done.error_msg is not None and done.error_msg.startswith(
        "COMMIT" if at == "COMMIT" else "before COMMIT")
    assert s.conns[0].closed.is_set() and c.conn is None  # rolled back with the connection
    assert "COMMIT" not in [q for q, _ in s.conns[0].statements[4:]] or at == "COMMIT"


class _Done:
    def __init__(self, type_: str, value: Any) -> None:
        self.type, self.value = type_, value


class _ReplicaBehind:
    """A read endpoint that shows version 1 of key 7 only after ``shows_after`` polls."""

    process = 10001

    def __init__(self, shows_after: int, fail: bool = False) -> None:
        self.shows_after, self.fail = shows_after, fail
        self.ops: list[str] = []
        self.stop: threading.Event | None = None  # the load's end, once the reader has it
        self.polls_after_stop = 0

    def op(self, f: str, sql: str, args: Any, **kw: Any) -> _Done:
        self.ops.append(f)
        if f == "poll" and self.stop is not None and self.stop.is_set():
            self.polls_after_stop += 1
        if self.fail and f == "poll":
            return _Done("fail", None)
        polls = self.ops.count("poll")
        if f == "read":
            return _Done("ok", None)
        return _Done("ok", kw["result"]([(7, 1)] if polls > self.shows_after else []))

    def close(self) -> None:
        pass


def _reader_after_the_load(endpoint: _ReplicaBehind) -> Any:
    from runners.read_your_writes import _Reader

    stop = threading.Event()
    r = _Reader(endpoint, "t", stop, 0.001, 5.0)  # type: ignore[arg-type]
    endpoint.stop = stop
    r.thread.start()
    r.post(7, 1)
    deadline = time.monotonic() + 2
    while endpoint.ops.count("read") < 1 and time.monotonic() < deadline:
        time.sleep(0.001)
    stop.set()  # the load ends; the write is not on the replica yet
    r.finish()
    r.thread.join(5)
    assert not r.thread.is_alive()
    return r


def test_readers_keep_polling_unseen_writes_after_the_load() -> None:
    """With a replica behind, the readers stopped polling when the load ended: its last
    writes were "never seen" and every upper percentile a "≥". They are polled until seen."""
    ep = _ReplicaBehind(shows_after=20)
    r = _reader_after_the_load(ep)
    assert r.pending == {}  # seen in the end
    assert ep.ops.count("poll") > 20
    assert r.unseen_at_stop == 1


def test_readers_stop_after_the_load_at_the_first_failure() -> None:
    ep = _ReplicaBehind(shows_after=20, fail=True)
    r = _reader_after_the_load(ep)
    # polls during the load may fail and go on (a busy machine lets one or two happen before
    # the load ends); once it has ended, the first failure is the last poll
    assert r.pending == {7: 1} and ep.polls_after_stop <= 1


def test_a_replica_behind_shows_its_last_writes_after_the_load() -> None:
    """The load ends (the engine's stop) with db2 0.5 s behind: its last 0.5 s of writes were
    "never seen", every upper percentile a "≥" and an expectation on p99 undecidable. The
    readers poll them while the lab settles: every write is seen, p99 is a figure."""
    cluster = FakeCluster({"db1": 0.0, "db2": 0.5})
    spec = PlannedWorkload(name="w", kind="read_your_writes", targets=["db1"], reads=["db2"],
                           clients=1, rate=RATE, duration=60.0, timeout=TIMEOUT)
    hist = History()
    stop = threading.Event()
    with pytest.MonkeyPatch.context() as mp:
        patch_cluster(mp, cluster)
        w = rywmod.ReadYourWritesWorkload(spec, make_env(hist, stop), 0, 60.0)
        w.start()
        time.sleep(1.2)
        stop.set()  # as lab.run.load does when the load ends
        w.join(2.0)
        w.join_readers(5.0)  # as lab.run.load.stop_workloads does, before anything is healed
    n = len(hist.completions("write", "ok"))
    ctx = CheckContext(workloads={"w": WorkloadInfo("read_your_writes")})
    vis = stale_reads.check(hist.ops, ctx).metrics["subjects"]["w on db2"]["visibility"]
    assert vis["never_seen"] == 0 and vis["seen"] == n, vis
    # the fake replica's 0.5 s delay, to within a poll and the threads' scheduling (a busy
    # machine delayed a poll by 0.18 s once; a reader that stopped at the load's end reads ≥)
    assert 0.5 <= vis["p99"] <= 0.5 + POLL + 0.3, vis
    note = w.after_load()
    assert note is not None and "were polled for" in note and "every one seen" in note


def test_an_unpaced_client_tries_a_refused_server_again_10_ms_later_not_at_once() -> None:
    """A real refused connect (a port nobody listens on): an unpaced workload's client waits
    ``RETRY_WAIT`` after a connection it could not open before its next operation's invoke (so
    the wait is in no operation's latency); a paced one goes on its own pace, without it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed when the block ends: nobody listens there
    hist = History()
    env = wl.ClientEnv(address=lambda ep: Address("127.0.0.1", port),
                       node_by_server_id=NODE_BY_PORT.get, creds=Credentials("app", "secret"),
                       record=hist.record, stop=threading.Event(), seed=7)
    unpaced = PlannedWorkload(name="u", kind="unique_insert", targets=["db1"], clients=1)
    c = probe.UniqueInsertWorkload(unpaced, env, 0, 1.0).new_client(0)
    assert c.retry_wait == wl.Workload.RETRY_WAIT == 0.01
    for k in range(5):
        c.op("insert", "INSERT INTO t VALUES (%s)", (k,), key=k)
    ops = hist.ops
    assert [o.type for o in ops] == ["invoke", "fail"] * 5
    assert all(never_sent(o.error, o.error_msg) for o in ops[1::2])
    gaps = [(ops[i + 1].time - ops[i].time) / 1e9 for i in range(1, 9, 2)]  # fail -> invoke
    assert min(gaps) >= 0.0099, gaps
    paced = probe.UniqueInsertWorkload(unpaced.model_copy(update={"rate": 100.0}), env, 0, 1.0)
    assert paced.new_client(0).retry_wait == 0.0
