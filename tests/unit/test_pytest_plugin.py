"""The pytest plugin (lab.pytest_plugin) and the lab_topology fixture, run with pytester and
without servers: the cell runner and the topology's deploy are replaced by fakes."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from dsl.plan import Cell, Plan
from lab.judge.checkers import CheckContext, WorkloadInfo, run_checkers
from lab.judge.expectations import evaluate_all
from lab.pytest import fixture as pytest_fixture
from lab.run import cell_run
from lab.run.outcome import CellOutcome, View
from lab.store.db import Store
from runners.mysql import Address, Credentials
from tests.unit.histories import S, history, op

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
# pytester's runs are in a directory of their own, without the project's addopts: they keep
# the files' order too (-p no:randomly), unless a test asks for pytest-randomly itself
PLUGIN = ("-p", "lab.pytest_plugin", "-p", "no:randomly")

MATRIX = """\
experiment "matrix" {
  duration 5s
  repeat 2
  topology single {
    engine mariadb
    node db1
  }
  variant fast { innodb_flush_log_at_trx_commit = 2 }
  variant safe { innodb_flush_log_at_trx_commit = 1 }
  vary clients in 1, 4
  workload writes: probe {
    target db1
    clients $clients
    every 10ms
  }
  expect downtime(writes) < 1s
}
"""

TINY = """\
experiment "tiny" {
  tags failover, stale-reads
  duration 5s
  topology replication {
    engine mariadb
    primary db1
    replicas db2
  }
  workload writes: probe {
    target db1
    every 10ms
  }
  at 1s kill db1
  at 3s start db1
  expect downtime(writes) < 1s
  expect errors(writes) <= 400
}
"""
TINY_DOWNTIME_LINE = 15  # the line of `expect downtime(writes) < 1s` in TINY

OTHER = TINY.replace('"tiny"', '"other"').replace("tags failover, stale-reads", "tags calm")


def _probe_results(gap: float) -> tuple[dict[str, Any], CheckContext]:
    """The checkers' results over a probe writing every 10 ms for 5 s whose writes fail for
    ``gap`` seconds from 1 s on."""
    ops = []
    t = 0.0
    k = 0
    while t < 5.0:
        failed = 1.0 <= t < 1.0 + gap
        ops.append(op(0, "write", t, t + 0.002, "fail" if failed else "ok", workload="writes",
                      key=k, value=k, error=2003 if failed else None))
        t += 0.01
        k += 1
    ctx = CheckContext(workloads={"writes": WorkloadInfo("probe", ("db1",))},
                       load_start=0, load_end=int(5.1 * S),
                       final_state={"writes": {"db1": {i: i for i in range(k)}}})
    return run_checkers(history(*ops), ctx), ctx  # type: ignore[return-value]


class FakeRunner:
    """Stands in for ``lab.run.cell_run.run_cell``: judges the plan's real expectations on a
    hand-built history; records each call."""

    def __init__(self, gap: float = 0.0, status: str | None = None, error: str | None = None
                 ) -> None:  # fmt: skip
        self.gap, self.status, self.error = gap, status, error
        self.calls: list[dict[str, Any]] = []

    def __call__(self, plan: Plan, cell: Cell, store: Store, run_id: str,
                 view: View | None = None, keep: str = "never") -> CellOutcome:
        self.calls.append({"cell": cell.index, "run_id": run_id, "keep": keep})
        out = CellOutcome(cell)
        if self.status == "error":
            out.status, out.error = "error", self.error
            return out
        out.results, ctx = _probe_results(self.gap)
        out.expectations = evaluate_all(plan.expectations, out.results, ctx)
        out.status = "passed" if all(e.passed for e in out.expectations) else "failed"
        return out


@pytest.fixture
def fake_runner(monkeypatch: pytest.MonkeyPatch) -> Callable[..., FakeRunner]:
    def install(gap: float = 0.0, **kw: Any) -> FakeRunner:
        runner = FakeRunner(gap, **kw)
        monkeypatch.setattr(cell_run, "run_cell", runner)
        monkeypatch.setattr(cell_run, "why_not_runnable", lambda plan: None)
        return runner

    return install


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    db = pytester.path / "results.db"
    return pytester.runpytest(*PLUGIN, "--lab-db", str(db), "-p", "no:cacheprovider", *args)


# --- collection ------------------------------------------------------------------------------


def test_one_item_per_cell_with_readable_ids(pytester: pytest.Pytester) -> None:
    pytester.makefile(".exp", matrix=MATRIX, tiny=TINY)
    result = pytester.runpytest(*PLUGIN, "--collect-only", "-q")
    ids = [line for line in result.outlines if "::" in line]
    assert ids == [
        f"matrix.exp::{v}-clients={c}-rep{r}"
        for v in ("fast", "safe") for c in (1, 4) for r in (1, 2)
    ] + ["tiny.exp::tiny"]


def test_verbose_output_shows_the_id_that_selects_the_item(
        pytester: pytest.Pytester, fake_runner: Callable[..., FakeRunner]) -> None:
    """``-v`` turns the dots of an item's domain into ``::``; a domain with the file's name in
    it showed ``tiny::exp::tiny``, which selects nothing."""
    fake_runner()
    pytester.makefile(".exp", tiny=TINY)
    out = _run(pytester, "-v").stdout.str()
    assert "tiny.exp::tiny PASSED" in out and "tiny::exp" not in out


def test_a_single_variant_names_the_item(pytester: pytest.Pytester) -> None:
    text = TINY.replace("  workload writes", "  variant recovery_on { sync_binlog = 1 }\n"
                                             "  workload writes")
    pytester.makefile(".exp", **{"relay-log-recovery": text})
    result = pytester.runpytest(*PLUGIN, "--collect-only", "-q")
    assert "relay-log-recovery.exp::recovery_on" in result.outlines


def test_tags_are_markers(pytester: pytest.Pytester) -> None:
    pytester.makefile(".exp", tiny=TINY, other=OTHER)
    picked = pytester.runpytest(*PLUGIN, "--collect-only", "-q", "--strict-markers",
                                "-m", "failover")
    assert [ln for ln in picked.outlines if "::" in ln] == ["tiny.exp::tiny"]
    assert "1/2 tests collected (1 deselected)" in picked.stdout.str()
    hyphen = pytester.runpytest(*PLUGIN, "--collect-only", "-q", "-m", "stale-reads")
    assert [ln for ln in hyphen.outlines if "::" in ln] == ["tiny.exp::tiny"]
    others = pytester.runpytest(*PLUGIN, "--collect-only", "-q", "--strict-markers",
                                "-m", "not failover")
    assert [ln for ln in others.outlines if "::" in ln] == ["other.exp::other"]


def test_pytest_markers_lists_the_experiments_tags(pytester: pytest.Pytester) -> None:
    """``pytest --markers`` collects nothing: the tags of the catalogue (``experiments/``) and
    of the files under the paths given are registered from their ``tags`` line."""
    pytester.makefile(".exp", tiny=TINY)
    (pytester.path / "experiments").mkdir()
    (pytester.path / "experiments" / "other.exp").write_text(OTHER)
    (pytester.path / ".hidden").mkdir()
    (pytester.path / ".hidden" / "x.exp").write_text(TINY.replace("failover", "hidden_tag"))
    out = pytester.runpytest(*PLUGIN, "--markers").stdout.str()
    assert "@pytest.mark.failover: experiments tagged 'failover' (lab)" in out
    assert "@pytest.mark.stale-reads:" in out and "@pytest.mark.calm:" in out
    assert "hidden_tag" not in out
    only = pytester.runpytest(*PLUGIN, "--markers", "experiments").stdout.str()
    assert "@pytest.mark.calm:" in only and "@pytest.mark.failover:" not in only


def test_a_broken_file_is_a_collection_error_with_its_position_and_caret(
        pytester: pytest.Pytester) -> None:
    pytester.makefile(".exp", broken=TINY.replace("at 1s kill db1", "at 1s kill db9"))
    result = pytester.runpytest(*PLUGIN, "-q")
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED  # collection errors stop the session
    assert "broken.exp:13:14: error: unknown node 'db9' (known: db1, db2)" in out
    assert "    at 1s kill db9\n" in out
    assert "                 ^^^\n" in out
    assert "hint: did you mean" in out
    assert "Traceback" not in out and "LanguageErrors" not in out and ".py:" not in out


def test_a_syntax_error_too(pytester: pytest.Pytester) -> None:
    pytester.makefile(".exp", broken=TINY.replace("duration 5s", "durattion 5s"))
    out = pytester.runpytest(*PLUGIN, "-q").stdout.str()
    assert re.search(r"broken\.exp:3:3: error: .*durattion", out)
    assert "^^^^^^^^^" in out and "Traceback" not in out


def test_a_tcl_expect_script_is_not_collected(pytester: pytest.Pytester) -> None:
    pytester.makefile(".exp", login='spawn ssh host\nexpect "password:"\nsend "x\\r"\n')
    result = pytester.runpytest(*PLUGIN, "-q")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


# --- running (with a fake cell runner) --------------------------------------------------------


def test_a_passing_file(pytester: pytest.Pytester, fake_runner: Callable[..., FakeRunner]
                        ) -> None:  # fmt: skip
    runner = fake_runner(gap=0.3)
    pytester.makefile(".exp", tiny=TINY)
    result = _run(pytester)
    result.assert_outcomes(passed=1)
    assert runner.calls[0]["keep"] == "never"
    store = Store(pytester.path / "results.db")
    [run] = store.list_runs()
    assert run["experiment"] == "tiny" and run["status"] == "passed" and run["exit_code"] == 0
    assert f"run {run['id']} passed (1 cell); details: lab show {run['id']}" in \
        result.stdout.str()


def test_a_failing_file_shows_the_expectation_in_domain_words(
        pytester: pytest.Pytester, fake_runner: Callable[..., FakeRunner]) -> None:
    fake_runner(gap=2.5)
    pytester.makefile(".exp", tiny=TINY)
    result = _run(pytester)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert f"tiny.exp:{TINY_DOWNTIME_LINE}:3: expect downtime(writes) < 1s" in out
    assert re.search(r"FAIL downtime\(writes\)\.max = 2\.5\d s \(1 outage window\); "
                     r"expected < 1s: fails", out)
    assert "resolution: ± 10.0 ms (one operation of 'writes' every 10.0 ms" in out
    assert "errors(writes)" not in out  # it held: not listed
    assert "Traceback" not in out and "CellNotPassed" not in out and "raise " not in out
    [run] = Store(pytester.path / "results.db").list_runs()
    assert run["status"] == "failed" and run["exit_code"] == 1
    assert f"details: lab show {run['id']}" in out


def test_a_cell_that_could_not_complete_shows_the_engines_error(
        pytester: pytest.Pytester, fake_runner: Callable[..., FakeRunner]) -> None:
    fake_runner(status="error", error="db1: exited while waiting for SQL\n--- last lines of "
                                      "/x/error.log ---\n[ERROR] Can't open the mysql.plugin")
    pytester.makefile(".exp", tiny=TINY)
    result = _run(pytester)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "tiny could not complete" in out
    assert "error: db1: exited while waiting for SQL" in out
    assert "[ERROR] Can't open the mysql.plugin" in out and "Traceback" not in out
    [run] = Store(pytester.path / "results.db").list_runs()
    assert run["status"] == "error" and run["exit_code"] == 3


def test_the_cells_of_a_file_make_one_run(
        pytester: pytest.Pytester, fake_runner: Callable[..., FakeRunner]) -> None:
    runner = fake_runner()
    pytester.makefile(".exp", matrix=MATRIX, tiny=TINY)
    _run(pytester, "-k", "rep1 or tiny").assert_outcomes(passed=5, deselected=4)
    matrix_runs = {c["run_id"] for c in runner.calls[:4]}
    assert len(matrix_runs) == 1 and runner.calls[4]["run_id"] not in matrix_runs
    assert [c["cell"] for c in runner.calls] == [1, 3, 5, 7, 1]
    runs = {r["experiment"]: r for r in Store(pytester.path / "results.db").list_runs()}
    assert set(runs) == {"matrix", "tiny"}
    assert all(r["status"] == "passed" for r in runs.values())


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_random_order_keeps_each_file_s_cells_together_and_in_order(
        pytester: pytest.Pytester, fake_runner: Callable[..., FakeRunner], seed: int) -> None:
    """pytest-randomly shuffles the items: a file's cells still run side by side, in their
    order, as one run (its claims after them), wherever the file lands."""
    runner = fake_runner()
    pytester.makefile(".exp", matrix=MATRIX, tiny=TINY)
    pytester.makepyfile(test_plain="def test_a(): pass\ndef test_b(): pass\n")
    _run(pytester, "-p", "randomly", f"--randomly-seed={seed}").assert_outcomes(passed=11)
    by_run: dict[str, list[int]] = {}
    for c in runner.calls:
        by_run.setdefault(c["run_id"], []).append(c["cell"])
    assert sorted(by_run.values(), key=len) == [[1], list(range(1, 9))]
    ids = [c["run_id"] for c in runner.calls]
    assert all(ids.index(r) + len(cells) - 1 == len(ids) - 1 - ids[::-1].index(r)
               for r, cells in by_run.items())  # each file's cells one after the other


def test_lab_keep_keeps_failed_cells_and_says_how_to_take_them_down(
        pytester: pytest.Pytester, fake_runner: Callable[..., FakeRunner]) -> None:
    runner = fake_runner(gap=2.5)
    pytester.makefile(".exp", tiny=TINY)
    result = _run(pytester, "--lab-keep")
    assert runner.calls[0]["keep"] == "failed"
    run_id = runner.calls[0]["run_id"]
    assert f"`lab down {run_id}` takes them down" in result.stdout.str()


def test_a_missing_component_skips_with_the_reason_at_the_file(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = FakeRunner()
    monkeypatch.setattr(cell_run, "run_cell", runner)
    monkeypatch.setattr(cell_run, "why_not_runnable",
                        lambda plan: "haproxy is not installed: apt-get install -y haproxy")
    pytester.makefile(".exp", tiny=TINY)
    result = _run(pytester, "-rs")
    result.assert_outcomes(skipped=1)
    assert "SKIPPED [1] tiny.exp:1: haproxy is not installed: apt-get install -y haproxy" in \
        result.stdout.str()
    assert runner.calls == []
    assert Store(pytester.path / "results.db").list_runs() == []  # nothing started


def test_a_database_that_cannot_be_opened_fails_the_item_in_one_line(
        pytester: pytest.Pytester, fake_runner: Callable[..., FakeRunner]) -> None:
    fake_runner()
    pytester.makefile(".exp", tiny=TINY)
    bad = pytester.path / "not-a-db"
    bad.write_bytes(b"this is not sqlite" * 100)
    result = pytester.runpytest(*PLUGIN, "--lab-db", str(bad))
    result.assert_outcomes(failed=1)
    assert f"Error: results database {bad} is unreadable" in result.stdout.str()


def test_what_needs_root_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    from dsl.api import plan_text

    disk = TINY.replace("at 1s kill db1", "at 1s disk full db1").replace(
        "at 3s start db1", "at 3s disk free db1")
    plan = plan_text(disk)
    assert cell_run.root_needs(plan) == ["'disk full db1' (the lab mounts a tmpfs)"]
    monkeypatch.setattr(cell_run.os, "geteuid", lambda: 1000)
    monkeypatch.setattr("runners.topology.check_components", lambda plan: None)
    assert cell_run.why_not_runnable(plan) == \
        "needs root: 'disk full db1' (the lab mounts a tmpfs)"
    monkeypatch.setattr(cell_run.os, "geteuid", lambda: 0)
    assert cell_run.why_not_runnable(plan) is None


# --- the fixture (with a fake topology) --------------------------------------------------------


class FakeTopology:
    """What the fixture needs of a deployed topology; its process primitives are logged."""

    def __init__(self, log: Path, cell: Cell) -> None:
        self.log_file = log
        self.app = Credentials("lab_app", "pw-app")
        self.admin = Credentials("lab_admin", "pw-admin")
        self.nodes = {n.name: SimpleNamespace(index=n.index, pid=lambda: None)
                      for n in cell.nodes}
        self.plan = SimpleNamespace(topology="replication")
        self.primary = "db1"
        self.router = None
        self.toxi = None

    def _log(self, line: str) -> None:
        with self.log_file.open("a") as f:
            f.write(line + "\n")

    def endpoints(self) -> dict[str, str]:
        return {name: str(self.address(name)) for name in [*self.nodes, "router.writer"]}

    def address(self, name: str) -> Address:
        if name == "router.writer":
            return Address("127.0.0.1", 23090)
        return Address("127.0.0.1", 23000 + self.nodes[name].index)

    def kill(self, name: str) -> None:
        self._log(f"kill {name}")

    def start(self, name: str, options: dict[str, str] | None = None) -> None:
        self._log(f"start {name}")

    def teardown(self) -> float:
        self._log("teardown")
        return 0.0


@pytest.fixture
def fake_deploy(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The fixture's deploy replaced by a FakeTopology logging to the returned file."""
    log = tmp_path / "topology.log"
    log.write_text("")
    monkeypatch.setenv("LAB_RUNTIME", str(tmp_path / "rt"))
    monkeypatch.setattr(pytest_fixture, "deploy", lambda plan, cell, run: FakeTopology(log, cell))
    return log


