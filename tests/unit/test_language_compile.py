"""Experiment -> Plan: ports, server ids, roles, effective config precedence, the matrix and
its labels, parameters, and every default made explicit."""

from __future__ import annotations

import pytest

from dsl.api import plan_text
from dsl.compile import (
    DEFAULT_PROBE_EVERY,
    NODE_PORT_STRIDE,
    ROUTER_READER_OFFSET,
    ROUTER_WRITER_OFFSET,
    compile_experiment,
)
from dsl.errors import LanguageErrors
from dsl.models import ConfigBlock, Experiment, NodeRef, SingleTopology
from dsl.plan import DEFAULT_BASE_PORT, Plan

REPLICATION = """
experiment "ports" {
  topology replication {
    primary db1
    replicas db2, db3
    delay db3 by 1h
  }
  router haproxy { writer db1  readers db2, db3 }
  workload w: probe { target router.writer }
}
"""


def nodes_by_name(plan: Plan, cell: int = 0) -> dict[str, dict[str, str]]:
    return {n.name: n.config for n in plan.cells[cell].nodes}


def test_ports_ids_and_roles() -> None:
    plan = plan_text(REPLICATION)
    nodes = plan.cells[0].nodes
    assert [(n.name, n.role, n.index, n.server_id) for n in nodes] == [
        ("db1", "primary", 1, 100),
        ("db2", "replica", 2, 200),
        ("db3", "replica", 3, 300),
    ]
    assert [n.port_offset for n in nodes] == [1, 2, 3]  # runners.runtime.PortLayout
    assert [n.port for n in nodes] == [DEFAULT_BASE_PORT + NODE_PORT_STRIDE * i for i in (1, 2, 3)]
    assert [n.replicates_from for n in nodes] == [[], ["db1"], ["db1"]]
    assert [n.delay for n in nodes] == [None, None, 3600.0]
    assert plan.router is not None
    assert plan.router.writer_port == DEFAULT_BASE_PORT + ROUTER_WRITER_OFFSET == 23090
    assert plan.router.reader_port == DEFAULT_BASE_PORT + ROUTER_READER_OFFSET == 23091
    db2 = plan.cells[0].nodes[1]
    assert db2.config["server_id"] == "200" and db2.origins["server_id"] == "lab"


def test_a_different_base_port_moves_every_port() -> None:
    from dsl.api import parse_text

    plan = compile_experiment(parse_text(REPLICATION), base_port=30000)
    assert [n.port for n in plan.cells[0].nodes] == [30001, 30002, 30003]
    assert plan.router is not None and plan.router.writer_port == 30090


PRECEDENCE = """
experiment "precedence" {
  config { innodb_buffer_pool_size = 100M  a = experiment  b = experiment  c = experiment
           d = experiment  e = experiment }
  topology single {
    node db1
    config { b = topology  c = topology  d = topology  e = topology }
    config db1 { d = topology_node  e = topology_node }
  }
  config db1 { c = experiment_node  d = experiment_node  e = experiment_node }
  variant v { e = variant  f = variant }
  vary config f in swept
  workload w: probe { target db1 }
}
"""


def test_effective_config_precedence() -> None:
    config = nodes_by_name(plan_text(PRECEDENCE))["db1"]
    assert config["innodb_buffer_pool_size"] == "100M"  # experiment over built-in 64M
    assert config["innodb_log_file_size"] == "48M"  # built-in default kept
    assert config["a"] == "experiment"
    assert config["b"] == "topology"  # topology config over experiment config
    assert config["c"] == "experiment_node"  # per-node over all-nodes
    assert config["d"] == "topology_node"  # topology per-node over experiment per-node
    assert config["e"] == "variant"  # variant over every config block
    assert config["f"] == "swept"  # vary config over the variant


def test_builtin_defaults_are_small_and_explicit() -> None:
    plan = plan_text('experiment "d" { topology single { node db1 } }')
    config = nodes_by_name(plan)["db1"]
    assert config["innodb_buffer_pool_size"] == "64M"
    assert config["server_id"] == "100"  # the lab's (dbdeployer's numbering)
    assert "log_bin" not in config  # a single server needs no binlog


def test_dash_and_underscore_are_one_option() -> None:
    plan = plan_text("""experiment "d" {
      config { sync-binlog = 0 }
      topology replication { primary db1 }
    }""")
    config = nodes_by_name(plan)["db1"]
    assert config["sync-binlog"] == "0"
    assert "sync_binlog" not in config


