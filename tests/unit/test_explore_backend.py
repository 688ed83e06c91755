"""``--backend native|containers`` of ``lab explore``, ``replay``, ``shrink`` and ``search``, as
``lab run --backend``: the text made to run there (``lab.explore.schedules.with_backend``), the
choice passed to the runs (the runner replaced: no server starts), a file that cannot run there
refused before anything runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dsl.api import check_text, parse_text
from dsl.space import timeline_entries
from lab.cli import main
from lab.explore import schedules as explore_mod
from lab.explore.schedules import Runner, Trial, schedule_path, with_backend
from lab.store.db import Store

SPACE = """experiment "space" {
  duration 20s
  topology replication { primary db1  replicas db2 }
  workload w: probe { target db1 }
  at 1s pause db2 for 1s
  faults {
    between 2s and 10s
    kill the writer for 500ms..4s  at most 1 time
  }
  expect downtime(w) < 2s
}
"""
TARGET = "expect downtime(w) < 2s"


# --- the text ----------------------------------------------------------------------------------


def test_with_backend_adds_the_statement_before_the_closing_brace() -> None:
    moved = with_backend(SPACE, parse_text(SPACE), "containers")
    exp = parse_text(moved)
    assert exp.backend == "containers"
    assert moved.splitlines()[:-2] == SPACE.splitlines()[:-1]  # nothing else moved
    assert moved.splitlines()[-2:] == ["  backend containers", "}"]
    assert [t.span for t in exp.timeline] == [t.span for t in parse_text(SPACE).timeline]


def test_with_backend_replaces_the_files_own_statement() -> None:
    text = SPACE.replace("  duration 20s\n", "  duration 20s\n  backend   native  # here\n")
    moved = with_backend(text, parse_text(text), "containers")
    assert "  backend containers  # here\n" in moved
    assert parse_text(moved).backend == "containers"
    back = with_backend(moved, parse_text(moved), "native")
    assert "  backend native  # here\n" in back and parse_text(back).backend == "native"


def test_with_backend_on_a_one_line_file_and_when_nothing_changes() -> None:
    one = 'experiment "x" { duration 5s  topology single { node db1 } }'
    moved = with_backend(one, parse_text(one), "containers")
    assert moved == ('experiment "x" { duration 5s  topology single { node db1 }  '
                     'backend containers }')
    assert parse_text(moved).backend == "containers"
    exp = parse_text(SPACE)
    assert with_backend(SPACE, exp, None) is SPACE
    assert with_backend(SPACE, exp, "native") is SPACE  # the file's own (the default)


# --- the commands, with the runner replaced ------------------------------------------------------


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """The back-end each command's runner was made for; each run fails TARGET when its
    schedule kills db1, and is stored with the .exp it ran (the back-end applied, as the real
    runner does)."""
    backends: list[str | None] = []

    def real_runner(store: object, view: object | None = None,
                    backend: str | None = None) -> Runner:
        assert isinstance(store, Store)
        backends.append(backend)

        def run(text: str, label: str) -> Trial:
            exp = parse_text(text)
            text = with_backend(text, exp, backend)
            fails = any(e.action == "kill db1" for e in timeline_entries(text, exp))
            rid = store.create_run(exp.name, None)
            path = schedule_path(store.path, rid)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            store.conn.execute("update runs set source = ?, backend = ? where id = ?",
                               [str(path), parse_text(text).backend, rid])
            store.finish_run(rid, "failed" if fails else "passed", 1 if fails else 0)
            if fails:
                store.conn.execute(
                    "insert into expectations (run_id, cell, position, text, line, metric, "
                    "passed) values (?, 1, 0, ?, 10, 'downtime', 0)", [rid, TARGET])
                store.conn.commit()
            return Trial(rid, path, "failed" if fails else "passed", (TARGET,) if fails else ())

        return run

    monkeypatch.setattr(explore_mod, "real_runner", real_runner)
    return backends


def test_explore_shrink_search_pass_backend_to_their_runs(
        tmp_path: Path, asked: list[str | None], capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "s.exp"
    f.write_text(SPACE)
    db = str(tmp_path / "r.db")
    assert main(["explore", str(f), "--runs", "3", "--seed", "5", "--db", db,
                 "--backend", "containers"]) == 1
    assert asked == ["containers"]
    failed = re.findall(r"schedule \d+: run (\w+) failed", capsys.readouterr().out)
    assert failed
    stored = schedule_path(Path(db), failed[0]).read_text()
    assert parse_text(stored).backend == "containers"  # the .exp says where it ran
    # shrink: by default where the run ran; --backend overrides it
    out_file = tmp_path / "small.exp"
    assert main(["shrink", failed[0], "--fails", "1", "--of", "1", "--out", str(out_file),
                 "--db", db]) == 0
    assert asked[-1] == "containers"
    assert parse_text(out_file.read_text()).backend == "containers"
    assert main(["shrink", failed[0], "--fails", "1", "--of", "1", "--out", str(out_file),
                 "--db", db, "--backend", "native"]) == 0
    assert asked[-1] == "native"
    assert parse_text(out_file.read_text()).backend == "native"
    assert check_text(out_file.read_text()) == []
    capsys.readouterr()
    # search
    p = tmp_path / "p.exp"
    p.write_text(SPACE.replace("  faults {\n    between 2s and 10s\n    kill the writer for "
                               "500ms..4s  at most 1 time\n  }\n", ""))
    assert main(["search", str(p), "--knob", "5:for", "--from", "200ms", "--to", "2s",
                 "--fails", "1", "--of", "1", "--db", db, "--backend", "containers"]) == 1
    assert asked[-1] == "containers"  # no boundary here (no kill): it ran, on containers
    assert main(["search", str(p), "--knob", "5:for", "--from", "200ms", "--to", "2s",
                 "--fails", "1", "--of", "1", "--db", db]) == 1
    assert asked[-1] is None  # the file's own


def test_replay_runs_where_the_run_ran_unless_told(
        tmp_path: Path, asked: list[str | None], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import lab.cli.run

    db = str(tmp_path / "r.db")
    f = tmp_path / "p.exp"
    f.write_text(SPACE)
    store = Store(db)
    rid = store.create_run("space", str(f))
    store.conn.execute("update runs set backend = 'containers' where id = ?", [rid])
    store.finish_run(rid, "passed", 0)
    ran: list[tuple[str, str | None]] = []
    monkeypatch.setattr(lab.cli.run, "cmd_run",
                        lambda path, **kw: ran.append((path, kw.get("backend"))) or 0)
    assert main(["replay", rid, "--db", db]) == 0
    assert f"replaying run {rid}: {f} on containers" in capsys.readouterr().out
    assert main(["replay", rid, "--db", db, "--backend", "native"]) == 0
    assert ran == [(str(f), "containers"), (str(f), "native")]


def test_a_file_that_cannot_run_there_is_refused_before_anything_runs(
        tmp_path: Path, asked: list[str | None], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from runners.capabilities import IoFaults
    from runners.containers.topology import ContainerTopology

    # a back-end without IoFaults (containers have it since lab-iofs is bind-mounted there)
    monkeypatch.setattr(ContainerTopology, "capabilities",
                        ContainerTopology.capabilities - {IoFaults})
    f = tmp_path / "s.exp"
    f.write_text(SPACE.replace("at 1s pause db2 for 1s", "at 1s io delay db2 10ms for 1s"))
    db = str(tmp_path / "r.db")
    assert main(["explore", str(f), "--runs", "2", "--db", db, "--backend", "containers"]) == 2
    err = capsys.readouterr().err
    assert f"Error: {f} cannot run with --backend containers:" in err
    assert f"{f}:5:" in err  # the statement's own line: nothing moved
    assert "io delay (lab-iofs under the node's data directory) runs natively only" in err
    assert "Traceback" not in err
    assert main(["search", str(f), "--knob", "5:for", "--from", "200ms", "--to", "2s",
                 "--db", db, "--backend", "containers"]) == 2
    assert "cannot run with --backend containers" in capsys.readouterr().err
    assert asked == []  # no runner was made: nothing ran
    with pytest.raises(SystemExit) as e:
        main(["explore", str(f), "--backend", "wood"])
    assert e.value.code == 2
    assert "invalid choice: 'wood'" in capsys.readouterr().err


def test_the_real_runner_runs_the_plan_on_backend_and_keeps_that_text(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``real_runner(store, view, backend)``: the plan handed to the engine is on ``backend``,
    and the stored .exp says so (the engine and the component check replaced)."""
    import types

    import lab.run.engine
    import runners.topology
    from dsl.plan import Plan

    plans: list[Plan] = []

    def run_plan(plan: Plan, store: object, view: object, run_id: str) -> object:
        plans.append(plan)
        return types.SimpleNamespace(run_id=run_id, status="passed", cells=[], claims=[],
                                     message=None)

    monkeypatch.setattr(lab.run.engine, "run_plan", run_plan)
    monkeypatch.setattr(runners.topology, "check_components", lambda plan: None)
    store = Store(tmp_path / "r.db")
    text = SPACE.replace("  faults {\n    between 2s and 10s\n    kill the writer for "
                         "500ms..4s  at most 1 time\n  }\n", "")
    trial = explore_mod.real_runner(store, None, "containers")(text, "one")
    assert [p.backend for p in plans] == ["containers"]
    assert parse_text(trial.path.read_text()).backend == "containers"
    explore_mod.real_runner(store, None)(text, "two")
    assert plans[-1].backend == "native"