def test_the_fixture_tears_down_after_the_test_raised(
        pytester: pytest.Pytester, fake_deploy: Path) -> None:
    pytester.makefile(".exp", tiny=TINY)
    pytester.makepyfile(test_app="""
        def test_app(lab_topology):
            topo = lab_topology("tiny.exp")
            assert topo.endpoints["db2"].port == 23002
            assert topo.endpoints["db2"].connect_args()["user"] == "lab_app"
            topo.fault("kill db2")
            assert [op.f for op in topo.history] == ["kill", "kill"]  # invoke, ok
            raise RuntimeError("the application broke")
    """)
    result = pytester.runpytest(*PLUGIN, "test_app.py")
    result.assert_outcomes(failed=1)
    assert "RuntimeError: the application broke" in result.stdout.str()
    assert fake_deploy.read_text().splitlines() == ["kill db2", "teardown"]
    assert not any((fake_deploy.parent / "rt").glob("*/run.json"))  # the run directory too


def test_the_fixture_takes_inline_text_and_tears_down_every_topology(
        pytester: pytest.Pytester, fake_deploy: Path) -> None:
    pytester.makepyfile(test_app=f"TEXT = {TINY!r}\n" + textwrap.dedent("""
        def test_two(lab_topology):
            lab_topology(text=TEXT)
            lab_topology(text=TEXT, cell=1)
    """))
    pytester.runpytest(*PLUGIN).assert_outcomes(passed=1)
    assert fake_deploy.read_text().splitlines() == ["teardown", "teardown"]


