"""The pytest plugin: ``.exp`` experiment files as tests, and the ``lab_topology`` fixture.

Registered through the ``pytest11`` entry point (``pyproject.toml``) under its public name
``lab.pytest_plugin``, the module that loads this one, so ``pytest experiments/`` runs the
catalogue once the package is installed; ``-p lab.pytest_plugin`` loads it explicitly, ``-p
no:lab.pytest_plugin`` turns it off. docs/pytest.md is the user's guide.

- ``pytest_collect_file`` -> ``ExpFile`` (one per ``.exp`` file) -> one ``ExpItem`` per cell of
  the compiled plan (variant x sweep values x repeat), named for what it runs:
  ``quickstart.exp::quickstart``, ``relay-log-recovery.exp::recovery_on``,
  ``io-capacity-sweep.exp::a2-threads=4-rep2`` (``cell_name``). The experiment's ``tags``
  become markers, registered as the file is collected (``pytest -m failover``, also under
  ``--strict-markers``); ``pytest --markers``, which collects nothing, lists the tags of the
  catalogue (``experiments/``) and of the ``.exp`` files under the paths given.
- A file that is not a valid experiment is a collection error showing the language's errors
  (``path:line:col: error: ...``, the source line, a caret, the hint), never a traceback.
- Running an item runs its cell on real servers (``lab.run.cell_run``): a missing component or a
  fault that needs root skips it with the one-line reason; the cells of a file make one run in
  the results database (``--lab-db``, default ``$LAB_HOME/results.db``), created by the first
  item that runs and finished when the file's last item is done (the file's teardown).
- A failed item shows every expectation that did not hold, in the words of ``lab run``, with
  the measured value, its resolution and the ``file:line`` of its ``expect``
  (``lab.pytest.cell_failure``); a cell that could not complete shows the engine's error (with the
  tail of the component's log). ``--lab-keep`` keeps a failed cell's servers up.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from lab.pytest.fixture import lab_topology

if TYPE_CHECKING:
    from dsl.models import Experiment
    from dsl.plan import Cell, Plan
    from lab.run.cell_run import PlanRun
    from lab.store.db import Store

__all__ = ["CellNotPassed", "ClaimsItem", "ExpFile", "ExpItem", "cell_name", "lab_topology"]

# exploration and search as items (--lab-explore, --lab-search): lab/pytest/explore.py
pytest_plugins = ["lab.pytest.explore"]

_RUNS = pytest.StashKey[list["ExpFile"]]()
_SEQ = pytest.StashKey[int]()  # an item's place in its file (cells, then claims)
_LOOKS_LIKE_AN_EXPERIMENT = re.compile(r"\bexperiment\b")


# --- options and collection ------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("lab", "replica-chaos-lab experiments (.exp files)")
    group.addoption(
        "--lab-keep", action="store_true", default=False,
        help="keep the servers of a cell that failed up for inspection; `lab down RUN` takes "
             "them down after the session",
    )  # fmt: skip
    group.addoption(
        "--lab-db", default=None, metavar="PATH",
        help="results database the runs are stored in (default $LAB_HOME/results.db)",
    )  # fmt: skip


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_RUNS] = []
    if config.getoption("markers", default=False):  # pytest --markers collects nothing
        for tag in catalogue_tags(config):
            _register_marker(config, tag)


_TAG = r"[A-Za-z0-9_][A-Za-z0-9_.\-]*"  # the grammar's TAG
_TAGS_LINE = re.compile(rf"^\s*tags\s+({_TAG}(?:\s*,\s*{_TAG})*)", re.MULTILINE)
_SKIPPED_DIRS = frozenset({"node_modules", "__pycache__", "venv", "site-packages"})


def exp_files(roots: list[Path]) -> list[Path]:
    """The ``.exp`` files under ``roots`` (a file is itself), hidden directories and virtual
    environments left out."""
    out: list[Path] = []
    for root in roots:
        if root.is_file():
            out += [root] if root.suffix == ".exp" else []
            continue
        for d, dirs, files in os.walk(root):
            dirs[:] = sorted(x for x in dirs if not x.startswith(".") and x not in _SKIPPED_DIRS)
            out += [Path(d) / f for f in sorted(files) if f.endswith(".exp")]
    return out


def catalogue_tags(config: pytest.Config) -> list[str]:
    """The ``tags`` of the experiments ``pytest --markers`` should list: the catalogue
    (``experiments/`` under the root directory) and the ``.exp`` files under the paths given,
    read from their ``tags`` line (no parse: ``--markers`` must stay quick)."""
    roots = [config.rootpath / "experiments"]
    roots += [Path(a.split("::")[0]) for a in config.args if not a.startswith("-")]
    tags: list[str] = []
    for f in exp_files([r for r in roots if r.exists()]):
        try:
            text = f.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if not _LOOKS_LIKE_AN_EXPERIMENT.search(text):
            continue
        for m in _TAGS_LINE.finditer(text):
            tags += [t.strip() for t in m.group(1).split(",") if t.strip() not in tags]
    return tags


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> ExpFile | None:
    """Every ``.exp`` file under the paths pytest was given; not one that never says
    ``experiment`` (a Tcl Expect script shares the suffix)."""
    if file_path.suffix != ".exp":
        return None
    try:
        head = file_path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        head = "experiment"  # unreadable: collected, and the collection error says why
    if not _LOOKS_LIKE_AN_EXPERIMENT.search(head):
        return None
    return ExpFile.from_parent(parent, path=file_path)


def _shown_path(path: Path) -> str:
    """The path as the user would type it: relative to the current directory when below it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def cell_name(plan: Plan, cell: Cell) -> str:
    """The item name of a cell: its variant, its sweep values (``name=value``) and, when the
    experiment repeats, ``repN``, joined by ``-``; a plan of one plain cell: the experiment's
    name."""
    parts: list[str] = []
    if cell.variant:
        parts.append(cell.variant)
    parts += [f"{k}={v}" for k, v in cell.sweep.items()]
    if max(c.repeat for c in plan.cells) > 1:
        parts.append(f"rep{cell.repeat}")
    name = "-".join(parts) if parts else plan.name
    return re.sub(r"\s+|::|/", "_", name.strip('"')) or f"cell{cell.index}"


