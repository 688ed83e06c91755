"""runners.replication without servers: the statements it composes and its readings of fake
nodes' status rows."""

from __future__ import annotations

from typing import Any

import pytest

from runners.mysql import Credentials
from runners.replication import (
    caught_up,
    change_master,
    downloaded,
    missing_transactions,
    repoint,
    stopped_threads,
    synced,
)

REPL = Credentials("lab_repl", "pw")


class FakeNode:
    """Answers the statements runners.replication sends from canned rows."""

    def __init__(self, name: str, rows: dict[str, list[dict[str, Any]]] | None = None,
                 scalars: dict[str, Any] | None = None, running: bool = True) -> None:
        self.name = name
        self.rows = rows or {}
        self.scalars = scalars or {}
        self.running = running

    def sql(self, statement: str, timeout: float = 5.0) -> list[dict[str, Any]]:
        return self.rows.get(statement, [])

    def scalar(self, statement: str, timeout: float = 5.0) -> Any:
        return self.scalars.get(statement)

    def is_running(self) -> bool:
        return self.running


def test_change_master_for_a_new_primary() -> None:
    assert change_master(23003, creds=REPL, use_gtid="slave_pos") == (
        "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=23003, "
        "MASTER_USER='lab_repl', MASTER_PASSWORD='pw', MASTER_USE_GTID=slave_pos, "
        "MASTER_CONNECT_RETRY=1")


def test_change_master_keeps_wiring_and_sets_the_retry() -> None:
    assert change_master() == "CHANGE MASTER TO MASTER_CONNECT_RETRY=1"


def test_change_master_with_coordinates_and_delay() -> None:
    stmt = change_master(23001, use_gtid="no", log_file="mysql-bin.000002", log_pos=1234,
                         delay=2.6)
    assert stmt == ("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=23001, "
                    "MASTER_USE_GTID=no, MASTER_LOG_FILE='mysql-bin.000002', "
                    "MASTER_LOG_POS=1234, MASTER_CONNECT_RETRY=1, MASTER_DELAY=3")


def test_change_master_quotes_values() -> None:
    stmt = change_master(1, creds=Credentials("u", "p'w\\"))
    assert "MASTER_PASSWORD='p\\'w\\\\'" in stmt


def test_change_master_needs_an_option() -> None:
    with pytest.raises(ValueError):
        change_master(connect_retry=None)


def test_repoint_a_former_primary_read_only() -> None:
    stmts = repoint(23002, REPL, "current_pos", read_only=True)
    assert stmts[:2] == ["SET GLOBAL read_only=ON", "STOP SLAVE"]
    assert "MASTER_USE_GTID=current_pos" in stmts[2]
    assert stmts[-1] == "START SLAVE"


def status(**kw: Any) -> dict[str, list[dict[str, Any]]]:
    row = {"Slave_SQL_Running": "Yes", "Slave_IO_Running": "Yes",
           "Master_Log_File": "mysql-bin.000001", "Relay_Master_Log_File": "mysql-bin.000001",
           "Read_Master_Log_Pos": 500, "Exec_Master_Log_Pos": 500, **kw}
    return {"SHOW SLAVE STATUS": [row]}


PRIMARY = FakeNode("db1", {"SHOW MASTER STATUS": [{"File": "mysql-bin.000001",
                                                   "Position": 500}]})


def test_caught_up_with_the_primary() -> None:
    assert caught_up(FakeNode("db2", status()), PRIMARY)
    assert not caught_up(FakeNode("db2", status(Exec_Master_Log_Pos=400)), PRIMARY)
    assert not caught_up(FakeNode("db2", status(Slave_SQL_Running="No")), PRIMARY)
    assert not caught_up(FakeNode("db2"), PRIMARY)


def test_caught_up_with_the_primary_down_compares_its_own_relay_log() -> None:
    assert caught_up(FakeNode("db2", status(Read_Master_Log_Pos=400,
                                            Exec_Master_Log_Pos=400)), None)
    assert not caught_up(FakeNode("db2", status(Exec_Master_Log_Pos=300)), None)


def test_downloaded() -> None:
    assert downloaded(FakeNode("db2", status(Exec_Master_Log_Pos=100)), PRIMARY)
    assert not downloaded(FakeNode("db2", status(Read_Master_Log_Pos=100)), PRIMARY)


def test_synced() -> None:
    q = "SHOW GLOBAL STATUS LIKE 'wsrep_local_state'"
    assert synced(FakeNode("g1", {q: [{"Value": "4"}]}))
    assert not synced(FakeNode("g1", {q: [{"Value": "2"}]}))
    assert not synced(FakeNode("g1"))


def test_stopped_sql_threads_only_on_an_error_and_running_nodes() -> None:
    nodes = {
        "db2": FakeNode("db2", status(Slave_SQL_Running="No", Last_SQL_Errno=1062)),
        "db3": FakeNode("db3", status(Slave_SQL_Running="No", Last_SQL_Errno=0)),
        "db4": FakeNode("db4", status(Slave_SQL_Running="No", Last_SQL_Errno=1062),
                        running=False),
    }
    assert stopped_threads(nodes)[0] == ["db2 (error 1062)"]


