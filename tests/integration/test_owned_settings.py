"""Settings the lab owns, on real servers: every setting an experiment file may write is in
force on the running servers (read back with SELECT @@var / SHOW VARIABLES), the lab's own
(server ids, ports, names) are what `lab plan` says, and every refused setting is refused by
`lab check`. Starts a single sandbox, a replication (dbdeployer) and a Galera cluster."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

import pytest

from dsl.api import check_text, plan_text
from dsl.owned import FILE_NAMES, OUTSIDE_RUN, SET_BY_LAB
from runners.mysql import query
from runners.runtime import Run
from runners.topology import Topology

from .conftest import require

REPLICATION = """experiment "owned-replication" {
  topology replication { primary db1  replicas db2 }
  config {
    log_bin = binlog
    skip_slave_start = ON
    skip_name_resolve = ON
    general_log_file = general.log
    slow_query_log_file = slow.log
    innodb_buffer_pool_size = 96M
  }
  config db2 { slave_net_timeout = 7 }
  workload w: probe { target db1  duration 5s }
}"""

SINGLE = """experiment "owned-single" {
  topology single { node db1 }
  config { log_bin = sbin  skip_name_resolve = ON }
  workload w: probe { target db1  duration 5s }
}"""

GALERA = """experiment "owned-galera" {
  topology galera { nodes g1, g2, g3 }
  config {
    log_bin = gbin
    wsrep_cluster_name = chaos
    wsrep_provider_options = "gcache.size=96M; evs.suspect_timeout=PT4S"
    general_log_file = g.log
  }
  workload w: probe { target g1  duration 5s }
}"""


def variables(topo: Topology, name: str) -> dict[str, str]:
    node = topo.nodes[name]
    rows: list[dict[str, Any]] = query(node.addr, topo.admin, "SHOW GLOBAL VARIABLES")
    return {str(r["Variable_name"]).lower(): str(r["Value"]) for r in rows}


def base_name(path: str) -> str:
    return PurePosixPath(path).name


def in_datadir(topo: Topology, name: str, value: str, file: str) -> bool:
    """A file setting names ``file`` in the node's data directory (the server shows the
    plain name as given, or the path it made of it)."""
    return value in (file, str(topo.nodes[name].datadir / file))


def check_lab_settings(topo: Topology, name: str, v: dict[str, str]) -> None:
    """The lab's own settings as the plan for the run says them."""
    planned = topo.planned[name]
    assert int(v["server_id"]) == planned.server_id == int(planned.config["server_id"])
    assert int(v["port"]) == planned.port == topo.run.ports.node(planned.index)
    assert v["bind_address"] == "127.0.0.1"
    node_dir = topo.nodes[name].datadir.parent
    assert PurePosixPath(v["datadir"].rstrip("/")) == PurePosixPath(node_dir / "data")
    assert v["socket"] == str(node_dir / planned.config["socket"])
    assert v["log_error"] == str(node_dir / planned.config["log_error"])
    if "relay_log" in planned.config:
        assert base_name(v["relay_log"]) == planned.config["relay_log"]


def option_in_force(topo: Topology, name: str, v: dict[str, str], key: str) -> bool:
    """A server option that MariaDB 10.11 does not show as a variable (skip_slave_start):
    in force when the running server's option file sets it."""
    if key in v:
        return v[key] == "ON"
    node_dir = topo.nodes[name].datadir.parent
    for cnf in (node_dir / "my.sandbox.cnf", node_dir / "my.cnf"):
        if cnf.exists():
            for line in cnf.read_text().splitlines():
                k, _, val = line.strip().replace("-", "_").partition("=")
                if k.strip() == key and val.strip().upper() in ("", "1", "ON", "TRUE"):
                    return True
    return False


def deploy(text: str, run: Run) -> Topology:
    plan = plan_text(text)
    return Topology.deploy(plan, plan.cells[0], run)


