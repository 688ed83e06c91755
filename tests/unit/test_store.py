from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlite_utils

from lab.history import NEMESIS, FaultWindow, Op, Sample
from lab.judge.checkers import CheckResult
from lab.judge.expectations import ExpectationOutcome
from lab.store.db import Store, default_db_path
from lab.store.errors import AmbiguousRun, RunNotFound
from lab.store.records import decode_value, encode_value
from lab.store.schema import MIGRATIONS, applied_migrations, migrate


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "results.db")


def test_default_db_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LAB_HOME", str(tmp_path / "home"))
    assert default_db_path() == tmp_path / "home" / "results.db"
    monkeypatch.delenv("LAB_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_db_path() == tmp_path / ".local/share/replica-chaos-lab/results.db"


def test_migrations_are_idempotent(tmp_path: Path) -> None:
    p = tmp_path / "r.db"
    s1 = Store(p)
    assert s1.migrated == [m.version for m in MIGRATIONS]
    s1.close()
    s2 = Store(p)
    assert s2.migrated == []
    assert applied_migrations(s2.db) == [m.version for m in MIGRATIONS]
    assert migrate(s2.db) == []
    tables = set(s2.db.table_names())
    expected = ["migrations", "runs", "cells", "operation_batches", "faults", "samples",
                "measurements", "checks", "expectations"]  # fmt: skip
    assert set(expected) <= tables
    assert "metrics" in s2.db["checks"].columns_dict
    assert "operations" in s2.db.view_names()


def test_migrations_apply_only_what_is_missing(tmp_path: Path) -> None:
    db = sqlite_utils.Database(tmp_path / "old.db")
    db["migrations"].create({"version": int, "name": str, "applied_at": str}, pk="version")
    MIGRATIONS[0].apply(db)
    db["migrations"].insert({"version": 1, "name": "initial schema", "applied_at": "x"})
    db["runs"].insert({"id": "r1", "experiment": "e", "started_at": "t", "status": "passed"})
    db["operations"].insert_all([  # written by the version-1 schema: one row per operation
        {"run_id": "r1", "cell": 1, "idx": 0, "type": "invoke", "f": "write", "process": 1,
         "time_ns": 5, "workload": "w", "endpoint": "db1", "key": 3, "value": '"x"'},
        {"run_id": "r1", "cell": 1, "idx": 1, "type": "ok", "f": "write", "process": 1,
         "time_ns": 6, "workload": "w", "endpoint": "db1", "node": "db1", "key": 3,
         "value": '"x"'},
    ])  # fmt: skip
    db.close()
    s = Store(tmp_path / "old.db")
    assert s.migrated == [m.version for m in MIGRATIONS if m.version > 1]
    assert s.operations("r1", 1) == [
        Op("invoke", "write", 1, 5, "w", "db1", None, 3, "x", index=0),
        Op("ok", "write", 1, 6, "w", "db1", "db1", 3, "x", index=1),
    ]


def test_run_round_trip(store: Store) -> None:
    rid = store.create_run("failover", "experiments/failover.exp", host="h", version="9")
    assert store.get_run(rid)["status"] == "running"
    store.create_cell(rid, 1, "a #1", variant="a", sweep={"threads": "4"}, repeat=1)

    ops = [
        Op("invoke", "write", 1, 10, "w", "router.writer", "db1", 1, 1, index=0),
        Op("ok", "write", 1, 20, "w", "router.writer", "db1", 1, 1, index=1),
        Op("invoke", "read", 2, 30, "w", "db2", "db2", 1, None, index=2),
        Op("ok", "read", 2, 40, "w", "db2", "db2", 1, None, index=3),
        Op("fail", "write", 3, 50, "w", "db1", None, 2, "text", 1062, "Duplicate entry", 4),
        Op("invoke", "kill", NEMESIS, 60, node="db1", value={"signal": 9}, index=5),
    ]
    assert store.insert_operations(rid, 1, ops) == 6
    assert store.operations(rid, 1) == ops
    # the operations view: one row per operation, value as JSON text
    rows = list(store.db.query(
        "select idx, type, process, time_ns, key, value, error, error_msg from operations "
        "where run_id = ? and cell = 1 order by idx", [rid]))  # fmt: skip
    assert [r["idx"] for r in rows] == list(range(6))
    assert rows[0] == {"idx": 0, "type": "invoke", "process": 1, "time_ns": 10, "key": 1,
                       "value": "1", "error": None, "error_msg": None}  # fmt: skip
    assert rows[3]["value"] is None
    assert (rows[4]["value"], rows[4]["error"]) == ('"text"', 1062)
    assert rows[5]["value"] == '{"signal":9}' and rows[5]["process"] == NEMESIS
    samples = [Sample("lag", "db2", 5, {"lag": 0.25}), Sample("sysbench", "sb", 6, {"tps": 1.0})]
    store.insert_samples(rid, 1, samples)
    assert store.samples(rid, 1) == samples
    assert store.samples(rid, 1, "lag") == samples[:1]
    store.write_faults(rid, 1, [FaultWindow("kill", "db1", 60, 70, True, {"signal": 9})])
    store.write_faults(rid, 1, [FaultWindow("kill", "db1", 60, 80, True, {"signal": 9})])
    (f,) = store.faults(rid, 1)
    assert (f["name"], f["end_ns"], f["detail"]) == ("kill", 80, {"signal": 9})

    results = {
        "downtime": CheckResult("downtime", True, {
            "longest": 1.5, "subjects": {"w": {"longest": 1.5, "windows": [{"start": 1}]}}}),
        "boom": CheckResult("boom", None, {}, "checker raised"),
    }  # fmt: skip
    assert store.write_measurements(rid, 1, results) == 3
    rows = {(m["checker"], m["subject"], m["name"]): m for m in store.measurements(rid, 1)}
    assert rows[("downtime", "", "longest")]["value"] == 1.5
    assert rows[("downtime", "w", "windows")]["json"] == [{"start": 1}]
    checks = {c["checker"]: c for c in store.checks(rid, 1)}
    assert checks["boom"]["valid"] is None and checks["downtime"]["valid"] is True
    assert checks["downtime"]["metrics"]["subjects"]["w"]["longest"] == 1.5

    outcome = ExpectationOutcome(False, 1.5, "duration", "expect downtime(w) < 1s", "fails",
                                 "downtime(w).max")  # fmt: skip
    store.write_expectations(rid, 1, [outcome], [12])
    (e,) = store.expectations(rid, 1)
    assert (e["passed"], e["measured"], e["line"], e["unit"]) == (False, 1.5, 12, "duration")

    store.finish_cell(rid, 1, "failed", load_start_ns=1, load_end_ns=2)
    store.finish_run(rid, "failed", 1, summary={"x": 1}, message=None)
    run = store.get_run(rid)
    assert (run["status"], run["exit_code"], run["summary"], run["host"]) == (
        "failed",
        1,
        {"x": 1},
        "h",
    )
    built = store.build_summary(rid)
    assert built["exit_code"] == 1
    (cell,) = built["cells"]
    assert cell["operations"] == 2
    assert cell["expectations"][0]["passed"] is False
    assert cell["measurements"]["downtime"]["longest"] == 1.5
    json.dumps(built, allow_nan=False)
    # the stored document has no cells (not a summary): rebuilt from the tables
    assert store.summary(rid[:6]) == built


def test_stored_summary_is_returned_as_is(store: Store) -> None:
    rid = store.create_run("e")
    doc = {"run_id": rid, "experiment": "e", "exit_code": 0, "cells": []}
    store.finish_run(rid, "passed", 0, summary=doc)
    assert store.summary(rid)["cells"] == [] and store.summary(rid)["exit_code"] == 0


def test_finish_run_rejects_unknown_status(store: Store) -> None:
    rid = store.create_run("e")
    with pytest.raises(ValueError, match="unknown run status"):
        store.finish_run(rid, "weird", 0)


def test_prefix_lookup(store: Store) -> None:
    a = store.create_run("e", run_id="abc123")
    store.create_run("e", run_id="abd456")
    assert store.get_run("abc")["id"] == a
    assert store.resolve_run_id("abc123") == a
    with pytest.raises(AmbiguousRun, match="ambiguous"):
        store.get_run("ab")
    with pytest.raises(RunNotFound, match="no run 'zz'"):
        store.get_run("zz")
    with pytest.raises(RunNotFound):
        store.get_run("")
    # LIKE wildcards in the reference are literal
    with pytest.raises(RunNotFound):
        store.get_run("a%")


def test_list_runs_most_recent_first(store: Store) -> None:
    store.create_run("one", started_at="2024-01-01T00:00:00")
    store.create_run("two", started_at="2024-01-02T00:00:00")
    assert [r["experiment"] for r in store.list_runs()] == ["two", "one"]
    assert [r["experiment"] for r in store.list_runs(experiment="one")] == ["one"]
    assert len(store.list_runs(limit=1)) == 1


def test_large_batches_and_rewrites(store: Store) -> None:
    rid = store.create_run("e")
    ops = [Op("invoke", "write", 1, i, key=i, value=float("nan") if i == 7 else i, index=i)
           for i in range(2500)]  # fmt: skip
    store.insert_operations(rid, 1, ops)
    store.insert_operations(rid, 1, ops)  # the same batches again: replaced, not doubled
    back = store.operations(rid, 1)
    assert len(back) == 2500 and back[2499].value == 2499
    assert back[7].value == "nan"  # not JSON: kept as text
    n = store.conn.execute("select count(*) from operations where run_id = ?", [rid]).fetchone()
    assert n[0] == 2500


def test_batches_read_back_what_json_would_have_stored(tmp_path: Path) -> None:
    """The batches are encoded by orjson where it writes what json.dumps(default=str) writes
    (plain values), and by json otherwise (a float: NaN kept as text; a subclass, an enum, a
    numpy float, an int key; an int beyond 64 bits; a lone surrogate): every odd value decodes
    as json's encoding of it decodes. A fallback file keeps a record holding U+2028 whole."""
    import collections
    import datetime
    import decimal
    import enum

    import numpy

    from lab.store.fallback import append_fallback, fallback_ops_record, read_fallback
    from lab.store.records import _OP_FIELDS, decode_ops, encode_ops

    class E(enum.Enum):
        A = 1

    nt = collections.namedtuple("nt", "a b")
    values = [datetime.datetime(2026, 1, 2, 3, 4, 5), decimal.Decimal("1.5"), b"ab",
              [1, [2, 3.5]], {"k": [1]}, 2**70, 1.5, float("inf"), "x\ud800", "é’", True, None,
              nt(1, 2), collections.OrderedDict(k=1), E.A, numpy.float64(1.5), {1: 2},
              "line\u2028sep"]
    ops = [Op("ok", "read", 1, 5, "w", "db1", None, 1, v, 1062, "é’ msg", i)
           for i, v in enumerate(values)]
    for op in ops:
        want = json.loads(json.dumps([_OP_FIELDS(op)], separators=(",", ":"), default=str))
        if op.value == float("inf"):
            want[0][9] = "inf"  # not JSON: kept as text
        assert json.loads(encode_ops([op])) == want, op.value
    assert [o.value for o in decode_ops(encode_ops(ops[:5]))][:3] == [
        "2026-01-02 03:04:05", "1.5", "b'ab'"]
    assert json.loads(encode_ops(ops)) == [json.loads(encode_ops([o]))[0] for o in ops]
    sep = Op("ok", "write", 1, 5, "w", "db1", None, 1, 1, 1062, "a\u2028b\u0085c", 0)
    assert "\u2028" in encode_ops([sep])  # orjson leaves it unescaped
    path = tmp_path / "fallback.jsonl"
    append_fallback(path, [fallback_ops_record("r", 1, [sep])])
    (back,) = read_fallback(path)
    assert decode_ops(json.dumps(back["ops"]))[0].error_msg == "a\u2028b\u0085c"


def test_value_encoding_round_trips() -> None:
    for v in (None, 0, 5, -1, "5", "a", 1.5, [1, 2], {"k": "v"}, True):
        assert decode_value(encode_value(v)) == v
    assert encode_value(5) == "5" and encode_value("5") == '"5"'


def test_nan_measurements_are_stored_as_null(store: Store) -> None:
    rid = store.create_run("e")
    store.create_cell(rid, 1)
    store.write_measurements(rid, 1, {"x": CheckResult("x", True, {"v": float("nan")})})
    (m,) = store.measurements(rid, 1)
    assert m["value"] is None


def test_every_table_and_column_is_documented(store: Store) -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "results.md").read_text()
    for name in [*store.db.table_names(), *store.db.view_names()]:
        assert f"`{name}`" in doc or f"### {name}" in doc, f"table {name} is not in docs"
        for row in store.conn.execute(f"pragma table_info({name})"):
            assert f"`{row[1]}`" in doc, f"column {name}.{row[1]} is not in docs/results.md"
    for m in MIGRATIONS:
        assert f"| {m.version} |" in doc, f"migration {m.version} is not in docs/results.md"


