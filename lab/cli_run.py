"""`lab run`, `lab runs`, `lab show`."""

from __future__ import annotations

import json
import signal
import sys
from types import FrameType

from rich.console import Console
from rich.table import Table

from lab.report import render_summary
from lab.store import RunNotFound, Store, StoreError


def _sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def cmd_run(path: str, as_json: bool = False, keep: bool = False, db: str | None = None) -> int:
    from dsl.api import check_file, format_errors, load_plan
    from lab.cli_lang import print_warnings
    from lab.engine import run_plan, summary
    from lab.live import LiveView
    from runners.components import MissingComponent
    from runners.topology import check_components

    errors = check_file(path)
    if errors:
        print(format_errors(errors), file=sys.stderr)
        return 2
    plan = load_plan(path)
    print_warnings(plan, path)
    err = Console(stderr=True)
    try:
        check_components(plan)
    except MissingComponent as e:
        err.print(f"Error: {e}")
        return 3
    signal.signal(signal.SIGTERM, _sigterm)
    store = Store(db)
    view = LiveView()
    outcome = run_plan(plan, store, view, keep=keep)
    s = summary(outcome)
    if as_json:
        print(json.dumps(s, indent=2, default=str))
    else:
        render_summary(s, Console())
        print(
            f"run {outcome.run_id}: {outcome.status} (exit {outcome.exit_code}); "
            f"details: lab show {outcome.run_id}"
        )
    return outcome.exit_code


def cmd_runs(db: str | None = None) -> int:
    store = Store(db)
    table = Table(title=f"runs in {store.path}")
    for col in ("run", "experiment", "started", "status", "exit"):
        table.add_column(col)
    for r in store.list_runs():
        table.add_row(
            str(r["id"]),
            str(r["experiment"]),
            str(r["started_at"]),
            str(r["status"]),
            str(r.get("exit_code")),
        )
    Console().print(table)
    return 0


def cmd_show(ref: str, db: str | None = None, as_json: bool = False) -> int:
    store = Store(db)
    try:
        s = store.summary(ref)
    except (RunNotFound, StoreError) as e:
        print(f"Error: {e}", file=sys.stderr)
        return 2
    if as_json:
        print(json.dumps(s, indent=2, default=str))
    else:
        render_summary(s, Console())
    return 0
