"""The ``lab_topology`` fixture: a real topology for a Python test that drives its own
application code against a database that fails.

``lab_topology("experiments/quickstart.exp")`` (or ``lab_topology(text="experiment ...")``,
``cell=N`` for another cell of the matrix) brings up the topology of the experiment's cell and
returns a ``LabTopology``:

- ``endpoints``: name (``db1``, ``router.writer`` ...) -> ``Endpoint`` (host, port, the
  application user and password; ``connect_args()``, ``dsn``); ``admin``: the lab's own user;
- ``fault("kill db2")``: one action of the language, checked against the experiment and
  applied as the timeline applies it (``fault.nemesis``); ``heal()`` undoes what is still in
  force, as at the end of a run;
- ``operation("write", endpoint=..., key=..., value=...)``: a context manager recording the
  test's own operation in the history (``invoke``, then ``ok``; an exception: ``fail`` when the
  statement was never sent, else ``info``, "we don't know"); ``history``: every operation and
  fault so far; ``check()``: the lab's checkers over that history (downtime, errors ...).

Every topology the test brought up is torn down when the test ends, also when it raised.
A missing component or a fault that needs root skips the test with the one-line reason; an
experiment with errors fails it with the language's messages.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from dsl.plan import Cell, Plan
    from fault.nemesis import Nemesis
    from lab.judge.checkers import CheckResult
    from lab.run.recorder import Recorder
    from runners.mysql import Credentials
    from runners.ops import Op, OpType
    from runners.runtime import Run
    from runners.topology import Topology

__all__ = ["Endpoint", "LabTopology", "Operation", "deploy", "lab_topology", "open_topology"]


@dataclass(frozen=True)
class Endpoint:
    """Where a client connects, as the application user."""

    name: str
    host: str
    port: int
    user: str
    password: str

    @property
    def dsn(self) -> str:
        return f"mysql://{self.user}:{self.password}@{self.host}:{self.port}/"

    def connect_args(self) -> dict[str, Any]:
        """Keyword arguments for ``MySQLdb.connect`` / ``pymysql.connect``."""
        return {"host": self.host, "port": self.port, "user": self.user,
                "password": self.password}


@dataclass
class Operation:
    """What the test says about an operation it records: the value it read, or that it
    definitely failed (``fail(...)``)."""

    value: Any = None
    failed: bool = False
    error: int | None = None
    error_msg: str | None = None

    def fail(self, error: int | None = None, message: str | None = None) -> None:
        self.failed, self.error, self.error_msg = True, error, message


def _deploy(plan: Plan, cell: Cell, run: Run) -> Topology:
    """``Topology.deploy``, after saying why the plan cannot run here, if it cannot
    (``NotRunnable``: a missing component, a fault that needs root)."""
    from lab.run.cell_run import ensure_runnable
    from runners.topology import Topology

    ensure_runnable(plan)
    return Topology.deploy(plan, cell, run)


# The function that brings a cell's topology up (tests replace it with a fake).
deploy: Callable[[Plan, Cell, Run], Topology] = _deploy


@dataclass
class LabTopology:
    """A running topology of one experiment's cell, for a test."""

    plan: Plan
    cell: Cell
    source: str  # the experiment's text (``fault`` checks actions against it)
    path: str
    topology: Topology
    run: Run
    recorder: Recorder
    nemesis: Nemesis
    endpoints: dict[str, Endpoint] = field(default_factory=dict)
    closed: bool = False
    _process: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def run_id(self) -> str:
        return self.run.id

    @property
    def admin(self) -> Credentials:
        return self.topology.admin

    @property
    def history(self) -> list[Op]:
        return self.recorder.history

    # --- faults ------------------------------------------------------------------------------
    def fault(self, action: str) -> dict[str, Any]:
        """Apply one action of the language (``kill db2``, ``pause db1``, ``network latency
        db3 200ms``, ``wait until db2 caught_up``) and return what it reports. The fault goes
        into the history. A bad action fails the test with the language's message."""
        from dsl.action_text import ACTION_PATH, parse_action
        from dsl.api import format_errors
        from dsl.errors import LanguageErrors

        try:
            parsed = parse_action(action, self.source, self.path)
        except LanguageErrors as e:
            failed = format_errors(e.errors, {ACTION_PATH: action.strip()})
        else:
            return self.nemesis.apply(parsed)
        pytest.fail(failed, pytrace=False)

    def heal(self) -> list[str]:
        """Undo every fault still in force (resume, heal links, start nodes, start
        replication), as a run does after its timeline; returns what was done."""
        return self.nemesis.heal_all()

    # --- the test's own operations ------------------------------------------------------------
    @contextlib.contextmanager
    def operation(self, f: str, *, endpoint: str = "", key: int | None = None,
                  value: Any = None, workload: str = "test", process: int | None = None,
                  suppress: bool = False) -> Iterator[Operation]:
        """Record one operation of the test: ``invoke`` now; ``ok`` when the block ends
        normally (with ``op.value`` for a read); ``fail`` when the block called ``op.fail()``
        or raised an error that never reached the server; else ``info`` for an exception (we
        do not know whether it happened). ``suppress=True`` records the exception and does
        not re-raise it."""
        from runners.mysql import error_code
        from runners.ops import never_sent

        if process is None:
            with self._lock:
                self._process += 1
                process = self._process
        inv = self.recorder.invoke(f, process, workload=workload, endpoint=endpoint, key=key,
                                   value=value)
        op = Operation()
        try:
            yield op
        except Exception as e:
            code = op.error if op.failed else error_code(e)
            msg = op.error_msg if op.failed else f"{type(e).__name__}: {e}"[:500]
            kind: OpType = "fail" if op.failed or never_sent(code, msg) else "info"
            self.recorder.complete(inv, kind, error=code, error_msg=msg)
            if not suppress:
                raise
            return
        if op.failed:
            self.recorder.complete(inv, "fail", error=op.error, error_msg=op.error_msg)
        else:
            self.recorder.complete(inv, "ok", value=op.value)

    def check(self, kinds: Mapping[str, str] | None = None) -> dict[str, CheckResult]:
        """The lab's checkers over the history so far. ``kinds``: workload -> kind
        (``probe``, ``unique_writes``, ``read_your_writes`` ...) where a checker needs it."""
        from lab.judge.checkers import CheckContext, WorkloadInfo, run_checkers

        history = self.history
        names: dict[str, set[str]] = {}
        for op in history:
            if not op.is_fault():
                names.setdefault(op.workload, set()).add(op.endpoint)
        ctx = CheckContext(
            workloads={w: WorkloadInfo((kinds or {}).get(w, ""), tuple(sorted(eps)))
                       for w, eps in names.items()},
            samples=self.recorder.samples,
        )
        return run_checkers(history, ctx)

    # --- the end -----------------------------------------------------------------------------
    def close(self) -> None:
        """Tear everything down (also what the faults left); safe to call twice."""
        if self.closed:
            return
        self.closed = True
        from lab.run import gc_guard

        try:
            try:
                self.topology.teardown()
            finally:
                self.run.close()
                with contextlib.suppress(Exception):
                    self.recorder.close()
        finally:
            gc_guard.release()


