"""The live view of a run: a progress bar over the duration, ops/s and errors per workload,
the faults done and the next one. Plain lines when not on a terminal."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING

from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from dsl.plan import Cell, Plan
from lab.figures_format import format_value
from lab.run.outcome import View

if TYPE_CHECKING:
    from lab.run.outcome import CellOutcome


class LiveView(View):
    def __init__(self, console: Console | None = None, plain: bool | None = None) -> None:
        self.console = console or Console(stderr=True)
        self.plain = (not self.console.is_terminal) if plain is None else plain
        self.live: Live | None = None
        self.progress: Progress | None = None
        self.task: int | None = None
        self.stats: dict[str, dict[str, float]] = {}
        self.done: list[str] = []
        self.upcoming: str | None = None
        self.phase_text = ""
        self._last_plain = 0.0
        self.cell_label = ""

    def _render(self) -> Group:
        table = Table(box=None, show_header=True, pad_edge=False)
        table.add_column("workload")
        table.add_column("ops", justify="right")
        table.add_column("errors", justify="right")
        for name, st in self.stats.items():
            err = st.get("errors", 0.0)
            shown = format_value(err, "rate")
            table.add_row(escape(name), format_value(st.get("ops", 0.0), "rate"),
                          f"[red]{shown}[/]" if err else shown)
        faults = ", ".join(self.done[-4:]) or "-"
        nxt = self.upcoming or "-"
        assert self.progress is not None
        return Group(
            self.progress, table, f"[dim]{self.phase_text}[/]  faults done: {faults}  next: {nxt}"
        )

    def phase(self, text: str) -> None:
        self.phase_text = text
        if self.plain:
            print(f"[lab] {self.cell_label}: {text}", file=sys.stderr, flush=True)
        elif self.live:
            self.live.update(self._render())

    def cell_started(self, plan: Plan, cell: Cell) -> None:
        self.cell_label = f"{plan.name} [{cell.index}/{len(plan.cells)}] {cell.label}"
        self.stats, self.done, self.upcoming = {}, [], None
        if self.plain:
            print(f"[lab] {self.cell_label}: started", file=sys.stderr, flush=True)
            return
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed:.0f}/{task.total:.0f}s"),
            TimeElapsedColumn(),
            console=self.console,
        )
        self.task = self.progress.add_task(self.cell_label, total=plan.duration)
        self.live = Live(self._render(), console=self.console, refresh_per_second=4, transient=True)
        self.live.start()

    def tick(
        self,
        elapsed: float,
        duration: float,
        stats: dict[str, dict[str, float]],
        done: list[str],
        upcoming: str | None,
    ) -> None:
        self.stats, self.done, self.upcoming = stats, done, upcoming
        if self.plain:
            now = time.monotonic()
            if now - self._last_plain >= 5:
                self._last_plain = now
                parts = " ".join(
                    f"{n}={format_value(s.get('ops', 0), 'rate')} "
                    f"err={format_value(s.get('errors', 0), 'rate')}"
                    for n, s in stats.items()
                )
                print(
                    f"[lab] {self.cell_label}: {elapsed:.0f}/{duration:.0f}s {parts}",
                    file=sys.stderr,
                    flush=True,
                )
            return
        if self.progress is not None and self.task is not None:
            self.progress.update(self.task, completed=min(elapsed, duration))  # type: ignore[arg-type]
        if self.live:
            self.live.update(self._render())

    def cell_finished(self, outcome: CellOutcome) -> None:
        if self.live:
            self.live.stop()
            self.live = None
        if self.plain:
            print(f"[lab] {self.cell_label}: {outcome.status}", file=sys.stderr, flush=True)
