"""Each fault family's heal bookkeeping, on fake nodes and a fake topology: what a fault
remembers, what healing undoes and in which order, and that the history gets every action."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import MySQLdb
import pytest
from fakes import FakeTopology, FakeToxiproxy, nemesis, ref

import fault
from dsl.models import (
    DropCaches,
    NetworkFault,
    NodeAction,
    Promote,
    ReplicationControl,
    SetGlobal,
    Sleep,
)
from fault.nemesis import ActionFailed
from runners.mysql import Address, Credentials
from runners.ops import NEMESIS
from runners.toxiproxy import Link


@pytest.fixture
def sql(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, list[str]]]:
    """Statements sent to servers: (port, statements)."""
    sent: list[tuple[int, list[str]]] = []

    def execute_all(addr: Address, creds: Credentials, statements: list[str],
                    timeout: float = 10.0) -> None:
        sent.append((addr.port, list(statements)))

    monkeypatch.setattr("fault.replication.execute_all", execute_all)
    monkeypatch.setattr("fault.sql.connect", lambda addr, creds, timeout=10.0: FakeServer(
        addr.port, sent))
    return sent


class FakeServer:
    """A connection of ``set global``: records the SET, and reads back the value set, or
    ``ADJUSTED[value]`` with a warning (a server that changed it), or raises ``REFUSED``."""

    ADJUSTED = {"7": "3"}
    REFUSED = {"innodb_buffer_pool_instances": (1193, "Unknown system variable "
                                                      "'innodb_buffer_pool_instances'")}

    def __init__(self, port: int, sent: list[tuple[int, list[str]]]) -> None:
        self.port, self.sent, self.value = port, sent, ""

    def cursor(self) -> FakeServer:
        return self

    def execute(self, stmt: str) -> None:
        if stmt.startswith("SET GLOBAL"):
            name, value = stmt[len("SET GLOBAL "):].split(" = ")
            if name in self.REFUSED:
                raise MySQLdb.OperationalError(*self.REFUSED[name])
            self.sent.append((self.port, [stmt]))
            self.value = value
        self.last = stmt

    def fetchall(self) -> list[tuple[str, int, str]]:
        if self.value in self.ADJUSTED:
            return [("Warning", 1292, f"Truncated incorrect value: '{self.value}'")]
        return []

    def fetchone(self) -> tuple[str]:
        return (self.ADJUSTED.get(self.value, self.value),)

    def close(self) -> None:
        pass


# --- the registry ------------------------------------------------------------------------------

def test_every_action_model_has_a_handler() -> None:
    from dsl.actions import ACTIONS

    assert set(ACTIONS) == set(fault.HANDLERS)


def test_actions_and_their_ends_are_in_the_history(tmp_path: Path) -> None:
    nem, history = nemesis(FakeTopology(tmp_path))
    nem.apply(NodeAction(verb="kill", node=ref("db3")))
    nem.apply(Sleep(seconds=0))
    assert [(o.type, o.f, o.node, o.process) for o in history] == [
        ("invoke", "kill", "db3", NEMESIS), ("ok", "kill", "db3", NEMESIS),
        ("invoke", "sleep", None, NEMESIS), ("ok", "sleep", None, NEMESIS)]


def test_a_failed_action_is_a_fail_in_the_history(tmp_path: Path) -> None:
    nem, history = nemesis(FakeTopology(tmp_path))
    with pytest.raises(ActionFailed, match="toxiproxy links"):
        nem.apply(NetworkFault(verb="latency", node=ref("db2"), latency=0.1))
    assert [(o.type, o.f) for o in history] == [("invoke", "latency"), ("fail", "latency")]
    assert history[-1].error_msg and "toxiproxy" in history[-1].error_msg


# --- process -------------------------------------------------------------------------------------

def test_process_faults_heal_resume_first_start_last(tmp_path: Path) -> None:
    topo = FakeTopology(tmp_path)
    nem, _ = nemesis(topo)
    nem.apply(NodeAction(verb="kill", node=ref("db3")))
    nem.apply(NodeAction(verb="stop", node=ref("db2")))
    nem.apply(NodeAction(verb="pause", node=ref("db1")))
    assert nem.down == {"db2", "db3"} and nem.paused == {"db1"}
    topo.log.clear()
    assert nem.heal_all() == ["resume db1", "start db2", "start db3"]
    assert topo.log == ["resume db1", "start db2", "start db3"]
    assert nem.down == set() and nem.paused == set()
    assert nem.heal_all() == []  # nothing left to heal


def test_a_node_started_or_resumed_by_the_timeline_is_not_healed_again(tmp_path: Path) -> None:
    topo = FakeTopology(tmp_path)
    nem, _ = nemesis(topo)
    nem.apply(NodeAction(verb="kill", node=ref("db3")))
    nem.apply(NodeAction(verb="start", node=ref("db3")))
    nem.apply(NodeAction(verb="pause", node=ref("db2")))
    nem.apply(NodeAction(verb="resume", node=ref("db2")))
    assert nem.heal_all() == []


def test_cold_restart_stops_evicts_and_starts(tmp_path: Path) -> None:
    topo = FakeTopology(tmp_path)
    (tmp_path / "db2").mkdir()
    (tmp_path / "db2" / "ibdata1").write_bytes(b"x" * 4096)
    nem, _ = nemesis(topo)
    detail = nem.apply(NodeAction(verb="cold_restart", node=ref("db2")))
    assert topo.log == ["stop db2", "start db2"]
    assert detail["evicted_bytes"] == 4096
    assert nem.down == set()


def test_a_start_with_a_value_the_server_changed_fails(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """``restart db2 with max_connections = 5``: the server runs 10 (MariaDB's minimum), the
    action fails naming it; ``cold restart … with`` the same."""
    from runners import settings_in_force

    running = {"max_connections": 10, "innodb_buffer_pool_load_at_startup": "OFF"}
    monkeypatch.setattr(settings_in_force, "read", lambda node, name: running[name])
    nem, history = nemesis(FakeTopology(tmp_path))
    with pytest.raises(ActionFailed, match="restart db2 with: .*db2: max_connections = 5 runs "
                                           "as 10"):
        nem.apply(NodeAction(verb="restart", node=ref("db2"), options={"max_connections": "5"}))
    assert history[-1].type == "fail"
    nem.apply(NodeAction(verb="restart", node=ref("db2"), options={"max_connections": "10"}))
    with pytest.raises(ActionFailed, match="cold restart db3 with"):
        nem.apply(NodeAction(verb="cold_restart", node=ref("db3"),
                             options={"max_connections": "7"}))


# --- replication ---------------------------------------------------------------------------------

def test_stopped_replication_is_started_when_healing(tmp_path: Path, sql: list[Any]) -> None:
    topo = FakeTopology(tmp_path)
    nem, _ = nemesis(topo)
    nem.apply(ReplicationControl(verb="stop", node=ref("db2"), threads="sql"))
    nem.apply(ReplicationControl(verb="stop", node=ref("db3")))
    nem.apply(ReplicationControl(verb="start", node=ref("db3")))  # both threads: healed
    assert nem.replication_stopped == {"db2"}
    assert sql[0] == (23002, ["STOP SLAVE SQL_THREAD"])
    assert nem.heal_all() == ["start replication db2"]
    assert sql[-1] == (23002, ["START SLAVE"])


def test_a_former_primary_rejoins_as_a_replica_when_healed(tmp_path: Path,
                                                           sql: list[Any]) -> None:
    topo = FakeTopology(tmp_path)
    nem, _ = nemesis(topo)
    nem.apply(NodeAction(verb="kill", node=ref("db1")))
    detail = nem.apply(Promote(node=ref("db2")))
    assert detail["old_primary"] == "db1" and topo.primary == "db2"
    assert nem.former_primaries == {"db1"}
    # the other running replica, db3, now replicates from db2; db1 is down: not repointed
    assert [port for port, _ in sql] == [23002, 23003]
    assert "MASTER_PORT=23002" in sql[1][1][1]
    # db1's last beats (heartbeat domain 99) never reached db2, which beats since the promote
    topo.nodes["db1"].scalars["SELECT @@gtid_current_pos"] = "0-100-50,99-100-143"
    topo.nodes["db2"].scalars["SELECT @@gtid_binlog_pos"] = "0-200-60,99-200-7"
    assert nem.heal_all() == ["start db1", "rejoin db1 as a replica"]
    rejoin = sql[-1]
    assert rejoin[0] == 23001 and rejoin[1][:2] == ["SET GLOBAL read_only=ON", "STOP SLAVE"]
    # its own position, but the new primary's heartbeat position (the lab's beats on db1
    # that db2 lacks would stop the rejoin with error 1236)
    assert rejoin[1][2] == "SET GLOBAL gtid_slave_pos = '0-100-50,99-200-7'"
    assert "MASTER_USE_GTID=slave_pos" in rejoin[1][3] and "MASTER_PORT=23002" in rejoin[1][3]
    assert nem.former_primaries == set()


# --- network -------------------------------------------------------------------------------------

def with_links(topo: FakeTopology) -> FakeToxiproxy:
    toxi = FakeToxiproxy()
    for i, n in enumerate(topo.nodes, start=1):
        toxi.links[f"{n}.clients"] = Link(f"{n}.clients", n, "clients", 23020 + i, 23000 + i)
    toxi.links["db2.replication"] = Link("db2.replication", "db2", "replication", 23032, 23001)
    topo.toxi = toxi
    return toxi


def test_damaged_links_are_healed_and_a_healed_link_is_forgotten(tmp_path: Path) -> None:
    topo = FakeTopology(tmp_path)
    toxi = with_links(topo)
    nem, _ = nemesis(topo)
    nem.apply(NetworkFault(verb="latency", node=ref("db2"), latency=0.05, link="clients"))
    nem.apply(NetworkFault(verb="link_down", node=ref("db3")))
    nem.apply(NetworkFault(verb="partition", node=ref("db2"), link="replication"))
    assert nem.damaged_links == {"db2.clients", "db3.clients", "db2.replication"}
    nem.apply(NetworkFault(verb="heal", node=ref("db3")))
    assert nem.damaged_links == {"db2.clients", "db2.replication"}
    toxics = [body["name"] for method, path, body in toxi.calls
              if method == "POST" and path.endswith("/toxics")]
    assert toxics == ["latency_down_0", "blackhole_down_2", "blackhole_up_2"]  # unique names
    assert nem.heal_all() == ["heal db2.clients", "heal db2.replication"]
    assert nem.damaged_links == set()


def test_network_heal_runs_before_nodes_start(tmp_path: Path) -> None:
    topo = FakeTopology(tmp_path)
    with_links(topo)
    nem, _ = nemesis(topo)
    nem.apply(NetworkFault(verb="partition", node=ref("db3"), link="clients"))
    nem.apply(NodeAction(verb="kill", node=ref("db3")))
    nem.apply(NodeAction(verb="pause", node=ref("db2")))
    assert nem.heal_all() == ["resume db2", "heal db3.clients", "start db3"]


def test_a_galera_group_partition_needs_root(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    nem, _ = nemesis(FakeTopology(tmp_path, "galera"))
    with pytest.raises(ActionFailed, match="needs root"):
        nem.apply(NetworkFault(verb="partition", node=ref("db2"), link="group"))
    assert nem.iptables_rules == []


def test_iptables_rules_cover_both_directions_of_the_group_port() -> None:
    from fault.network import iptables_rules

    rules = iptables_rules(23042)
    assert rules[0][5:7] == ["--dport", "23042"] and rules[1][5:7] == ["--sport", "23042"]
    assert all(r[0] == "INPUT" and r[-2:] == ["-j", "DROP"] for r in rules)


# --- sql, cache ----------------------------------------------------------------------------------

def test_set_global_skips_nodes_that_are_down(tmp_path: Path, sql: list[Any]) -> None:
    nem, _ = nemesis(FakeTopology(tmp_path))
    nem.apply(NodeAction(verb="kill", node=ref("db3")))
    detail = nem.apply(SetGlobal(name="innodb_io_capacity", value="2000"))
    assert detail["nodes"] == ["db1", "db2"]
    assert sql == [(23001, ["SET GLOBAL innodb_io_capacity = 2000"]),
                   (23002, ["SET GLOBAL innodb_io_capacity = 2000"])]
    assert nem.heal_all() == ["start db3"]  # a SET GLOBAL has nothing to heal


def test_set_global_fails_when_the_server_changed_the_value_or_refused_it(
        tmp_path: Path, sql: list[Any]) -> None:
    nem, history = nemesis(FakeTopology(tmp_path))
    with pytest.raises(ActionFailed, match=r"on db1: the server set 3, not 7 \(Warning 1292: "
                                           "Truncated incorrect"):
        nem.apply(SetGlobal(name="innodb_flush_log_at_trx_commit", value="7"))
    assert history[-1].type == "fail"
    with pytest.raises(ActionFailed, match="on db1: the server answered .*1193.*Unknown system"):
        nem.apply(SetGlobal(name="innodb_buffer_pool_instances", value="4"))
    nem.apply(SetGlobal(name="max_allowed_packet", value="64M"))  # read back in bytes: the same


def test_set_global_refuses_a_name_that_is_not_one(tmp_path: Path, sql: list[Any]) -> None:
    nem, _ = nemesis(FakeTopology(tmp_path))
    with pytest.raises(ActionFailed, match="not a variable name"):
        nem.apply(SetGlobal(name="x; DROP", value="1"))
    assert sql == []


def test_dropping_one_nodes_cache_has_nothing_to_heal(tmp_path: Path) -> None:
    topo = FakeTopology(tmp_path)
    (tmp_path / "db1").mkdir()
    (tmp_path / "db1" / "f").write_bytes(b"y" * 100)
    nem, _ = nemesis(topo)
    detail = nem.apply(DropCaches(node=ref("db1")))
    assert detail["scope"] == "db1"
    assert nem.heal_all() == []


# --- sql_literal ---------------------------------------------------------------------------------

@pytest.mark.parametrize("value, literal", [
    ("2000", "2000"),
    ("-1", "-1"),
    ("0.5", "0.5"),
    ("ON", "ON"),
    ("O_DIRECT", "O_DIRECT"),
    ("64M", str(64 * 1024**2)),
    ("1g", str(1024**3)),
    ("16K", "16384"),
    ("a b", "'a b'"),
    ("it's", "'it\\'s'"),
    ("back\\slash", "'back\\\\slash'"),
    ("1.2.3", "'1.2.3'"),
    ("64MB", "'64MB'"),
    ("", "''"),
])
def test_sql_literal(value: str, literal: str) -> None:
    from fault.sql import sql_literal

    assert sql_literal(value) == literal


def test_a_cache_drop_the_kernel_did_not_finish_fails_its_action(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The drop stopped at its 2 s limit with the cache unchanged (``finished: false``) and was
    shown as a normal fault: now its action fails, with what it did in the history, and the
    load goes on (``lab.run.load.Load.apply``: a note, no error)."""
    import fault.cache as cache
    from fault.context import ActionIncomplete

    class SlowProc:  # /proc/sys/vm/drop_caches, that the kernel does not finish in time
        def __init__(self, path: str) -> None:
            pass

        def write_text(self, text: str) -> None:
            time.sleep(0.3)

    monkeypatch.setattr("fault.cache.os.access", lambda p, mode: True)
    monkeypatch.setattr(cache, "DROP_WAIT", 0.05)
    monkeypatch.setattr(cache, "cached_bytes_total", lambda: 4096)
    monkeypatch.setattr("fault.cache.Path", SlowProc)
    nem, history = nemesis(FakeTopology(tmp_path))
    with pytest.raises(ActionIncomplete, match="did not complete") as e:
        nem.apply(DropCaches())
    assert e.value.detail["finished"] is False
    assert [(o.type, o.f) for o in history] == [("invoke", "drop_caches"), ("fail", "drop_caches")]
    assert history[-1].value == {"scope": "os", "cached_before": 4096, "cached_after": 4096,
                                 "finished": False, "seconds": history[-1].value["seconds"]}


def test_the_load_goes_on_after_an_incomplete_action() -> None:
    from fault.context import ActionIncomplete
    from lab.run.load import Load

    def refuse(a: Any, shown: str) -> dict[str, Any]:
        raise ActionIncomplete("the drop did not complete", {"finished": False})

    load = Load.__new__(Load)
    load._applying = threading.Lock()
    load._apply_one = refuse
    load.slips = []
    assert load.apply(DropCaches(), "at 20s: drop caches") == {"finished": False}
    assert load.slips == ["at 20s: drop caches failed: the drop did not complete; nothing is "
                          "computed from it"]
