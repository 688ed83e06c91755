"""Settings the lab owns (dsl/owned.py): every one is refused by `lab check` with the reason,
or honoured; settings that name files are confined to plain names in the node's directory."""

from __future__ import annotations

import pytest

from dsl.api import check_text, format_errors, plan_text
from dsl.owned import FILE_NAMES, OUTSIDE_RUN, SET_BY_LAB
from dsl.validate_safety import setting_problems

PATH = "example.exp"
MYSQL_OWNED = sorted(k for k in {**SET_BY_LAB, **OUTSIDE_RUN} if "." not in k)


def replication(extra: str, topology: str = "") -> str:
    """A valid experiment with ``extra`` on line 4 (column 3)."""
    return (
        'experiment "t" {\n'
        f"  topology replication {{ primary db1  replicas db2 {topology} }}\n"
        "  workload w: probe { target db1  duration 5s }\n"
        f"  {extra}\n"
        "}\n"
    )


def galera(extra: str) -> str:
    return (
        'experiment "g" {\n'
        "  topology galera { nodes g1, g2, g3 }\n"
        "  workload w: probe { target g1  duration 5s }\n"
        f"  {extra}\n"
        "}\n"
    )


def errors_of(text: str) -> list[tuple[int, int, str, str | None]]:
    return [(e.span.line, e.span.column, e.message, e.hint) for e in check_text(text, PATH)]


def config_of(text: str, node: str) -> dict[str, str]:
    plan = plan_text(text)
    return next(n.config for n in plan.cells[0].nodes if n.name == node)


# --- refused: set by the lab, or reaching outside the run ---------------------------------------


@pytest.mark.parametrize("key", MYSQL_OWNED)
def test_every_owned_key_is_refused_with_a_located_error_and_a_reason(key: str) -> None:
    text = replication(f"config {{ {key} = x1 }}")
    errors = check_text(text, PATH)
    assert len(errors) == 1, errors
    (e,) = errors
    assert (e.span.line, e.span.column) == (4, 12)
    assert f"'{key}'" in e.message
    assert e.hint, f"no reason given for {key}"
    shown = format_errors(errors, {PATH: text})
    assert shown.startswith(f"{PATH}:4:12: error: ")
    assert "hint: " in shown


@pytest.mark.parametrize(
    "key,value",
    [
        ("init_file", "/etc/shadow"),
        ("init-file", "seed.sql"),
        ("secure_file_priv", "/"),
        ("chroot", "/tmp"),
        ("ssl_key", "/root/key.pem"),
        ("des_key_file", "keys"),
        ("ft_stopword_file", "/etc/passwd"),
        ("wsrep_notify_cmd", "/bin/true"),
        ("plugin_dir", "/tmp"),
        ("character_sets_dir", "/tmp"),
        ("lc_messages_dir", "/tmp"),
        ("datadir", "/var/lib/mysql"),
        ("socket", "/tmp/x.sock"),
        ("pid_file", "x.pid"),
        ("log_error", "/tmp/err.log"),
        ("tmpdir", "/tmp"),
        ("innodb_data_home_dir", "/tmp"),
        ("innodb_log_group_home_dir", "/tmp"),
        ("innodb_undo_directory", "/tmp"),
        ("aria_log_dir_path", "/tmp"),
        ("relay_log", "relay"),
        ("relay_log_index", "relay"),
        ("log_bin_index", "/tmp/x"),
        ("log_basename", "x"),
        ("loose-init-file", "/etc/shadow"),
    ],
)
def test_settings_that_reach_the_host_are_refused(key: str, value: str) -> None:
    (error,) = errors_of(replication(f'config {{ {key} = "{value}" }}'))
    assert error[:2] == (4, 12)
    assert f"'{key}'" in error[2]
    assert error[3]