def _resolve(path: str | Path, config: pytest.Config | None) -> Path:
    """A relative path: from the current directory, else from pytest's rootdir."""
    p = Path(path)
    if p.is_absolute() or p.exists() or config is None:
        return p
    under_root = Path(config.rootpath) / p
    return under_root if under_root.exists() else p


def open_topology(path: str | Path | None = None, *, text: str | None = None, cell: int = 1,
                  config: pytest.Config | None = None) -> LabTopology:
    """Bring up the topology of an experiment's cell (a file, or the text of one)."""
    from dsl.api import format_errors, parse_text
    from dsl.compile import compile_experiment
    from dsl.errors import LanguageErrors
    from dsl.plan import Plan
    from fault.nemesis import Nemesis
    from lab.run import gc_guard
    from lab.run.cell_run import NotRunnable
    from lab.run.recorder import Recorder
    from runners.components import MissingComponent
    from runners.errors import ComponentError
    from runners.runtime import Run

    if (path is None) == (text is None):
        raise TypeError("lab_topology() takes an .exp path or text=..., not both")
    if text is not None:
        where, source = "<text>", text
    else:
        resolved = _resolve(path, config)  # type: ignore[arg-type]
        where = str(path)
        try:
            source = resolved.read_text(encoding="utf-8")
        except OSError as e:
            source, unreadable = "", f"{where}: error: cannot read: {e.strerror or e}"
        else:
            unreadable = ""
        if unreadable:
            pytest.fail(unreadable, pytrace=False)
    try:
        plan = compile_experiment(parse_text(source, where))
    except LanguageErrors as e:
        wrong: str | None = format_errors(e.errors, {where: source})
    else:
        wrong = None
    if wrong:
        pytest.fail(wrong, pytrace=False)
    if not 1 <= cell <= len(plan.cells):
        n = len(plan.cells)
        pytest.fail(f"{where}: lab_topology(cell={cell}): the experiment has "
                    f"{n} cell{'s' if n != 1 else ''}: give cell=1" + (f" to {n}" if n > 1 else ""),
                    pytrace=False)
    the_cell = plan.cells[cell - 1]
    run = Run(experiment=plan.name, meta={"owner": "pytest"})
    skip = fail = None
    try:
        topo = deploy(plan, the_cell, run)
    except (NotRunnable, MissingComponent) as e:
        skip = str(e)
    except ComponentError as e:
        fail = str(e)
    except BaseException:
        run.close()
        raise
    if skip is not None or fail is not None:
        run.close()
        if skip is not None:
            pytest.skip(skip)
        pytest.fail(str(fail), pytrace=False)
    recorder = Recorder(None)
    endpoints = {}
    for name in topo.endpoints():
        addr = topo.address(name)
        endpoints[name] = Endpoint(name, addr.host, addr.port, topo.app.user, topo.app.password)
    # The plan and cell as deployed (ports of the run's block), when the topology has them.
    deployed = getattr(topo, "plan", None)
    if isinstance(deployed, Plan):
        plan = deployed
        the_cell = next((c for c in plan.cells if c.index == the_cell.index), the_cell)
    made = LabTopology(plan, the_cell, source, where, topo, run, recorder,
                       Nemesis(topo, recorder.record), endpoints)
    gc_guard.hold()  # until close(): no collector scan of the history stops the test's clients
    return made


@pytest.fixture
def lab_topology(request: pytest.FixtureRequest) -> Iterator[Callable[..., LabTopology]]:
    """A factory: ``lab_topology("file.exp")`` or ``lab_topology(text=...)``, ``cell=N``.
    Every topology it brought up is torn down when the test ends, whatever happened."""
    made: list[LabTopology] = []

    def make(path: str | Path | None = None, *, text: str | None = None,
             cell: int = 1) -> LabTopology:
        topo = open_topology(path, text=text, cell=cell, config=request.config)
        made.append(topo)
        return topo

    try:
        yield make
    finally:
        failures: list[BaseException] = []
        for topo in reversed(made):
            try:
                topo.close()
            except Exception as e:  # noqa: BLE001 - the others are torn down too
                failures.append(e)
        if failures:
            raise failures[0]
