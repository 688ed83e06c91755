# ruff: noqa: E501  (a table of sources and exact messages reads best unwrapped)
"""A corpus of malformed experiments: each asserts every error's line, column and message.

Syntax errors (a file that does not parse) and semantic errors (a file that parses but makes
no sense) alike: the list is exactly what ``lab check`` prints, in order.
"""

from __future__ import annotations

import pytest

from dsl.api import check_text, format_errors

BASE = """experiment "t" {{
  topology replication {{ primary db1  replicas db2, db3 }}
  workload w: probe {{ target db1 }}
  {extra}
}}
"""


def b(extra: str) -> str:
    """A small valid experiment with ``extra`` on line 4."""
    return BASE.format(extra=extra)


CASES: dict[str, tuple[str, list[tuple[int, int, str]]]] = {
    "missing_final_brace": (
        'experiment "t" {\n  topology single { node db1 }\n  workload w: probe { target db1 }\n',
        [(1, 16, "missing '}': the experiment block opened here is never closed")],
    ),
    "missing_block_brace": (
        'experiment "t" {\n  topology replication {\n    primary db1\n  workload w: probe { target db1 }\n}\n',
        [(2, 24, "missing '}': the topology block opened here is not closed before line 4")],
    ),
    "missing_brace_of_a_one_line_block": (
        'experiment "t" {\n  topology single { node db1 }\n  workload w: probe { target db1\n'
        '  at 5s kill db1\n}\n',
        [(3, 21, "missing '}': the workload block opened here is not closed on its line")],
    ),
    "extra_closing_brace": (
        'experiment "t" {\n  topology single { node db1 } }\n  duration 10s\n}\n',
        [(3, 3, "unexpected 'duration' after the end of the experiment")],
    ),
    "missing_open_brace": (
        'experiment "t" {\n  topology replication\n    primary db1\n  }\n}\n',
        [(2, 23, "missing '{' after 'replication'")],
    ),
    "misspelt_keyword": (
        b("durattion 40s"),
        [(4, 3, "unknown keyword 'durattion'")],
    ),
    "unknown_keyword": (
        b("frobnicate 40s"),
        [(4, 3, "unknown keyword 'frobnicate' inside 'experiment'")],
    ),
    "keyword_in_wrong_block": (
        'experiment "t" {\n  topology single {\n    node db1\n    seed 7\n  }\n}\n',
        [(4, 5, "'seed' cannot be used here inside 'topology'")],
    ),
    "missing_value": (
        b("config { innodb_buffer_pool_size = }"),
        [(4, 38, "missing value after '='")],
    ),
    "missing_comma": (
        'experiment "t" {\n  topology replication {\n    primary db1\n    replicas db2 db3\n  }\n}\n',
        [(4, 18, "missing ',' between 'db2' and 'db3'")],
    ),
    "single_equals_in_expect": (
        b("expect lost_writes = 0"),
        [(4, 22, "use '==' to compare; a single '=' sets a value")],
    ),
    "missing_comparison": (
        b("expect downtime(w) 1s"),
        [(4, 22, "missing comparison before '1s'")],
    ),
    "unquoted_commas": (
        b("config { sql_mode = STRICT_TRANS_TABLES,NO_ZERO_DATE }"),
        [(4, 42, "a value that contains commas must be in double quotes")],
    ),
    "missing_colon": (
        b("workload x probe { target db1 }"),
        [(4, 14, "missing ':' between the workload's name and its kind")],
    ),
    "misspelt_workload_kind": (
        b("workload x: prob { target db1 }"),
        [
            (
                4,
                15,
                "expected 'bank', 'connect', 'list_append', 'probe', 'read_modify_write', 'read_your_writes', 'sysbench', 'unique_insert' or ... after 'x:', not 'prob'",
            )
        ],
    ),
    "at_without_time": (
        b("at kill db2"),
        [(4, 6, "'at' needs a time before the action")],
    ),
    "at_without_action": (
        b("at 10s"),
        [(4, 9, "missing action after 'at 10s'")],
    ),
    "misspelt_action": (
        b("at 10s kil db2"),
        [(4, 10, "unknown action 'kil'")],
    ),
    "unknown_action": (
        b("at 10s frobnicate db2"),
        [(4, 10, "unknown action 'frobnicate'")],
    ),
    "kill_without_node": (
        b("at 10s kill"),
        [(4, 14, "missing a node (or router.writer) after 'kill'")],
    ),
    "unit_apart": (
        b("at 10 s kill db2"),
        [(4, 9, "a unit is written right after its number")],
    ),
    "unterminated_string": (
        b('description "a replica dies'),
        [(4, 15, "unterminated string")],
    ),
    "single_quotes": (
        b("description 'a replica dies'"),
        [(4, 15, "strings use double quotes, not '")],
    ),
    "negative_number": (
        b("duration -5s"),
        [(4, 12, "negative numbers are not allowed here")],
    ),
    "text_after_experiment": (
        'experiment "t" {\n  topology single { node db1 }\n}\nduration 10s\n',
        [(4, 1, "unexpected 'duration' after the end of the experiment")],
    ),
    "no_experiment_header": (
        "topology single { node db1 }\n",
        [(1, 1, 'a file starts with the experiment\'s name: experiment "name" {')],
    ),
    "experiment_without_name": (
        "experiment {\n  topology single { node db1 }\n}\n",
        [(1, 12, "the experiment needs a name")],
    ),
    "two_statements_one_line": (
        b("seed 7 8"),
        [(4, 10, "unexpected '8' after '7'")],
    ),
    "unexpected_character": (
        b("seed @7"),
        [(4, 8, "expected a number with its unit (like 10s) after 'seed', not '@7'")],
    ),
    "non_ascii_name": (
        b("at 10s kill dbé"),
        [(4, 17, "unexpected character 'é'")],
    ),
    "misspelt_link": (
        b("at 10s network partition db2 on replicaton"),
        [
            (
                4,
                35,
                "expected 'all', 'clients', 'group' or 'replication' after 'on', not 'replicaton'",
            )
        ],
    ),
    "misspelt_engine": (
        'experiment "t" {\n  topology single {\n    engine mariadbb 10.11\n    node db1\n  }\n}\n',
        [
            (
                3,
                12,
                "expected 'mariadb', 'mongodb', 'mysql', 'percona' or 'psmdb' after 'engine', not 'mariadbb'",
            )
        ],
    ),
    "unknown_unit": (
        b("duration 10x"),
        [(4, 12, "'10x' is not a number with a known unit")],
    ),
    "units_out_of_order": (
        b("duration 30s1m"),
        [(4, 12, "'30s1m' mixes its units out of order")],
    ),
    "unknown_node": (
        b("at 20s kill db4"),
        [(4, 15, "unknown node 'db4' (known: db1, db2, db3)")],
    ),
    "unknown_workload_in_expect": (
        b("expect downtime(writes) < 1s"),
        [(4, 19, "unknown workload 'writes' (known: w)")],
    ),
    "duplicate_node": (
        'experiment "t" {\n  topology replication { primary db1  replicas db2, db1 }\n}\n',
        [(2, 53, "node 'db1' is declared twice (first at line 2)")],
    ),
    "duplicate_workload": (
        b("workload w: probe { target db2 }"),
        [(4, 3, "workload 'w' is defined twice (first at line 3)")],
    ),
    "promote_in_galera": (
        'experiment "t" {\n  topology galera { nodes g1, g2, g3 }\n  at 10s promote g2\n}\n',
        [
            (
                3,
                10,
                "cannot promote a node in a galera topology: every galera node already takes writes",
            )
        ],
    ),
    "delay_primary": (
        'experiment "t" {\n  topology replication {\n    primary db1\n    replicas db2\n    delay db1 by 1m\n  }\n}\n',
        [(5, 11, "'db1' is the primary; only a replica can be delayed")],
    ),
    "replication_on_primary": (
        b("at 10s stop replication db1"),
        [(4, 27, "'db1' is the primary: it does not replicate from anyone")],
    ),
    "convert_outside_mongo": (
        b("at 10s convert db1 to standalone"),
        [
            (
                4,
                10,
                "'convert ... to standalone' turns a MongoDB replica set member into a standalone server; this topology is replication",
            )
        ],
    ),
    "router_unknown_node": (
        b("router haproxy { writer db1  readers db2, db9 }"),
        [(4, 45, "unknown node 'db9' (known: db1, db2, db3)")],
    ),
    "synced_outside_galera": (
        b("at 10s wait until db2 synced"),
        [(4, 10, "'synced' is a galera node state; this topology is replication")],
    ),
    "param_without_vary": (
        b("workload s: sysbench oltp_insert { target db1  threads $threads }"),
        [(4, 58, "unknown parameter $threads (known: none)")],
    ),
    "vary_not_used": (
        b("vary threads in 1, 2"),
        [(4, 3, "'vary threads' is not used: no workload says $threads")],
    ),
    "wrong_unit_in_expect": (
        b("expect downtime(w) < 5M"),
        [(4, 24, "downtime needs a duration, but '5M' is a size")],
    ),
    "time_after_duration": (
        b("at 45s kill db2"),
        [(4, 3, "at 45s is after the end of the load (duration 30s)")],
    ),
    "duration_without_unit": (
        b("duration 40"),
        [(4, 12, "'duration' needs a duration, but '40' is a plain number")],
    ),
    "unsafe_value": (
        b('config { init_connect = "SET NAMES utf8; DROP TABLE x" }'),
        [(4, 27, "the value contains ';', which starts a comment in my.cnf")],
    ),
    "quote_in_value": (
        b('config { sql_mode = "a\\"b" }'),
        [(4, 23, "the value contains '\"': quotes and backslashes are not allowed")],
    ),
    "managed_key": (
        b("config { port = 3306 }"),
        [(4, 12, "'port' is set by the lab and cannot be changed")],
    ),
    "bad_key": (
        b("config { -foo = 1 }"),
        [(4, 12, "'-foo' is not a valid setting name")],
    ),
    "sysbench_without_script": (
        b("workload s: sysbench { target db1 }"),
        [(4, 3, "sysbench workload 's' needs a script")],
    ),
    "unknown_sysbench_script": (
        b("workload s: sysbench oltp_rw { target db1 }"),
        [
            (
                4,
                24,
                "unknown sysbench script 'oltp_rw' (known: oltp_read_write, oltp_read_only, oltp_write_only, oltp_insert, oltp_delete, oltp_point_select, oltp_update_index, oltp_update_non_index, select_random_points, select_random_ranges, bulk_insert, tpcc)",
            )
        ],
    ),
    "script_on_probe": (
        b("workload p: probe oltp_insert { target db1 }"),
        [(4, 21, "only sysbench takes a script; 'p' is a probe")],
    ),
    "statement_not_in_topology": (
        'experiment "t" {\n  topology galera {\n    nodes g1, g2\n    replicas g3\n  }\n}\n',
        [(4, 5, "'replicas' does not belong in a galera topology")],
    ),
    "unknown_statistic": (
        b("expect latency(w).p98 < 1s"),
        [
            (
                4,
                10,
                "latency has no statistic 'p98' (known: p50, p90, p95, p99, p999, max, min, mean)",
            )
        ],
    ),
    "last_on_downtime": (
        b("expect downtime(w) last 10s < 1s"),
        [(4, 10, "'last' does not apply to downtime")],
    ),
    "code_on_latency": (
        b("expect latency(w, 1062) < 1s"),
        [(4, 10, "only errors() takes an error code, not latency()")],
    ),
    "stale_reads_on_probe": (
        b("expect stale_reads(w) == 0"),
        [(4, 22, "stale_reads is measured on a read_your_writes workload; 'w' is a probe")],
    ),
    "reader_without_readers": (
        b("router haproxy { writer db1 }\n  workload r: probe { target router.reader }"),
        [(5, 30, "'router.reader' needs readers in the router")],
    ),
    "writer_without_router": (
        b("workload r: probe { target router.writer }"),
        [(4, 30, "'router.writer' needs a router")],
    ),
    "missing_topology": (
        'experiment "t" {\n  duration 10s\n}\n',
        [(1, 1, "experiment 't' has no topology")],
    ),
    "duration_twice": (
        b("duration 10s\n  duration 20s"),
        [(5, 3, "'duration' is given twice in this experiment (first at line 4)")],
    ),
    "after_unbounded_workload": (
        b("after w {\n    kill db2\n  }"),
        [(4, 9, "workload 'w' never finishes on its own, so 'after w' would never run")],
    ),
    "after_unknown_workload": (
        b("after fill {\n    kill db2\n  }"),
        [(4, 9, "unknown workload 'fill' (known: w)")],
    ),
    "primary_elected_outside_mongo": (
        b("at 10s wait until primary_elected"),
        [
            (
                4,
                10,
                "'primary_elected' is for a MongoDB replica set; a replication topology elects no primary",
            )
        ],
    ),
    "set_global_bad_name": (
        b("at 10s set global innodb-io-capacity = 100"),
        [(4, 21, "'innodb-io-capacity' is not a valid setting name")],
    ),
    "rate_without_unit": (
        b("workload u: unique_writes { target db1  rate 100 }"),
        [(4, 48, "'rate' needs a rate, but '100' is a plain number")],
    ),
    "zero_clients": (
        b("workload u: unique_writes { target db1  clients 0 }"),
        [(4, 51, "'clients' must be between 1 and 10000, not 0")],
    ),
    "fractional_clients": (
        b("workload u: unique_writes { target db1  clients 1.5 }"),
        [(4, 51, "'clients' needs a whole number, not '1.5'")],
    ),
    "zero_repeat": (
        b("repeat 0"),
        [(4, 10, "'repeat' must be between 1 and 1000, not 0")],
    ),
    "ratio_over_100": (
        b("expect lost_writes(w) < 150%"),
        [(4, 27, "a ratio cannot exceed 100%, not 150%")],
    ),
    "mongo_flavor_in_replication": (
        'experiment "t" {\n  topology replication {\n    engine psmdb 7.0\n    primary db1\n  }\n}\n',
        [(3, 5, "psmdb only runs a mongodb_replset topology")],
    ),
    "unknown_workload_kind": (
        'experiment "t" {\n  topology single { node db1 }\n  workload r: reads { target db1 }\n}\n',
        [(3, 15, "unknown workload kind 'reads'")],
    ),
    "mysql_primary_primary": (
        'experiment "t" {\n  topology primary_primary {\n    engine mysql 8.0\n    nodes p1, p2\n  }\n}\n',
        [(3, 5, "primary_primary runs on mariadb (the lab starts two mariadbd), not mysql")],
    ),
    "mysql_8_4": (
        'experiment "t" {\n  topology replication {\n    engine percona 8.4.2\n    primary db1\n  }\n}\n',
        [(3, 5, "percona 8.4.2: the lab speaks MySQL 8.0's replication statements (SHOW SLAVE STATUS, CHANGE MASTER TO), which 8.4 removed")],
    ),
    "sysbench_on_mongo": (
        'experiment "t" {\n  topology mongodb_replset { members m1, m2, m3 }\n  workload s: sysbench oltp_insert { target m1 }\n}\n',
        [(3, 3, "sysbench needs a MySQL-family server, not MongoDB")],
    ),
    "three_primaries": (
        'experiment "t" {\n  topology primary_primary { nodes p1, p2, p3 }\n}\n',
        [(2, 3, "primary_primary has exactly 2 nodes, not 3")],
    ),
    "bandwidth_without_per_second": (
        b("at 10s network bandwidth db2 1M"),
        [(4, 32, "'bandwidth' needs a bandwidth, but '1M' is a size")],
    ),
    "non_integer_sweep": (
        b("vary t in 1, 4x\n  workload s: sysbench oltp_insert { target db1  threads $t }"),
        [(4, 3, "'4x' cannot be used as threads ($t): it must be a whole number from 1 to 10000")],
    ),
    "duplicate_variant": (
        b("variant a { }\n  variant a { }"),
        [(5, 3, "variant 'a' is defined twice (first at line 4)")],
    ),
    "matrix_too_large": (
        b(
            "repeat 1000\n  vary c in 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11\n  workload u: unique_writes { target db1  clients $c }"
        ),
        [(1, 1, "the run matrix has 11000 cells (variants x vary values x repeat); at most 10000")],
    ),
    "key_twice_in_block": (
        b("config { sync_binlog = 1  sync-binlog = 0 }"),
        [(4, 29, "'sync-binlog' is set twice here (first at line 4)")],
    ),
    "semi_sync_without_replicas": (
        'experiment "t" {\n  topology replication { primary db1  semi_sync on }\n}\n',
        [(2, 3, "semi_sync needs at least one replica")],
    ),
    "node_and_workload_same_name": (
        b("workload db2: probe { target db1 }"),
        [(4, 3, "'db2' names both a node and a workload")],
    ),
    "on_node_not_in_workload": (
        b(
            "workload ryw: read_your_writes { write db1  read db2 }\n  expect stale_reads(ryw on db3) == 0"
        ),
        [(5, 29, "'db3' is not one of the nodes of workload 'ryw' (db1, db2)")],
    ),
    "keys_on_probe": (
        b("workload p: probe { target db1  keys random }"),
        [(4, 35, "'keys' does not apply to a probe workload")],
    ),
    "write_on_probe": (
        b("workload p: probe { write db1 }"),
        [
            (4, 3, "workload 'p' has no target"),
            (4, 23, "'write' does not apply to a probe workload"),
        ],
    ),
    "empty_file": (
        "",
        [(1, 1, "the file has no experiment")],
    ),
}


def test_base_is_valid() -> None:
    assert check_text(b(""), "t.exp") == []


@pytest.mark.parametrize("name", sorted(CASES))
def test_malformed(name: str) -> None:
    source, expected = CASES[name]
    errors = check_text(source, "t.exp")
    assert [(e.span.line, e.span.column, e.message) for e in errors] == expected


@pytest.mark.parametrize("name", sorted(CASES))
def test_malformed_output_points_at_the_culprit(name: str) -> None:
    """Every error prints ``path:line:col: error:``, and, when it has a position, the source
    line with a caret starting at the error's column."""
    source, _ = CASES[name]
    errors = check_text(source, "t.exp")
    text = format_errors(errors, {"t.exp": source})
    for err in errors:
        assert f"t.exp:{err.span.line}:{err.span.column}: error: {err.message}" in text
        lines = source.splitlines()
        if err.span.line and err.span.line <= len(lines):
            line = lines[err.span.line - 1].rstrip()
            caret = " " * (err.span.column - 1) + "^"
            assert f"    {line}\n    {caret}" in text