def test_a_negating_prefix_names_the_same_owned_setting() -> None:
    ((_, _, message, hint),) = errors_of(replication("config { skip-read-only = 1 }"))
    assert (
        message
        == "'skip-read-only' sets 'read_only', which is set by the lab and cannot be changed"
    )
    assert hint and "set global read_only" in hint


def test_the_lab_turns_off_abbreviated_option_names() -> None:
    ((_, _, message, hint),) = errors_of(replication("config { getopt_prefix_matching = ON }"))
    assert "set by the lab" in message
    assert hint and "init-fil" in hint


def test_read_only_is_a_fault_a_run_may_cause_but_not_a_config() -> None:
    assert errors_of(replication("at 2s set global read_only = ON on db1")) == []
    assert errors_of(replication("at 2s restart db2 with read_only = OFF")) == []
    assert errors_of(replication("variant v { read_only = OFF }"))


# --- the six settings of the issue: refused, or in the plan -------------------------------------


def test_relay_log_is_refused_with_the_reason() -> None:
    ((line, column, message, hint),) = errors_of(replication("config { relay_log = relay }"))
    assert (line, column) == (4, 12)
    assert message == "'relay_log' is set by the lab and cannot be changed"
    assert hint and "mysql-relay" in hint


@pytest.mark.parametrize(
    "setting,key,value",
    [
        ("log_bin = binlog", "log_bin", "binlog"),
        ("skip_slave_start = ON", "skip_slave_start", "ON"),
        ("skip_name_resolve = ON", "skip_name_resolve", "ON"),
    ],
)
def test_honoured_settings_are_in_the_plan(setting: str, key: str, value: str) -> None:
    text = replication(f"config {{ {setting} }}")
    assert errors_of(text) == []
    assert config_of(text, "db2")[key] == value


def test_wsrep_cluster_name_is_honoured_for_the_whole_cluster_only() -> None:
    text = galera("config { wsrep_cluster_name = chaos }")
    assert errors_of(text) == []
    assert config_of(text, "g3")["wsrep_cluster_name"] == "chaos"
    ((line, _, message, hint),) = errors_of(galera("config g2 { wsrep_cluster_name = other }"))
    assert line == 4 and "every node of a galera cluster" in message
    assert hint == "set it for every node: config { wsrep_cluster_name = ... }"


def test_log_bin_is_a_base_name_set_for_every_node_of_a_replication() -> None:
    (error,) = errors_of(replication("config { log_bin = ON }"))
    assert error[:3] == (4, 22, "log_bin names the binary log files, not 'ON'")
    ((line, _, message, _),) = errors_of(replication("config db1 { log_bin = other }"))
    assert line == 4 and "loses its GTID state" in message
    single = 'experiment "s" {\n  topology single { node db1 }\n  config db1 { log_bin = b }\n}\n'
    assert errors_of(single) == []


def test_wsrep_provider_options_takes_several_galera_options() -> None:
    text = galera(
        'config { wsrep_provider_options = "gcache.size=256M; evs.suspect_timeout=PT5S" }'
    )
    assert errors_of(text) == []
    options = config_of(text, "g1")["wsrep_provider_options"]
    assert "gcache.size=256M" in options and "evs.suspect_timeout=PT5S" in options


@pytest.mark.parametrize(
    "options,message",
    [
        (
            "gcache.size=256M; gmcast.listen_addr=tcp://0.0.0.0:4567",
            "wsrep_provider_options: 'gmcast.listen_addr' is set by the lab and cannot be changed",
        ),
        (
            "ist.recv_addr=127.0.0.1:9999",
            "wsrep_provider_options: 'ist.recv_addr' is set by the lab and cannot be changed",
        ),
        (
            "base_port=4567",
            "wsrep_provider_options: 'base_port' is set by the lab and cannot be changed",
        ),
        (
            "gcache.dir=/var/tmp",
            "wsrep_provider_options: 'gcache.dir' is set by the lab and cannot be changed",
        ),
        (
            "gcache.name=/etc/passwd",
            "wsrep_provider_options: 'gcache.name' takes a plain file name, not '/etc/passwd'",
        ),
        ("gcache.size", "wsrep_provider_options: 'gcache.size' is not key=value"),
        (
            "gcache.size=1G; gcache.size=2G",
            "wsrep_provider_options: 'gcache.size' is given twice",
        ),
    ],
)
def test_wsrep_provider_options_the_lab_needs_are_refused(options: str, message: str) -> None:
    ((line, column, got, _),) = errors_of(
        galera(f'config {{ wsrep_provider_options = "{options}" }}')
    )
    assert (line, column, got) == (4, 37, message)


