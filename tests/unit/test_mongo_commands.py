"""MongoDB without mongod: argv, the settings allow-list, replica set documents, the
system.replset warning, the conversion's phases and the history windows of its downtime, and
the checks made before touching a server."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from dsl.models import Engine
from fault.mongo import _Phases, convert_standalone, convert_to_standalone
from runners.components import MissingComponent, find
from runners.errors import ComponentError
from runners.mongo import (
    ALLOWED_SETTINGS,
    MongoNode,
    MongoReplicaSet,
    check_version,
    config_without,
    initiate_document,
    mongod_argv,
    replset_name,
    setting_args,
    warning_in,
)
from runners.runtime import PortLayout

# A startup line as MongoDB 4.4+ writes it (JSON log), and the pre-4.4 text form.
JSON_WARNING = json.dumps({
    "t": {"$date": "2024-02-29T23:20:17.412+00:00"}, "s": "W", "c": "CONTROL", "id": 20547,
    "ctx": "initandlisten",
    "msg": "Document(s) exist in 'system.replset', but started without --replSet. Database "
           "contents may appear inconsistent with the writes that were visible when this node "
           "was running as part of a replica set.",
    "tags": ["startupWarnings"]}, separators=(",", ":"))
TEXT_WARNING = ("2021-12-21T18:23:52.056+00:00: Document(s) exist in 'system.replset', but "
                "started without --replSet. Database contents may appear inconsistent")


def fake_run(tmp_path: Path) -> Any:
    return SimpleNamespace(dir=tmp_path, id="abcd1234", ports=PortLayout(23000),
                           record=lambda pid, name: None, forget=lambda pid: None)


def node(tmp_path: Path, name: str = "m1", index: int = 1,
         settings: dict[str, str] | None = None) -> MongoNode:
    return MongoNode(fake_run(tmp_path), name, index, 23000 + index, tmp_path / name,
                     "/opt/mongo/bin/mongod", "rs_abcd1234", settings or {})


# --- argv -----------------------------------------------------------------------------------------

def test_mongod_argv_for_a_member(tmp_path: Path) -> None:
    argv = mongod_argv("/opt/mongo/bin/mongod", 23001, tmp_path / "m1", "rs_x",
                       {"storage.wiredTiger.engineConfig.cacheSizeGB": "0.25"})
    assert argv == [
        "/opt/mongo/bin/mongod", "--port", "23001", "--bind_ip", "127.0.0.1",
        "--dbpath", str(tmp_path / "m1" / "data"), "--logpath", str(tmp_path / "m1/mongod.log"),
        "--logappend", "--unixSocketPrefix", str(tmp_path / "m1"),
        "--replSet", "rs_x", "--wiredTigerCacheSizeGB", "0.25"]
    assert "--fork" not in argv and "--bind_ip_all" not in argv


def test_standalone_argv_has_no_replset(tmp_path: Path) -> None:
    argv = mongod_argv("mongod", 23001, tmp_path, None, {})
    assert "--replSet" not in argv


def test_allow_list_mapping() -> None:
    assert ALLOWED_SETTINGS["storage.wiredTiger.engineConfig.cacheSizeGB"][0] == \
        "--wiredTigerCacheSizeGB"
    assert setting_args({"replication.oplogSizeMB": "128",
                         "operationProfiling.slowOpThresholdMs": "0"}) == \
        ["--oplogSize", "128", "--slowms", "0"]


@pytest.mark.parametrize("settings, message", [
    ({"net.bindIp": "0.0.0.0"}, "not supported"),
    ({"processManagement.fork": "true"}, "not supported"),
    ({"storage.wiredTiger.engineConfig.cacheSizeGB": "-1"}, "positive"),
    ({"storage.wiredTiger.engineConfig.cacheSizeGB": "0.5 --fork"}, "cacheSizeGB"),
    ({"replication.oplogSizeMB": "12.5"}, "whole"),
    ({"operationProfiling.slowOpThresholdMs": "--auth"}, "whole"),
])
def test_allow_list_refuses(settings: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        setting_args(settings)


def test_values_stay_single_argv_elements() -> None:
    args = setting_args({"storage.wiredTiger.engineConfig.cacheSizeGB": " 1.5 "})
    assert args == ["--wiredTigerCacheSizeGB", "1.5"]


def test_node_argv_merges_start_options(tmp_path: Path) -> None:
    n = node(tmp_path, settings={"storage.wiredTiger.engineConfig.cacheSizeGB": "0.25"})
    argv = n.argv({"storage.wiredTiger.engineConfig.cacheSizeGB": "1"})
    assert argv[-2:] == ["--wiredTigerCacheSizeGB", "1"]
    assert argv.count("--wiredTigerCacheSizeGB") == 1
    n.repl_set = None
    assert "--replSet" not in n.argv()


def test_node_start_refuses_bad_options_before_starting(tmp_path: Path) -> None:
    n = node(tmp_path)
    with pytest.raises(ComponentError, match="not supported"):
        n.start({"net.port": "1"})
    assert n.proc is None


def test_node_identity_and_no_sql(tmp_path: Path) -> None:
    n = node(tmp_path, "m2", 2)
    assert n.component == "node m2 (mongod on port 23002)"
    assert n.host == "127.0.0.1:23002"
    assert n.error_log == tmp_path / "m2" / "mongod.log"
    assert n.pid() is None and not n.is_running()
    with pytest.raises(ComponentError, match="SQL does not apply"):
        n.sql("SELECT 1")


def test_log_since_offset(tmp_path: Path) -> None:
    n = node(tmp_path)
    n.node_dir.mkdir()
    n.error_log.write_text(JSON_WARNING + "\n")
    offset = n.log_size()
    with open(n.error_log, "a") as f:
        f.write('{"id":23016,"msg":"Waiting for connections"}\n')
    assert warning_in(n.log_since(0))
    assert not warning_in(n.log_since(offset))


# --- replica set documents ------------------------------------------------------------------------

def test_replset_name() -> None:
    assert replset_name("abcd1234") == "rs_abcd1234"


def test_initiate_document() -> None:
    doc = initiate_document("rs_x", [23001, 23002, 23003])
    assert doc == {"_id": "rs_x", "members": [
        {"_id": 0, "host": "127.0.0.1:23001", "priority": 2},
        {"_id": 1, "host": "127.0.0.1:23002", "priority": 1},
        {"_id": 2, "host": "127.0.0.1:23003", "priority": 1},
    ]}


def config() -> dict[str, Any]:
    return {"_id": "rs_x", "version": 3, "term": 1, "protocolVersion": 1,
            "members": initiate_document("rs_x", [23001, 23002, 23003])["members"],
            "settings": {"electionTimeoutMillis": 10000, "replicaSetId": "abc"}}


def test_config_without_one_member() -> None:
    cfg = config()
    new = config_without(cfg, "127.0.0.1:23002")
    assert [m["host"] for m in new["members"]] == ["127.0.0.1:23001", "127.0.0.1:23003"]
    assert new["version"] == 4
    assert new["settings"] == cfg["settings"] and new["_id"] == "rs_x"
    assert cfg["version"] == 3 and len(cfg["members"]) == 3  # the input is untouched


def test_removing_members_one_reconfig_each() -> None:
    cfg = config()
    for host in ("127.0.0.1:23002", "127.0.0.1:23003"):
        cfg = config_without(cfg, host)
    assert [m["host"] for m in cfg["members"]] == ["127.0.0.1:23001"]
    assert cfg["version"] == 5


def test_config_without_refuses() -> None:
    with pytest.raises(ValueError, match="not a member"):
        config_without(config(), "127.0.0.1:9")
    single = {"_id": "rs_x", "version": 1, "members": [{"_id": 0, "host": "127.0.0.1:1"}]}
    with pytest.raises(ValueError, match="last member"):
        config_without(single, "127.0.0.1:1")


# --- the system.replset warning ---------------------------------------------------------------

def test_warning_detection() -> None:
    assert warning_in(JSON_WARNING)
    assert warning_in(TEXT_WARNING)
    assert not warning_in('{"id":20548,"msg":"something else"}')
    assert not warning_in("")


# --- phases -------------------------------------------------------------------------------------

def test_phases_are_timed_and_reported() -> None:
    seen: list[tuple[str, float]] = []
    phases = _Phases(lambda name, dt: seen.append((name, dt)))
    with phases.phase("remove_members"):
        pass
    with pytest.raises(RuntimeError), phases.phase("restart_standalone"):
        raise RuntimeError("boom")
    assert list(phases.times) == ["remove_members", "restart_standalone"]
    assert [n for n, _ in seen] == ["remove_members", "restart_standalone"]


# --- checks before any server is touched ----------------------------------------------------------

def test_version_check() -> None:
    check_version(Engine(flavor="mongodb", version="7.0"), "7.0.5", "/x/mongod")
    check_version(Engine(flavor="mongodb"), "6.0.1", "/x/mongod")
    check_version(Engine(flavor="psmdb", version="7.0"), None, "/x/mongod")
    with pytest.raises(ComponentError, match="asks for psmdb 7.0 but /x/mongod is 6.0.14"):
        check_version(Engine(flavor="psmdb", version="7.0"), "6.0.14", "/x/mongod")


def test_replica_set_without_mongod_says_how_to_get_it(tmp_path: Path) -> None:
    if find("mongod").ok:
        pytest.skip("mongod is installed here")
    with pytest.raises(MissingComponent, match="mongod is not installed"):
        MongoReplicaSet(fake_run(tmp_path), ["m1", "m2", "m3"], Engine(flavor="mongodb"), {})


def test_convert_refuses_an_unknown_member(tmp_path: Path) -> None:
    members = [node(tmp_path, "m1", 1), node(tmp_path, "m2", 2)]
    with pytest.raises(ComponentError, match="m9 is not a member"):
        convert_to_standalone(members, "m9")


def test_nemesis_action_needs_a_replica_set() -> None:
    topo: Any = SimpleNamespace(nodes={}, plan=SimpleNamespace(topology="replication"))
    with pytest.raises(ComponentError, match="needs a MongoDB replica set"):
        convert_standalone(topo, "db1")


def test_nemesis_action_needs_a_member(tmp_path: Path) -> None:
    topo: Any = SimpleNamespace(nodes={"m1": node(tmp_path)},
                                plan=SimpleNamespace(topology="mongodb_replset"))
    with pytest.raises(ComponentError, match="m2 is not a replica set member"):
        convert_standalone(topo, "m2")


def test_the_conversions_downtime_is_in_the_history(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Both restarts are fault windows on the node, in order with the other phases; no probe."""
    from fault import mongo
    from fault.context import Context
    from runners.ops import NEMESIS, Op

    calls: list[str] = []
    for name in ("ensure_primary", "write_marker"):
        monkeypatch.setattr(mongo, name, lambda n, name=name: calls.append(name))
    monkeypatch.setattr(mongo, "collection_counts", lambda n: {"app.items": 5})
    monkeypatch.setattr(mongo, "remove_member", lambda n, host: calls.append(f"remove {host}"))
    monkeypatch.setattr(mongo, "wait_until", lambda *a, **k: 0.0)
    monkeypatch.setattr(mongo, "restart_member",
                        lambda n, rs: calls.append(f"restart {n.name}") or 0)
    monkeypatch.setattr(mongo, "saw_warning", lambda n, offset, wait: calls.count("clean") == 0)
    monkeypatch.setattr(mongo, "clean_system_replset", lambda n: calls.append("clean") or 1)
    members = [node(tmp_path, "m1", 1), node(tmp_path, "m2", 2)]
    monkeypatch.setattr(MongoNode, "stop", lambda self, timeout=60.0: calls.append(
        f"stop {self.name}"))
    history: list[Op] = []
    ctx = Context(SimpleNamespace(nodes={}), lambda op: history.append(op) or op)  # type: ignore[arg-type]

    def window(name: str, n: str | None) -> Any:
        calls.append(f"window {n}")
        return ctx.fault(name, n)

    out = convert_to_standalone(members, "m1", window)
    assert calls == ["ensure_primary", "write_marker", "remove 127.0.0.1:23002", "stop m2",
                     "window m1", "restart m1", "clean", "window m1", "restart m1"]
    assert [(o.type, o.f, o.node, o.process) for o in history] == [
        ("invoke", mongo.DOWN_WINDOW, "m1", NEMESIS), ("ok", mongo.DOWN_WINDOW, "m1", NEMESIS),
    ] * 2
    assert out["data_intact"] and out["removed_members"] == ["m2"]
    assert out["warning_after_first_restart"] and not out["warning_after_final_restart"]
    assert "downtime_seconds" not in out and "restart_standalone" in out["phases"]
