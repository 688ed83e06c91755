"""A value the file gave a server is the value it runs (runners.settings_in_force): numbers and
on/off compared after reading them back, words left alone, the lab's own values not checked,
and a server that adjusted one stops the run naming the node, the setting and its log line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import MySQLdb
import pytest

from runners.errors import ComponentError
from runners.settings_in_force import (
    changed,
    check,
    comparable,
    differs,
    file_settings,
    server_says,
    variable,
)


def test_values_compare_as_numbers_sizes_and_on_off() -> None:
    assert comparable("64M") == 64 * 1024**2 and comparable("1g") == 1024**3
    assert comparable("0.25") == 0.25 and comparable("-1") == -1
    assert comparable("ON") == 1 and comparable("off") == 0 and comparable("yes") == 1
    assert comparable("ROW") is None and comparable("STRICT_TRANS_TABLES,NO_ZERO_DATE") is None
    assert not differs("64M", 67108864) and not differs("90", "90.000000")
    assert not differs("ON", 1) and not differs("1", "ON")
    assert differs("5", 10) and differs("7", "3") and differs("OFF", "ON")
    assert not differs("utf8", "utf8mb3")  # words are the server's to spell


def test_a_key_names_its_variable() -> None:
    assert variable("loose-innodb-io-capacity") == "innodb_io_capacity"
    assert variable("skip_name_resolve") == "skip_name_resolve"  # a variable of that name
    assert variable("storage.wiredTiger.engineConfig.cacheSizeGB") is None


def test_only_the_files_comparable_settings_are_read_back() -> None:
    config = {"innodb_buffer_pool_size": "64M", "max_connections": "5", "binlog_format": "ROW",
              "server_id": "100", "log_bin": "mysql-bin", "innodb-io-capacity": "50"}
    origins = {"innodb_buffer_pool_size": "default", "server_id": "lab"}
    assert file_settings(config, origins) == {"max_connections": "5",
                                              "innodb_io_capacity": "50"}


class Node:
    def __init__(self, name: str, values: dict[str, Any], log: Path | None = None) -> None:
        self.name, self.values, self.error_log = name, values, log
        self.read: list[str] = []

    def scalar(self, stmt: str, timeout: float = 5.0) -> Any:
        name = stmt.split("`")[1]
        self.read.append(name)
        if name not in self.values:
            raise MySQLdb.OperationalError(1193, f"Unknown system variable '{name}'")
        return self.values[name]


class Planned:
    def __init__(self, config: dict[str, str], origins: dict[str, str] | None = None) -> None:
        self.config, self.origins = config, origins or {}


def test_a_server_that_adjusted_a_value_stops_the_run_naming_it(tmp_path: Path) -> None:
    log = tmp_path / "error.log"
    log.write_text("2026-11-25 18:40:01 0 [Warning] option 'max_connections': unsigned value 5 "
                   "adjusted to 10\n2026-11-25 18:40:01 0 [Note] ready\n")
    db1 = Node("db1", {"max_connections": 10, "innodb_io_capacity": 100}, log)
    db2 = Node("db2", {"max_connections": 5})
    asked = {"max_connections": "5", "innodb_io_capacity": "50", "skip-log-bin": "ON"}
    with pytest.raises(ComponentError) as e:
        check([db1, db2], {"db1": Planned(asked), "db2": Planned({"max_connections": "5"})})
    text = str(e.value)
    assert text.startswith("config: the server changed settings")
    assert ("db1: max_connections = 5 runs as 10 (the server's log: option 'max_connections': "
            "unsigned value 5 adjusted to 10)") in text
    assert "db1: innodb_io_capacity = 50 runs as 100." in text and "db2" not in text
    assert db1.read == ["max_connections", "innodb_io_capacity", "skip_log_bin"]  # no such var


def test_values_in_force_pass() -> None:
    node = Node("g1", {"max_connections": 77, "long_query_time": "0.500000"})
    check([node], {"g1": Planned({"max_connections": "77", "long_query_time": "0.5"})})
    assert changed(node, {}) == []


def test_the_log_line_is_found_under_either_spelling(tmp_path: Path) -> None:
    log = tmp_path / "e.log"
    log.write_text("[Warning] option 'innodb-io-capacity': unsigned value 50 adjusted to 100\n")
    assert server_says(log, "innodb_io_capacity") == \
        "option 'innodb-io-capacity': unsigned value 50 adjusted to 100"
    assert server_says(log, "max_connections") == "" and server_says(None, "x") == ""
    log.write_text("[Warning] Changed limits: max_open_files: 1024  max_connections: 214  "
                   "(requested 1000)\n")
    assert server_says(log, "max_connections") == \
        "Changed limits: max_open_files: 1024  max_connections: 214  (requested 1000)"
    assert server_says(tmp_path / "none.log", "x") == ""
