"""Small helpers over mysqlclient (MySQLdb) for talking to MySQL-family servers."""

from __future__ import annotations

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
    """A connection with connect/read/write timeouts (whole seconds, at least 1)."""
    t = max(1, int(round(timeout)))
    kwargs: dict[str, Any] = dict(
        host=addr.host, port=addr.port, user=creds.user, password=creds.password,
        connect_timeout=t, read_timeout=t, write_timeout=t,
    )
    if database:
        kwargs["database"] = database
    conn = MySQLdb.connect(**kwargs)
    conn.autocommit(autocommit)
    return conn


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
        return scalar(addr, creds, "SELECT 1", timeout=1) == 1
    return check