def test_a_nan_sample_is_stored_as_unknown_and_streaming_goes_on(tmp_path: Path) -> None:
    """An unreadable replica is a NaN lag sample; JSON has no NaN, and one such sample used to
    make the recorder's writer fail and stop streaming for the rest of the run."""
    from lab.history import Op, Sample
    from lab.run.recorder import Recorder

    st = Store(tmp_path / "r.db")
    rid = st.create_run("x", "y")
    st.create_cell(rid, 1, "c")
    rec = Recorder(st.path, rid, 1)
    rec.sample(Sample("lag", "db2", 1, {"lag": float("nan")}))
    rec.record(Op("invoke", "write", 1, 2, "w"))
    rec.record(Op("ok", "write", 1, 3, "w"))
    rec.close()
    assert rec.error is None and rec.written_ops == 2
    (s,) = st.samples(rid, 1, "lag")
    assert s.values == {"lag": None}


def test_a_run_records_its_identity(store: Store) -> None:
    """The back-end, topology, versions and config are stored with the run and come back in
    ``get_run``, ``list_runs`` and the JSON summary (stored or rebuilt)."""
    ctx = {"backend": "containers", "topology": "galera", "engine": "mariadb 10.11",
           "versions": {"mariadbd": "10.11.19"}, "config": {"g1": {"wsrep_on": "ON"}}}
    rid = store.create_run("e", "e.exp", host="h", version="9", context=ctx)
    row = store.get_run(rid)
    assert (row["backend"], row["topology"], row["context"]) == ("containers", "galera", ctx)
    assert store.list_runs()[0]["backend"] == "containers"
    rebuilt = store.summary(rid)  # no stored summary yet: rebuilt from the tables
    assert (rebuilt["backend"], rebuilt["topology"], rebuilt["context"]) == (
        "containers", "galera", ctx)
    store.finish_run(rid, "passed", 0, summary={"run_id": rid, "cells": []})
    stored = store.summary(rid)  # a stored summary without them gets them from the row
    assert (stored["backend"], stored["context"]["engine"]) == ("containers", "mariadb 10.11")


