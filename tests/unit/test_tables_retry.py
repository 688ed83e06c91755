"""Making the lab's tables: a lock wait timeout or a deadlock is run again (the statements are
idempotent), a few times, and then fails with the server's error, the attempt and the
statement; any other error fails at once."""

from __future__ import annotations

import MySQLdb
import pytest

from runners import tables


class Cursor:
    def __init__(self, errors: list[int]) -> None:
        self.errors = list(errors)
        self.ran: list[str] = []

    def execute(self, statement: str) -> None:
        self.ran.append(statement)
        if self.errors:
            code = self.errors.pop(0)
            raise MySQLdb.OperationalError(code, "from the server")


def test_a_lock_wait_timeout_is_run_again_until_it_succeeds() -> None:
    cur = Cursor([1205, 1213])
    tables._execute_retrying(cur, "REPLACE INTO t VALUES (1)", pause=0)
    assert cur.ran == ["REPLACE INTO t VALUES (1)"] * 3


def test_it_gives_up_after_the_last_attempt_with_what_it_tried() -> None:
    cur = Cursor([1205] * tables.ATTEMPTS)
    with pytest.raises(MySQLdb.OperationalError) as e:
        tables._execute_retrying(cur, "CREATE TABLE IF NOT EXISTS t (id INT)", pause=0)
    assert e.value.args[0] == 1205
    assert f"attempt {tables.ATTEMPTS} of {tables.ATTEMPTS}" in e.value.args[1]
    assert "CREATE TABLE IF NOT EXISTS t" in e.value.args[1]
    assert len(cur.ran) == tables.ATTEMPTS


def test_any_other_error_fails_at_once() -> None:
    cur = Cursor([1142])
    with pytest.raises(MySQLdb.OperationalError) as e:
        tables._execute_retrying(cur, "CREATE DATABASE IF NOT EXISTS x", pause=0)
    assert e.value.args[0] == 1142 and "attempt 1 of" in e.value.args[1]
    assert len(cur.ran) == 1