@pytest.mark.parametrize(
    "topology,expected",
    [
        (
            "topology replication { primary a  replicas b  crash_safe on  semi_sync on }",
            {
                "a": {"relay_log_recovery": "ON", "rpl_semi_sync_master_enabled": "ON"},
                "b": {"relay_log_recovery": "ON", "rpl_semi_sync_slave_enabled": "ON"},
            },
        ),
        (
            "topology replication { engine mysql 8.0.36  primary a  replicas b  semi_sync on }",
            {
                "a": {
                    "gtid_mode": "ON",
                    "rpl_semi_sync_source_enabled": "ON",
                    "plugin_load_add": "semisync_source.so",
                },
                "b": {"rpl_semi_sync_replica_enabled": "ON"},
            },
        ),
        (
            "topology replication { engine mysql 5.7  primary a  replicas b  crash_safe on }",
            {"b": {"master_info_repository": "TABLE", "relay_log_info_repository": "TABLE"}},
        ),
        (
            "topology primary_primary { nodes a, b }",
            {
                "a": {
                    "auto_increment_increment": "2",
                    "auto_increment_offset": "1",
                    "gtid_domain_id": "1",
                },
                "b": {"auto_increment_offset": "2", "gtid_domain_id": "2"},
            },
        ),
        (
            "topology galera { nodes a, b, c }",
            {"c": {"wsrep_on": "ON", "binlog_format": "ROW", "innodb_autoinc_lock_mode": "2"}},
        ),
        (
            "topology mongodb_replset { members a, b, c }",
            {"a": {"storage.wiredTiger.engineConfig.cacheSizeGB": "0.25"}},
        ),
    ],
)
def test_role_defaults(topology: str, expected: dict[str, dict[str, str]]) -> None:
    config = nodes_by_name(plan_text(f'experiment "r" {{ {topology} }}'))
    for node, settings in expected.items():
        for key, value in settings.items():
            assert config[node][key] == value, (node, key)


def test_no_auto_increment_offsets_when_off() -> None:
    plan = plan_text(
        'experiment "r" { topology primary_primary { nodes a, b  auto_increment_offsets off } }'
    )
    assert "auto_increment_offset" not in nodes_by_name(plan)["a"]
    assert plan.auto_increment_offsets is False
    assert plan.cells[0].nodes[0].replicates_from == ["b"]


SWEEP = """
experiment "sweep" {
  topology single { node db1 }
  variant base { }
  variant a2 { innodb_io_capacity = 20000 }
  vary threads in 1, 4
  vary config innodb_buffer_pool_instances in 1, 8, 64
  repeat 2
  workload rw: sysbench oltp_read_write { target db1  threads $threads  duration 10s }
}
"""


def test_matrix_size_order_and_labels() -> None:
    plan = plan_text(SWEEP)
    assert len(plan.cells) == 2 * 2 * 3 * 2
    assert [c.index for c in plan.cells] == list(range(1, 25))
    assert plan.cells[0].label == "base threads=1 innodb_buffer_pool_instances=1 #1"
    assert plan.cells[1].label == "base threads=1 innodb_buffer_pool_instances=1 #2"
    assert plan.cells[-1].label == "a2 threads=4 innodb_buffer_pool_instances=64 #2"
    label = "a2 threads=4 innodb_buffer_pool_instances=8 #2"
    cell = next(c for c in plan.cells if c.label == label)
    assert cell.variant == "a2" and cell.repeat == 2
    assert cell.sweep == {"threads": "4", "innodb_buffer_pool_instances": "8"}
    config = cell.nodes[0].config
    assert config["innodb_io_capacity"] == "20000"
    assert config["innodb_buffer_pool_instances"] == "8"
    assert cell.workloads[0].threads == 4  # $threads resolved
    assert plan.cells[0].workloads[0].threads == 1


def test_labels_without_variants_or_repeats() -> None:
    plan = plan_text("""experiment "l" {
      topology single { node db1 }
      vary c in 1, 2
      workload w: unique_writes { target db1  clients $c }
    }""")
    assert [c.label for c in plan.cells] == ["c=1", "c=2"]
    assert [c.workloads[0].clients for c in plan.cells] == [1, 2]
    single = plan_text('experiment "l" { topology single { node db1 } }')
    assert [c.label for c in single.cells] == ["#1"]


