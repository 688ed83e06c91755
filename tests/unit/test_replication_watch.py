"""ReplicationWatcher with a fake connection: samples, messages, unreadable ticks, fallback."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any

import MySQLdb

from runners.mysql import Address, Credentials
from runners.replication_watch import ReplicationWatcher, summarize

READ_ONLY = "SELECT @@global.read_only AS read_only"
ROW_OK = {"Connection_name": "", "Slave_IO_Running": "Yes", "Slave_SQL_Running": "Yes",
          "Last_SQL_Errno": 0, "Last_SQL_Error": "", "Last_IO_Errno": 0, "Last_IO_Error": "",
          "Seconds_Behind_Master": 0}  # fmt: skip
ROW_1062 = dict(ROW_OK, Slave_SQL_Running="No", Last_SQL_Errno=1062,
                Last_SQL_Error="Duplicate entry '7' for key 'PRIMARY'",
                Seconds_Behind_Master=None)  # fmt: skip


def test_summarize() -> None:
    values, texts = summarize([ROW_OK])
    assert values == {"configured": 1.0, "io_running": 1.0, "io_connecting": 0.0,
                      "sql_running": 1.0, "sql_errno": 0.0, "io_errno": 0.0,
                      "seconds_behind": 0.0}  # fmt: skip
    assert texts == {}
    values, texts = summarize([ROW_1062])
    assert values["sql_running"] == 0.0 and values["sql_errno"] == 1062.0
    assert math.isnan(values["seconds_behind"])
    assert texts == {1062: "Duplicate entry '7' for key 'PRIMARY'"}
    connecting = dict(ROW_OK, Slave_IO_Running="Connecting", Last_IO_Errno=2003,
                      Last_IO_Error="error reconnecting to master")  # fmt: skip
    values, _ = summarize([ROW_OK, connecting])  # two sources: running only if both run
    assert values["io_running"] == 0.0 and values["io_errno"] == 2003.0
    assert values["io_connecting"] == 1.0  # retrying by itself
    gave_up = dict(connecting, Slave_IO_Running="No", Last_IO_Errno=1236)
    assert summarize([gave_up, connecting])[0]["io_connecting"] == 0.0  # one source stopped
    values, _ = summarize([])
    assert values["configured"] == 0.0 and values["sql_running"] == 0.0
    mysql = {"Replica_IO_Running": "Yes", "Replica_SQL_Running": "Yes", "Last_SQL_Errno": 0,
             "Last_IO_Errno": 0, "Seconds_Behind_Source": 3}  # fmt: skip
    assert summarize([mysql])[0]["seconds_behind"] == 3.0


class FakeCursor:
    def __init__(self, conn: FakeConn) -> None:
        self.conn = conn
        self.description: Any = None
        self.rows: list[dict[str, Any]] = []

    def execute(self, sql: str) -> None:
        self.conn.statements.append(sql)
        if sql == READ_ONLY:
            self.rows = [{"read_only": self.conn.read_only}]
            self.description = [("read_only",)]
            return
        if sql == "SHOW ALL SLAVES STATUS" and not self.conn.multi_source:
            raise MySQLdb.ProgrammingError(1064, "You have an error in your SQL syntax")
        self.rows = self.conn.answer()
        self.description = [("x",)]

    def fetchall(self) -> list[dict[str, Any]]:
        return self.rows

    def close(self) -> None:
        pass


class FakeConn:
    def __init__(self, answer: Callable[[], list[dict[str, Any]]], multi_source: bool) -> None:
        self.answer = answer
        self.multi_source = multi_source
        self.statements: list[str] = []
        self.closed = False
        self.read_only = 1

    def cursor(self, _cls: Any = None) -> FakeCursor:
        return FakeCursor(self)

    def close(self) -> None:
        self.closed = True


def test_the_watcher_samples_every_node_and_keeps_the_messages() -> None:
    emitted: list[tuple[str, str, int, dict[str, float]]] = []
    lock = threading.Lock()
    state = {"p1": [ROW_OK], "p2": [ROW_OK]}
    conns: dict[int, FakeConn] = {}
    broken = {"p2": 0}

    def connect_fn(addr: Address, _creds: Credentials) -> FakeConn:
        name = "p1" if addr.port == 1 else "p2"
        if name == "p2" and broken["p2"] > 0:
            broken["p2"] -= 1
            raise MySQLdb.OperationalError(2003, "Can't connect")
        conn = FakeConn(lambda: list(state[name]), multi_source=name == "p1")
        conns[addr.port] = conn
        return conn

    def emit(series: str, subject: str, t: int, values: dict[str, float]) -> None:
        with lock:
            emitted.append((series, subject, t, values))

    stop = threading.Event()
    w = ReplicationWatcher({"p1": Address("h", 1), "p2": Address("h", 2)},
                           Credentials("u", "p"), emit, 0.01, stop,
                           connect_fn=connect_fn)  # fmt: skip
    broken["p2"] = 3
    w.start()
    time.sleep(0.1)
    state["p1"] = [ROW_1062]
    time.sleep(0.1)
    stop.set()
    w.join(2)
    assert all(s == "replication" for s, *_ in emitted)
    p1 = [v for _, n, _, v in emitted if n == "p1"]
    p2 = [v for _, n, _, v in emitted if n == "p2"]
    assert p1[0]["sql_running"] == 1.0 and p1[-1]["sql_running"] == 0.0
    assert p1[-1]["sql_errno"] == 1062.0
    assert [v for v in p2[:3]] == [{"unreadable": 1.0}] * 3
    assert p2[-1]["sql_running"] == 1.0
    assert w.unreadable == {"p2": 3}
    assert w.messages == {("p1", 1062): "Duplicate entry '7' for key 'PRIMARY'"}
    assert w.messages_by_node() == {"p1": {"1062": "Duplicate entry '7' for key 'PRIMARY'"}}
    # p2 does not know SHOW ALL SLAVES STATUS: it falls back once and stays there
    status2 = [x for x in conns[2].statements if x != READ_ONLY]
    assert status2[:2] == ["SHOW ALL SLAVES STATUS", "SHOW SLAVE STATUS"]
    assert set(status2[2:]) == {"SHOW SLAVE STATUS"}
    assert set(conns[1].statements) == {"SHOW ALL SLAVES STATUS", READ_ONLY}
    # read_only is read after every status that was read
    assert p1[-1]["read_only"] == 1.0 and all("read_only" in v for v in p2[3:])
    times = [t for _, n, t, _ in emitted if n == "p1"]
    assert times == sorted(times)