def test_a_cell_the_experiment_does_not_have_fails_in_one_line(
        pytester: pytest.Pytester, fake_deploy: Path) -> None:
    pytester.makepyfile(test_app=f"TEXT = {TINY!r}\n" + textwrap.dedent("""
        def test_app(lab_topology):
            lab_topology(text=TEXT, cell=5)
    """))
    result = pytester.runpytest(*PLUGIN, "test_app.py")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "<text>: lab_topology(cell=5): the experiment has 1 cell: give cell=1" in out
    assert "Traceback" not in out and "ValueError" not in out


def test_a_bad_fault_fails_the_test_with_the_language_message(
        pytester: pytest.Pytester, fake_deploy: Path) -> None:
    pytester.makefile(".exp", tiny=TINY)
    pytester.makepyfile(test_app="""
        def test_app(lab_topology):
            lab_topology("tiny.exp").fault("kill db7")
    """)
    result = pytester.runpytest(*PLUGIN, "test_app.py")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "<action>:1:6: error: unknown node 'db7' (known: db1, db2)" in out
    assert "    kill db7\n         ^^^" in out
    assert "Traceback" not in out and "During handling" not in out
    assert fake_deploy.read_text().splitlines() == ["teardown"]


def test_the_fixture_skips_when_a_component_is_missing(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LAB_RUNTIME", str(tmp_path / "rt"))
    monkeypatch.setattr(cell_run, "why_not_runnable",
                        lambda plan: "dbdeployer is not installed: make bootstrap")
    pytester.makefile(".exp", tiny=TINY)
    pytester.makepyfile(test_app="""
        def test_app(lab_topology):
            lab_topology("tiny.exp")
    """)
    result = pytester.runpytest(*PLUGIN, "-rs", "test_app.py")
    result.assert_outcomes(skipped=1)
    assert "dbdeployer is not installed: make bootstrap" in result.stdout.str()


def test_operations_of_the_test_are_recorded_and_checked(
        fake_deploy: Path, tmp_path: Path) -> None:
    topo = pytest_fixture.open_topology(text=TINY)
    try:
        with topo.operation("write", endpoint="db1", key=1, value=1, workload="app"):
            pass
        with topo.operation("write", endpoint="db1", key=2, value=2, workload="app",
                            suppress=True):
            raise TimeoutError("no answer")  # unknown outcome: info
        with topo.operation("write", endpoint="db1", key=3, value=3, workload="app") as op3:
            op3.fail(1213, "deadlock")
        with pytest.raises(ValueError):
            with topo.operation("read", endpoint="db1", key=1, workload="app"):
                raise ValueError("bug in the test's code")
        kinds = [(o.type, o.key) for o in topo.history]
        assert kinds == [("invoke", 1), ("ok", 1), ("invoke", 2), ("info", 2),
                         ("invoke", 3), ("fail", 3), ("invoke", 1), ("info", 1)]
        assert topo.history[3].error_msg == "TimeoutError: no answer"
        assert topo.history[5].error == 1213
        results = topo.check({"app": "probe"})
        errors = results["errors"].metrics["subjects"]["app"]  # type: ignore[index]
        assert errors["total"] == 3 and errors["by_code"]["1213"] == 1  # type: ignore[index]
        assert results["downtime"].metrics["subjects"]["app"]["count"] == 1  # type: ignore[index]
    finally:
        topo.close()
    assert fake_deploy.read_text().splitlines() == ["teardown"]
    topo.close()  # twice is fine
    assert fake_deploy.read_text().splitlines() == ["teardown"]


# --- the docs ----------------------------------------------------------------------------------

DOC = (ROOT / "docs" / "pytest.md").read_text(encoding="utf-8")


def test_the_docs_python_example_runs(
        pytester: pytest.Pytester, fake_deploy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fixture example of docs/pytest.md, run against the fake topology and a fake
    MySQLdb connection: the API it shows is the API there is."""
    import MySQLdb

    statements: list[str] = []
    cursor = SimpleNamespace(execute=lambda sql, args=None: statements.append(sql))
    monkeypatch.setattr(MySQLdb, "connect",
                        lambda **kw: SimpleNamespace(cursor=lambda: cursor, kw=kw))
    [body] = re.findall(r"```python\n(.*?)```", DOC, re.S)
    (pytester.path / "experiments").mkdir()
    (pytester.path / "experiments" / "quickstart.exp").write_text(
        (ROOT / "experiments" / "quickstart.exp").read_text())
    pytester.makepyfile(test_doc=body)
    result = pytester.runpytest(*PLUGIN, "test_doc.py")
    result.assert_outcomes(passed=1)
    assert fake_deploy.read_text().splitlines() == ["kill db2", "start db2", "teardown"]
    assert len(statements) == 102  # two CREATE, 100 INSERT


def test_the_docs_show_every_option_and_the_id_scheme() -> None:
    for text in ("--lab-keep", "--lab-db", "-m failover", "lab_topology(",
                 ".fault(", ".heal(", ".operation(", ".check(", ".endpoints",
                 "matrix.exp::fast-clients=4-rep2", "-p no:lab.pytest_plugin"):
        assert text in DOC, text
    readme = (ROOT / "README.md").read_text()
    assert "docs/pytest.md" in readme


def test_the_plugin_is_registered_for_pytest() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["pytest11"] == {"lab.pytest_plugin": "lab.pytest_plugin"}



# --- claims across cells -----------------------------------------------------------------------

CLAIMED = """\
experiment "claimed" {
  duration 5s
  topology single { engine mariadb  node db1 }
  variant short { }
  variant long { }
  workload writes: probe {
    target db1
    every 10ms
  }
  expect downtime(writes) in long >= 2 × downtime(writes) in short
}
"""


@pytest.mark.parametrize("gaps,outcome", [({"short": 0.5, "long": 2.0}, "passed"),
                                          ({"short": 1.5, "long": 2.0}, "failed")])
def test_claims_across_cells_are_an_item_judged_after_the_cells(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
        gaps: dict[str, float], outcome: str) -> None:
    from lab.judge.claims import measure_sides

    def runner(plan: Plan, cell: Cell, store: Store, run_id: str,
               view: View | None = None, keep: str = "never") -> CellOutcome:
        out = CellOutcome(cell)
        out.results, ctx = _probe_results(gaps[str(cell.variant)])
        out.expectations = evaluate_all(plan.expectations, out.results, ctx,
                                        variant=cell.variant)
        out.claim_sides = measure_sides(plan, cell, out.results, ctx)
        out.status = "passed"
        return out

    monkeypatch.setattr(cell_run, "run_cell", runner)
    monkeypatch.setattr(cell_run, "why_not_runnable", lambda plan: None)
    pytester.makefile(".exp", claimed=CLAIMED)
    result = _run(pytester, "-rA")
    if outcome == "passed":
        result.assert_outcomes(passed=3)
    else:
        result.assert_outcomes(passed=2, failed=1)
        result.stdout.fnmatch_lines(["*FAIL expect downtime(writes) in long >= 2 × *"])
    assert "claimed.exp::claims" in result.stdout.str()