def test_stopped_io_threads_only_when_they_will_not_retry() -> None:
    nodes = {
        "db1": FakeNode("db1", status(Slave_IO_Running="No", Last_IO_Errno=1236,
                                      Last_IO_Error="Got fatal error 1236 from master")),
        "db2": FakeNode("db2", status(Slave_IO_Running="Connecting", Last_IO_Errno=2003)),
        "db3": FakeNode("db3", status(Slave_IO_Running="No", Last_IO_Errno=0)),
        # stopped by `stop replication` after a partition: the 2013 is stale, not the cause
        "db4": FakeNode("db4", status(Slave_IO_Running="No", Last_IO_Errno=2013)),
    }
    assert stopped_threads(nodes)[1] == ["db1 (error 1236: Got fatal error 1236 from master)"]


def gtid_node(name: str, binlog: str, current: str) -> FakeNode:
    return FakeNode(name, scalars={"SELECT @@gtid_binlog_pos": binlog,
                                   "SELECT @@gtid_current_pos": current})


def test_missing_transactions_replication() -> None:
    running = {"db1": gtid_node("db1", "0-1-10,99-1-50", "0-1-10"),
               "db2": gtid_node("db2", "", "0-1-7,99-1-49")}
    assert missing_transactions("replication", running, "db1", {}) == {"db2": 3}


def test_missing_transactions_with_the_primary_down_use_its_last_position() -> None:
    running = {"db2": gtid_node("db2", "", "0-1-7")}
    assert missing_transactions("replication", running, "db1", {0: 9}) == {"db2": 2}


def test_missing_transactions_two_primaries() -> None:
    running = {"a": gtid_node("a", "1-1-5", "1-1-5,2-2-3"), "b": gtid_node("b", "2-2-4",
                                                                           "1-1-5,2-2-4")}
    assert missing_transactions("primary_primary", running, None, {}) == {"a": 1, "b": 0}


def test_missing_transactions_unreadable_is_unknown() -> None:
    class Broken(FakeNode):
        def scalar(self, statement: str, timeout: float = 5.0) -> Any:
            raise OSError("gone")

    assert missing_transactions("replication", {"db1": Broken("db1")}, "db1", {}) == {}


def test_change_master_on_mysql_uses_auto_position() -> None:
    """MySQL and Percona Server 8.0 have no MASTER_USE_GTID: one GTID set, auto-positioned."""
    assert change_master(23003, creds=REPL, use_gtid="slave_pos", flavor="mysql").endswith(
        "MASTER_AUTO_POSITION=1, MASTER_CONNECT_RETRY=1")
    stmt = change_master(23001, use_gtid="no", log_file="mysql-bin.000002", log_pos=4,
                         flavor="percona")
    assert "MASTER_AUTO_POSITION=0" in stmt and "MASTER_USE_GTID" not in stmt
    assert "MASTER_AUTO_POSITION=1" in " ".join(
        repoint(23002, REPL, "current_pos", read_only=True, flavor="mysql"))


def test_lag_is_how_much_older_the_replicas_beat_is_than_the_primarys_last() -> None:
    """A replica that applied everything its dead primary committed is 0 behind, not behind by
    the time since the death (it grew by 0.4 s in the 0.5 s after a kill, measured)."""
    from runners.replication import lag_seconds

    assert lag_seconds(10_000_000, 10_000_000) == 0.0
    assert lag_seconds(5_000_000, 7_100_000) == pytest.approx(2.1)
    assert lag_seconds(7_200_000, 7_100_000) == 0.0  # read before the writer recorded its beat


def _galera(name: str, state: str, status: str, view: int, ready: str = "ON") -> FakeNode:
    from runners.replication import GALERA_STATE

    return FakeNode(name, {GALERA_STATE: [
        {"Variable_name": "wsrep_local_state", "Value": state},
        {"Variable_name": "wsrep_cluster_status", "Value": status},
        {"Variable_name": "wsrep_cluster_conf_id", "Value": str(view)},
        {"Variable_name": "wsrep_ready", "Value": ready}]})


def test_a_resumed_galera_node_with_its_old_view_is_not_synced() -> None:
    """g1 resumed after a pause still says Synced in Primary view 2 while g2 and g3 are in
    view 3 without it (measured for 4 s after the resume)."""
    from runners.replication import synced_in_cluster

    g1 = _galera("g1", "4", "Primary", 2)
    g2, g3 = _galera("g2", "4", "Primary", 3), _galera("g3", "4", "Primary", 3)
    assert not synced_in_cluster(g1, [g2, g3])
    assert synced_in_cluster(_galera("g1", "4", "Primary", 4),
                             [_galera("g2", "4", "Primary", 4), FakeNode("g3")])
    assert not synced_in_cluster(_galera("g1", "4", "non-Primary", 4), [])
    assert not synced_in_cluster(_galera("g1", "4", "Primary", 4, ready="OFF"), [])
