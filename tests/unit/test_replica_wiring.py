"""Replica wiring and the lab's users, one function each for both back-ends (issue 24): the
statements ``runners.replication.replica_statements`` and ``runners.users.user_statements``
build for the native and the containers back-end's parameters, ``wire_replica``'s wait before
file coordinates (fake nodes, no servers), and a scan of the sources that no other module
builds a ``CHANGE MASTER`` or a ``CREATE USER`` itself."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from runners import replication
from runners.mysql import Address, Credentials
from runners.replication import LOOPBACK, replica_statements, wire_replica
from runners.users import CONTAINER_HOSTS, LOOPBACK_HOSTS, init_file, user_statements

ROOT = Path(__file__).resolve().parents[2]
REPL = Credentials("lab_repl", "ReplPw1")
ADMIN = Credentials("lab_admin", "AdminPw2")
APP = Credentials("lab_app", "AppPw3")
RETRY = "MASTER_CONNECT_RETRY=1"


# --- the statements, native (dbdeployer's replicas) -------------------------------------------

def test_native_keeps_dbdeployers_wiring_but_for_the_retry() -> None:
    assert replica_statements(None, None, dbdeployer=True) == [
        "SET GLOBAL read_only=ON", "STOP SLAVE", f"CHANGE MASTER TO {RETRY}", "START SLAVE"]


def test_native_gtid_through_a_link_keeps_dbdeployers_user_and_gtid_setting() -> None:
    stmts = replica_statements((LOOPBACK, 23081), None, delay=5, flavor="mariadb",
                               dbdeployer=True)
    assert stmts[2] == (f"CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=23081, {RETRY}, "
                        "MASTER_DELAY=5")


def test_native_file_position_sets_the_coordinates_and_no_user() -> None:
    stmts = replica_statements((LOOPBACK, 23001), None, mode="file_position",
                               position=("mysql-bin.000002", 1234), flavor="mariadb",
                               dbdeployer=True)
    assert stmts[2] == (
        "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=23001, MASTER_USE_GTID=no, "
        f"MASTER_LOG_FILE='mysql-bin.000002', MASTER_LOG_POS=1234, {RETRY}")


def test_native_file_position_on_mysql_turns_auto_position_off() -> None:
    stmt = replica_statements((LOOPBACK, 23001), None, mode="file_position",
                              position=("binlog.000001", 4), flavor="mysql", dbdeployer=True)[2]
    assert "MASTER_AUTO_POSITION=0" in stmt and "MASTER_USE_GTID" not in stmt


# --- the statements, containers and the native two primaries ------------------------------------

def test_containers_gtid_by_name_with_the_labs_user() -> None:
    assert replica_statements(("db1", 3306), REPL, delay=2.4) == [
        "SET GLOBAL read_only=ON", "STOP SLAVE",
        "CHANGE MASTER TO MASTER_HOST='db1', MASTER_PORT=3306, MASTER_USER='lab_repl', "
        f"MASTER_PASSWORD='ReplPw1', MASTER_USE_GTID=slave_pos, {RETRY}, MASTER_DELAY=2",
        "START SLAVE"]


def test_containers_pass_the_flavor_mysql_gets_auto_position() -> None:
    # before: the containers' wiring passed no flavor, MASTER_USE_GTID on a MySQL image
    stmt = replica_statements(("db1", 3306), REPL, flavor="mysql")[2]
    assert "MASTER_AUTO_POSITION=1" in stmt and "MASTER_USE_GTID" not in stmt


def test_containers_file_position_through_the_toxiproxy_link() -> None:
    stmt = replica_statements(("toxiproxy", 23082), REPL, mode="file_position",
                              position=("mysql-bin.000001", 330))[2]
    assert stmt == (
        "CHANGE MASTER TO MASTER_HOST='toxiproxy', MASTER_PORT=23082, MASTER_USER='lab_repl', "
        "MASTER_PASSWORD='ReplPw1', MASTER_USE_GTID=no, MASTER_LOG_FILE='mysql-bin.000001', "
        f"MASTER_LOG_POS=330, {RETRY}")


def test_two_primaries_stay_writable() -> None:
    stmts = replica_statements((LOOPBACK, 23002), REPL, read_only=False)
    assert stmts[0] == "STOP SLAVE" and stmts[-1] == "START SLAVE"
    assert not any("read_only" in s for s in stmts)
    assert "MASTER_USE_GTID=slave_pos" in stmts[1] and "MASTER_USER='lab_repl'" in stmts[1]


@pytest.mark.parametrize("kwargs", [
    {"source": None, "creds": REPL},  # only dbdeployer's wiring can be kept
    {"source": ("db1", 3306), "creds": None},  # a fresh replica needs a user
    {"source": (LOOPBACK, 1), "creds": REPL, "dbdeployer": True},  # dbdeployer's user is kept
    {"source": ("db1", 3306), "creds": REPL, "mode": "file_position"},  # no coordinates
    {"source": ("db1", 3306), "creds": REPL, "position": ("f", 4)},  # coordinates, GTID
    {"source": None, "creds": None, "dbdeployer": True, "delay": 3},  # kept, yet a delay
])
def test_contradictory_wiring_is_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        replica_statements(**kwargs)


# --- wire_replica: the wait before file coordinates ---------------------------------------------

class Primary:
    name = "db1"

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def sql(self, statement: str, timeout: float = 5.0) -> list[dict[str, Any]]:
        assert statement == "SHOW MASTER STATUS"
        self.log.append("primary position read")
        return [{"File": "mysql-bin.000003", "Position": 900}]

    def scalar(self, statement: str, timeout: float = 5.0) -> Any:
        raise AssertionError(statement)

    def is_running(self) -> bool:
        return True


class Replica:
    """A replica whose SQL thread applies 300 bytes of the primary's log per status read
    (``applying``), or that replicates from nothing yet (a fresh container)."""

    name = "db2"
    admin = ADMIN
    error_log = None
    component = "node db2"
    addr = Address("127.0.0.1", 23002)

    def __init__(self, log: list[str], applying: bool) -> None:
        self.log, self.applying, self.pos = log, applying, 0

    def sql(self, statement: str, timeout: float = 5.0) -> list[dict[str, Any]]:
        assert statement == "SHOW SLAVE STATUS"
        if not self.applying:
            return []
        self.pos = min(900, self.pos + 300)
        self.log.append(f"replica applied {self.pos}")
        return [{"Slave_SQL_Running": "Yes", "Relay_Master_Log_File": "mysql-bin.000003",
                 "Exec_Master_Log_Pos": self.pos}]

    def scalar(self, statement: str, timeout: float = 5.0) -> Any:
        raise AssertionError(statement)

    def is_running(self) -> bool:
        return True


def wired(monkeypatch: pytest.MonkeyPatch, log: list[str]) -> list[list[str]]:
    sent: list[list[str]] = []

    def execute_all(addr: Address, creds: Credentials, statements: list[str],
                    timeout: float = 10.0) -> None:
        assert addr == Replica.addr and creds == ADMIN
        log.append("wired")
        sent.append(list(statements))

    monkeypatch.setattr(replication, "execute_all", execute_all)
    return sent


def test_file_position_waits_until_the_replica_applied_everything(
        monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[str] = []
    sent = wired(monkeypatch, log)
    wire_replica(Replica(log, applying=True), Primary(log), ("db1", 3306), REPL,
                 mode="file_position")
    # the primary's coordinates are read only once the replica has applied up to them
    last_read = max(i for i, x in enumerate(log) if x == "primary position read")
    assert "replica applied 900" in log[:last_read]
    assert log[-1] == "wired"
    assert "MASTER_LOG_FILE='mysql-bin.000003', MASTER_LOG_POS=900" in sent[0][2]


def test_file_position_on_a_fresh_replica_reads_the_position_at_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[str] = []
    sent = wired(monkeypatch, log)
    wire_replica(Replica(log, applying=False), Primary(log), ("db1", 3306), REPL,
                 mode="file_position")
    assert log == ["primary position read", "wired"]
    assert "MASTER_LOG_POS=900" in sent[0][2]


def test_gtid_wiring_reads_no_position(monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[str] = []
    sent = wired(monkeypatch, log)
    wire_replica(Replica(log, applying=True), Primary(log), ("db1", 3306), REPL)
    assert log == ["wired"] and "MASTER_USE_GTID=slave_pos" in sent[0][2]


# --- the users ----------------------------------------------------------------------------------

APP_GRANT = ("SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, INDEX, ALTER, CREATE TEMPORARY "
             "TABLES, LOCK TABLES, EXECUTE, PROCESS, REPLICATION CLIENT")


def test_native_users_are_the_ones_before() -> None:
    """runners.bare.user_statements as it was, character for character."""
    want: list[str] = []
    for host in ("127.0.0.1", "localhost"):
        want += [
            f"CREATE USER IF NOT EXISTS 'lab_admin'@'{host}' IDENTIFIED BY 'AdminPw2'",
            f"GRANT ALL PRIVILEGES ON *.* TO 'lab_admin'@'{host}' WITH GRANT OPTION",
            f"CREATE USER IF NOT EXISTS 'lab_app'@'{host}' IDENTIFIED BY 'AppPw3'",
            f"GRANT {APP_GRANT} ON *.* TO 'lab_app'@'{host}'",
        ]
    want += ["CREATE USER IF NOT EXISTS 'lab_repl'@'127.0.0.1' IDENTIFIED BY 'ReplPw1'",
             "GRANT REPLICATION SLAVE ON *.* TO 'lab_repl'@'127.0.0.1'",
             "CREATE USER IF NOT EXISTS 'hacheck'@'127.0.0.1'"]
    assert user_statements(ADMIN, APP, REPL, LOOPBACK_HOSTS) == want


def test_native_replication_leaves_the_replication_user_to_dbdeployer() -> None:
    stmts = user_statements(ADMIN, APP, None)
    assert not any("lab_repl" in s for s in stmts)
    assert stmts[-1] == "CREATE USER IF NOT EXISTS 'hacheck'@'127.0.0.1'"


def test_container_users_are_at_any_host_with_the_health_check_user() -> None:
    stmts = user_statements(ADMIN, APP, REPL, CONTAINER_HOSTS)
    assert len(stmts) == 7
    assert all("'@'%'" in s for s in stmts)
    assert "CREATE USER IF NOT EXISTS 'hacheck'@'%'" in stmts
    assert "GRANT REPLICATION SLAVE ON *.* TO 'lab_repl'@'%'" in stmts


def test_init_file_keeps_the_users_out_of_the_binary_log() -> None:
    lines = init_file(ADMIN, APP, REPL).splitlines()
    assert lines[0] == "SET SESSION sql_log_bin=0;"
    assert lines[1:] == [f"{s};" for s in user_statements(ADMIN, APP, REPL, ("%",))]


def test_users_need_a_host() -> None:
    with pytest.raises(ValueError):
        user_statements(ADMIN, APP, REPL, ())


# --- one place each: no other module builds them -------------------------------------------------

# ProxySQL's monitor user is ProxySQL's own, made only with that router, not one every node gets
# (runners.proxysql.monitor_user_statements)
CREATE_USER_ALSO = {"runners/proxysql.py"}


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def builders(root: Path = ROOT) -> list[str]:
    """Every module of dsl, lab, runners and fault outside the two homes that calls
    ``change_master(`` or writes ``CREATE USER`` / ``CHANGE MASTER TO`` in a string (an
    f-string's parts too), as ``path:line: what``."""
    found: list[str] = []
    for pkg in ("dsl", "lab", "runners", "fault"):
        for path in sorted((root / pkg).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            tree = ast.parse(path.read_text())
            if rel != "runners/replication.py":
                for n in ast.walk(tree):
                    if isinstance(n, ast.Call):
                        f = n.func
                        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
                        if name == "change_master":
                            found.append(f"{rel}:{n.lineno}: change_master(")
                for line, text in _strings(tree):
                    if text.lstrip().upper().startswith("CHANGE MASTER TO"):
                        found.append(f"{rel}:{line}: CHANGE MASTER TO")
            if rel != "runners/users.py" and rel not in CREATE_USER_ALSO:
                found += [f"{rel}:{line}: CREATE USER" for line, text in _strings(tree)
                          if "CREATE USER" in text.upper()]
    return found


def test_replica_wiring_and_users_are_built_in_one_place_each() -> None:
    assert builders() == []


def test_the_scan_finds_a_module_of_its_own(tmp_path: Path) -> None:
    pkg = tmp_path / "runners"
    pkg.mkdir()
    (pkg / "wiring.py").write_text(
        "from runners.replication import change_master\n"
        "def wire(port, host, user):\n"
        "    return [change_master(port), f\"CREATE USER IF NOT EXISTS '{user}'@'{host}'\"]\n")
    for other in ("dsl", "lab", "fault"):
        (tmp_path / other).mkdir()
    assert builders(tmp_path) == ["runners/wiring.py:3: change_master(",
                                  "runners/wiring.py:3: CREATE USER"]
