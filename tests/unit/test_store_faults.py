"""The lab under faults of its own results database, without database servers: a corrupt file,
a full disk at start (a small tmpfs when root, else simulated), the disk filling mid-run (the
recorder's writes fail). Nothing that was measured is lost without saying so, no traceback,
exit 3 with one line naming the file and the cause.

The whole path on real servers is tests/integration/test_store_faults.py."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from dsl.api import load_plan
from lab.cli import main
from lab.history import Op, Sample
from lab.judge.expectations import all_passed
from lab.run import engine
from lab.run.recorder import Recorder, RecorderError
from lab.store.db import MIN_FREE_BYTES, Store
from lab.store.errors import StoreUnavailable
from lab.store.fallback import fallback_path, read_fallback
from lab.store.records import decode_ops

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = str(ROOT / "experiments" / "quickstart.exp")
FULL = "database or disk is full"


pytestmark = pytest.mark.usefixtures("lab_dirs")  # tests/unit/conftest.py


def garbage(path: Path) -> Path:
    path.write_bytes(b"this is not a database, it is garbage " * 200)
    return path


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("Error:")]


# --- a corrupt results database ------------------------------------------------------------


def test_corrupt_database_one_line_and_exit_3_in_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_servers: list[str]
) -> None:
    db = garbage(tmp_path / "results.db")
    expected = f"Error: results database {db} is unreadable: file is not a database"
    for argv in (["runs", "--db", str(db)], ["show", "abc", "--db", str(db)],
                 ["run", QUICKSTART, "--db", str(db)]):  # fmt: skip
        assert main(argv) == 3, argv
        err = capsys.readouterr().err
        assert err.strip().splitlines()[-1] == expected, argv
        assert error_lines(err) == [expected]
        assert "Traceback" not in err
    assert no_servers == []


def test_corrupt_pages_are_unreadable_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "results.db"
    with Store(db) as s:
        rid = s.create_run("e")
        s.insert_operations(rid, 1, [Op("invoke", "write", 1, i, index=i) for i in range(3000)])
    size = db.stat().st_size
    with open(db, "r+b") as f:  # the header stays, the pages after it do not
        f.seek(4096)
        f.write(b"\xa5" * (size - 4096))
    assert main(["runs", "--db", str(db)]) == 3
    err = capsys.readouterr().err
    assert error_lines(err) == [f"Error: results database {db} is unreadable: "
                                "database disk image is malformed"]  # fmt: skip


def test_corrupt_database_through_the_command_line(tmp_path: Path) -> None:
    db = garbage(tmp_path / "results.db")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for args in (["runs", "--db", str(db)], ["run", QUICKSTART, "--db", str(db)]):
        out = subprocess.run([sys.executable, "-m", "lab.cli", *args], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=60)  # fmt: skip
        assert out.returncode == 3, out.stderr
        assert out.stderr.splitlines() == [
            f"Error: results database {db} is unreadable: file is not a database"
        ]
    assert garbage(tmp_path / "x").read_bytes() == db.read_bytes()  # left as it was


def test_gc_with_a_corrupt_database_still_cleans_and_warns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "home").mkdir()
    db = garbage(tmp_path / "home" / "results.db")  # the default database
    assert main(["gc"]) == 0
    captured = capsys.readouterr()
    assert "removed 0 dead run(s)" in captured.out
    assert f"warning: results database {db} is unreadable: file is not a database" in captured.err
    assert "Traceback" not in captured.err


# --- a full disk at start ----------------------------------------------------------------------


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """``mount(size)``: a fresh tmpfs of that size (root only; skipped otherwise), unmounted
    at the end of the test."""
    mounted: list[Path] = []

    def mount(size: str) -> Path:
        if os.geteuid() != 0:
            pytest.skip("a small tmpfs needs root (mount -t tmpfs); the simulated tests cover it")
        d = tmp_path / f"fs{len(mounted)}"
        d.mkdir()
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(d)],
                           capture_output=True, text=True)  # fmt: skip
        if r.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
        mounted.append(d)
        return d

    yield mount
    for d in mounted:
        if subprocess.run(["umount", str(d)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(d)], capture_output=True)


def fill(d: Path, leave: int = 0) -> None:
    """Fill the file system of ``d`` up to ``leave`` bytes free."""
    with open(d / "filler", "wb") as f:
        chunk = b"\0" * 65536
        while True:
            free = os.statvfs(d).f_bavail * os.statvfs(d).f_frsize
            if free <= leave:
                break
            try:
                f.write(chunk[: max(1, min(len(chunk), free - leave))])
                f.flush()
            except OSError:
                break


def test_full_disk_at_start_new_database(
    small_fs: Callable[[str], Path], capsys: pytest.CaptureFixture[str], no_servers: list[str]
) -> None:
    d = small_fs("1m")
    fill(d)
    db = d / "results.db"
    assert main(["run", QUICKSTART, "--db", str(db)]) == 3
    err = capsys.readouterr().err
    (line,) = error_lines(err)
    assert line.startswith(f"Error: results database {db} cannot be written: {FULL}")
    assert "free on its file system" in line
    assert "Traceback" not in err
    assert not db.exists()  # the failed create left no empty file
    assert main(["runs", "--db", str(db)]) == 2  # reading creates nothing: "no results database"
    assert no_servers == []


def test_little_room_at_start_refuses_to_run(
    small_fs: Callable[[str], Path], capsys: pytest.CaptureFixture[str], no_servers: list[str]
) -> None:
    d = small_fs("8m")
    db = d / "results.db"
    Store(db).close()
    fill(d, leave=1 << 20)
    assert main(["run", QUICKSTART, "--db", str(db)]) == 3
    (line,) = error_lines(capsys.readouterr().err)
    assert line.startswith(f"Error: results database {db} cannot be written: only ")
    assert "a run needs 16.0 MB at least" in line
    assert main(["runs", "--db", str(db)]) == 0  # reading still works
    assert no_servers == []


def test_little_room_at_start_simulated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    no_servers: list[str],
) -> None:  # fmt: skip
    monkeypatch.setattr("lab.store.db.free_bytes", lambda p: MIN_FREE_BYTES - 1)
    db = tmp_path / "results.db"
    assert main(["run", QUICKSTART, "--db", str(db)]) == 3
    (line,) = error_lines(capsys.readouterr().err)
    assert line.startswith(f"Error: results database {db} cannot be written: only 16.0 MB free")
    assert no_servers == []


def test_run_cannot_even_be_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("runners.topology.check_components", lambda plan: None)
    deployed: list[int] = []
    monkeypatch.setattr(engine.Topology, "deploy", lambda *a: deployed.append(1))

    def full(*a: Any, **k: Any) -> str:
        raise sqlite3.OperationalError(FULL)

    monkeypatch.setattr(Store, "create_run", full)
    db = tmp_path / "results.db"
    assert main(["run", QUICKSTART, "--db", str(db)]) == 3
    err = capsys.readouterr().err
    assert error_lines(err) == [f"Error: results database {db} cannot be written: {FULL}"]
    assert deployed == []


# --- the recorder when the database fails mid-run -------------------------------------------


def fail_after(monkeypatch: pytest.MonkeyPatch, method: str, calls: int) -> list[int]:
    """Make ``Store.<method>`` work ``calls`` times, then raise "database or disk is full"."""
    real = getattr(Store, method)
    n = [0]

    def flaky(self: Store, *a: Any, **k: Any) -> Any:
        n[0] += 1
        if n[0] > calls:
            raise sqlite3.OperationalError(FULL)
        return real(self, *a, **k)

    monkeypatch.setattr(Store, method, flaky)
    return n


def make_run(tmp_path: Path) -> tuple[Path, str]:
    p = tmp_path / "r.db"
    with Store(p) as s:
        rid = s.create_run("e")
        s.create_cell(rid, 1)
    return p, rid


def record_some(rec: Recorder, n: int, pause_every: int = 100) -> None:
    for i in range(n):
        inv = rec.invoke("write", 1, workload="w", key=i, value=i)
        rec.complete(inv, "ok")
        if i % pause_every == 0:
            time.sleep(0.005)


def test_recorder_falls_back_to_a_file_next_to_the_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p, rid = make_run(tmp_path)
    fail_after(monkeypatch, "insert_operations", 1)
    rec = Recorder(p, rid, 1, batch_interval=0.01)
    rec.invoke("write", 1, workload="w", key=0, value=0)  # the first batch: stored
    rec.flush(timeout=10)
    record_some(rec, 1000)
    f = rec.fault_start("kill", "db2")
    rec.fault_end(f)
    rec.sample(Sample("lag", "db2", 5, {"lag": float("nan")}))
    with pytest.raises(RecorderError) as e:
        rec.close()
    msg = str(e.value)
    fb = fallback_path(p, rid)
    assert msg.startswith(f"results database {p} cannot be written: {FULL}; ")
    assert f"1 of 2003 operations stored in the database, 2002 in {fb}" in msg
    history = rec.history
    assert len(history) == 2003  # all of it in memory

    with Store(p) as s:
        stored = s.operations(rid, 1)
    records = read_fallback(fb)
    assert records[0]["kind"] == "store_failed" and FULL in records[0]["error"]
    fell_back = [op for r in records if r["kind"] == "operations"
                 for op in decode_ops(json.dumps(r["ops"]))]  # fmt: skip
    assert sorted(stored + fell_back, key=lambda o: o.index) == history  # nothing lost
    samples = [s for r in records if r["kind"] == "samples" for s in r["samples"]]
    assert samples == [["lag", "db2", 5, {"lag": None}]]
    (faults,) = [r for r in records if r["kind"] == "faults"]
    assert [(x["name"], x["node"], x["ok"]) for x in faults["faults"]] == [("kill", "db2", True)]


def test_recorder_says_what_is_only_in_memory_when_the_fallback_fails_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p, rid = make_run(tmp_path)
    fail_after(monkeypatch, "insert_operations", 0)

    def no_room(path: Any, records: Any) -> None:
        Path(path).touch()
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr("lab.run.recorder.append_fallback", no_room)
    rec = Recorder(p, rid, 1, batch_interval=0.01)
    record_some(rec, 50)
    rec.sample(Sample("lag", "db2", 5, {"lag": 0.1}))
    with pytest.raises(RecorderError) as e:
        rec.close()
    fb = fallback_path(p, rid)
    assert str(e.value).startswith(
        f"results database {p} cannot be written: {FULL}; 0 of 100 operations stored in the "
        f"database, 100 operations and 1 samples not stored anywhere (the fallback file {fb} "
        "failed too: No space left on device"
    )
    assert str(e.value).endswith("): in this process's memory only")
    assert len(rec.history) == 100 and len(rec.samples) == 1
    assert not fb.exists()  # an empty fallback file is not left behind


def test_recorder_faults_refused_at_the_end_go_to_the_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p, rid = make_run(tmp_path)
    fail_after(monkeypatch, "write_faults", 0)
    rec = Recorder(p, rid, 1, batch_interval=0.01)
    f = rec.fault_start("pause", "db1")
    rec.fault_end(f)
    with pytest.raises(RecorderError, match="; 2 of 2 operations stored in the database$"):
        rec.close()
    kinds = [r["kind"] for r in read_fallback(fallback_path(p, rid))]
    assert kinds == ["store_failed", "faults"]


def test_recorder_on_a_disk_that_fills(small_fs: Callable[[str], Path]) -> None:
    d = small_fs("2m")
    p, rid = make_run(d)
    rec = Recorder(p, rid, 1, batch_interval=0.01)
    n = 0
    deadline = time.monotonic() + 30
    while rec.error is None and time.monotonic() < deadline:
        inv = rec.invoke("write", 1, workload="w", key=n, value="x" * 300)
        rec.complete(inv, "ok")
        n += 1
        if n % 500 == 0:
            time.sleep(0.01)
    assert rec.error is not None, "the disk never filled"
    record_some(rec, 10)  # recording goes on, in memory
    with pytest.raises(RecorderError) as e:
        rec.close()
    msg = str(e.value)
    assert msg.startswith(f"results database {p} cannot be written: {FULL}")
    assert "in this process's memory only" in msg or "in " + str(fallback_path(p, rid)) in msg
    assert len(rec.history) == 2 * n + 20
    assert [o.index for o in rec.history] == list(range(2 * n + 20))


# --- the engine and `lab run` when the database fails mid-run --------------------------------


class FakeTopology:
    """No servers: deploys nothing, tears nothing down."""

    primary = None
    router = None  # the Topology protocol's: no router
    nodes: dict[str, Any] = {}
    timings: dict[str, float] = {}
    torn_down = 0

    @classmethod
    def deploy(cls, plan: Any, cell: Any, run: Any) -> FakeTopology:
        return cls()

    def teardown(self) -> float:
        FakeTopology.torn_down += 1
        return 0.0

    def endpoints(self) -> dict[str, str]:
        return {}


@pytest.fixture(autouse=True)
def signals_as_found() -> Iterator[None]:
    """``lab run`` installs its SIGINT/SIGTERM handler (and a Ctrl-C sets ``INTERRUPTED``):
    each test here starts and ends without them."""
    import signal

    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    engine.INTERRUPTED.clear()
    yield
    engine.INTERRUPTED.clear()
    signal.signal(signal.SIGINT, handlers[0])
    signal.signal(signal.SIGTERM, handlers[1])


@pytest.fixture
def fake_cell(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The engine without servers: a client thread records writes from the start of the load
    until the cell stops; the plan's timeline and steps are left out."""
    FakeTopology.torn_down = 0
    monkeypatch.setattr(engine, "Topology", FakeTopology)

    def prepare(self: engine.CellRunner) -> None:
        def client() -> None:
            i = 0
            while not self.stop.is_set():
                assert self.recorder is not None
                inv = self.recorder.invoke("write", 1, workload="writes", endpoint="db1", key=i,
                                           value=i)  # fmt: skip
                self.recorder.complete(inv, "ok", node="db1")
                i += 1
                time.sleep(0.001)

        t = threading.Thread(target=client, daemon=True)
        t.start()
        assert self.load is not None
        self.load.bg.append(t)

    def after_load(self: engine.CellRunner) -> None:  # no healing, settling, final state
        self._check()
        self.out.status = "passed" if all_passed(self.out.expectations) else "failed"

    monkeypatch.setattr(engine.CellRunner, "_prepare", prepare)
    monkeypatch.setattr(engine.CellRunner, "_after_load", after_load)
    monkeypatch.setattr("runners.topology.check_components", lambda plan: None)
    yield