def _register_marker(config: pytest.Config, tag: str) -> bool:
    """Register an experiment tag as a marker (once); False when it cannot be one."""
    if not tag or tag.startswith("_"):
        return False
    known = {line.split(":")[0].split("(")[0].strip() for line in config.getini("markers")}
    if tag not in known:
        config.addinivalue_line("markers", f"{tag}: experiments tagged '{tag}' (lab)")
    return True


class ExpFile(pytest.File):
    """One ``.exp`` file: its items, and the one stored run they share."""

    plan: Plan
    experiment: Experiment

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.shown = _shown_path(self.path)
        self.run: PlanRun | None = None
        self.store: Store | None = None
        self.reason: str | None = None
        self.checked = False

    def collect(self) -> Iterator[pytest.Item]:
        from dsl.api import format_errors, load_experiment
        from dsl.compile import compile_experiment
        from dsl.compile_warnings import plan_warnings
        from dsl.errors import LanguageErrors

        shown = self.shown
        try:
            self.experiment = load_experiment(self.path)
            self.plan = compile_experiment(self.experiment)
        except LanguageErrors as e:
            errors = [dataclasses.replace(err, path=shown) if err.path == str(self.path)
                      else err for err in e.errors]  # fmt: skip
            raise self.CollectError(
                format_errors(errors, {shown: e.source} if e.source is not None else None)
            ) from None
        warnings = plan_warnings(self.plan, str(self.path))
        if warnings:
            warnings = [dataclasses.replace(w, path=shown) for w in warnings]
            text = self.path.read_text(encoding="utf-8", errors="replace")
            self.warn(LabPlanWarning(format_errors(warnings, {shown: text})))
        tags = [t for t in self.plan.tags if _register_marker(self.config, t)]
        names: set[str] = set()
        for cell in self.plan.cells:
            name = cell_name(self.plan, cell)
            if name in names:
                name = f"{name}-cell{cell.index}"
            names.add(name)
            item = ExpItem.from_parent(self, name=name, cell=cell)
            item.stash[_SEQ] = len(names)  # the cells' order
            for tag in tags:
                item.add_marker(tag)
            yield item
        # Cross-cell claims (``expect M in a >= 1.3 x M in b``: an expectation with ``other``)
        # are judged once every cell has run: one more item, after the cells.
        if any(getattr(e, "other", None) is not None for e in self.plan.expectations):
            claims = ClaimsItem.from_parent(self, name="claims")
            claims.stash[_SEQ] = len(self.plan.cells) + 1  # after every cell
            for tag in tags:
                claims.add_marker(tag)
            yield claims

    # --- the run the items share ----------------------------------------------------------
    def line_of(self, cell: Cell | None) -> int:
        """1-based line an item points at: its variant, else its first sweep, else the
        ``experiment`` line."""
        exp = self.experiment
        if cell is not None and cell.variant:
            for v in exp.variants:
                if v.name == cell.variant and v.span.line > 0:
                    return v.span.line
        if cell is not None and cell.sweep and exp.sweeps and exp.sweeps[0].span.line > 0:
            return exp.sweeps[0].span.line
        return max(exp.span.line, 1)

    def why_not_runnable(self) -> str | None:
        if not self.checked:
            from lab.run.cell_run import why_not_runnable

            self.reason = why_not_runnable(self.plan)
            self.checked = True
        return self.reason

    def plan_run(self) -> PlanRun:
        """The run of this file (made at the first item that runs), in the session's results
        database; ``CellNotPassed`` when the database cannot be opened or written."""
        if self.run is not None:
            return self.run
        from lab.run.cell_run import PlanRun

        self.store = session_store(self.config)
        self.run = PlanRun(self.plan, self.store)
        self.config.stash[_RUNS].append(self)
        return self.run

    def finish_run(self, interrupted: bool = False) -> None:
        if self.run is not None and not self.run.finished:
            try:
                self.run.finish(interrupted=interrupted)
            finally:
                if self.store is not None:
                    self.store.close()

    def teardown(self) -> None:
        """After the file's last item: the run's status and summary go to the database."""
        self.finish_run()


