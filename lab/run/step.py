"""Stepped runs (``lab run --step`` / ``--step-delay``): the run pauses before each timeline
action, shows the action as written in the file and the live figures, and goes on when the
user presses Enter (or after the delay).

While paused the workloads keep running. The timeline's clock stops during a pause: every
later action and the end of the load move by the time paused, so the time between two actions
and after the last one is as written, and the load is that much longer than ``duration``
(workloads that run for the whole load run until it ends; one bounded by a shorter duration
of its own, rows or operations is not lengthened). Each action therefore starts later
than its ``at`` on the wall clock of the load; the history has its real start and the run's
notes say so once (``stepped_note``).
"""

from __future__ import annotations

import os
import select
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

from rich.console import Console
from rich.markup import escape

from dsl.models import TimedAction
from dsl.units import QuantityError, parse_quantity
from lab.figures_format import format_value
from lab.run.summary import action_label

Stats = dict[str, dict[str, float]]
LineReader = Callable[[float], bool]  # wait up to N seconds for a line; True when one came


class StepUsageError(ValueError):
    """``--step`` / ``--step-delay`` cannot be honoured (exit 2)."""


def parse_step_delay(text: str) -> float:
    """``--step-delay 2s`` -> 2.0; a duration of the language, positive."""
    try:
        q = parse_quantity(text)
    except QuantityError as e:
        raise StepUsageError(f"--step-delay needs a duration such as 2s or 500ms, not "
                             f"'{text}' ({e.message})") from None
    if q.kind != "duration" or q.value <= 0:
        raise StepUsageError(f"--step-delay needs a duration such as 2s or 500ms, not '{text}'")
    return float(q.value)


def stdin_line_reader(stream: TextIO | None = None) -> LineReader:
    """Wait for a line on a terminal; end of input counts as a line (the run goes on)."""
    src = stream or sys.stdin

    def read(timeout: float) -> bool:
        ready, _, _ = select.select([src], [], [], timeout)
        if not ready:
            return False
        src.readline()
        return True

    return read


def action_text(ta: TimedAction, source_lines: list[str] | None) -> str:
    """The action as written in the file (``at 10s kill db2``, with its comment), else as the
    plan words it."""
    line = ta.span.line
    if source_lines and 0 < line <= len(source_lines):
        text = source_lines[line - 1].strip()
        if text.startswith("at "):
            return text
    return f"at {ta.at:g}s {action_label(ta)}"


def read_source(path: str | None) -> list[str] | None:
    if not path or not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().splitlines()
    except OSError:
        return None


def figures_line(stats: Stats) -> str:
    if not stats:
        return "no figures yet"
    return "  ".join(
        f"{name} {format_value(st.get('ops', 0.0), 'rate')}"
        f" ({format_value(st.get('errors', 0.0), 'rate')} errors)"
        for name, st in stats.items())


@dataclass
class Pause:
    text: str  # the action as written
    at: float  # its time in the file
    started: float  # its real start, seconds since the load started
    paused: float  # how long the run waited before it


@dataclass
class Stepper:
    """Pauses before each timeline action. ``delay``: seconds to wait (None: until a line is
    read); ``read_line``: waits for Enter (None: never, the delay alone decides)."""

    delay: float | None = None
    read_line: LineReader | None = None
    console: Console = field(default_factory=lambda: Console(stderr=True))
    clock: Callable[[], float] = time.monotonic
    refresh_every: float = 1.0
    source_lines: list[str] | None = None
    pauses: list[Pause] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.delay is None and self.read_line is None:
            raise StepUsageError("a stepped run needs a terminal to read Enter from, or a delay")

    def pause(self, ta: TimedAction, elapsed: float, figures: Callable[[], Stats]) -> float:
        """Show what is about to happen and wait; returns the seconds waited. ``figures`` is
        called about every ``refresh_every`` seconds (it also refreshes the live view)."""
        text = action_text(ta, self.source_lines)
        how = (f"continuing in {self.delay:g}s" if self.delay is not None else
               "press Enter to fire it")
        if self.delay is not None and self.read_line is not None:
            how += " (or press Enter)"
        self.console.print(
            f"[bold]paused[/] at {elapsed:.1f}s of the timeline, before: "
            f"[bold cyan]{escape(text)}[/]  ({how}; the workloads keep running)",
            highlight=False)
        self.console.print(f"  now: {escape(figures_line(figures()))}", highlight=False)
        t0 = self.clock()
        while True:
            waited = self.clock() - t0
            left = None if self.delay is None else self.delay - waited
            if left is not None and left <= 0:
                break
            slice_ = self.refresh_every if left is None else min(self.refresh_every, left)
            if self.read_line is not None:
                if self.read_line(slice_):
                    break
            else:
                time.sleep(slice_)
            figures()
        waited = self.clock() - t0
        self.pauses.append(Pause(text, ta.at, 0.0, waited))
        return waited

    def started(self, real_start: float) -> None:
        """The real start of the action just paused for (seconds since the load started)."""
        if self.pauses:
            self.pauses[-1].started = real_start


def stepped_note(pauses: list[Pause]) -> str | None:
    """The one note a stepped run adds: what the pauses moved, and which figures still hold."""
    if not pauses:
        return None
    total = sum(p.paused for p in pauses)
    starts = ", ".join(f"{p.text.split('#')[0].strip()} at {p.started:.2f}s" for p in pauses)
    which = (f"each of {len(pauses)} timeline actions" if len(pauses) > 1
             else "its one timeline action")
    return (f"stepped run: paused before {which}, "
            f"{total:.1f}s in all, while the workloads kept running; each action started "
            f"later than its at ({starts}) and the load lasted that much longer than its "
            "duration. The time between actions and after the last one is as written, so "
            "figures timed from a fault (downtime, failover, visibility, lag, warm-up) hold; "
            "totals, means and counts over the whole load include the paused time, and a "
            "workload bounded by a shorter duration of its own, rows or operations was not "
            "lengthened")