def quick_plan() -> Any:
    plan = load_plan(QUICKSTART)
    return plan.model_copy(update={"timeline": [], "steps": [], "duration": 30})


def test_engine_stops_the_cell_and_still_reports_when_the_disk_fills_mid_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_cell: None
) -> None:
    fail_after(monkeypatch, "insert_operations", 2)
    fail_after(monkeypatch, "finish_run", 0)
    db = tmp_path / "results.db"
    t0 = time.monotonic()
    with Store(db) as store:
        outcome = engine.run_plan(quick_plan(), store)
    assert time.monotonic() - t0 < 15  # stopped, not run to the end of its 30 s
    assert FakeTopology.torn_down == 1
    fb = fallback_path(db, outcome.run_id)
    (cell,) = outcome.cells
    assert cell.status == "error"
    assert cell.error is not None
    assert cell.error.startswith(f"results database {db} cannot be written: {FULL}; ")
    assert f"in {fb}" in cell.error
    assert "the cell stopped early" in cell.error
    assert cell.operations > 0 and cell.results  # checked from the history in memory
    assert cell.expectations and all(e.passed is None for e in cell.expectations)
    assert cell.expectations[0].explanation.startswith("not judged: the cell was stopped by an "
                                                       "error after ")  # fmt: skip
    assert (outcome.status, outcome.exit_code) == ("error", 3)
    assert outcome.store_error is not None
    assert outcome.store_error.startswith(f"results database {db} cannot be written: {FULL}")
    assert outcome.store_error.endswith(f"the run's summary is in {fb}")
    records = read_fallback(fb)
    (run_record,) = [r for r in records if r["kind"] == "run"]
    assert run_record["summary"]["status"] == "error"
    assert run_record["summary"]["cells"][0]["operations"] == cell.operations
    # every operation is in the database or in the fallback file
    with Store(db) as s:
        stored = {o.index for o in s.operations(outcome.run_id, 1)}
        assert s.get_run(outcome.run_id)["status"] == "running"  # the end never got in
    fell_back = {o.index for r in records if r["kind"] == "operations"
                 for o in decode_ops(json.dumps(r["ops"]))}  # fmt: skip
    assert not stored & fell_back
    assert len(stored | fell_back) == len(stored) + len(fell_back) > 0
    assert stored | fell_back == set(range(len(stored | fell_back)))


