"""`lab run`, `lab runs`, `lab show`.

A results database that cannot be opened, read or written ends the command with one line,
``Error: results database <path> is unreadable: <cause>`` (or ``cannot be written``, e.g. in a
read-only location), and exit 3; ``lab run`` checks it before any server starts, and creates
the database file only, never a directory (``$LAB_HOME`` aside). ``lab runs`` and ``lab show``
create nothing: a missing database is one line and exit 2 (``lab runs`` of the default one, on
a machine that has run nothing yet, says so and exits 0); they first mark ``abandoned`` the runs
whose lab process is gone (``Store.mark_abandoned``), unless the database is read-only.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from rich.console import Console
from rich.markup import escape

from lab.exits import EXIT_INCOMPLETE, EXIT_LANGUAGE, EXIT_OK, EXIT_USAGE
from lab.report.measurements import render_summary
from lab.report.summary_matrix import render_matrix_summary
from lab.run.step import Stepper, StepUsageError, parse_step_delay, read_source, stdin_line_reader
from lab.store.db import Store, default_db_path
from lab.store.errors import AmbiguousRun, RunNotFound, StoreError, StoreMissing, StoreUnavailable

if TYPE_CHECKING:
    from dsl.models import Experiment


def _sigterm(signum: int, frame: FrameType | None) -> None:
    """SIGTERM and SIGINT: mark the run interrupted (a client library may turn the signal into
    its own error: the engine still knows it was an interruption), then interrupt."""
    from lab.run.engine import INTERRUPTED

    if INTERRUPTED.is_set():  # stopping already: a second Ctrl-C must not cut the teardown short
        os.write(2, b"lab: stopping already: tearing down what the run started and storing what "
                    b"it measured (kill -9 and `lab gc` skip that)\n")
        return
    INTERRUPTED.set()
    raise KeyboardInterrupt


def _db_path(db: str | None) -> Path:
    return Path(db) if db else default_db_path()


def store_failed(db: str | Path | None, e: BaseException, writing: bool = False) -> int:
    """Print the one line saying which database failed and why; exit 3."""
    path = db if isinstance(db, Path) else _db_path(db)
    print(f"Error: {StoreUnavailable.of(path, e, writing)}", file=sys.stderr)
    return EXIT_INCOMPLETE


def store_missing(e: StoreMissing) -> int:
    print(f"Error: {e}", file=sys.stderr)
    return EXIT_USAGE


def _mark_abandoned(store: Store) -> None:
    """Mark runs whose lab process is gone; a database that cannot take the write (read-only,
    full) is still listed, with a warning."""
    if store.read_only:
        if store.abandoned_runs():
            print(f"warning: results database {store.path} is read-only; runs whose lab "
                  "process is gone are not marked abandoned", file=sys.stderr)  # fmt: skip
        return
    try:
        store.mark_abandoned()
    except (sqlite3.Error, OSError) as e:
        print(f"warning: {StoreUnavailable.of(store.path, e, writing=True)}; runs whose lab "
              "process is gone are not marked abandoned", file=sys.stderr)  # fmt: skip


def make_stepper(step: bool, step_delay: str | None, console: Console,
                 source: str | None, stdin: TextIO | None = None) -> Stepper | None:
    """The stepper of ``--step`` / ``--step-delay`` (None for an ordinary run); raises
    StepUsageError when Enter cannot be read and no delay is given."""
    if not step and step_delay is None:
        return None
    stdin = stdin if stdin is not None else sys.stdin
    delay = parse_step_delay(step_delay) if step_delay is not None else None
    on_terminal = step and stdin is not None and stdin.isatty()
    if delay is None and not on_terminal:
        raise StepUsageError("--step waits for Enter on a terminal, but stdin is not one; "
                             "use --step-delay DURATION (e.g. --step-delay 5s) to pause that "
                             "long before each action instead")
    return Stepper(delay=delay, read_line=stdin_line_reader(stdin) if on_terminal else None,
                   console=console, source_lines=read_source(source))


def space_note(exp: Experiment, path: str) -> None:
    """A file with a fault space: ``lab run`` runs its timeline alone (lab explore draws it)."""
    space = exp.faults
    if space is not None:
        print(f"note: {path}:{space.span.line}: the fault space is not run by `lab run` (only "
              f"the timeline is); `lab explore {path}` draws schedules from it",
              file=sys.stderr)


def cmd_run(path: str, as_json: bool = False, keep: bool = False, db: str | None = None,
            step: bool = False, step_delay: str | None = None,
            backend: str | None = None) -> int:
    from dsl.api import format_errors, load_both
    from dsl.errors import LanguageErrors
    from lab.cli.lang import print_warnings
    from lab.run.engine import run_plan
    from lab.run.live import LiveView
    from lab.run.summary import summary
    from runners.components import MissingComponent
    from runners.topology import check_components

    view = LiveView()
    try:
        stepper = make_stepper(step, step_delay, view.console, path)
    except StepUsageError as e:
        print(f"Error: {e}", file=sys.stderr)
        return EXIT_USAGE
    try:  # the file read, parsed and validated once: the experiment and its plan
        exp, plan = load_both(path)
    except LanguageErrors as e:
        print(format_errors(e.errors), file=sys.stderr)
        return EXIT_LANGUAGE
    if backend is not None and backend != plan.backend:  # lab run --backend
        from dsl.api import backend_errors

        errors = backend_errors(path, backend, exp)
        if errors:
            print(format_errors(errors), file=sys.stderr)
            return EXIT_LANGUAGE
        plan = plan.model_copy(update={"backend": backend})
    print_warnings(plan, path)
    space_note(exp, path)
    err = Console(stderr=True)
    try:  # the results database, before any server starts
        store = Store(_db_path(db))
        store.check_room()
    except (StoreError, sqlite3.Error, OSError) as e:
        return store_failed(db, e)
    try:
        check_components(plan)
    except MissingComponent as e:
        err.print(f"Error: {e}")
        return EXIT_INCOMPLETE
    from lab.run.engine import INTERRUPTED

    INTERRUPTED.clear()  # a run of its own (the CLI may run in a process that ran another)
    signal.signal(signal.SIGTERM, _sigterm)
    signal.signal(signal.SIGINT, _sigterm)
    try:
        outcome = run_plan(plan, store, view, keep=keep, stepper=stepper)
    except StoreUnavailable as e:  # the run could not even be created: nothing started
        return store_failed(db, e, writing=True)
    s = summary(outcome)
    if as_json:
        print(json.dumps(s, indent=2, default=str))
    else:
        render_matrix_summary(s, Console())
        if outcome.store_error:
            print(f"run {outcome.run_id}: {outcome.status} (exit {outcome.exit_code})")
        else:
            print(
                f"run {outcome.run_id}: {outcome.status} (exit {outcome.exit_code}); "
                f"every figure: lab show {outcome.run_id} --all"
            )
    if outcome.store_error:
        print(f"Error: {outcome.store_error}", file=sys.stderr)
    return outcome.exit_code


def cmd_runs(db: str | None = None) -> int:
    try:
        store = Store(_db_path(db), write=False)
        _mark_abandoned(store)
        runs = store.list_runs()
    except StoreMissing as e:
        if db is None:  # nothing run on this machine yet
            print(f"no runs yet: no results database at {e.path} (`lab run FILE` creates it)")
            return EXIT_OK
        return store_missing(e)
    except (StoreError, sqlite3.Error, OSError) as e:
        return store_failed(db, e)
    print_runs(runs, str(store.path), Console())
    return EXIT_OK


def print_runs(runs: list[dict[str, Any]], where: str, console: Console) -> None:
    """``lab runs``: id (whole: it is what one copies), experiment, what it ran on (back-end
    and topology; ``unknown`` before they were recorded), start, status, exit code; fitted to
    the terminal (``lab.report.term_fit``), one block per run when no table fits."""
    from lab.report.term_fit import block_lines, fitted_table

    header = ["run", "experiment", "ran on", "started", "status", "exit"]
    rows = [[str(r["id"]), str(r["experiment"]),
             f"{r.get('backend') or 'unknown'} {r.get('topology') or 'unknown'}",
             str(r["started_at"] or "")[:19].replace("T", " "), str(r["status"]),
             str(r.get("exit_code"))] for r in runs]  # fmt: skip
    table = fitted_table(header, rows, console, title=escape(f"runs in {where}"))
    if table is not None:
        console.print(table)
        return
    console.print(escape(f"runs in {where}"), soft_wrap=True)
    for row in rows:
        for line in block_lines(row[0], list(zip(header[1:], row[1:], strict=True)),
                                console.width, indent="    "):
            console.print(escape(line), soft_wrap=True)


def ambiguous(store: Store, e: AmbiguousRun, shown: int = 20) -> str:
    """The error for a prefix that matches several runs: one line per match (id, experiment,
    start, status), most recent first."""
    lines = [f"Error: run id '{e.ref}' is ambiguous: it matches {len(e.matches)} runs "
             "(give more characters):"]  # fmt: skip
    for rid in e.matches[:shown]:
        row = store.conn.execute(
            "select experiment, started_at, status from runs where id = ?", [rid]
        ).fetchone()
        exp, started, status = row or ("?", "?", "?")
        lines.append(f"  {rid}  {exp}  {started}  {status}")
    if len(e.matches) > shown:
        lines.append(f"  ... and {len(e.matches) - shown} more")
    return "\n".join(lines)


T = TypeVar("T")


def read_run(db: str | None, ref: str, read: Callable[[Store, str], T]) -> T | int:
    """``read(store, ref)`` on the results database, or the exit status after saying why it
    could not: 2 for an ambiguous or unknown run or a missing database, 3 for a database that
    cannot be read."""
    try:
        store = Store(_db_path(db), write=False)
        _mark_abandoned(store)
        return read(store, ref)
    except StoreMissing as e:
        return store_missing(e)
    except AmbiguousRun as e:
        print(ambiguous(store, e), file=sys.stderr)
        return EXIT_USAGE
    except RunNotFound as e:
        print(f"Error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except (StoreError, sqlite3.Error, OSError) as e:
        return store_failed(db, e)


def cmd_show(ref: str, db: str | None = None, as_json: bool = False,
             show_all: bool = False) -> int:
    """The run's compact summary (faults, the matrix, expectations); ``show_all``: every
    figure (the measurements table). A cell of an abandoned run that stored operations and
    no figures is measured now (``lab.report.unchecked``)."""
    from lab.report.unchecked import fill_unchecked

    s = read_run(db, ref, lambda store, r: fill_unchecked(store, store.summary(r)))
    if isinstance(s, int):
        return s
    if as_json:
        print(json.dumps(s, indent=2, default=str))
    elif show_all:
        render_summary(s, Console())
    else:
        render_matrix_summary(s, Console())
    return EXIT_OK