class LabPlanWarning(pytest.PytestWarning):
    """A valid experiment that probably does not measure what it means to (``lab check``
    prints the same warnings)."""


def session_store(config: pytest.Config) -> Store:
    """The session's results database (``--lab-db``, else the default), open and with room to
    write; ``CellNotPassed`` with the lab's one-line reason when it cannot be."""
    import sqlite3

    from lab.store.db import Store, default_db_path
    from lab.store.errors import StoreError, StoreUnavailable

    db = config.getoption("lab_db", None)
    path = Path(db) if db else default_db_path()
    try:
        store = Store(path)
        store.check_room()
    except (StoreError, sqlite3.Error, OSError) as e:
        raise CellNotPassed(f"Error: {StoreUnavailable.of(path, e)}") from None
    return store


class CellNotPassed(Exception):
    """A cell that failed or could not complete; ``str()`` is the whole text shown."""


class _LabItem(pytest.Item):
    """An item whose failure is shown in the lab's words (``CellNotPassed``), no traceback."""

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str | Any:
        if isinstance(excinfo.value, CellNotPassed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)


class ExpItem(_LabItem):
    """One cell of an experiment, run on real servers."""

    def __init__(self, *, cell: Cell, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cell = cell

    @property
    def exp_file(self) -> ExpFile:
        assert isinstance(self.parent, ExpFile)
        return self.parent

    def runtest(self) -> None:
        from lab.pytest.cell_failure import cell_failure_text
        from lab.store.errors import StoreUnavailable

        f = self.exp_file
        reason = f.why_not_runnable()
        if reason:
            pytest.skip(reason)
        plan_run = f.plan_run()
        keep = self.config.getoption("lab_keep")
        try:
            out = plan_run.run_cell(self.cell, keep="failed" if keep else "never")
        except StoreUnavailable as e:
            raise CellNotPassed(f"Error: {e}") from None
        run_id = plan_run.run_id
        if run_id:
            self.user_properties.append(("lab_run", run_id))
        if out.status == "passed":
            return
        db = self.config.getoption("lab_db")
        raise CellNotPassed(cell_failure_text(
            f.plan, out, f.shown, run_id, kept=bool(keep), db=db))  # fmt: skip

    def reportinfo(self) -> tuple[os.PathLike[str] | str, int | None, str]:
        """Its place; the domain is its name only, as a test function's is: pytest ``-v``
        shows the item id with the domain's dots turned into ``::``, so a domain with the
        file's name in it printed ``tiny::exp::tiny``, an id that selects nothing."""
        f = self.exp_file
        return self.path, f.line_of(self.cell) - 1, self.name


class ClaimsItem(_LabItem):
    """The cross-cell claims of an experiment (``expect X in a >= 1.3 × X in b``), judged
    after its cells as ``lab run`` judges them (``lab.judge.claims``)."""

    def runtest(self) -> None:
        from lab.judge.claims import CellSides, judge_claims

        assert isinstance(self.parent, ExpFile)
        run = self.parent.run
        if run is None or run.outcome is None or not run.outcome.cells:
            pytest.skip("no cell of this experiment ran: nothing to compare")
        outcome = run.outcome
        claims = judge_claims(self.parent.plan, [CellSides(c.cell, c.claim_sides)
                                                 for c in outcome.cells])
        bad = [c for c in claims if c.passed is not True]
        if bad:
            raise CellNotPassed("\n".join(
                f"{'FAIL' if c.passed is False else 'UNKNOWN'} {c.text}: {c.explanation}"
                for c in bad))

    def reportinfo(self) -> tuple[os.PathLike[str] | str, int | None, str]:
        assert isinstance(self.parent, ExpFile)
        return self.path, self.parent.line_of(None) - 1, self.name


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A file's items are one run: its cells in their order, then its claims, side by side,
    whatever reordered the items before (pytest-randomly, another plugin): each file's items
    go where its first one was put, in the file's order. Other items keep their places."""
    groups: dict[int, list[pytest.Item]] = {}
    for it in items:
        if isinstance(it, ExpItem | ClaimsItem):
            groups.setdefault(id(it.parent), []).append(it)
    if not groups:
        return
    out: list[pytest.Item] = []
    for it in items:
        if not isinstance(it, ExpItem | ClaimsItem):
            out.append(it)
            continue
        group = groups.pop(id(it.parent), None)
        if group is not None:  # the file's first item: all of them, in order
            out.extend(sorted(group, key=lambda i: i.stash.get(_SEQ, 0)))
    items[:] = out


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A skipped experiment points at its file (``-rs``), not at the plugin's code."""
    report = yield
    if isinstance(item, ExpItem | ClaimsItem) and report.skipped and \
            isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        _, _, reason = report.longrepr
        parent = item.parent
        assert isinstance(parent, ExpFile)
        line = parent.line_of(item.cell if isinstance(item, ExpItem) else None)
        report.longrepr = (parent.shown, line, reason)
    return report


# --- the end of the session ------------------------------------------------------------------


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A run whose file did not reach its teardown (``-x``, Ctrl-C) is finished here."""
    interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
    for f in session.config.stash.get(_RUNS, []):
        f.finish_run(interrupted=interrupted)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config
                            ) -> None:  # fmt: skip
    files = config.stash.get(_RUNS, [])
    done = [(f, f.run.outcome) for f in files if f.run is not None and f.run.outcome]
    if not done:
        return
    terminalreporter.section("lab runs")
    db = config.getoption("lab_db")
    db_arg = f" --db {db}" if db else ""
    for f, outcome in done:
        assert outcome is not None
        terminalreporter.line(f"{f.shown}: run {outcome.run_id} {outcome.status} "
                              f"({len(outcome.cells)} cell{'s' if len(outcome.cells) != 1 else ''}"
                              f"); details: lab show {outcome.run_id}{db_arg}")
