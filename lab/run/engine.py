"""The run: setup -> load + timeline -> stop -> heal -> settle -> final state -> check -> store
-> teardown (always, also on errors and Ctrl-C).

``run_plan(plan, store, view)`` executes every cell of the plan's matrix one after another, each
on a fresh topology, and returns a ``RunOutcome``. The history streams to SQLite while the run
goes; an interrupted run keeps what was recorded and is stored as ``interrupted``.

The engine is the lifecycle only; the pieces are beside it: ``lab.run.load`` (workloads, timeline,
samplers), ``lab.run.cell_facts`` (what is read from the servers for the checkers),
``lab.run.cell_store`` (storing, and what happens when the results database fails: exit 3 and the
fallback file), ``lab.run.summary`` (the JSON summary), ``lab.run.outcome`` (outcomes, exit codes,
the view). The run id of the results database names the run directory too
(``runtime.cell_dir_id``).
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
from collections.abc import Callable
from typing import Any

from dsl.actions import resolved_action
from dsl.models import Action
from dsl.plan import Cell, Plan
from fault.nemesis import ActionFailed, Nemesis
from lab.exits import EXIT_EXPECTATION, EXIT_INCOMPLETE, EXIT_LANGUAGE, EXIT_OK
from lab.history import fault_windows
from lab.judge.checkers import CheckContext, WorkloadInfo, run_checkers
from lab.judge.claims import measure_sides
from lab.judge.expectations import all_passed, evaluate_all, not_judged
from lab.run.cell_facts import SETTLE_TIMEOUT, CellFacts, relay_log_bytes
from lab.run.cell_logs import keep_logs, logs_dir
from lab.run.cell_store import (
    STOPPED_FOR_STORE,
    STORE_ERRORS,
    StoreFailed,
    check_recorder,
    finish_without_store,
    store_cell,
)
from lab.run.context import run_context
from lab.run.gc_guard import history_frozen
from lab.run.load import Load
from lab.run.outcome import CellOutcome, RunOutcome, View, conclude
from lab.run.recorder import Recorder
from lab.run.step import Stepper
from lab.run.summary import fault_timeline, report_figure, summary
from lab.store.db import Store
from lab.store.errors import StoreUnavailable
from runners.components import MissingComponent
from runners.errors import ComponentError
from runners.ops import Op
from runners.runtime import Run, cell_dir_id
from runners.topology import Topology

__all__ = [
    "EXIT_EXPECTATION", "EXIT_INCOMPLETE", "EXIT_LANGUAGE", "EXIT_OK", "SETTLE_TIMEOUT",
    "STOPPED_FOR_STORE", "STORE_ERRORS", "CellOutcome", "CellRunner", "RunOutcome",
    "StoreFailed", "View", "relay_log_bytes", "report_figure", "run_plan", "summary",
]

log = logging.getLogger(__name__)

# Set by the CLI's SIGINT/SIGTERM handler. A signal that lands inside a client library's call
# can surface as that library's error (a query cut short) instead of KeyboardInterrupt: the
# cell is still "interrupted", never an "error".
INTERRUPTED = threading.Event()


class CellInterrupted(KeyboardInterrupt):
    """Ctrl-C ended a cell: it is torn down and stored, and what it measured so far goes on
    with the interruption (``cell``) so that the run's summary shows it too (``lab run``,
    ``lab show``, ``lab compare``), not only the database."""

    def __init__(self, cell: CellOutcome) -> None:
        super().__init__()
        self.cell = cell


def run_plan(
    plan: Plan,
    store: Store,
    view: View | None = None,
    keep: bool = False,
    on_run_id: Callable[[str], None] | None = None,
    stepper: Stepper | None = None,
    run_id: str | None = None,
) -> RunOutcome:
    """``run_id``: the run's id when the caller chose it (lab explore names the schedule's
    file after it before the run starts); a new one otherwise."""
    view = view or View()
    try:
        run_id = store.create_run(plan.name, plan.source, run_id=run_id,
                                  context=run_context(plan))
    except STORE_ERRORS as e:  # nothing started yet
        raise StoreUnavailable.of(store.path, e, writing=True) from e
    if on_run_id:
        on_run_id(run_id)
    outcome = RunOutcome(run_id, plan)
    try:
        for cell in plan.cells:
            cell_out = CellRunner(plan, cell, store, run_id, view, keep=keep,
                                  stepper=stepper).run()
            outcome.cells.append(cell_out)
            if cell_out.status in ("error", "interrupted"):
                break
    except KeyboardInterrupt as e:
        outcome.status = "interrupted"
        if isinstance(e, CellInterrupted):
            outcome.cells.append(e.cell)
    conclude(outcome)
    try:
        store.finish_run(
            run_id, outcome.status, outcome.exit_code, summary=summary(outcome),
            message=outcome.message,
        )  # fmt: skip
    except STORE_ERRORS as e:
        finish_without_store(outcome, store, e)
    return outcome


class CellRunner:
    """One cell: bring up, prepare, load + timeline, heal, settle, final state, check, store,
    tear down."""

    def __init__(
        self, plan: Plan, cell: Cell, store: Store, run_id: str, view: View, keep: bool = False,
        stepper: Stepper | None = None,
    ) -> None:
        self.plan, self.cell, self.store, self.run_id = plan, cell, store, run_id
        self.view = view
        self.keep = keep
        self.stepper = stepper  # lab run --step (lab.run.step)
        self.out = CellOutcome(cell)
        self.stop = threading.Event()
        self.facts = CellFacts(plan)
        self.topo: Topology | None = None
        self.nemesis: Nemesis | None = None
        self.recorder: Recorder | None = None
        self.load: Load | None = None
        self._heal_ns: tuple[int, int] | None = None  # the end-of-run heal: (start, end)

    # --- the cell, start to end ------------------------------------------------------------
    def run(self) -> CellOutcome:
        store, cell = self.store, self.cell
        try:
            store.create_cell(
                self.run_id,
                cell.index,
                cell.label,
                variant=cell.variant,
                sweep=cell.sweep,
                repeat=cell.repeat,
            )
        except STORE_ERRORS as e:  # before any server of this cell starts
            failed = StoreUnavailable.of(store.path, e, writing=True)
            self.out.status = "error"
            self.out.error = self.out.store_error = f"{failed}; cell {cell.index} did not start"
            return self.out
        self.view.cell_started(self.plan, cell)
        self.recorder = Recorder(store.path, self.run_id, cell.index)
        run: Run | None = None
        interrupted = False
        try:
            t0 = time.monotonic()
            self.view.phase("starting the topology")
            run = Run(
                cell_dir_id(self.run_id, cell.index),
                experiment=self.plan.name,
                meta={"run": self.run_id, "cell": cell.index, "db": str(store.path)},
            )
            self.topo = Topology.deploy(self.plan, cell, run)
            self.out.timings["topology_ready"] = time.monotonic() - t0
            crashes = self.topo.router.start_crashes if self.topo.router else []
            if crashes:  # ProxySQL died while starting and was started once more
                self.out.notes.append(f"the router crashed while starting and was started "
                                      f"once more: {crashes[0]}")
            self.facts.topo = self.topo
            self.nemesis = Nemesis(self.topo, self._record)
            self.load = Load(self.plan, cell, self.topo, self.view, self.recorder, self.facts,
                             self._apply, self._check_store, self.stop, self.stepper)
            self.view.phase("preparing tables")
            self._prepare()
            self.facts.before_load()
            self._check_store()
            with history_frozen():  # no collector scan of the history stops the clients
                self.load.run()
                self._after_load()
        except KeyboardInterrupt:
            interrupted = True
            self.out.status = "interrupted"
            self.out.error = "interrupted (Ctrl-C)"
        except StoreFailed as e:  # the message is completed by store_cell()
            self.out.status = "error"
            self.out.error = str(e)
        except (ComponentError, MissingComponent, ActionFailed) as e:
            self.out.status = "error"
            self.out.error = str(e)
        except Exception as e:  # noqa: BLE001 - a bug must still tear down and keep data
            log.exception("run failed")
            self.out.status = "error"
            self.out.error = f"{type(e).__name__}: {e}"
        finally:
            if INTERRUPTED.is_set() and self.out.status == "error":
                interrupted = True  # the signal surfaced as another error: see INTERRUPTED
                self.out.status = "interrupted"
                self.out.error = "interrupted (Ctrl-C)"
            self.stop.set()
            if self.load is not None:
                self.load.stop_workloads()
            if self.nemesis is not None and not self.keep:
                try:
                    self.out.healed += self.nemesis.release()
                except Exception as e:  # noqa: BLE001 - teardown goes on
                    log.warning("could not delete the fault's iptables rules: %s", e)
            if self.topo is not None and self.out.status != "passed":
                self._keep_logs()
            if self.topo is not None and not self.keep:
                t = time.monotonic()
                self.topo.teardown()
                self.out.timings["teardown"] = time.monotonic() - t
            if run is not None and not self.keep:
                run.close()
            elif run is not None:
                run.set_state("kept", endpoints=self.topo.endpoints() if self.topo else {})
            if self.out.status in ("interrupted", "error") and self.recorder is not None:
                # Keep what was measured so far: check the partial history too, and judge
                # nothing on it (its expectations are unknown, with the reason).
                with contextlib.suppress(Exception):
                    self._check()
                self.out.expectations = not_judged(self.out.expectations, self._cut_short())
            store_cell(self.store, self.run_id, self.plan, self.out, self.recorder,
                       self._load_bounds())
        self.view.cell_finished(self.out)
        if interrupted:
            raise CellInterrupted(self.out)
        return self.out

    def _record(self, op: Op) -> Op:
        assert self.recorder is not None
        return self.recorder.record(op)

    def _cut_short(self) -> str:
        """Why a cell's expectations are not judged: how it ended and how much load it ran."""
        why = "interrupted" if self.out.status == "interrupted" else "stopped by an error"
        start = self.load.load_start if self.load is not None else None
        if start is None:
            return f"the cell was {why} before its load started"
        end = self.load.load_end if self.load is not None else None
        ran = ((end if end is not None else time.monotonic_ns()) - start) / 1e9
        return (f"the cell was {why} after {ran:.1f} s of its {self.plan.duration:g} s load "
                "(its figures cover part of the cell only)")

    def _check_store(self) -> None:
        """Stop the cell when the recorder could not write to the results database."""
        check_recorder(self.recorder, self.store)

    def _load_bounds(self) -> tuple[int | None, int | None]:
        if self.load is None:
            return None, None
        return self.load.load_start, self.load.load_end

    def _apply(self, a: Action, shown: str) -> dict[str, Any]:
        """One action of a step or the timeline, with the facts it needs around it; the op's
        value (``resolved``: the node ``router.writer`` named when it fired)."""
        assert self.nemesis is not None
        self.view.phase(shown)
        detail = self.nemesis.apply(a, before=self.facts.before_action)
        self.facts.after_action(resolved_action(a, detail))
        return detail

    # --- preparation ---------------------------------------------------------------------------
    def _prepare(self) -> None:
        assert self.load is not None
        if self.plan.topology == "mongodb_replset":
            if self.cell.workloads:
                raise ComponentError(
                    "workloads", "the lab's workloads speak MySQL only so far; a MongoDB "
                    "experiment can run its timeline (its faults are in the history) but not "
                    "workloads")
            return
        self.load.prepare()

    # --- after the load ---------------------------------------------------------------------------
    def _keep_logs(self) -> None:
        """The servers' logs of a cell that did not pass (``lab.run.cell_logs``)."""
        dest = logs_dir(self.store.path, self.run_id, self.cell.index)
        try:
            kept = keep_logs(self.topo, dest)
        except Exception as e:  # noqa: BLE001 - teardown goes on
            log.warning("could not keep the servers' logs: %s", e)
            return
        if kept:
            self.out.notes.append(f"the servers' logs of this cell are kept in {dest}")

    def _after_load(self) -> None:
        assert self.topo is not None and self.nemesis is not None
        # Missing transactions as the timeline left them, before healing: ``.before_heal``.
        self.facts.after_timeline()
        if not self.plan.leave_faults:
            self.view.phase("healing faults")
            healing = time.monotonic_ns()
            self.out.healed = self.nemesis.heal_all()
            self._heal_ns = (healing, time.monotonic_ns())  # the timeline shows it (``_check``)
        # nodes left paused cannot answer: the final state is read from the others
        self.facts.unavailable = self.nemesis.left_paused()
        self.view.phase("letting replication settle")
        t = time.monotonic()
        settled, why = self.facts.settle()
        self.out.timings["settle"] = time.monotonic() - t
        if not settled:
            self.out.notes.append(f"replication did not settle: {why}")
        if self.load is not None:
            self.out.notes.extend(self.load.slips)
            self._workload_exits()
        self.facts.after_settle(settled)
        self.view.phase("reading the final state")
        self.facts.read_final_state(list(self.cell.workloads))
        self.view.phase("comparing the nodes")
        self.facts.read_findings(list(self.cell.workloads))
        self.view.phase("checking")
        self._check()
        self.out.status = "passed" if all_passed(self.out.expectations) else "failed"

    def _workload_exits(self) -> None:
        """A sysbench that gave up before its end (its target restarted, a connection lost):
        ``facts["workload_exits"]`` (its seconds since the load's start, exit code, last FATAL
        line), which throughput, stalls and errors read: the seconds after are stalled, the
        exit an error. And a note."""
        assert self.load is not None
        exits: dict[str, dict[str, Any]] = {}
        start = self.load.load_start
        for name, wl in self.load.workloads.items():
            died = getattr(wl, "died_at", None)
            if died is None or start is None:
                continue
            at = round((died - start) / 1e9, 3)
            fatal = getattr(wl, "fatal", None)
            own = getattr(wl, "duration", None)
            exits[name] = {"at": at, "code": getattr(wl, "exit_code", None), "message": fatal,
                           "duration": own if isinstance(own, float) and math.isfinite(own)
                           else None}
            self.out.notes.append(
                f"sysbench {name} gave up at {at:.1f} s (exit {exits[name]['code']}"
                + (f": {fatal}" if fatal else "") + "): sysbench does not reconnect; the "
                "seconds after it count as stalled, its exit as one error")
        if exits:
            self.facts.facts["workload_exits"] = exits

    def _check(self) -> None:
        assert self.recorder is not None
        history = self.recorder.history
        facts = self.facts.facts
        if self.load is not None and self.load.repl_watch is not None:
            facts["replication_messages"] = self.load.repl_watch.messages_by_node()
        load_start, load_end = self._load_bounds()
        if math.isfinite(self.plan.duration):  # a window 'from A to <duration>' reaches the end
            facts["duration"] = self.plan.duration
        ctx = CheckContext(
            workloads={
                w.name: WorkloadInfo(w.kind, tuple(w.targets), tuple(w.reads), w.key_count)
                for w in self.cell.workloads
            },
            load_start=load_start,
            load_end=load_end,
            final_state=self.facts.final_state,
            samples=self.recorder.samples,
            facts=facts,
        )
        self.out.results = run_checkers(history, ctx)
        origin = load_start if load_start is not None else (history[0].time if history else 0)
        self.out.faults = fault_timeline(fault_windows(history), origin)
        if self._heal_ns is not None:
            self.out.heal = {"at": round((self._heal_ns[0] - origin) / 1e9, 3),
                             "end": round((self._heal_ns[1] - origin) / 1e9, 3)}
        self.out.expectations = evaluate_all(self.plan.expectations, self.out.results, ctx,
                                             variant=self.cell.variant)
        self.out.claim_sides = measure_sides(self.plan, self.cell, self.out.results, ctx)
        self.out.reports = [report_figure(r.metric, r.text, self.out.results, ctx)
                            for r in self.plan.reports]
        # the lab's own operations, plus sysbench's transactions (its per-second tps rows)
        self.out.operations = sum(1 for op in history if op.type == "invoke") + int(round(sum(
            s.values.get("tps", 0.0) for s in self.recorder.samples if s.series == "sysbench")))
