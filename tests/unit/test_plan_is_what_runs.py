"""The plan is the single source: the lab's own settings are merged into every node's config in
one place (dsl.compile.for_base_port), `lab plan` marks them, and the runners start exactly
what the plan for the run's ports says: nothing dropped, nothing decided again."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

import runners.topology
from dsl.api import plan_text
from dsl.compile import for_base_port, lab_config
from dsl.models import Engine
from dsl.owned import NODE_DIR_PATHS, RUNTIME, SET_BY_LAB, normal_key
from dsl.plan import Cell, Plan, PlannedNode
from lab.cli.lang import render_plan
from runners.bare import cnf_text, node_config
from runners.runtime import PortLayout
from runners.sandbox import (
    AFTER_GRANTS,
    DBDEPLOYER_WRITES,
    dbdeployer_server_id,
    dbdeployer_settings,
    split_config,
)

RUN_BASE = 31200
REPLICATION = """experiment "r" {
  topology replication { primary db1  replicas db2, db3 }
  config { log_bin = binlog  skip_slave_start = ON  skip_name_resolve = ON
           innodb_buffer_pool_size = 96M }
  config db3 { slave_net_timeout = 5 }
  workload w: probe { target db1 }
}"""
GALERA = """experiment "g" {
  topology galera { nodes g1, g2, g3 }
  config { wsrep_cluster_name = chaos
           wsrep_provider_options = "gcache.size=256M; evs.suspect_timeout=PT5S" }
  workload w: probe { target g1 }
}"""
PAIR = """experiment "p" {
  topology primary_primary { nodes p1, p2 }
  config { skip_slave_start = ON }
  workload w: probe { target p1 }
}"""


def nodes(plan: Plan) -> list[PlannedNode]:
    return list(plan.cells[0].nodes)


def test_one_list_of_owned_settings() -> None:
    assert not hasattr(runners.topology, "MANAGED")  # the runners keep no list of their own
    assert not hasattr(runners.topology, "lab_config")
    for text in (REPLICATION, GALERA, PAIR, 'experiment "s" { topology single { node a } }'):
        plan = plan_text(text)
        for node in nodes(plan):
            for key in lab_config(plan, node, nodes(plan)):
                assert normal_key(key) in SET_BY_LAB, key
    assert set(RUNTIME) <= set(SET_BY_LAB)
    assert DBDEPLOYER_WRITES <= set(SET_BY_LAB)
    assert NODE_DIR_PATHS <= set(SET_BY_LAB)


# --- server ids and ports: the plan's are the running servers' ----------------------------------


@pytest.mark.parametrize("text,kind", [(REPLICATION, "replication"), (PAIR, "primary_primary")])
def test_server_ids_are_100_per_node_like_dbdeployers(text: str, kind: str) -> None:
    plan = plan_text(text)
    assert [n.server_id for n in nodes(plan)] == [100 * n.index for n in nodes(plan)]
    assert [n.server_id for n in nodes(plan)] == [
        dbdeployer_server_id(kind, n.index) for n in nodes(plan)
    ]


@pytest.mark.parametrize("kind", ["replication", "single"])
def test_what_dbdeployer_writes_is_what_the_plan_says(kind: str) -> None:
    text = REPLICATION if kind == "replication" else 'experiment "s" { topology single { node a } }'
    plan = for_base_port(plan_text(text), RUN_BASE)
    for node in nodes(plan):
        written = dbdeployer_settings(kind, RUN_BASE, node.index)
        for key in DBDEPLOYER_WRITES & set(written):
            assert node.config[key] == written[key], (node.name, key)
        if kind == "replication":  # the file renamed the binary log: dbdeployer's is replaced
            assert node.config["log_bin"] == "binlog"


def test_the_plan_for_a_run_has_the_runs_ports_everywhere() -> None:
    plan = plan_text(GALERA)
    run = for_base_port(plan, RUN_BASE)
    layout = PortLayout(RUN_BASE)
    for n in nodes(run):
        assert n.port == layout.node(n.index) == int(n.config["port"])
        assert n.config["wsrep_node_address"] == f"127.0.0.1:{layout.galera_group(n.index)}"
        assert n.config["wsrep_sst_receive_address"] == f"127.0.0.1:{layout.galera_sst(n.index)}"
        options = n.config["wsrep_provider_options"]
        assert f"gmcast.listen_addr=tcp://127.0.0.1:{layout.galera_group(n.index)}" in options
        assert f"ist.recv_addr=127.0.0.1:{layout.galera_ist(n.index)}" in options
        group = ",".join(f"127.0.0.1:{layout.galera_group(i)}" for i in (1, 2, 3))
        assert n.config["wsrep_cluster_address"] == f"gcomm://{group}"
    assert for_base_port(run, plan.base_port) == plan  # applying it again changes nothing
    assert for_base_port(plan) == plan


def test_a_plan_made_by_hand_gets_the_same_settings_as_a_compiled_one() -> None:
    compiled = plan_text('experiment "it" { topology galera { nodes g1, g2, g3 } }')
    bare = [
        PlannedNode(name=f"g{i}", role="galera", index=i, server_id=i, port_offset=i, port=i)
        for i in (1, 2, 3)
    ]
    by_hand = Plan(
        name="it",
        duration=compiled.duration,
        topology="galera",
        engine=Engine(flavor="mariadb", version=compiled.engine.version),
        cells=[Cell(index=1, label="#1", nodes=bare, workloads=[])],
    )
    completed = for_base_port(by_hand)
    assert [n.config for n in nodes(completed)] == [n.config for n in nodes(compiled)]
    assert [n.server_id for n in nodes(completed)] == [100, 200, 300]


# --- the runners start the plan -----------------------------------------------------------------


@pytest.mark.parametrize("text", [GALERA, PAIR])
def test_lab_started_nodes_run_with_the_plans_config_and_nothing_else(
    text: str, tmp_path: Path
) -> None:
    plan = for_base_port(plan_text(text), RUN_BASE)
    for node in nodes(plan):
        runtime = {"user": "mysql"}
        if plan.topology == "galera":
            runtime |= {
                "wsrep_provider": "/usr/lib/galera/libgalera_smm.so",
                "wsrep_sst_auth": "a:b",
            }
        cfg = node_config(node, tmp_path / node.name, runtime)
        expected = {
            k: (str(tmp_path / node.name / v) if k in NODE_DIR_PATHS else v)
            for k, v in node.config.items()
        }
        assert cfg == {**expected, **runtime}
        assert cfg["server_id"] == str(100 * node.index)
        assert cfg["skip_slave_start" if plan.topology != "galera" else "wsrep_cluster_name"]
    with pytest.raises(ValueError):
        node_config(nodes(plan)[0], tmp_path, {"port": "3306"})  # only RUNTIME keys are added


def test_galera_options_are_merged_and_the_files_win() -> None:
    plan = for_base_port(plan_text(GALERA), RUN_BASE)
    g1 = nodes(plan)[0]
    options = dict(item.split("=", 1) for item in g1.config["wsrep_provider_options"].split("; "))
    assert options["gcache.size"] == "256M"  # the file's, over the lab's 64M
    assert options["evs.suspect_timeout"] == "PT5S"  # the file's, over the lab's PT3S
    assert options["evs.inactive_timeout"] == "PT6S"  # the lab's default, kept
    assert options["gmcast.listen_addr"] == f"tcp://127.0.0.1:{RUN_BASE + 41}"  # the lab's
    assert g1.origins["wsrep_provider_options"] == "lab+file"
    assert g1.config["wsrep_cluster_name"] == "chaos"
    line = next(
        x for x in cnf_text({"mysqld": g1.config}).splitlines() if x.startswith("wsrep_provider_o")
    )
    assert line == f'wsrep_provider_options="{g1.config["wsrep_provider_options"]}"'


def test_dbdeployer_sandboxes_get_every_setting_dbdeployer_does_not_write() -> None:
    plan = for_base_port(plan_text(REPLICATION), RUN_BASE)
    configs = {n.name: dict(n.config) for n in nodes(plan)}
    order = ["db1", "db2", "db3"]
    common, per_node = split_config(configs, order)
    for name in order:
        given = {**common, **per_node[name]}
        assert given == {k: v for k, v in configs[name].items() if k not in DBDEPLOYER_WRITES}, (
            name
        )  # nothing dropped, nothing added
    assert common["log_bin"] == "binlog" and common["skip_slave_start"] == "ON"
    assert common["innodb_buffer_pool_size"] == "96M"
    assert "skip_name_resolve" not in common  # after dbdeployer's grants: per node, restarted
    assert all(per_node[n]["skip_name_resolve"] == "ON" for n in order)
    assert AFTER_GRANTS == {"skip_name_resolve"}
    assert per_node["db2"]["read_only"] == "ON" and "read_only" not in per_node["db1"]
    assert per_node["db3"]["slave_net_timeout"] == "5"


# --- lab plan shows whose each setting is -------------------------------------------------------


def test_lab_plan_marks_the_labs_settings() -> None:
    plan = plan_text(GALERA)
    g1 = nodes(plan)[0]
    assert g1.origins["server_id"] == "lab" and g1.origins["port"] == "lab"
    assert g1.origins["innodb_buffer_pool_size"] == "default"
    assert "wsrep_cluster_name" not in g1.origins  # the file's
    out = io.StringIO()
    render_plan(plan, Console(file=out, width=250, highlight=False))
    text = out.getvalue()
    rows = {line.split("│")[1].strip(): line for line in text.splitlines() if line.count("│") > 3}
    assert "│ lab " in rows["server_id"] and "100" in rows["server_id"]
    assert "│ lab default " in rows["innodb_buffer_pool_size"]
    assert "│ file " in rows["wsrep_cluster_name"]
    assert "│ file + lab " in rows["wsrep_provider_options"]
    caption = "Added when the node starts: basedir, user, wsrep_provider, wsrep_sst_auth."
    assert caption in " ".join(text.split())  # the caption wraps at the table's width
    data = json.loads(plan.model_dump_json())
    assert data["cells"][0]["nodes"][0]["origins"]["port"] == "lab"


# --- lab plan shows the triggers and the nodes under libfaketime --------------------------------

TRIGGERS = """experiment "t" {
  duration 30s
  topology replication { primary db1  replicas db2, db3 }
  workload w: unique_writes { target db1  rate 200/s }
  at 2s stop replication db2 for 10s
  at 4s clock skew db3 by +30s
  when replication_lag(db2) > 5s kill db1 within 20s
  when rows(db1) >= 1000 cpu limit db2 to 20% for 3s
}"""


def _rendered(plan: Plan) -> str:
    out = io.StringIO()
    render_plan(plan, Console(file=out, width=250, highlight=False))
    return out.getvalue()


def test_lab_plan_shows_the_triggers_and_their_resolution() -> None:
    from dsl.actions import seconds
    from lab.cli.lang import trigger_rows
    from lab.run.triggers import POLL

    plan = plan_text(TRIGGERS)
    assert trigger_rows(plan) == [
        ("replication_lag(db2) > 5s", "kill db1", "-", "within 20s of the load's start"),
        ("rows(db1) >= 1000", "cpu limit db2 to 20%", "cpu heal db2, 3s after it fired",
         "until the load ends")]
    text = _rendered(plan)
    assert "Triggers (when)" in text
    row = next(line for line in text.splitlines() if "rows(db1) >= 1000" in line)
    assert "cpu limit db2 to 20%" in row and "cpu heal db2, 3s after it fired" in row
    assert f"looked at every {seconds(POLL)} from the load's start" in " ".join(text.split())
    data = json.loads(plan.model_dump_json())
    assert [t["condition"]["text"] for t in data["triggers"]] == [
        "replication_lag(db2) > 5s", "rows(db1) >= 1000"]
    assert data["trigger_poll"] == POLL  # the runtime's resolution, not a copy of it
    assert "Triggers" not in _rendered(plan_text(REPLICATION))


def test_lab_plan_names_the_nodes_restarted_under_libfaketime() -> None:
    from runners import faketime

    plan = plan_text(TRIGGERS)
    assert plan.faketime_nodes == ["db3"] == faketime.skew_nodes(plan.actions())
    assert "Under libfaketime (clock skew): db3." in " ".join(_rendered(plan).split())
    assert json.loads(plan.model_dump_json())["faketime_nodes"] == ["db3"]
    plain = plan_text(REPLICATION)
    assert plain.faketime_nodes == [] and "libfaketime" not in _rendered(plain)
    # a trigger's clock skew counts too, and a plan made by hand gets the same decision
    fired = plan_text(TRIGGERS.replace("kill db1 within 20s", "clock skew db2 by -2s"))
    assert fired.faketime_nodes == ["db3", "db2"]
    by_hand = plan.model_copy(update={"faketime_nodes": []})
    assert for_base_port(by_hand, RUN_BASE).faketime_nodes == ["db3"]


def test_lab_plan_shows_every_setting_of_a_transactional_workload() -> None:
    """list_append and read_modify_write with their defaults written in: keys, txn_length,
    read_fraction, distribution, isolation, for update (a docs-only reader missed them)."""
    text = _rendered(plan_text("""experiment "t" {
  duration 10s
  topology galera { nodes g1, g2, g3 }
  workload la: list_append { target g1  isolation repeatable read }
  workload rmw: read_modify_write { target g2  for update }
}
"""))
    for want in ("keys 10", "txn_length 4", "read_fraction 50%", "distribution uniform",
                 "isolation repeatable read", "keys 4", "isolation the server default",
                 "for update"):
        assert want in text, want
    assert "no for update" not in text


def test_lab_plan_says_which_faults_outlive_the_load_and_proxysqls_monitor() -> None:
    text = _rendered(plan_text("""experiment "t" {
  duration 10s
  topology replication { primary db1  replicas db2 }
  router proxysql { writer db1  readers db2  check every 250ms
    set mysql-monitor_ping_interval = 1000 }
  at 2s kill db1 for good
  at 3s pause db2 for 1s
}
"""))
    assert "healed, but kill db1 (for good: never undone)" in text
    assert "proxysql: mysql-monitor_read_only_interval = 250 (from check every)" in text
    assert "proxysql: mysql-monitor_writer_is_also_reader = false (the lab's)" in text
    assert "mysql-monitor_ping_interval = 250" not in text  # the file's own value wins
    assert "proxysql: mysql-monitor_ping_interval = 1000" in text


def test_check_and_plan_note_each_program_this_machine_lacks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from lab.cli import lang
    from runners import components

    real = components.require

    def require(name: str) -> str:
        if name == "proxysql":
            raise components.MissingComponent("proxysql", "get it from ProxySQL's packages")
        return real(name)

    monkeypatch.setattr(components, "require", require)
    monkeypatch.setattr(runners.topology, "needed_components", lambda _p: ["proxysql"])
    f = tmp_path / "p.exp"
    f.write_text('# a comment first\nexperiment "p" {\n  duration 5s\n'
                 "  topology replication { primary db1  replicas db2 }\n"
                 "  router proxysql { writer db1  readers db2 }\n}\n")
    assert lang.cmd_check([str(f)]) == 0  # a note, not an error
    err = capsys.readouterr().err
    assert f"{f}:2:1: note: proxysql is not installed: get it from ProxySQL's packages" in err
    assert "`lab run` stops before starting anything until it is" in err