def test_lab_run_prints_the_report_and_one_error_line_then_exits_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_cell: None,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    import dsl.api

    monkeypatch.setattr(dsl.api, "load_plan", lambda path: quick_plan())
    fail_after(monkeypatch, "insert_operations", 1)
    fail_after(monkeypatch, "finish_run", 0)
    db = tmp_path / "results.db"
    assert main(["run", QUICKSTART, "--db", str(db)]) == 3
    out, err = capsys.readouterr()
    assert "— error" in out  # the report's title: the report is printed
    assert "lost writes" in out and "expectations" in out  # the matrix, then the expectations
    assert "run " in out and ": error (exit 3)" in out
    lines = error_lines(err)
    assert len(lines) == 1
    assert lines[0].startswith(f"Error: results database {db} cannot be written: {FULL}; ")
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == lines[0]


def test_the_end_of_a_run_that_the_database_refuses_goes_to_the_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_cell: None
) -> None:
    fail_after(monkeypatch, "finish_run", 0)
    db = tmp_path / "results.db"
    plan = quick_plan().model_copy(update={"duration": 0.3})
    with Store(db) as store:
        outcome = engine.run_plan(plan, store)
    (cell,) = outcome.cells
    assert cell.status in ("passed", "failed") and cell.store_error is None  # history stored
    assert (outcome.status, outcome.exit_code) == ("error", 3)
    fb = fallback_path(db, outcome.run_id)
    assert outcome.store_error == (
        f"results database {db} cannot be written: {FULL}; the run's summary is in {fb}"
    )
    (rec,) = read_fallback(fb)
    assert rec["kind"] == "run" and rec["summary"]["cells"][0]["status"] == cell.status