def test_an_older_database_gets_the_identity_columns(tmp_path: Path) -> None:
    """Migration 6 on a version-5 database: the columns are added, an older run's topology is
    taken from its summary, its back-end is unknown (NULL)."""
    db = sqlite_utils.Database(tmp_path / "old.db")
    migrate_to = [m for m in MIGRATIONS if m.version <= 5]
    db["migrations"].create({"version": int, "name": str, "applied_at": str}, pk="version")
    for m in migrate_to:
        m.apply(db)
        db["migrations"].insert({"version": m.version, "name": m.name, "applied_at": "x"})
    db["runs"].insert({"id": "r1", "experiment": "e", "started_at": "t", "status": "passed",
                       "summary": json.dumps({"topology": "replication", "cells": []})})
    db.close()
    s = Store(tmp_path / "old.db")
    assert 6 in s.migrated
    row = s.get_run("r1")
    assert (row["backend"], row["topology"], row["context"]) == (None, "replication", None)
    assert s.summary("r1")["topology"] == "replication"


def test_lab_runs_shows_what_each_run_ran_on_and_its_whole_id(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    from lab.cli import main

    db = tmp_path / "r.db"
    with Store(db) as s:
        new = s.create_run("quickstart", "q.exp", run_id="a1b2c3d4e5f6",
                           context={"backend": "containers", "topology": "galera"})
        s.finish_run(new, "passed", 0)
        old = s.create_run("quickstart", "q.exp", run_id="0f0f0f0f0f0f")  # before version 6
        s.finish_run(old, "failed", 1)
    assert main(["runs", "--db", str(db)]) == 0
    lines = capsys.readouterr().out.splitlines()  # piped: 80 columns
    assert all(len(x) <= 80 for x in lines)
    row = next(x for x in lines if "a1b2c3d4e5f6" in x)  # never cut: it is what one copies
    assert "containers" in row
    assert "unknown" in next(x for x in lines if "0f0f0f0f0f0f" in x)