def test_wsrep_provider_options_cannot_replace_the_labs_at_a_restart() -> None:
    ((_, _, message, hint),) = errors_of(
        galera('at 2s restart g2 with wsrep_provider_options = "gcache.size=1G"')
    )
    assert "would replace the lab's Galera options" in message
    assert hint and "config { }" in hint
    assert errors_of(galera('at 2s set global wsrep_provider_options = "gcache.size=1G"')) == []


def test_only_wsrep_provider_options_may_hold_a_semicolon() -> None:
    ((_, _, message, _),) = errors_of(replication('config { init_connect = "SET a=1; SET b=2" }'))
    assert message == "the value contains ';', which starts a comment in my.cnf"


# --- settings that name files: plain names only --------------------------------------------------

PLAIN = {
    "log_bin": "binlog",
    "plugin_load": "server_audit=server_audit.so",
    "plugin_load_add": "server_audit",
    "early_plugin_load": "keyring.so",
    "innodb_data_file_path": "ibdata1:12M:autoextend",
    "innodb_temp_data_file_path": "ibtmp1:12M:autoextend",
    "wsrep_sst_method": "mariabackup",
}


@pytest.mark.parametrize("key", sorted(FILE_NAMES))
def test_a_file_setting_takes_a_plain_name(key: str) -> None:
    plain = PLAIN.get(key, "node.log")
    text = replication(f'config {{ {key} = "{plain}" }}')
    if key == "log_bin":
        text = text.replace("config {", "config {", 1)
    assert errors_of(text) == []
    assert config_of(text, "db1")[key] == plain


@pytest.mark.parametrize("key", sorted(FILE_NAMES))
@pytest.mark.parametrize("value", ["/etc/cron.d/x", "../../etc/x", "logs/x.log", "~root", ".."])
def test_a_file_setting_refuses_paths(key: str, value: str) -> None:
    ((line, column, message, hint),) = errors_of(replication(f'config {{ {key} = "{value}" }}'))
    assert (line, column) == (4, 15 + len(key))
    assert message.startswith(f"'{key}' takes a plain name (") and message.endswith(
        f"not '{value}'"
    )
    assert hint


@pytest.mark.parametrize(
    "context,extra,column",
    [
        ("set global", 'at 2s set global general_log_file = "/etc/cron.d/x"', 39),
        ("start with", 'at 2s restart db2 with slow_query_log_file = "/tmp/x"', 48),
        ("vary", 'vary config general_log_file in a.log, "/tmp/b.log"', 42),
        ("variant", 'variant v { log_tc = "/tmp/tc" }', 24),
    ],
)
def test_paths_are_refused_in_every_place_a_setting_is_written(
    context: str, extra: str, column: int
) -> None:
    ((line, col, message, _),) = errors_of(replication(extra))
    assert (line, col) == (4, column), context
    assert "takes a plain name" in message


def test_setting_problems_knows_the_owned_settings_in_every_context() -> None:
    for context in ("config", "option", "vary", "set global"):
        assert setting_problems("server_id", "7", context), context
        assert setting_problems("init_file", "x", context), context
        assert setting_problems("general_log_file", "/x", context), context
        assert setting_problems("general_log_file", "x.log", context) == [], context