def test_a_cell_that_cannot_be_created_starts_no_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_cell: None
) -> None:
    fail_after(monkeypatch, "create_cell", 0)
    deployed: list[int] = []
    monkeypatch.setattr(FakeTopology, "deploy", classmethod(lambda cls, *a: deployed.append(1)))
    with Store(tmp_path / "results.db") as store:
        outcome = engine.run_plan(quick_plan(), store)
    (cell,) = outcome.cells
    assert deployed == []
    assert cell.status == "error"
    assert cell.error == (f"results database {tmp_path / 'results.db'} cannot be written: {FULL}; "
                          "cell 1 did not start")  # fmt: skip
    assert (outcome.status, outcome.exit_code) == ("error", 3)
    with Store(tmp_path / "results.db") as s:
        run = s.get_run(outcome.run_id)
    assert run["status"] == "error" and run["message"] == cell.error


def test_store_unavailable_is_one_line() -> None:
    e = StoreUnavailable.of("/x/r.db", sqlite3.DatabaseError("file is not a database"))
    assert str(e) == "results database /x/r.db is unreadable: file is not a database"
    e = StoreUnavailable.of("/x/r.db", OSError(28, "No space left on device"), writing=True)
    assert str(e).startswith("results database /x/r.db cannot be written: No space left on device")
    assert "\n" not in str(e)