def test_workload_defaults_are_explicit() -> None:
    plan = plan_text("""experiment "w" {
      duration 40s
      topology single { node db1 }
      workload p: probe { target db1 }
      workload s: sysbench oltp_insert { target db1 }
      workload f: unique_writes { target db1  rows 100 }
      workload after: unique_insert { target db1  start after f }
    }""")
    w = {x.name: x for x in plan.cells[0].workloads}
    assert w["p"].every == DEFAULT_PROBE_EVERY and w["p"].clients == 1
    assert w["p"].duration == 40.0 and w["p"].timeout == 1.0
    assert (w["s"].threads, w["s"].tables, w["s"].table_size) == (1, 1, 10000)
    assert w["f"].rows == 100 and w["f"].duration is None  # bounded by rows
    assert w["after"].start_after == "f" and w["after"].keys == "sequential"


def test_duration_defaults_to_the_longest_workload() -> None:
    plan = plan_text("""experiment "d" {
      topology single { node db1 }
      workload a: probe { target db1  duration 90s }
      workload b: probe { target db1  duration 1m }
    }""")
    assert plan.duration == 90.0


def test_expectations_and_reports_carry_their_statistic() -> None:
    plan = plan_text("""experiment "e" {
      topology replication { primary db1  replicas db2 }
      workload w: probe { target db1 }
      workload r: read_your_writes { write db1  read db2 }
      expect downtime(w) < 1s
      expect stale_reads(r) < 1%
      expect stale_reads(r) == 0
      expect latency(w).p50 < 5ms
      report latency(w)
      report throughput(w)
    }""")
    assert [e.metric.stat for e in plan.expectations] == ["max", "ratio", "count", "p50"]
    assert [r.metric.stat for r in plan.reports] == ["p99", "mean"]


def test_timeline_is_sorted_and_steps_kept() -> None:
    plan = plan_text("""experiment "t" {
      topology replication { primary db1  replicas db2 }
      workload f: unique_writes { target db1  rows 10 }
      at 20s start db2
      at 10s kill db2
      after f { stop replication db2 }
    }""")
    assert [t.at for t in plan.timeline] == [10.0, 20.0]
    assert plan.steps[0].when == "after" and plan.steps[0].workload == "f"
    assert len(plan.actions()) == 3


def test_plan_is_json_round_trippable() -> None:
    plan = plan_text(SWEEP)
    assert Plan.model_validate_json(plan.model_dump_json()) == plan


def test_compile_refuses_an_unsafe_experiment_built_by_hand() -> None:
    exp = Experiment(
        name="hand-made",
        topology=SingleTopology(
            node=NodeRef(name="db1"),
            configs=[ConfigBlock(settings={"init_file": "/tmp/x; rm -rf /"})],
        ),
    )
    with pytest.raises(LanguageErrors) as info:
        compile_experiment(exp)
    assert "which starts a comment in my.cnf" in info.value.errors[0].message


def test_plan_ports_match_the_runtime_layout() -> None:
    from runners.runtime import PortLayout

    plan = plan_text(REPLICATION)
    layout = PortLayout(plan.base_port)
    assert [n.port for n in plan.cells[0].nodes] == [layout.node(i) for i in (1, 2, 3)]
    assert plan.router is not None
    assert plan.router.writer_port == layout.router_writer
    assert plan.router.reader_port == layout.router_reader


@pytest.mark.parametrize("kind", ["replication", "single"])
def test_plan_server_ids_are_the_ones_dbdeployer_gives(kind: str) -> None:
    from runners.sandbox import dbdeployer_server_id

    text = REPLICATION if kind == "replication" else 'experiment "s" { topology single { node a } }'
    nodes = plan_text(text).cells[0].nodes
    assert [n.server_id for n in nodes] == [dbdeployer_server_id(kind, n.index) for n in nodes]
    assert [n.config["server_id"] for n in nodes] == [str(n.server_id) for n in nodes]


def test_the_first_primary_may_be_measured_as_a_replica_once_a_replica_is_promoted() -> None:
    text = """
experiment "rejoin" {
  duration 30s
  topology replication { primary db1  replicas db2 }
  workload w: probe { target db1 }
  at 5s kill db1
  at 6s promote db2
  at 10s start db1
  expect missing_transactions(db1) == 0
}
"""
    assert plan_text(text).expectations[0].metric.subject == "db1"
    with pytest.raises(LanguageErrors, match="is the primary"):
        plan_text(text.replace("  at 6s promote db2\n", ""))
