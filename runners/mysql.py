"""Small helpers over mysqlclient (MySQLdb) for talking to MySQL-family servers."""

from __future__ import annotations

import math
import select
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import MySQLdb
import MySQLdb.cursors

from runners.errors import ComponentError


@dataclass(frozen=True)
class Credentials:
    user: str
    password: str


@dataclass(frozen=True)
class Address:
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


def connect(addr: Address, creds: Credentials, timeout: float = 2.0,
            database: str | None = None, autocommit: bool = True) -> Any:
    """A connection with the C client's connect/read/write timeouts.

    The C client takes whole seconds only, so they are rounded *up* here: they are a backstop.
    Where a workload's timeout is part of what is measured, use ``connect_within`` and
    ``run_within``, which honour fractions of a second exactly."""
    t = max(1, math.ceil(timeout))
    kwargs: dict[str, Any] = dict(
        host=addr.host, port=addr.port, user=creds.user, password=creds.password,
        connect_timeout=t, read_timeout=t + 1, write_timeout=t + 1,
    )
    if database:
        kwargs["database"] = database
    conn = MySQLdb.connect(**kwargs)
    conn.autocommit(autocommit)
    return conn


class LabTimeout(Exception):
    """A connect or a statement did not complete within the workload's timeout (measured by
    the lab, not by the C client). ``sent``: the statement had been sent to the server (so a
    write may have been applied)."""

    def __init__(self, what: str, timeout: float, sent: bool) -> None:
        super().__init__(f"{what} timed out after {timeout * 1000:g} ms")
        self.sent = sent
        self.timeout = timeout


def connect_within(addr: Address, creds: Credentials, timeout: float) -> Any:
    """``connect`` that gives up after exactly ``timeout`` seconds (a fraction is honoured).

    Whole seconds are left to the C client. Otherwise the connect runs in a helper thread;
    when it has not finished in time, ``LabTimeout`` is raised and the helper closes the
    connection if it is made later (it gives up at the rounded-up C client timeout)."""
    if float(timeout).is_integer():
        try:
            return connect(addr, creds, timeout)
        except MySQLdb.OperationalError as e:
            if error_code(e) in (2013, 2003) and "timed out" in str(e).lower():
                raise LabTimeout("connect", timeout, sent=False) from e
            raise
    box: dict[str, Any] = {}
    lock = threading.Lock()

    def target() -> None:
        try:
            c = connect(addr, creds, timeout)
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            box["error"] = e
            return
        with lock:
            if box.get("abandoned"):
                try:
                    c.close()
                except Exception:  # noqa: BLE001
                    pass
            else:
                box["conn"] = c

    t = threading.Thread(target=target, daemon=True, name="lab-connect")
    t.start()
    t.join(timeout)
    with lock:
        if "conn" in box:
            return box["conn"]
        if "error" in box:
            raise box["error"]
        box["abandoned"] = True
    raise LabTimeout("connect", timeout, sent=False)


@dataclass(frozen=True, slots=True)
class Result:
    rows: tuple[tuple[Any, ...], ...] | None  # None: the statement returns no result set
    insert_id: int
    affected: int


def run_within(conn: Any, sql: str, args: Sequence[Any] = (), timeout: float = 1.0) -> Result:
    """Send one statement and wait for its answer at most ``timeout`` seconds (exact: the
    socket is watched with select, the C client's whole-second timeouts are only a backstop).

    On a timeout ``LabTimeout(sent=True)`` is raised and the connection must be closed: its
    state is unknown. Server errors are raised as ``MySQLdb.Error``, as with a cursor."""
    deadline = time.monotonic() + timeout
    send_statement(conn, sql, args)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise LabTimeout("statement", timeout, sent=True)
        try:
            ready, _, _ = select.select([conn.fileno()], [], [], remaining)
        except InterruptedError:  # pragma: no cover - retried
            continue
        if ready:
            break
    return read_result(conn)


def send_statement(conn: Any, sql: str, args: Sequence[Any] = ()) -> None:
    """Send one statement (its ``%s`` filled with the arguments as SQL literals) without
    waiting for the answer: ``read_result`` reads it once the socket is readable."""
    q = sql.encode()
    if args:  # an int is its own literal (the common case: keys and values), else quoted
        q = q % tuple(b"%d" % a if type(a) is int else conn.literal(a) for a in args)
    conn.send_query(q)


def read_result(conn: Any) -> Result:
    """The answer to the statement ``send_statement`` sent; server errors raise
    ``MySQLdb.Error``. Blocks until the answer is there: call it once the socket is readable."""
    conn.read_query_result()
    res = conn.store_result()
    rows = tuple(res.fetch_row(0)) if res is not None else None
    return Result(rows, int(conn.insert_id()), int(conn.affected_rows()))


def read_answer(conn: Any, insert_id: bool = False) -> int | None:
    """``read_result`` for a caller that keeps no rows: the answer read (a result set, if the
    statement has one, read to its end so the connection is ready for the next statement),
    and the auto-increment id it assigned when ``insert_id``. Half the calls into the C client
    of ``read_result`` for a write's OK (the multiplexed workloads' hot path)."""
    conn.read_query_result()
    if conn.field_count():
        res = conn.store_result()
        if res is not None:
            res.fetch_row(0)
    return int(conn.insert_id()) if insert_id else None


def query(addr: Address, creds: Credentials, sql: str, args: Sequence[Any] | None = None,
          timeout: float = 5.0) -> list[dict[str, Any]]:
    """Run one statement on a fresh connection and return rows as dicts."""
    conn = connect(addr, creds, timeout)
    try:
        cur = conn.cursor(MySQLdb.cursors.DictCursor)
        cur.execute(sql, args)
        rows = list(cur.fetchall()) if cur.description else []
        cur.close()
        return rows
    finally:
        conn.close()


def execute_all(addr: Address, creds: Credentials, statements: Sequence[str],
                timeout: float = 10.0) -> None:
    conn = connect(addr, creds, timeout)
    try:
        cur = conn.cursor()
        for s in statements:
            cur.execute(s)
        cur.close()
    finally:
        conn.close()


def scalar(addr: Address, creds: Credentials, sql: str, timeout: float = 5.0) -> Any:
    rows = query(addr, creds, sql, timeout=timeout)
    if not rows:
        return None
    return next(iter(rows[0].values()))


def error_code(exc: BaseException) -> int | None:
    if isinstance(exc, MySQLdb.Error) and exc.args and isinstance(exc.args[0], int):
        return int(exc.args[0])
    return None


def wait_until(check: Callable[[], bool], timeout: float, what: str, component: str,
               log: str | Path | None = None, interval: float = 0.05,
               alive: Callable[[], bool] | None = None) -> float:
    """Poll check() until it is true; returns seconds waited. On timeout (or when alive()
    says the process died) raise ComponentError with the log tail."""
    t0 = time.monotonic()
    last: BaseException | None = None
    while True:
        try:
            if check():
                return time.monotonic() - t0
        except Exception as e:  # noqa: BLE001 - any failure means "not yet"
            last = e
        if alive is not None and not alive():
            raise ComponentError(component, f"exited while waiting for {what}", log)
        if time.monotonic() - t0 > timeout:
            detail = f" (last error: {last})" if last else ""
            raise ComponentError(component, f"not {what} after {timeout:.0f}s{detail}", log)
        time.sleep(interval)


def sql_ready(addr: Address, creds: Credentials) -> Callable[[], bool]:
    def check() -> bool:
        return bool(scalar(addr, creds, "SELECT 1", timeout=1) == 1)
    return check