# --- Ctrl-C that a client library turns into its own error -----------------------------------


def test_a_signal_surfacing_as_a_library_error_is_still_an_interruption(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGINT inside a MySQLdb call can come back as OperationalError (the query cut short),
    not KeyboardInterrupt: the run is stored ``interrupted`` (exit 3), never ``error``."""
    monkeypatch.setattr("runners.topology.check_components", lambda plan: None)

    def deploy(*a: Any) -> None:
        engine.INTERRUPTED.set()  # what the CLI's SIGINT handler does first
        raise sqlite3.OperationalError("query interrupted")  # what the library raised instead

    monkeypatch.setattr(engine.Topology, "deploy", deploy)
    db = tmp_path / "results.db"
    try:
        assert main(["run", QUICKSTART, "--db", str(db)]) == 3
    finally:
        engine.INTERRUPTED.clear()
    conn = sqlite3.connect(db)
    assert conn.execute("select status from runs").fetchone() == ("interrupted",)
    assert conn.execute("select status from cells").fetchone() == ("interrupted",)


def test_ctrl_c_mid_load_keeps_the_cell_in_the_run_s_summary(
    tmp_path: Path, fake_cell: None
) -> None:
    """Ctrl-C 1.5 s into the load: the cell is torn down and stored ``interrupted`` with what
    it measured, and the run's summary (what ``lab run``, ``lab show`` and ``lab compare``
    print) has that cell, not "no cell with results"."""
    import _thread
    import signal

    # Ctrl-C is simulated with interrupt_main(), which does nothing while SIGINT is ignored (a
    # background job, nohup): install the handler a terminal's Ctrl-C meets (the autouse
    # fixture puts back what was there)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(1.5, _thread.interrupt_main)
    timer.start()
    try:
        with Store(tmp_path / "results.db") as store:
            outcome = engine.run_plan(quick_plan(), store)
    finally:
        timer.cancel()
    (cell,) = outcome.cells
    assert cell.status == "interrupted" and outcome.status == "interrupted"
    assert FakeTopology.torn_down == 1
    assert cell.expectations  # checked on the partial history, and judged on none of it
    assert [e.passed for e in cell.expectations] == [None] * len(cell.expectations)
    for e in cell.expectations:
        # how far the load got: some of the 1.5 s before the Ctrl-C, and well short of its 30 s
        # (a busy machine delivered it 2.4 s in: the main thread sees it between waits)
        m = re.match(r"not judged: the cell was interrupted after (\d+\.\d) s of its 30 s load "
                     r"\(its figures cover part of the cell only\); on the load until then: ",
                     e.explanation)
        assert m and 0.5 <= float(m.group(1)) < 15, e.explanation
    assert any(e.measured is not None for e in cell.expectations)  # the figures are kept
    with Store(tmp_path / "results.db") as s:
        run = s.get_run(outcome.run_id)
        stored = s.expectations(outcome.run_id, 1)
    assert run["status"] == "interrupted"
    assert [c["status"] for c in run["summary"]["cells"]] == ["interrupted"]
    assert stored and [e["passed"] for e in stored] == [None] * len(stored)


def test_a_second_ctrl_c_does_not_cut_the_teardown_short(capfd: pytest.CaptureFixture[str]) -> None:
    from lab.cli.run import _sigterm

    try:
        with pytest.raises(KeyboardInterrupt):
            _sigterm(2, None)
        _sigterm(2, None)  # during the teardown: said, not raised
    finally:
        engine.INTERRUPTED.clear()
    assert "stopping already" in capfd.readouterr().err
