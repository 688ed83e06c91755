"""``when CONDITION ACTION [for D] [within D]``: faults fired by the database's own state.

Each trigger is armed when the load starts and polled every ``POLL`` seconds (its resolution)
by a thread of its own (``TriggerWatch``). The first time the condition holds, the watch
records a ``when`` fault op (the moment, the condition as written, the value observed, the
action it fires) and applies the action through the load's ``apply``, like a timeline action;
with ``for D`` the action is undone D later. With ``within D`` the condition must hold within
D of the load's start: if it does not, the action never fires and the run's notes say so.

Conditions (``observe``):

- ``replication_lag(NODE)``: the replica's latest lag sample (the lab's heartbeat lag, the
  ``replication_lag`` metric's own series, sampled every 0.1 s); none yet or unreadable: the
  condition does not hold;
- ``rows(NODE)``: the rows of every workload's table, counted on that node
  (``runners.tables.count_rows``, per table, summed); a node that does not answer: the
  condition does not hold.
"""

from __future__ import annotations

import logging
import math
import operator
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from dsl.actions import describe, resolved_action, undo
from dsl.models import Action, StateCondition, Trigger
from dsl.plan import TRIGGER_POLL, PlannedWorkload
from runners.ops import NEMESIS, Op, Sample
from runners.workloads import table_ddl

log = logging.getLogger(__name__)

POLL = TRIGGER_POLL  # seconds between two looks at a condition: the trigger's resolution
LAG_FRESH = 1.0  # seconds: a lag sample older than this is not the replica's lag now

COMPARE: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "==": operator.eq, "!=": operator.ne,
}


def holds(cond: StateCondition, value: float | None) -> bool:
    return value is not None and not math.isnan(value) and COMPARE[cond.op](value, cond.value)


def latest_lag(samples: Sequence[Sample], node: str, now_ns: int) -> float | None:
    """The newest ``lag`` sample of ``node`` no older than ``LAG_FRESH``."""
    for s in reversed(samples[-200:]):
        if s.series == "lag" and s.subject == node:
            if now_ns - s.time > LAG_FRESH * 1e9:
                return None
            return s.values.get("lag")
    return None


def row_tables(workloads: Sequence[PlannedWorkload]) -> list[str]:
    """The workloads whose tables ``rows(NODE)`` counts: every one that has a table
    (``runners.tables.count_rows`` counts them)."""
    return [w.name for w in workloads if table_ddl(w)]


def did_not_happen(trigger: Trigger) -> str:
    within = f"{trigger.within:g} s" if trigger.within is not None else "the load"
    return (f"when {trigger.condition.text} did not happen within {within}: "
            f"'{describe(trigger.action)}' did not fire")


class TriggerWatch:
    """One trigger, polled in its own thread from ``start()`` until it fires, its ``within``
    passes, or ``stop`` is set."""

    def __init__(self, trigger: Trigger, observe: Callable[[StateCondition], float | None],
                 apply: Callable[[Action, str], dict[str, Any] | None],
                 record: Callable[[Op], Op], stop: threading.Event,
                 notes: list[str]) -> None:
        self.trigger, self.observe, self.apply, self.record = trigger, observe, apply, record
        self.stop, self.notes = stop, notes
        self.fired_at: float | None = None  # seconds since the load started
        self.thread = threading.Thread(target=self._run, daemon=True, name="when")

    def start(self) -> None:
        self.t0 = time.monotonic()
        self.thread.start()

    def join(self, timeout: float | None = None) -> None:
        self.thread.join(timeout)

    def check(self) -> bool | None:
        """One look: True when it fired, False when its limit passed, None: not yet."""
        trig = self.trigger
        elapsed = time.monotonic() - self.t0
        if trig.within is not None and elapsed > trig.within:
            self.notes.append(did_not_happen(trig))
            return False
        value = self.observe(trig.condition)
        if not holds(trig.condition, value):
            return None
        self.fired_at = elapsed
        t = time.monotonic_ns()
        node = trig.condition.node.name
        detail = {"condition": trig.condition.text, "observed": value,
                  "after_seconds": round(elapsed, 3), "fires": describe(trig.action)}
        self.record(Op("invoke", "when", NEMESIS, t, "nemesis", "", node))
        self.record(Op("ok", "when", NEMESIS, t, "nemesis", "", node, value=detail))
        applied = self.apply(trig.action, f"when {trig.condition.text}: "
                             f"{describe(trig.action)}")
        if trig.lasts is not None:
            back = undo(resolved_action(trig.action, applied))
            if back is not None and not self.stop.wait(trig.lasts):
                self.apply(back, f"when ... for {trig.lasts:g}s ends: {describe(back)}")
        return True

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                if self.check() is not None:
                    return
            except Exception as e:  # noqa: BLE001 - recorded as a note, the load goes on
                self.notes.append(f"when {self.trigger.condition.text}: {e}")
                log.warning("trigger failed: %s", e)
                return
            self.stop.wait(POLL)
        if self.fired_at is None and self.trigger.within is None:
            self.notes.append(did_not_happen(self.trigger))

