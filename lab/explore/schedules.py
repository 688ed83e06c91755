"""``lab explore``: concrete schedules drawn from a fault space, each run and stored; and what
``lab explore``, ``lab shrink`` and ``lab search`` share: running one experiment text as a
stored run whose ``.exp`` is kept beside the results database.

Every run of these commands is an ordinary run (``lab runs``, ``lab show``); its source is the
concrete ``.exp`` it ran, written before it starts to ``<database dir>/schedules/<run id>.exp``
(``schedule_path``), so ``lab replay RUN`` runs exactly that text again. A ``Runner`` is the
one thing that touches servers: ``real_runner`` runs a text through ``lab.run.engine.run_plan``;
tests pass a function of the text instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dsl.models import Experiment
from dsl.space import Entry, draw, schedule_text, summary_line, timeline_entries
from lab.exits import EXIT_EXPECTATION, EXIT_INCOMPLETE, EXIT_OK


@dataclass(frozen=True)
class Trial:
    """One run of one experiment text: its id, its stored ``.exp``, its status, and the
    expectations (and claims across cells) that failed or could not be decided, as written."""

    run_id: str
    path: Path
    status: str  # passed, failed, error, interrupted
    failed: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()
    measured: dict[str, str] = field(default_factory=dict)  # expect text -> the figure
    message: str | None = None

    def fails(self, expectation: str) -> bool:
        return expectation in self.failed


# The text of an experiment and a short label -> the stored run of it.
Runner = Callable[[str, str], Trial]


class Interrupted(Exception):
    """Ctrl-C ended a run: the command stops after it (what ran is stored)."""

    def __init__(self, trial: Trial) -> None:
        super().__init__(f"interrupted during run {trial.run_id}")
        self.trial = trial


def schedules_dir(db_path: Path) -> Path:
    """Where the concrete ``.exp`` of each run of explore, shrink and search is kept."""
    return db_path.parent / "schedules"


def schedule_path(db_path: Path, run_id: str) -> Path:
    return schedules_dir(db_path) / f"{run_id}.exp"


def with_backend(text: str, exp: Experiment, backend: str | None) -> str:
    """``text`` made to run on ``backend`` (``--backend`` of explore, replay, shrink, search):
    its ``backend`` statement replaced, or one added on a line of its own before the closing
    brace, so that no other statement moves (a search's ``LINE:for`` still names its line) and
    the stored ``.exp`` says where it ran. Unchanged for None or the file's own back-end."""
    if backend is None or backend == exp.backend:
        return text
    lines = text.split("\n")
    s = exp.backend_span
    if s.line:  # one line: the grammar wants the kind on the keyword's line
        row = lines[s.line - 1]
        lines[s.line - 1] = row[:s.column - 1] + f"backend {backend}" + row[s.end_column - 1:]
        return "\n".join(lines)
    end = exp.span
    row = lines[end.end_line - 1]
    brace = end.end_column - 2  # the closing brace's index in its line
    head = row[:brace]
    if head.strip():  # `... }` on one line: the statement goes before the brace
        lines[end.end_line - 1] = f"{head.rstrip()}  backend {backend} {row[brace:]}"
    else:
        lines.insert(end.end_line - 1, f"{head}  backend {backend}")
    return "\n".join(lines)


def real_runner(store: object, view: object | None = None, backend: str | None = None
                ) -> Runner:
    """Run each text on real servers (``lab.run.engine.run_plan``), stored in ``store`` with its
    ``.exp`` beside the database; ``backend``: on that back-end, whatever the text says
    (``with_backend``: the stored ``.exp`` says it too). Raises ``MissingComponent`` before any
    server starts, ``LanguageErrors`` when the text cannot run on ``backend``."""
    from dsl.api import parse_text, plan_text
    from lab.judge.expectations import format_figure
    from lab.run.engine import run_plan
    from lab.run.outcome import View
    from lab.store.db import Store
    from lab.store.records import new_run_id
    from runners.topology import check_components

    assert isinstance(store, Store)

    def run(text: str, label: str) -> Trial:
        if backend is not None:
            text = with_backend(text, parse_text(text, "<schedule>"), backend)
        rid = new_run_id()
        path = schedule_path(store.path, rid)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        plan = plan_text(text, str(path))
        check_components(plan)
        outcome = run_plan(plan, store, view if isinstance(view, View) else None, run_id=rid)
        failed: list[str] = []
        unknown: list[str] = []
        measured: dict[str, str] = {}
        for cell in outcome.cells:
            for e in cell.expectations:
                figure = format_figure(e.measured, e.unit, e.lower_bound)
                measured.setdefault(e.text, figure)
                if e.passed is False and e.text not in failed:
                    failed.append(e.text)
                    measured[e.text] = figure
                elif e.passed is None and e.text not in unknown:
                    unknown.append(e.text)
        for c in outcome.claims:
            if c.passed is False and c.text not in failed:
                failed.append(c.text)
            elif c.passed is None and c.text not in unknown:
                unknown.append(c.text)
        trial = Trial(outcome.run_id, path, outcome.status, tuple(failed), tuple(unknown),
                      measured, outcome.message)
        if outcome.status == "interrupted":
            raise Interrupted(trial)
        return trial

    return run


# --- exploration --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Drawn:
    index: int
    entries: list[Entry]
    trial: Trial


@dataclass
class Exploration:
    source: str
    seed: int
    runs: int
    drawn: list[Drawn] = field(default_factory=list)
    interrupted: bool = False

    def failures(self) -> dict[str, list[str]]:
        """Each expectation that failed in some run -> those runs, in the order it failed."""
        out: dict[str, list[str]] = {}
        for d in self.drawn:
            for text in d.trial.failed:
                out.setdefault(text, []).append(d.trial.run_id)
        return out

    @property
    def exit_code(self) -> int:
        statuses = [d.trial.status for d in self.drawn]
        if self.interrupted or "error" in statuses:
            return EXIT_INCOMPLETE
        return EXIT_EXPECTATION if "failed" in statuses else EXIT_OK


def concrete_schedule(text: str, exp: Experiment, seed: int, index: int, runs: int,
                      source: str) -> tuple[str, list[Entry]]:
    """Schedule ``index`` of ``seed`` as a plain ``.exp`` (the file's own timeline kept)
    and the entries drawn."""
    drawn = draw(exp, seed, index)
    comment = (f"schedule {index} of {runs}, seed {seed}, drawn from the fault space of "
               f"{source} by lab explore\n(re-run it: lab replay RUN)")
    return schedule_text(text, exp, timeline_entries(text, exp) + drawn, comment), drawn


def explore(text: str, exp: Experiment, source: str, runs: int, seed: int, runner: Runner,
            on_run: Callable[[Drawn], None] | None = None) -> Exploration:
    """Draw ``runs`` schedules from the file's fault space with ``seed`` and run each one."""
    out = Exploration(source, seed, runs)
    for i in range(1, runs + 1):
        concrete, entries = concrete_schedule(text, exp, seed, i, runs, source)
        try:
            trial = runner(concrete, f"schedule {i}")
        except Interrupted as e:
            out.drawn.append(Drawn(i, entries, e.trial))
            out.interrupted = True
            break
        d = Drawn(i, entries, trial)
        out.drawn.append(d)
        if on_run is not None:
            on_run(d)
    return out


def exploration_lines(x: Exploration, db_path: Path | None = None) -> list[str]:
    """The aggregate: which expectations failed how often, with the runs."""
    lines = []
    n = len(x.drawn)
    failures = x.failures()
    if failures:
        lines.append("failed expectations:")
        for text, rids in sorted(failures.items(), key=lambda kv: -len(kv[1])):
            lines.append(f"  {text}   failed in {len(rids)} of {n} runs: {', '.join(rids)}")
    passed = sum(d.trial.status == "passed" for d in x.drawn)
    errors = [d for d in x.drawn if d.trial.status == "error"]
    lines.append(f"passed: {passed} of {n} runs" + (f"; {len(errors)} could not complete: "
                 + ", ".join(d.trial.run_id for d in errors) if errors else ""))
    if x.interrupted:
        lines.append(f"interrupted after {n} of {x.runs} schedules")
    if db_path is not None:
        lines.append(f"schedules: {schedules_dir(db_path)}/<run>.exp")
    lines.append("run one again: lab replay RUN; a failure shrunk to what matters: "
                 "lab shrink RUN")
    return lines


def run_line(d: Drawn) -> str:
    t = d.trial
    return f"schedule {d.index}: run {t.run_id} {t.status}: {summary_line(d.entries)}"


def failed_lines(t: Trial) -> Sequence[str]:
    return [f"    FAIL {text}" + (f" (measured {t.measured[text]})" if text in t.measured
                                  else "") for text in t.failed]
