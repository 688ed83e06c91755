"""A stored run whose cells are run one at a time by the caller: the pytest plugin runs each
cell of an experiment as one test item, and all the items of a file make one run in the
results database (``lab show RUN`` shows it like a run of ``lab run``).

``PlanRun(plan, store)``: ``run_cell(cell)`` creates the run on the first call and runs one
cell (``run_cell``, the module function, on a fresh topology: ``lab.run.engine.CellRunner``);
``finish()`` stores the run's status and summary, the same way ``lab.run.engine.run_plan`` does
(``conclude``). ``why_not_runnable(plan)`` says in one line why a plan cannot run on this
machine (a missing component, a fault that needs root), before anything starts.

Keeping servers (``keep``): ``"never"`` tears every cell down; ``"failed"`` keeps a cell that
failed or could not complete up for inspection (``lab down RUN`` takes it down) and tears a
passed one down; ``"always"`` is ``lab run --keep``.
"""

from __future__ import annotations

import os
from typing import Literal

from dsl.models import DiskFault, DropCaches, NetworkFault
from dsl.plan import Cell, Plan
from lab.run.cell_store import STORE_ERRORS, finish_without_store
from lab.run.context import run_context
from lab.run.outcome import CellOutcome, RunOutcome, View, conclude
from lab.run.summary import summary
from lab.store.db import Store
from lab.store.errors import StoreUnavailable

Keep = Literal["never", "failed", "always"]


def root_needs(plan: Plan) -> list[str]:
    """What in the plan needs root (each as a short phrase); empty when nothing does."""
    out: list[str] = []
    for a in plan.actions():
        if isinstance(a, DiskFault) and a.verb == "full":
            where = " binlog" if a.target == "binlog" else ""
            out.append(f"'disk full {a.node.name}{where}' (the lab mounts a tmpfs)")
        elif isinstance(a, DropCaches) and a.node is None:
            out.append("'drop caches' of the whole OS page cache")
        elif isinstance(a, NetworkFault) and a.verb == "partition" and (
            a.link == "group" or (plan.topology == "galera" and a.link == "all")
        ):
            node = f" {a.node.name}" if a.node else ""
            out.append(f"'network partition{node}' of Galera group traffic (iptables)")
    return list(dict.fromkeys(out))


def why_not_runnable(plan: Plan) -> str | None:
    """One line saying why the plan cannot run here (a missing component and how to get it, a
    fault that needs root), or None. Nothing is started."""
    from runners.components import MissingComponent
    from runners.errors import ComponentError
    from runners.topology import check_components

    try:
        check_components(plan)
    except (MissingComponent, ComponentError) as e:
        return str(e).splitlines()[0] if str(e) else type(e).__name__
    needs = root_needs(plan)
    if needs and os.geteuid() != 0:
        return f"needs root: {', '.join(needs)}"
    return None


class NotRunnable(Exception):
    """The plan cannot run on this machine; ``str()`` is the one-line reason."""


def ensure_runnable(plan: Plan) -> None:
    """``NotRunnable`` with the reason when ``why_not_runnable`` has one."""
    reason = why_not_runnable(plan)
    if reason:
        raise NotRunnable(reason)


def run_cell(plan: Plan, cell: Cell, store: Store, run_id: str, view: View | None = None,
             keep: Keep = "never") -> CellOutcome:
    """One cell of a stored run, on a fresh topology, stored like a cell of ``lab run``."""
    from lab.run.engine import CellRunner

    runner = CellRunner(plan, cell, store, run_id, view or View(), keep=keep != "never")
    try:
        out = runner.run()
    except KeyboardInterrupt:
        if keep == "failed":
            _tear_down(runner)
        raise
    if keep == "failed" and out.status == "passed":
        _tear_down(runner)
    return out


def _tear_down(runner: object) -> None:
    """Tear down a cell the runner kept (its topology, then its run directory)."""
    topo = getattr(runner, "topo", None)
    if topo is None:
        return
    topo.teardown()
    run = getattr(topo, "run", None)
    if run is not None:
        run.close()


class PlanRun:
    """One run in the results database, its cells run one by one by the caller."""

    def __init__(self, plan: Plan, store: Store, view: View | None = None) -> None:
        self.plan, self.store = plan, store
        self.view = view or View()
        self.outcome: RunOutcome | None = None
        self.finished = False

    @property
    def run_id(self) -> str | None:
        return self.outcome.run_id if self.outcome else None

    def start(self) -> str:
        """Create the run (once); ``StoreUnavailable`` when the database cannot take it."""
        if self.outcome is None:
            try:
                run_id = self.store.create_run(self.plan.name, self.plan.source,
                                                context=run_context(self.plan))
            except STORE_ERRORS as e:
                raise StoreUnavailable.of(self.store.path, e, writing=True) from e
            self.outcome = RunOutcome(run_id, self.plan)
        return self.outcome.run_id

    def run_cell(self, cell: Cell, keep: Keep = "never") -> CellOutcome:
        run_id = self.start()
        assert self.outcome is not None
        try:
            out = run_cell(self.plan, cell, self.store, run_id, self.view, keep)
        except KeyboardInterrupt as e:
            from lab.run.engine import CellInterrupted

            self.outcome.status = "interrupted"
            if isinstance(e, CellInterrupted):  # what it measured so far is the run's too
                self.outcome.cells.append(e.cell)
            raise
        self.outcome.cells.append(out)
        return out

    def finish(self, interrupted: bool = False) -> RunOutcome | None:
        """Store the run's status and summary (once); None when no cell was run."""
        if self.outcome is None or self.finished:
            return self.outcome
        self.finished = True
        if interrupted:
            self.outcome.status = "interrupted"
        outcome = conclude(self.outcome)
        try:
            self.store.finish_run(outcome.run_id, outcome.status, outcome.exit_code,
                                  summary=summary(outcome), message=outcome.message)
        except STORE_ERRORS as e:
            finish_without_store(outcome, self.store, e)
        return outcome
