"""`kill -9` of `lab run`: the run's lab process is recorded with the run (pid and start time);
`lab gc` and `lab runs` mark a run whose process is gone `abandoned`, keeping what it recorded.

A real child process plays `lab run`: it creates a run (and a run directory with a recorded
"server", a `sleep`) and waits to be killed. No database server is involved."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.cli import main
from lab.history import Op
from lab.store.db import Store
from runners import runtime

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import subprocess, sys, time
    from lab.history import Op
    from lab.store.db import Store
    from runners import runtime

    db, with_dir = sys.argv[1], sys.argv[2] == "1"
    store = Store(db)
    rid = store.create_run("killed", "x.exp")
    store.create_cell(rid, 1, "base")
    store.insert_operations(rid, 1, [Op("invoke", "write", 1, 10, "w", "db1", None, 1, 1, index=0),
                                     Op("ok", "write", 1, 20, "w", "db1", "db1", 1, 1, index=1)])
    server = 0
    if with_dir:
        run = runtime.Run(runtime.cell_dir_id(rid, 1), experiment="killed",
                          meta={"run": rid, "cell": 1, "db": db})
        sleeper = subprocess.Popen(["sleep", "300"])
        rec = run.record(sleeper.pid, "mariadbd db1")
        server = sleeper.pid
    print(rid, server, flush=True)
    time.sleep(300)
    """
)


@pytest.fixture
def lab_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    monkeypatch.setenv("LAB_RUNTIME", str(tmp_path / "rt"))
    monkeypatch.setenv("LAB_HOME", str(tmp_path / "home"))
    yield dict(os.environ, PYTHONPATH=str(ROOT))


def start_and_kill(tmp_path: Path, env: dict[str, str], with_dir: bool) -> tuple[str, int]:
    """Start the child, wait until its run exists, SIGKILL it. Returns (run id, server pid)."""
    db = tmp_path / "results.db"
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(db), "1" if with_dir else "0"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, proc.stderr.read() if proc.stderr else ""
    rid, server = line.split()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    proc.stdout.close()
    assert proc.stderr is not None
    proc.stderr.close()
    return rid, int(server)


def status(db: Path, rid: str) -> dict[str, object]:
    with Store(db) as s:
        return s.get_run(rid)


def test_kill_9_then_gc_marks_the_run_abandoned_and_stops_its_servers(
    tmp_path: Path, lab_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    rid, server = start_and_kill(tmp_path, lab_env, with_dir=True)
    db = tmp_path / "results.db"
    assert status(db, rid)["status"] == "running"  # nothing noticed yet
    server_start = runtime.proc_start_time(server)
    assert runtime.alive(server, server_start)  # the "server" outlived its lab process
    assert [i.run for i in runtime.list_runs()] == [rid]

    assert main(["gc"]) == 0  # the run directory names the database: no --db needed
    out = capsys.readouterr().out
    assert f"removed 1 dead run(s): {rid}" in out
    assert f"marked 1 run(s) abandoned in {db}: {rid}" in out
    assert not runtime.alive(server, server_start)  # no leaked server
    assert runtime.list_runs() == []

    run = status(db, rid)
    assert run["status"] == "abandoned"
    assert run["exit_code"] is None and run["ended_at"] is None
    assert "is gone without finishing it" in str(run["message"])
    with Store(db) as s:
        assert [c["status"] for c in s.cells(rid)] == ["abandoned"]
        assert len(s.operations(rid, 1)) == 2  # what it recorded is kept
        assert s.summary(rid)["cells"][0]["operations"] == 1


def test_kill_9_then_lab_runs_marks_the_run_abandoned(
    tmp_path: Path, lab_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    rid, _ = start_and_kill(tmp_path, lab_env, with_dir=False)
    db = tmp_path / "results.db"
    assert main(["runs", "--db", str(db)]) == 0
    assert "abandoned" in capsys.readouterr().out
    assert status(db, rid)["status"] == "abandoned"
    assert main(["show", rid[:6], "--db", str(db), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["status"] == "abandoned"
    assert shown["cells"][0]["status"] == "abandoned"
    assert main(["show", rid, "--db", str(db)]) == 0
    assert "is gone without finishing it" in capsys.readouterr().out


def test_owner_recorded_with_the_run(tmp_path: Path) -> None:
    with Store(tmp_path / "r.db") as s:
        rid = s.create_run("e")
        run = s.get_run(rid)
    assert run["owner_pid"] == os.getpid()
    assert run["owner_start"] == runtime.proc_start_time(os.getpid())


def test_only_runs_whose_owner_is_gone_are_marked(tmp_path: Path) -> None:
    me, my_start = runtime.owner_identity()
    assert my_start is not None
    dead = subprocess.Popen(["true"])
    dead.wait()
    with Store(tmp_path / "r.db") as s:
        alive = s.create_run("alive")  # this process: it runs
        reused = s.create_run("reused", owner=(me, my_start + 1))  # pid reused by another
        gone = s.create_run("gone", owner=(dead.pid, 12345))
        elsewhere = s.create_run("elsewhere", owner=(dead.pid, 1), host=socket.gethostname() + "x")
        old = s.create_run("old", owner=(dead.pid, 1))
        s.conn.execute("update runs set owner_pid = null where id = ?", [old])  # before v5
        s.conn.commit()
        done = s.create_run("done", owner=(dead.pid, 1))
        s.finish_run(done, "passed", 0)
        s.create_cell(gone, 1)
        s.create_cell(gone, 2)
        s.finish_cell(gone, 1, "passed")
        assert sorted(s.mark_abandoned()) == sorted([reused, gone])
        assert s.mark_abandoned() == []  # once
        st = {r["id"]: r["status"] for r in s.list_runs()}
        assert st == {alive: "running", reused: "abandoned", gone: "abandoned",
                      elsewhere: "running", old: "running", done: "passed"}
        assert [c["status"] for c in s.cells(gone)] == ["passed", "abandoned"]
        assert f"pid {dead.pid}" in str(s.get_run(gone)["message"])


def test_abandoned_message_names_the_fallback_file(tmp_path: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    with Store(tmp_path / "r.db") as s:
        rid = s.create_run("gone", owner=(dead.pid, 1))
        fb = tmp_path / f"r.db.{rid}.fallback.jsonl"
        fb.write_text("{}\n")
        s.mark_abandoned()
        assert str(fb) in str(s.get_run(rid)["message"])


def test_migration_5_adds_the_owner_to_an_older_database(tmp_path: Path) -> None:
    import sqlite_utils

    from lab.store.schema import MIGRATIONS, migrate

    db = sqlite_utils.Database(tmp_path / "old.db")
    db["migrations"].create({"version": int, "name": str, "applied_at": str}, pk="version")
    for m in MIGRATIONS:
        if m.version < 5:
            m.apply(db)
            db["migrations"].insert({"version": m.version, "name": m.name, "applied_at": "x"})
    db["runs"].insert({"id": "r1", "experiment": "e", "started_at": "t", "status": "running"})
    assert migrate(db) == [m.version for m in MIGRATIONS if m.version >= 5]
    assert {"owner_pid", "owner_start"} <= set(db["runs"].columns_dict)
    db.close()
    with Store(tmp_path / "old.db") as s:
        assert s.mark_abandoned() == []  # no owner recorded: cannot be judged
        assert s.insert_operations("r1", 1, [Op("invoke", "write", 1, 1, index=0)]) == 1
