"""The load of a cell: the workloads' tables and clients, the steps before the load, the
timeline, the steps after a workload, and the background samplers (heartbeat, lag,
replication threads) that run while it goes.

``Load.prepare`` makes the tables and the clients; ``Load.run`` runs ``before load`` steps,
starts the samplers and workloads, applies the timeline at its times, and returns when the
duration is over or every bounded workload has finished; ``stop_workloads`` is safe to call
at any time (teardown calls it).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from dsl.actions import label as action_words
from dsl.actions import resolved_action, undo
from dsl.models import Action, StateCondition, TimedAction
from dsl.plan import Cell, Plan, PlannedWorkload
from fault.context import ActionIncomplete
from lab.history import REREAD_FS, WRITE_FS
from lab.run.cell_facts import SETTLE_TIMEOUT, CellFacts
from lab.run.outcome import View
from lab.run.recorder import Recorder
from lab.run.step import Stepper, stepped_note
from lab.run.summary import action_label
from lab.run.triggers import TriggerWatch, latest_lag, row_tables
from runners import replication
from runners.galera_watch import GaleraWatcher
from runners.mysql import Address
from runners.ops import Op, Sample
from runners.read_your_writes import ReadYourWritesWorkload
from runners.replication import HeartbeatWriter, LagSampler
from runners.replication_watch import ReplicationWatcher
from runners.router_watch import RouterWatcher
from runners.sysbench import SysbenchWorkload
from runners.tables import count_rows, make_tables
from runners.topology import Topology
from runners.txn_workloads import TXN_KINDS
from runners.workload_kinds import KINDS
from runners.workloads import SCHEMA, ClientEnv, Workload, table_ddl

# (action, what the view shows) -> the op's value (``resolved``: router.writer's node)
ApplyAction = Callable[[Action, str], dict[str, Any] | None]


class Joinable(Protocol):
    """A background sampler the load waits for at its end."""

    def join(self, timeout: float | None = None) -> None: ...


TIMELINE_PRECISION = 0.1  # seconds: a timeline action starts within this of its `at`


def timeline_slip(at: float, started: float, label: str) -> str | None:
    """A note when an action started later than the timeline's precision (an action before it
    blocked: a start, a wait); its real start is in the history either way."""
    late = started - at
    if late <= TIMELINE_PRECISION:
        return None
    return (f"at {at:g}s {label} started at {started:.2f}s ({late:.2f}s late: an action "
            "before it took that long); its effects are timed from its real start")


def undo_of(ta: TimedAction, in_force: float, detail: dict[str, Any] | None
            ) -> TimedAction | None:
    """``at 10s kill db1 for 2s``: the timeline entry that undoes the fault ``lasts`` after it
    took effect (``in_force``: when its action returned, seconds since the load began; a
    container's pause is in force only when the engine's call returns, tens of milliseconds
    and more under load), aimed at the node it was applied to (``router.writer`` resolved when
    it fired), as a ``when`` trigger's ``for`` is. None without ``for``."""
    if ta.lasts is None:
        return None
    back = undo(resolved_action(ta.action, detail))
    if back is None:
        return None
    return TimedAction(at=in_force + ta.lasts, action=back, span=ta.span)


def place_undo(timeline: list[TimedAction], ends: TimedAction, planned: float) -> None:
    """Put the end of a ``for D`` fault (``undo_of``) into the pending ``timeline`` where the
    plan lists it: after the entries planned at or before ``planned`` (the fault's ``at`` plus
    D), before the others. When the fault started late, its end is due later than planned
    (``ends.at``), and the actions the plan lists after it wait for it rather than run first:
    ``at 30s network partition g3 on group for 8s`` then ``at 39s wait until g3 synced``,
    with the partition in force only at 34.5 s, heals at 42.5 s and only then waits (run
    before the heal, the wait could only time out: measured, a 60 s timeout and an error)."""
    i = next((k for k, t in enumerate(timeline) if t.at > planned), len(timeline))
    timeline.insert(i, ends)


