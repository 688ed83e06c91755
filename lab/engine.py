"""The run: setup -> load + timeline -> stop -> heal -> settle -> final state -> check -> store
-> teardown (always, also on errors and Ctrl-C).

``run_plan(plan, store, view)`` executes every cell of the plan's matrix one after another, each
on a fresh topology, and returns a ``RunOutcome``. The history streams to SQLite while the run
goes; an interrupted run keeps what was recorded and is stored as ``interrupted``.

The run id of the results database names the run directory too (``runtime.cell_dir_id``).
When the database fails mid-run (a full disk), the cell stops as ``error``, tears down, is
checked from the history in memory, and the run ends with exit 3; what the database did not
take goes to the fallback file next to it (``lab.store.fallback_path``), and
``RunOutcome.store_error`` is the one line saying which file, why, and where things went.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from dsl.models import Metric, NodeAction, Promote, Quantity, TimedAction
from dsl.plan import Cell, Plan, PlannedWorkload
from fault.nemesis import ActionFailed, Nemesis
from lab.checkers import CheckContext, CheckResult, WorkloadInfo, run_checkers
from lab.expectations import (
    ExpectationOutcome,
    Unmeasurable,
    all_passed,
    evaluate_all,
    format_figure,
    measure,
    metric_text,
)
from lab.history import Op, Sample, fault_windows
from lab.recorder import Recorder, RecorderError
from lab.store import (
    Store,
    StoreUnavailable,
    append_fallback,
    describe_failure,
    fallback_path,
)
from runners import replication
from runners.components import MissingComponent
from runners.errors import ComponentError
from runners.gtid import HEARTBEAT_DOMAIN, behind, parse_gtid
from runners.mysql import Address, connect, wait_until
from runners.replication import HeartbeatWriter, LagSampler
from runners.replication_watch import ReplicationWatcher
from runners.runtime import Run, cell_dir_id
from runners.sysbench import SysbenchWorkload
from runners.topology import Topology
from runners.workloads import KINDS, SCHEMA, ClientEnv, Workload, table_ddl, table_name

log = logging.getLogger(__name__)

SETTLE_TIMEOUT = 30.0
EXIT_OK, EXIT_EXPECTATION, EXIT_LANGUAGE, EXIT_INCOMPLETE = 0, 1, 2, 3


class View:
    """Progress of a run; this base shows nothing. lab.live.LiveView draws it."""

    def phase(self, text: str) -> None: ...
    def cell_started(self, plan: Plan, cell: Cell) -> None: ...
    def tick(
        self,
        elapsed: float,
        duration: float,
        stats: dict[str, dict[str, float]],
        done: list[str],
        upcoming: str | None,
    ) -> None: ...
    def cell_finished(self, outcome: CellOutcome) -> None: ...


@dataclass
class CellOutcome:
    cell: Cell
    status: str = "running"  # passed, failed, error, interrupted
    results: dict[str, CheckResult] = field(default_factory=dict)
    expectations: list[ExpectationOutcome] = field(default_factory=list)
    error: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    operations: int = 0
    healed: list[str] = field(default_factory=list)
    reports: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the reader must know (not settled)
    store_error: str | None = None  # the results database failed: which, why, where data went


@dataclass
class RunOutcome:
    run_id: str
    plan: Plan
    cells: list[CellOutcome] = field(default_factory=list)
    status: str = "running"
    exit_code: int = EXIT_INCOMPLETE
    message: str | None = None
    store_error: str | None = None  # one line: the database, the cause, where things went


class Interrupted(Exception):
    pass


class StoreFailed(Exception):
    """The recorder could not write to the results database: the cell stops."""


STORE_ERRORS = (sqlite3.Error, OSError)
STOPPED_FOR_STORE = "stopped: the results database failed"


def run_plan(
    plan: Plan,
    store: Store,
    view: View | None = None,
    keep: bool = False,
    on_run_id: Callable[[str], None] | None = None,
) -> RunOutcome:
    view = view or View()
    try:
        run_id = store.create_run(plan.name, plan.source)
    except STORE_ERRORS as e:  # nothing started yet
        raise StoreUnavailable.of(store.path, e, writing=True) from e
    if on_run_id:
        on_run_id(run_id)
    outcome = RunOutcome(run_id, plan)
    try:
        for cell in plan.cells:
            cell_out = CellRunner(plan, cell, store, run_id, view, keep=keep).run()
            outcome.cells.append(cell_out)
            if cell_out.status in ("error", "interrupted"):
                break
    except KeyboardInterrupt:
        outcome.status = "interrupted"
    statuses = [c.status for c in outcome.cells]
    outcome.store_error = next((c.store_error for c in outcome.cells if c.store_error), None)
    if outcome.status == "interrupted" or "interrupted" in statuses:
        outcome.status, outcome.exit_code = "interrupted", EXIT_INCOMPLETE
    elif outcome.store_error:
        outcome.status, outcome.exit_code = "error", EXIT_INCOMPLETE
    elif "error" in statuses:
        outcome.status, outcome.exit_code = "error", EXIT_INCOMPLETE
        outcome.message = next(c.error for c in outcome.cells if c.status == "error")
    elif "failed" in statuses:
        outcome.status, outcome.exit_code = "failed", EXIT_EXPECTATION
    else:
        outcome.status, outcome.exit_code = "passed", EXIT_OK
    if outcome.store_error:
        outcome.message = outcome.store_error
    try:
        store.finish_run(
            run_id, outcome.status, outcome.exit_code, summary=summary(outcome),
            message=outcome.message,
        )  # fmt: skip
    except STORE_ERRORS as e:
        _finish_without_store(outcome, store, e)
    return outcome


def _finish_without_store(outcome: RunOutcome, store: Store, e: BaseException) -> None:
    """The database refused the end of the run: the run is an error (exit 3); its summary goes
    to the fallback file, and ``store_error`` says where it is (or that it is nowhere)."""
    failed = str(StoreUnavailable.of(store.path, e, writing=True))
    if outcome.status != "interrupted":
        outcome.status = "error"
    outcome.exit_code = EXIT_INCOMPLETE
    outcome.message = outcome.store_error or failed
    fb = fallback_path(store.path, outcome.run_id)
    record = {"kind": "run", "run_id": outcome.run_id, "summary": summary(outcome)}
    try:
        append_fallback(fb, [record])
        where = f"the run's summary is in {fb}"
    except Exception as fe:  # noqa: BLE001 - said in the message
        where = (
            f"the run's summary could not be written to {fb} either "
            f"({describe_failure(fb, fe)}): the report printed now is all that remains"
        )
    if outcome.store_error is None:
        outcome.store_error = f"{failed}; {where}"
    else:
        outcome.store_error = f"{outcome.store_error}; {where}"
    log.info("%s", outcome.store_error)


def summary(outcome: RunOutcome) -> dict[str, Any]:
    """The JSON summary of a run (docs/results.md)."""
    return {
        "run_id": outcome.run_id,
        "experiment": outcome.plan.name,
        "source": outcome.plan.source,
        "status": outcome.status,
        "topology": outcome.plan.topology,
        "exit_code": outcome.exit_code,
        "message": outcome.message,
        "cells": [
            {
                "index": c.cell.index,
                "label": c.cell.label,
                "variant": c.cell.variant,
                "sweep": c.cell.sweep,
                "repeat": c.cell.repeat,
                "status": c.status,
                "error": c.error,
                "operations": c.operations,
                "timings": {k: round(v, 3) for k, v in c.timings.items()},
                "healed": c.healed,
                "notes": c.notes,
                "workloads": {w.name: w.kind for w in c.cell.workloads},
                "expectations": [e.to_json() for e in c.expectations],
                "reports": c.reports,
                "measurements": {name: r.metrics for name, r in c.results.items()},
            }
            for c in outcome.cells
        ],
    }


class CellRunner:
    def __init__(
        self, plan: Plan, cell: Cell, store: Store, run_id: str, view: View, keep: bool = False
    ) -> None:
        self.plan, self.cell, self.store, self.run_id = plan, cell, store, run_id
        self.view = view
        self.keep = keep
        self.out = CellOutcome(cell)
        self.stop = threading.Event()
        self.workloads: dict[str, Workload | SysbenchWorkload] = {}
        self.started: set[str] = set()
        self.steps_done: set[str] = set()
        self.facts: dict[str, Any] = {"primary_gtid_last": {}, "relay_log_bytes": {}}
        self.load_start: int | None = None
        self.load_end: int | None = None
        self.topo: Topology | None = None
        self.nemesis: Nemesis | None = None
        self.recorder: Recorder | None = None
        self.bg: list[HeartbeatWriter | LagSampler] = []
        self._started_at_gtid: dict[str, dict[int, int]] = {}
        self.repl_watch: ReplicationWatcher | None = None

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
            self.nemesis = Nemesis(self.topo, self._record)
            self.view.phase("preparing tables")
            self._prepare()
            self._check_store()
            self._load_phase()
            self._after_load()
        except KeyboardInterrupt:
            interrupted = True
            self.out.status = "interrupted"
            self.out.error = "interrupted (Ctrl-C)"
        except StoreFailed as e:  # the message is completed by _store()
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
            self.stop.set()
            self._stop_workloads()
            if self.topo is not None and not self.keep:
                t = time.monotonic()
                self.topo.teardown()
                self.out.timings["teardown"] = time.monotonic() - t
            if run is not None and not self.keep:
                run.close()
            elif run is not None:
                run.set_state("kept", endpoints=self.topo.endpoints() if self.topo else {})
            if self.out.status in ("interrupted", "error") and self.recorder is not None:
                # Keep what was measured so far: check the partial history too.
                with contextlib.suppress(Exception):
                    self._check()
            self._store()
        self.view.cell_finished(self.out)
        if interrupted:
            raise KeyboardInterrupt
        return self.out

    def _record(self, op: Op) -> Op:
        assert self.recorder is not None
        return self.recorder.record(op)

    def _check_store(self) -> None:
        """Stop the cell when the recorder could not write to the results database."""
        rec = self.recorder
        if rec is not None and rec.error is not None:
            raise StoreFailed(
                f"{STOPPED_FOR_STORE}: {describe_failure(self.store.path, rec.error)}"
            )

    # --- preparation ---------------------------------------------------------------------------
    def _writer_node(self) -> str:
        assert self.topo is not None
        return self.topo.primary or next(iter(self.topo.nodes))

    def _prepare(self) -> None:
        topo = self.topo
        assert topo is not None
        if self.plan.topology == "mongodb_replset":
            if self.cell.workloads:
                raise ComponentError(
                    "workloads", "the lab's workloads speak MySQL only so far; a MongoDB "
                    "experiment can run its timeline (convert to standalone measures its own "
                    "downtime) but not workloads")
            return
        w = topo.nodes[self._writer_node()]
        stmts = replication.heartbeat_statements(SCHEMA)
        for spec in self.cell.workloads:
            stmts += table_ddl(spec)
        needs_sbtest = any(s.kind == "sysbench" for s in self.cell.workloads)
        if needs_sbtest:
            stmts.append("CREATE DATABASE IF NOT EXISTS sbtest")
        conn = connect(w.addr, topo.admin, timeout=30)
        try:
            cur = conn.cursor()
            cur.execute(replication.HEARTBEAT_SESSION)
            for s in stmts:
                cur.execute(s)
            cur.close()
        finally:
            conn.close()
        env = ClientEnv(
            topo.address,
            topo.node_by_port,
            topo.app,
            self._record,
            self.stop,
            self.plan.seed + self.cell.index,
        )
        first_process = 0
        for spec in self.cell.workloads:
            if spec.kind == "sysbench":
                wl: Workload | SysbenchWorkload = SysbenchWorkload(
                    spec,
                    topo.run,
                    topo.address,
                    topo.app,
                    self._sample,
                    self.stop,
                    self.plan.duration,
                )
                self.view.phase(f"sysbench prepare for {spec.name}")
                target = spec.targets[0]
                read_only = target == "router.reader" or (
                    topo.primary is not None and target in topo.nodes and target != topo.primary)
                wl.prepare(on=topo.primary if read_only else None)
            else:
                spec = self._with_defaults(spec)
                wl = KINDS[spec.kind](spec, env, first_process, self.plan.duration)
                first_process += 100_000
            self.workloads[spec.name] = wl
        if topo.primary is not None and len(topo.nodes) > 1:
            self._wait_caught_up(SETTLE_TIMEOUT)
        else:  # two primaries, Galera: the tables must exist everywhere before the load
            self._wait_tables_everywhere()

    def _wait_tables_everywhere(self) -> None:
        topo = self.topo
        assert topo is not None
        want = sum(1 for spec in self.cell.workloads if table_ddl(spec)) + 1  # + heartbeat
        replication.wait_tables(list(topo.nodes.values()), SCHEMA, want, SETTLE_TIMEOUT)

    @staticmethod
    def _with_defaults(spec: PlannedWorkload) -> PlannedWorkload:
        if spec.kind == "probe" and spec.every is None and spec.rate is None:
            return spec.model_copy(update={"every": 0.01})
        return spec

    def _sample(self, s: Sample) -> None:
        assert self.recorder is not None
        self.recorder.sample(s)

    # --- the load --------------------------------------------------------------------------------
    def _run_actions(self, actions: list[Any], label: str) -> None:
        assert self.nemesis is not None
        for a in actions:
            self._before_action(a)
            self.view.phase(f"{label}: {a.action}")
            detail = self.nemesis.apply(a)
            self._after_action(a, detail)

    def _load_phase(self) -> None:
        assert self.topo is not None and self.nemesis is not None
        steps_before = [s for s in self.plan.steps if s.when == "before_load"]
        for s in steps_before:
            self._run_actions(list(s.actions), "before load")
        self.load_start = time.monotonic_ns()
        self._start_background()
        for name, wl in self.workloads.items():
            if wl.spec.start_after is None:
                wl.start()
                self.started.add(name)
        timeline = sorted(self.plan.timeline, key=lambda t: t.at)
        after_steps = {s.workload: s for s in self.plan.steps if s.when == "after"}
        done_labels: list[str] = []
        cursor = {w: 0 for w in self.workloads}
        counts: dict[str, dict[str, float]] = {}
        last_tick = time.monotonic()
        t_start = time.monotonic()
        duration = self.plan.duration
        while True:
            now = time.monotonic()
            elapsed = now - t_start
            while timeline and timeline[0].at <= elapsed:
                ta = timeline.pop(0)
                upcoming = f"{timeline[0].at:g}s {_label(timeline[0])}" if timeline else None
                self.view.tick(elapsed, duration, counts, done_labels, upcoming)
                self._timed(ta)
                done_labels.append(f"{ta.at:g}s {_label(ta)}")
            for name, wl in self.workloads.items():
                if name in self.started and wl.finished.is_set() and name not in self.steps_done:
                    self.steps_done.add(name)
                    if name in after_steps:
                        self._run_actions(list(after_steps[name].actions), f"after {name}")
                        done_labels.append(f"after {name}")
                    for other, owl in self.workloads.items():
                        if owl.spec.start_after == name and other not in self.started:
                            owl.start()
                            self.started.add(other)
            all_bounded_done = (
                all(w.finished.is_set() for w in self.workloads.values())
                and len(self.started) == len(self.workloads)
                and set(after_steps) <= self.steps_done
            )
            if elapsed >= duration or (all_bounded_done and not timeline and self.workloads):
                break
            self._check_store()
            if now - last_tick >= 0.5:
                counts = self._stats(cursor, now - last_tick)
                last_tick = now
                upcoming = f"{timeline[0].at:g}s {_label(timeline[0])}" if timeline else None
                self.view.tick(elapsed, duration, counts, done_labels, upcoming)
            time.sleep(0.02)
        self.stop.set()
        self._stop_workloads()
        self.load_end = time.monotonic_ns()

    def _timed(self, ta: TimedAction) -> None:
        assert self.nemesis is not None
        self._before_action(ta.action)
        self.view.phase(f"at {ta.at:g}s: {_label(ta)}")
        detail = self.nemesis.apply(ta.action)
        self._after_action(ta.action, detail)

    def _before_action(self, a: Any) -> None:
        """Snapshots some actions need: the primary's GTID position before it goes down, a
        replica's relay-log size before it starts again."""
        topo = self.topo
        assert topo is not None
        if isinstance(a, Promote):
            # What the new primary lacks of the old one's binlog at the moment it is promoted:
            # with one transaction per write, the acknowledged writes a failover loses
            # (cross-checks lost_writes, which judges the final rows).
            with contextlib.suppress(Exception):
                mine = replication.gtid(topo.nodes[a.node.name], "gtid_current_pos")
                self.facts.setdefault("missing_at_promote", {})[a.node.name] = behind(
                    self.facts.get("primary_gtid_last") or {}, mine)
        if isinstance(a, NodeAction):
            name = a.node.name
            if name == topo.primary and a.verb in ("kill", "stop", "restart", "cold_restart"):
                self._snapshot_primary()
            if name != topo.primary and a.verb in ("kill", "stop", "restart", "cold_restart"):
                # What the replica had applied when it went down: "applied since" counts
                # from here (a replica may start its threads by itself when it starts).
                with contextlib.suppress(Exception):
                    self._started_at_gtid[name] = replication.gtid(topo.nodes[name],
                                                                   "gtid_slave_pos")
            if a.verb in ("start", "restart", "cold_restart") and name != topo.primary:
                self.facts["relay_log_bytes"].setdefault(name, {})["before"] = relay_log_bytes(
                    topo.nodes[name].datadir
                )

    def _after_action(self, a: Any, detail: dict[str, Any]) -> None:
        topo = self.topo
        assert topo is not None
        if isinstance(a, NodeAction) and a.verb in ("start", "restart", "cold_restart"):
            name = a.node.name
            if name != topo.primary:
                entry = self.facts["relay_log_bytes"].setdefault(name, {})
                entry["after"] = relay_log_bytes(topo.nodes[name].datadir)


    def _snapshot_primary(self) -> None:
        topo = self.topo
        assert topo is not None and topo.primary is not None
        with contextlib.suppress(Exception):
            self.facts["primary_gtid_last"] = replication.gtid(topo.nodes[topo.primary],
                                                               "gtid_binlog_pos", timeout=1)

    def _stats(self, cursor: dict[str, int], dt: float) -> dict[str, dict[str, float]]:
        assert self.recorder is not None
        ops = self.recorder._ops  # read-only peek at the growing list (appends only)
        start = cursor.get("__all__", 0)
        end = len(ops)
        cursor["__all__"] = end
        out: dict[str, dict[str, float]] = {n: {"ops": 0.0, "errors": 0.0} for n in self.workloads}
        for op in ops[start:end]:
            if op.type == "invoke" or op.workload not in out:
                continue
            if op.type == "ok":
                out[op.workload]["ops"] += 1
            else:
                out[op.workload]["errors"] += 1
        for name, st in out.items():
            st["ops"] /= max(dt, 1e-6)
            wl = self.workloads[name]
            if isinstance(wl, SysbenchWorkload):
                samples = [s for s in self.recorder._samples[-20:] if s.subject == name]
                st["ops"] = samples[-1].values.get("tps", 0.0) if samples else 0.0
                st["errors"] = samples[-1].values.get("errors", 0.0) if samples else 0.0
        return out

    def _start_background(self) -> None:
        topo = self.topo
        assert topo is not None
        if self.plan.topology in ("replication", "primary_primary") and len(topo.nodes) > 1:
            self.repl_watch = ReplicationWatcher(
                {n: node.addr for n, node in topo.nodes.items()}, topo.admin, self._emit,
                0.2, self.stop)
            self.repl_watch.start()
        if topo.primary is None or len(topo.nodes) < 2:
            return

        def primary_addr() -> Address | None:
            return topo.nodes[topo.primary].addr if topo.primary is not None else None

        def replicas() -> dict[str, Address]:
            return {n: node.addr for n, node in topo.nodes.items() if n != topo.primary}

        beat = HeartbeatWriter(primary_addr, topo.admin, self.stop,
                               lambda pos: self.facts.__setitem__("primary_gtid_last", pos))
        lag = LagSampler(replicas, topo.admin, self._emit, beat.beating, self.stop)
        beat.start()
        lag.start()
        self.bg += [beat, lag]

    def _emit(self, series: str, subject: str, t: int, values: dict[str, float]) -> None:
        self._sample(Sample(series, subject, t, values))

    def _stop_workloads(self) -> None:
        for wl in self.workloads.values():
            if isinstance(wl, SysbenchWorkload):
                wl.stop()
        for wl in self.workloads.values():
            wl.join(timeout=10)
        for t in self.bg:
            t.join(timeout=3)
        self.bg = []
        if self.repl_watch is not None:
            self.repl_watch.join(timeout=3)

    # --- after the load ---------------------------------------------------------------------------
    def _after_load(self) -> None:
        assert self.topo is not None and self.nemesis is not None
        # Missing transactions as the timeline left them, before healing (a healed primary
        # lets replicas catch up and would hide the relay-log lesson): ``.before_heal``.
        self.facts["missing_before_heal"] = self._missing()
        self._facts_after()
        if not self.plan.leave_faults:
            self.view.phase("healing faults")
            self.out.healed = self.nemesis.heal_all()
        self.view.phase("letting replication settle")
        t = time.monotonic()
        settled, why = self._settle()
        self.out.timings["settle"] = time.monotonic() - t
        self.facts["settled"] = settled
        if not settled:
            self.out.notes.append(f"replication did not settle: {why}")
        # after settling: the definition of missing transactions (docs/results.md)
        self.facts["missing_transactions"] = self._missing()
        self.facts["authority"] = self._authority()
        self.view.phase("reading the final state")
        self._final_state()
        self.view.phase("checking")
        self._check()
        self.out.status = "passed" if all_passed(self.out.expectations) else "failed"

    def _settle(self) -> tuple[bool, str]:
        """Wait until every running node has what the authoritative state has; (settled, why
        not). Two primaries whose SQL thread stopped on an error never settle: said at once."""
        topo = self.topo
        assert topo is not None
        deadline = time.monotonic() + SETTLE_TIMEOUT
        if self.plan.topology == "galera":
            try:
                for node in topo.nodes.values():
                    if node.is_running():
                        wait_until(partial(replication.synced, node), SETTLE_TIMEOUT,
                                   "synced", node.component)
            except ComponentError as e:
                return False, str(e)
            return True, ""
        if self.plan.topology in ("replication", "primary_primary") and len(topo.nodes) > 1:
            # settled: every running node has every transaction of the authoritative state
            # (the same GTID arithmetic as missing_transactions)
            while True:
                stopped = replication.stopped_sql_threads(topo.nodes)
                if stopped:
                    return False, "SQL thread stopped on " + ", ".join(stopped)
                missing = self._missing()
                if missing and not any(missing.values()):
                    return True, ""
                if time.monotonic() > deadline:
                    if not missing:
                        return False, "the nodes' GTID positions could not be read"
                    return False, f"still missing transactions after {SETTLE_TIMEOUT:g}s: " + \
                        ", ".join(f"{n} {m}" for n, m in sorted(missing.items()) if m)
                time.sleep(0.1)
        return True, ""

    def _missing(self) -> dict[str, int]:
        """Transactions each running node lacks, per topology (runners.replication)."""
        topo = self.topo
        assert topo is not None
        running = {n: node for n, node in topo.nodes.items() if node.is_running()}
        return replication.missing_transactions(
            self.plan.topology, running, topo.primary, self.facts.get("primary_gtid_last") or {})

    def _authority(self) -> str | None:
        """The node whose final state is the truth for lost writes: the primary after settling;
        on Galera a running node (they hold one state); None on two primaries (each write is
        judged where it was acknowledged)."""
        topo = self.topo
        assert topo is not None
        if self.plan.topology == "primary_primary":
            return None
        if topo.primary is not None:
            return topo.primary if topo.nodes[topo.primary].is_running() else None
        running = [n for n, node in topo.nodes.items() if node.is_running()]
        return running[0] if running else None

    def _wait_caught_up(self, timeout: float) -> None:
        """Every running replica has applied everything of the running primary."""
        topo = self.topo
        assert topo is not None
        if topo.primary is None or not topo.nodes[topo.primary].is_running():
            return
        replicas = {n: node for n, node in topo.nodes.items()
                    if n != topo.primary and node.is_running()}
        behind = replication.wait_caught_up(replicas, topo.nodes[topo.primary], timeout)
        if behind:
            raise replication.caught_up_error(behind, topo.primary, timeout)

    def _facts_after(self) -> None:
        """Facts as the timeline left them: what restarted replicas applied since, and the
        replication threads' state."""
        topo = self.topo
        assert topo is not None
        applied: dict[str, str] = {}
        for name, node in topo.nodes.items():
            if name == topo.primary or not node.is_running():
                continue
            with contextlib.suppress(Exception):
                pos = replication.read_gtid(node, "gtid_slave_pos")
                mine = parse_gtid(pos)
                applied[name] = pos
                if name in self._started_at_gtid:
                    base = self._started_at_gtid[name]
                    self.facts.setdefault("applied_since_restart", {})[name] = sum(
                        max(0, seq - base.get(dom, 0))
                        for dom, seq in mine.items()
                        if dom != HEARTBEAT_DOMAIN
                    )
        repl_errors: dict[str, dict[str, Any]] = {}
        for name, node in topo.nodes.items():
            if not node.is_running():
                continue
            with contextlib.suppress(Exception):
                st = replication.slave_status(node)
                if st:
                    repl_errors[name] = replication.thread_errors(st)
        self.facts["replication_errors"] = repl_errors
        self.facts["replica_gtid"] = applied
        self.facts["primary_gtid"] = {
            str(k): v for k, v in (self.facts.get("primary_gtid_last") or {}).items()}

    def _final_state(self) -> None:
        topo = self.topo
        assert topo is not None
        state: dict[str, dict[str, dict[int, Any]]] = {}
        for spec in self.cell.workloads:
            if not table_ddl(spec):
                continue
            per_node: dict[str, dict[int, Any]] = {}
            for name, node in topo.nodes.items():
                if not node.is_running():
                    continue
                try:
                    conn = connect(node.addr, topo.admin, timeout=30)
                    try:
                        cur = conn.cursor()
                        cur.execute(f"SELECT k, v FROM {table_name(spec.name)}")
                        per_node[name] = {int(k): int(v) for k, v in cur.fetchall()}
                        cur.close()
                    finally:
                        conn.close()
                except Exception as e:  # noqa: BLE001
                    log.warning("final state of %s on %s: %s", spec.name, name, e)
            state[spec.name] = per_node
        self._state = state

    def _check(self) -> None:
        assert self.recorder is not None
        history = self.recorder.history
        if self.repl_watch is not None:
            self.facts["replication_messages"] = self.repl_watch.messages_by_node()
        ctx = CheckContext(
            workloads={
                w.name: WorkloadInfo(w.kind, tuple(w.targets), tuple(w.reads))
                for w in self.cell.workloads
            },
            load_start=self.load_start,
            load_end=self.load_end,
            final_state=getattr(self, "_state", {}),
            samples=self.recorder.samples,
            facts=self.facts,
        )
        self.out.results = run_checkers(history, ctx)
        self.out.expectations = evaluate_all(self.plan.expectations, self.out.results, ctx)
        self.out.reports = [report_figure(r.metric, r.text, self.out.results, ctx)
                            for r in self.plan.reports]
        # the lab's own operations, plus sysbench's transactions (its per-second tps rows)
        self.out.operations = sum(1 for op in history if op.type == "invoke") + int(round(sum(
            s.values.get("tps", 0.0) for s in self.recorder.samples if s.series == "sysbench")))

    def _store(self) -> None:
        """Write the cell's results. When the database failed (the recorder's streaming or
        these writes), the cell ends as ``error`` with ``store_error`` naming the file, the
        cause and where the history went; its figures stay in the run's summary."""
        rec = self.recorder
        if rec is None:
            return
        try:
            rec.close()
        except RecorderError:
            pass  # rec.failure() says it
        except Exception:  # noqa: BLE001
            log.exception("closing the recorder")
        st, rid, idx = self.store, self.run_id, self.cell.index
        failures: list[BaseException] = []

        def write(fn: Callable[..., Any], *args: Any) -> None:
            try:
                fn(*args)
            except STORE_ERRORS as e:
                failures.append(e)
            except Exception:  # noqa: BLE001 - a bug: logged, the run goes on
                log.exception("storing cell %s", idx)

        if rec.error is None:
            write(st.write_faults, rid, idx, fault_windows(rec.history))
        if self.out.results:
            write(st.write_measurements, rid, idx, self.out.results)
        if self.out.expectations:
            write(st.write_expectations, rid, idx, self.out.expectations,
                  [e.span.line for e in self.plan.expectations])  # fmt: skip
        if rec.error is not None:
            failed = StoreUnavailable.of(st.path, rec.error, writing=True)
            self._store_failed(f"{failed}; cell {idx}: {rec.storage_note()}")
        elif failures:
            failed = StoreUnavailable.of(st.path, failures[0], writing=True)
            self._store_failed(f"{failed}; cell {idx}: its history is stored, its figures are "
                               "in the run's summary only")  # fmt: skip
        try:
            st.finish_cell(rid, idx, self.out.status, load_start_ns=self.load_start,
                           load_end_ns=self.load_end, error=self.out.error)  # fmt: skip
        except STORE_ERRORS as e:
            if self.out.store_error is None:
                failed = StoreUnavailable.of(st.path, e, writing=True)
                self._store_failed(f"{failed}; cell {idx}: its end is in the run's summary only")
        except Exception:  # noqa: BLE001
            log.exception("storing cell %s", idx)

    def _store_failed(self, text: str) -> None:
        """The cell ends as ``error`` (``interrupted`` stays) with ``text`` in its error."""
        prior = self.out.error if self.out.status in ("error", "interrupted") else None
        if prior is not None and prior.startswith(STOPPED_FOR_STORE):
            text += "; the cell stopped early: its figures cover the load until then"
            prior = None
        self.out.store_error = text
        self.out.error = f"{prior}; {text}" if prior else text
        if self.out.status != "interrupted":
            self.out.status = "error"


def _label(ta: TimedAction) -> str:
    a = ta.action
    node = getattr(a, "node", None)
    verb = getattr(a, "verb", None) or a.action
    return f"{verb} {getattr(node, 'name', '')}".strip()


def relay_log_bytes(datadir: Path) -> int:
    total = 0
    for p in datadir.glob("*relay*"):
        if p.is_file() and not p.name.endswith((".index", ".info")):
            with contextlib.suppress(OSError):
                total += p.stat().st_size
    return total


def report_figure(metric: Metric, text: str, results: dict[str, CheckResult],
                  ctx: CheckContext) -> dict[str, Any]:
    """A ``report`` line: the figure, without a verdict."""
    try:
        got = measure(metric, Quantity(value=0, kind="count", text=""), results, ctx)
    except Unmeasurable as e:
        return {"text": text, "metric": metric_text(metric), "value": None, "unit": None,
                "display": f"unknown: {e}"}
    shown = format_figure(got.value, got.unit, got.lower_bound, metric_text(metric, got.stat))
    return {"text": text, "metric": metric_text(metric, got.stat), "value": got.value,
            "unit": got.unit, "display": shown}