def test_replication_runs_every_setting_of_the_file() -> None:
    require("mariadbd", "dbdeployer")
    with Run(experiment="it-owned") as run:
        topo = deploy(REPLICATION, run)
        try:
            for name in ("db1", "db2"):
                v = variables(topo, name)
                check_lab_settings(topo, name, v)
                assert v["log_bin"] == "ON" and base_name(v["log_bin_basename"]) == "binlog"
                assert option_in_force(topo, name, v, "skip_slave_start")
                assert v["skip_name_resolve"] == "ON"
                assert in_datadir(topo, name, v["general_log_file"], "general.log")
                assert in_datadir(topo, name, v["slow_query_log_file"], "slow.log")
                assert int(v["innodb_buffer_pool_size"]) == 96 * 1024 * 1024
                assert v["read_only"] == ("ON" if name == "db2" else "OFF")
            assert variables(topo, "db2")["slave_net_timeout"] == "7"
            assert [int(variables(topo, n)["server_id"]) for n in ("db1", "db2")] == [100, 200]
            # replication works with the renamed binary log
            rows = query(topo.nodes["db2"].addr, topo.admin, "SHOW SLAVE STATUS")
            assert rows and rows[0]["Slave_IO_Running"] == "Yes"
            assert rows[0]["Master_Log_File"].startswith("binlog.")
        finally:
            topo.teardown()


def test_single_sandbox_has_the_plans_server_id_and_a_binary_log_when_asked() -> None:
    require("mariadbd", "dbdeployer")
    with Run(experiment="it-owned") as run:
        topo = deploy(SINGLE, run)
        try:
            v = variables(topo, "db1")
            check_lab_settings(topo, "db1", v)
            assert v["server_id"] == "100"
            assert v["log_bin"] == "ON" and base_name(v["log_bin_basename"]) == "sbin"
            assert v["skip_name_resolve"] == "ON"
        finally:
            topo.teardown()


def test_galera_runs_the_files_settings_merged_with_the_labs() -> None:
    require("mariadbd", "galera", "rsync")
    with Run(experiment="it-owned") as run:
        topo = deploy(GALERA, run)
        try:
            for i, name in enumerate(("g1", "g2", "g3"), start=1):
                v = variables(topo, name)
                check_lab_settings(topo, name, v)
                assert v["server_id"] == str(100 * i)
                assert v["wsrep_cluster_name"] == "chaos"
                assert v["wsrep_node_name"] == name
                assert base_name(v["log_bin_basename"]) == "gbin"
                assert in_datadir(topo, name, v["general_log_file"], "g.log")
                assert v["skip_name_resolve"] == "ON"  # the lab's default
                options = v["wsrep_provider_options"].replace(" ", "")
                assert "gcache.size=96M" in options  # the file's
                assert "evs.suspect_timeout=PT4S" in options  # the file's
                assert "evs.inactive_timeout=PT6S" in options  # the lab's default
                group = topo.run.ports.galera_group(i)
                assert f"gmcast.listen_addr=tcp://127.0.0.1:{group}" in options  # the lab's
                assert f"ist.recv_addr=127.0.0.1:{topo.run.ports.galera_ist(i)}" in options
            size = query(topo.nodes["g1"].addr, topo.admin,
                         "SHOW STATUS LIKE 'wsrep_cluster_size'")[0]["Value"]
            assert int(size) == 3
        finally:
            topo.teardown()


REFUSED = sorted(k for k in {**SET_BY_LAB, **OUTSIDE_RUN} if "." not in k)


@pytest.mark.parametrize("key", REFUSED)
def test_every_refused_setting_is_refused_by_lab_check(key: str) -> None:
    text = REPLICATION.replace("innodb_buffer_pool_size = 96M", f"{key} = x1")
    errors = check_text(text, "owned.exp")
    assert [(e.span.line, e.message.split("'")[1]) for e in errors] == [(9, key)]
    assert errors[0].hint


@pytest.mark.parametrize("key", sorted(FILE_NAMES))
def test_every_path_is_refused_by_lab_check(key: str) -> None:
    text = REPLICATION.replace("innodb_buffer_pool_size = 96M", f'{key} = "/etc/x"')
    errors = check_text(text, "owned.exp")
    assert [e.span.line for e in errors] == [9] and "plain name" in errors[0].message