class Load:
    def __init__(self, plan: Plan, cell: Cell, topo: Topology, view: View, recorder: Recorder,
                 facts: CellFacts, apply: ApplyAction, check_store: Callable[[], None],
                 stop: Any, stepper: Stepper | None = None) -> None:
        self.plan, self.cell, self.topo, self.view = plan, cell, topo, view
        self.stepper = stepper  # lab run --step: pause before each timeline action
        self.recorder, self.facts = recorder, facts
        self._apply_one, self.check_store = apply, check_store
        self._applying = threading.Lock()  # timeline and `when` triggers apply one at a time
        self.triggers: list[TriggerWatch] = []
        self.stop = stop  # threading.Event: set when the load must end
        self.workloads: dict[str, Workload | SysbenchWorkload] = {}
        self.started: set[str] = set()
        self.steps_done: set[str] = set()
        self.load_start: int | None = None
        self.load_end: int | None = None
        self.bg: list[Joinable] = []
        self.repl_watch: ReplicationWatcher | None = None
        self.slips: list[str] = []  # timeline actions that started later than their precision

    def _workload_duration(self, spec: PlannedWorkload) -> float:
        """How long a workload runs: its own duration; in a stepped run, one that runs for the
        whole load (the plan gives it the experiment's duration) runs until the load ends,
        which the pauses lengthen."""
        whole = spec.duration in (None, self.plan.duration) and spec.rows is None \
            and spec.ops is None
        if self.stepper is not None and whole:
            return math.inf
        return spec.duration if spec.duration is not None else self.plan.duration

    def apply(self, a: Action, shown: str) -> dict[str, Any] | None:
        """One action; one that ran but did not complete (``ActionIncomplete``: a cache drop
        the kernel had not finished) is failed in the history, said in the notes, and the
        run goes on."""
        with self._applying:
            try:
                return self._apply_one(a, shown)
            except ActionIncomplete as e:
                self.slips.append(f"{shown} failed: {e}; nothing is computed from it")
                return dict(e.detail)

    def record(self, op: Op) -> Op:
        return self.recorder.record(op)

    # --- `when` triggers -------------------------------------------------------------------------
    def observe(self, cond: StateCondition) -> float | None:
        """A trigger's condition's value now (``lab.run.triggers``)."""
        name = cond.node.name
        if cond.metric == "replication_lag":
            return latest_lag(self.recorder._samples, name, time.monotonic_ns())
        tables = row_tables(self.cell.workloads)
        node = self.topo.nodes.get(name)
        if not tables or node is None:
            return None
        try:
            return count_rows(node, tables, timeout=2)
        except Exception:  # noqa: BLE001 - a node that does not answer: not known now
            return None

    def _start_triggers(self) -> None:
        for trig in self.plan.triggers:
            watch = TriggerWatch(trig, self.observe, self.apply, self.record, self.stop,
                                 self.slips)
            watch.start()
            self.triggers.append(watch)

    def sample(self, s: Sample) -> None:
        self.recorder.sample(s)

    def emit(self, series: str, subject: str, t: int, values: dict[str, float]) -> None:
        self.sample(Sample(series, subject, t, values))

    # --- preparation ---------------------------------------------------------------------------
    def _writer_node(self) -> str:
        return self.topo.primary or next(iter(self.topo.nodes))

    def prepare(self) -> None:
        """The heartbeat and workload tables on the writer, the clients, then wait until every
        node has the tables."""
        topo = self.topo
        w = topo.nodes[self._writer_node()]
        make_tables(w.addr, topo.admin, self.cell.workloads,
                    gtid_domains=self.plan.engine.flavor == "mariadb")
        env = ClientEnv(topo.address, topo.node_by_server_id, topo.app, self.record, self.stop,
                        self.plan.seed + self.cell.index)
        first_process = 0
        for spec in self.cell.workloads:
            if spec.kind == "sysbench":
                sb = SysbenchWorkload(spec, topo.run, topo.address, topo.app, self.sample,
                                      self.stop, self.plan.duration)
                sb.duration = self._workload_duration(spec)
                self.view.phase(f"sysbench prepare for {spec.name}")
                target = spec.targets[0]
                read_only = target == "router.reader" or (
                    topo.primary is not None and target in topo.nodes and target != topo.primary)
                sb.prepare(on=topo.primary if read_only else None)
                self.workloads[spec.name] = sb
            else:
                kind = KINDS.get(spec.kind) or TXN_KINDS[spec.kind]
                wl = kind(spec, env, first_process, self.plan.duration)
                wl.duration = self._workload_duration(spec)
                self.workloads[spec.name] = wl
                first_process += 100_000
        if topo.primary is not None and len(topo.nodes) > 1:
            self._wait_caught_up(SETTLE_TIMEOUT)
        else:  # two primaries, Galera: the tables must exist everywhere before the load
            want = sum(1 for spec in self.cell.workloads if table_ddl(spec)) + 1  # + heartbeat
            replication.wait_tables(list(topo.nodes.values()), SCHEMA, want, SETTLE_TIMEOUT)

    def _wait_caught_up(self, timeout: float) -> None:
        """Every running replica has applied everything of the running primary."""
        topo = self.topo
        if topo.primary is None or not topo.nodes[topo.primary].is_running():
            return
        replicas = {n: node for n, node in topo.nodes.items()
                    if n != topo.primary and node.is_running()}
        behind = replication.wait_caught_up(replicas, topo.nodes[topo.primary], timeout)
        if behind:
            raise replication.caught_up_error(behind, topo.primary, timeout)

    # --- the load --------------------------------------------------------------------------------
    def _run_actions(self, actions: list[Action], label: str) -> None:
        for a in actions:
            self.apply(a, f"{label}: {action_words(a)}")

    def run(self) -> None:
        if self.stepper is not None:
            self.stepper.pauses = []  # this cell's
        for s in [s for s in self.plan.steps if s.when == "before_load"]:
            self._run_actions(list(s.actions), "before load")
        self.load_start = time.monotonic_ns()
        self._start_background()
        self._start_triggers()
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
        paused = 0.0  # a stepped run's pauses: the timeline's clock stops while paused
        undos: set[int] = set()  # `for D` ends: never stepped (a pause would lengthen the fault)
        duration = self.plan.duration
        while True:
            now = time.monotonic()
            elapsed = now - t_start - paused
            while timeline and timeline[0].at <= elapsed:
                ta = timeline.pop(0)
                upcoming = f"{timeline[0].at:g}s {action_label(timeline[0])}" if timeline \
                    else None
                self.view.tick(elapsed, duration, counts, done_labels, upcoming)
                stepped = self.stepper is not None and id(ta) not in undos
                if self.stepper is not None and stepped:
                    paused += self._step(ta, elapsed, cursor, counts, done_labels)
                started = time.monotonic() - t_start
                if self.stepper is not None and stepped:
                    self.stepper.started(started)
                slip = timeline_slip(ta.at, started - paused, action_label(ta))
                if slip:
                    self.slips.append(slip)
                detail = self.apply(ta.action, f"at {round(ta.at, 2):g}s: {action_label(ta)}")
                in_force = time.monotonic() - t_start  # the action's call has returned
                done_labels.append(f"{ta.at:g}s {action_label(ta)}")
                ends = undo_of(ta, in_force - paused, detail)
                if ends is not None:  # `for D`: undone D after it took effect
                    undos.add(id(ends))
                    place_undo(timeline, ends, ta.at + (ta.lasts or 0.0))
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
            self.check_store()
            if now - last_tick >= 0.5:
                counts = self._stats(cursor, now - last_tick)
                last_tick = now
                upcoming = f"{timeline[0].at:g}s {action_label(timeline[0])}" if timeline \
                    else None
                self.view.tick(elapsed, duration, counts, done_labels, upcoming)
            time.sleep(0.02)
        self.stop.set()
        self.stop_workloads(poll_unseen=True)
        if self.stepper is not None:
            note = stepped_note(self.stepper.pauses)
            if note:
                self.slips.insert(0, note)

    def _step(self, ta: TimedAction, elapsed: float, cursor: dict[str, int],
              counts: dict[str, dict[str, float]], done: list[str]) -> float:
        """Pause before a timeline action (``lab run --step``); the live figures go on."""
        assert self.stepper is not None
        last = [time.monotonic()]
        shown = [counts]

        def figures() -> dict[str, dict[str, float]]:
            now = time.monotonic()
            if now - last[0] >= 0.5:
                shown[0] = self._stats(cursor, now - last[0])
                last[0] = now
            self.view.tick(elapsed, self.plan.duration, shown[0], done,
                           f"{ta.at:g}s {action_label(ta)} (paused)")
            self.check_store()
            return shown[0]

        return self.stepper.pause(ta, elapsed, figures)

    def _stats(self, cursor: dict[str, int], dt: float) -> dict[str, dict[str, float]]:
        ops = self.recorder._ops  # read-only peek at the growing list (appends only)
        start = cursor.get("__all__", 0)
        end = len(ops)
        cursor["__all__"] = end
        out: dict[str, dict[str, float]] = {n: {"ops": 0.0, "errors": 0.0} for n in self.workloads}
        # ops/s as throughput counts them (lab.judge.checkers.series): a read_your_writes workload's
        # writes, not its reads and polls (it showed 273/s for 20 writes a second)
        ryw = {n for n, w in self.workloads.items() if isinstance(w, ReadYourWritesWorkload)}
        for op in ops[start:end]:
            if op.type == "invoke" or op.workload not in out:
                continue
            if op.type == "ok":
                if op.f in REREAD_FS or (op.workload in ryw and op.f not in WRITE_FS):
                    continue
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

    # --- background samplers ----------------------------------------------------------------------
    def _start_background(self) -> None:
        topo = self.topo
        if self.plan.topology in ("replication", "primary_primary") and len(topo.nodes) > 1:
            self.repl_watch = ReplicationWatcher(
                {n: node.addr for n, node in topo.nodes.items()}, topo.admin, self.emit,
                0.2, self.stop, semi_sync=self.plan.semi_sync)
            self.repl_watch.start()
        if self.plan.topology == "galera" and len(topo.nodes) > 1:  # split brain's evidence
            galera = GaleraWatcher({n: node.addr for n, node in topo.nodes.items()},
                                   topo.admin, self.emit, 0.2, self.stop)
            galera.start()
            self.bg.append(galera)
        router = getattr(topo, "router", None)
        if router is not None and len(topo.nodes) > 1:  # router_failover's evidence
            watch = RouterWatcher(lambda: router.server_states("writer"), list(topo.nodes),
                                  self.emit, 0.05, self.stop)
            watch.start()
            self.bg.append(watch)
        if topo.primary is None or len(topo.nodes) < 2:
            return

        def primary_addr() -> Address | None:
            return topo.nodes[topo.primary].addr if topo.primary is not None else None

        def replicas() -> dict[str, Address]:
            return {n: node.addr for n, node in topo.nodes.items() if n != topo.primary}

        beat = HeartbeatWriter(primary_addr, topo.admin, self.stop,
                               self.facts.on_primary_position)
        lag = LagSampler(replicas, topo.admin, self.emit, lambda: beat.latest_ts, self.stop)
        beat.start()
        lag.start()
        self.bg += [beat, lag]

    def stop_workloads(self, poll_unseen: bool = False) -> None:
        """Stop every workload. ``poll_unseen`` (the load ended normally): the
        read_your_writes readers first poll the writes they have not seen yet, at most
        ``VISIBILITY_LIMIT`` seconds and before anything is healed, so that a replica behind
        shows its last writes (said in the notes); otherwise (Ctrl-C, an error) they stop at
        once."""
        for wl in self.workloads.values():
            if isinstance(wl, SysbenchWorkload):
                wl.stop()
            elif isinstance(wl, ReadYourWritesWorkload) and not poll_unseen:
                wl.abort.set()
        for wl in self.workloads.values():
            wl.join(timeout=10)
        if poll_unseen:
            self.load_end = time.monotonic_ns()  # the polls after it are not the load's
        for wl in self.workloads.values():
            if not isinstance(wl, ReadYourWritesWorkload):
                continue
            wl.join_readers(wl.VISIBILITY_LIMIT + 5 if poll_unseen else 5)
            note = wl.after_load() if poll_unseen else None
            if note and note not in self.slips:
                self.slips.append(note)
        for t in self.bg:
            t.join(timeout=3)
        self.bg = []
        for watch in self.triggers:
            watch.join(timeout=10)
        if self.repl_watch is not None:
            self.repl_watch.join(timeout=3)
