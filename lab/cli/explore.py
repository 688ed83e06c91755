"""`lab explore`, `lab replay`, `lab shrink`, `lab search`: thin over ``lab.explore.schedules``,
``lab.explore.shrink`` and ``lab.explore.search``. Exit codes as ``lab run``: 0 every run passed
(shrink and search: the result was found), 1 an expectation failed, 2 usage or language error, 3 a
run could not complete or was interrupted.

``--backend native|containers`` (as ``lab run --backend``): every run on that back-end,
whatever the file says; each run's stored ``.exp`` says it too
(``lab.explore.schedules.with_backend``), so ``lab replay`` runs it there again. A file that cannot
run there is refused before any server starts (exit 2)."""

from __future__ import annotations

import signal
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path

from lab.exits import EXIT_INCOMPLETE, EXIT_LANGUAGE, EXIT_OK, EXIT_USAGE
from lab.explore.schedules import Runner, with_backend
from lab.store.db import Store
from lab.store.errors import StoreError


def _language_errors(path: str) -> bool:
    from dsl.api import check_file, format_errors

    errors = check_file(path)
    if errors:
        print(format_errors(errors), file=sys.stderr)
    return bool(errors)


def _on_backend(text: str, path: str, backend: str | None) -> str | None:
    """The file's text made to run on ``backend`` (unchanged for None), or None after printing
    why it cannot (``lab check``'s errors of the text on that back-end, fault space included)."""
    if backend is None:
        return text
    from dsl.api import check_text, format_errors, parse_text

    moved = with_backend(text, parse_text(text, path), backend)
    errors = check_text(moved, path) if moved != text else []
    if errors:
        print(f"Error: {path} cannot run with --backend {backend}:", file=sys.stderr)
        print(format_errors(errors, {path: moved}), file=sys.stderr)
        return None
    return moved


def _open_store(db: str | None) -> Store | int:
    from lab.cli.run import _db_path, store_failed

    try:
        store = Store(_db_path(db))
        store.check_room()
    except (StoreError, sqlite3.Error, OSError) as e:
        return store_failed(db, e)
    return store


def _with_runner(db: str | None, work: Callable[[Runner, Store], int],
                 backend: str | None = None) -> int:
    """Open the store, arm Ctrl-C as `lab run` does, and call ``work`` with a real runner (on
    ``backend`` when given); a missing component ends it with exit 3 before any server
    starts."""
    from lab.cli.run import _sigterm
    from lab.explore.schedules import real_runner
    from lab.run.engine import INTERRUPTED
    from lab.run.live import LiveView
    from runners.components import MissingComponent

    store = _open_store(db)
    if isinstance(store, int):
        return store
    INTERRUPTED.clear()
    signal.signal(signal.SIGTERM, _sigterm)
    signal.signal(signal.SIGINT, _sigterm)
    try:
        return work(real_runner(store, LiveView(), backend), store)
    except MissingComponent as e:
        print(f"Error: {e}", file=sys.stderr)
        return EXIT_INCOMPLETE


def cmd_explore(path: str, runs: int, seed: int | None, db: str | None = None,
                dry_run: bool = False, backend: str | None = None) -> int:
    from dsl.api import load_experiment
    from dsl.space import summary_line
    from lab.explore.schedules import (
        Drawn,
        concrete_schedule,
        exploration_lines,
        explore,
        failed_lines,
        run_line,
    )

    if runs < 1:
        print("Error: --runs must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    if _language_errors(path):
        return EXIT_LANGUAGE
    exp = load_experiment(path)
    if exp.faults is None:
        print(f"Error: {path} has no fault space (faults {{ ... }}): nothing to draw; see "
              "docs/language.md, \"Fault spaces\"", file=sys.stderr)
        return EXIT_USAGE
    text = Path(path).read_text(encoding="utf-8-sig")
    if _on_backend(text, path, backend) is None:
        return EXIT_LANGUAGE
    the_seed = exp.seed if seed is None else seed
    if dry_run:
        for i in range(1, runs + 1):
            _, entries = concrete_schedule(text, exp, the_seed, i, runs, path)
            print(f"schedule {i}: {summary_line(entries)}")
        return EXIT_OK

    def work(runner: Runner, store: Store) -> int:
        from lab.explore.schedules import schedules_dir

        print(f"exploring {path}: {runs} schedules of seed {the_seed}; each run's .exp is kept "
              f"in {schedules_dir(store.path)}", flush=True)

        def on_run(d: Drawn) -> None:
            print(run_line(d), flush=True)
            for line in failed_lines(d.trial):
                print(line, flush=True)

        x = explore(text, exp, path, runs, the_seed, runner, on_run)
        print()
        for line in exploration_lines(x, store.path):
            print(line)
        return x.exit_code

    return _with_runner(db, work, backend)


def cmd_replay(ref: str, db: str | None = None, backend: str | None = None) -> int:
    """Run the stored ``.exp`` of a run again (its schedule, exactly), on ``backend``, by
    default on the one the run ran on (a run of ``lab run --backend`` included)."""
    from lab.cli.run import cmd_run, read_run

    run = read_run(db, ref, Store.get_run)
    if isinstance(run, int):
        return run
    source = run.get("source")
    if not source or not Path(str(source)).is_file():
        print(f"Error: run {run['id']} has no .exp to replay (its source "
              f"{source or 'was not a file'} is gone)", file=sys.stderr)
        return EXIT_USAGE
    on = backend or _ran_on(run)
    print(f"replaying run {run['id']}: {source}" + (f" on {on}" if on else ""), flush=True)
    return cmd_run(str(source), db=db, backend=on)


def _ran_on(run: dict[str, object]) -> str | None:
    """The back-end a stored run ran on (None when not recorded: runs before migration 6)."""
    b = run.get("backend")
    return str(b) if b in ("native", "containers") else None


def _strip_expect(text: str) -> str:
    text = " ".join(text.split())
    return text if text.startswith("expect ") else f"expect {text}"


def cmd_shrink(ref: str, expect: str | None = None, k: int = 2, n: int = 3,
               max_candidates: int = 40, out: str | None = None, db: str | None = None,
               backend: str | None = None) -> int:
    """A smallest schedule of run ``ref`` that still fails the same expectation in k of n
    runs, written as an ``.exp`` file; each candidate on ``backend``, by default the one the
    run ran on."""
    from dsl.api import parse_text
    from dsl.errors import LanguageErrors
    from dsl.space import summary_line, timeline_entries
    from lab.cli.run import read_run
    from lab.exits import EXIT_EXPECTATION
    from lab.explore.schedules import Interrupted, schedules_dir
    from lab.explore.shrink import Judged, Shrinking

    if not 1 <= k <= n:
        print(f"Error: --fails {k} --of {n}: need 1 <= K <= N", file=sys.stderr)
        return EXIT_USAGE
    run = read_run(db, ref, Store.get_run)
    if isinstance(run, int):
        return run
    source = str(run.get("source") or "")
    if not source or not Path(source).is_file():
        print(f"Error: run {run['id']} has no .exp to shrink (its source {source or '-'} is "
              "gone)", file=sys.stderr)
        return EXIT_USAGE
    text = Path(source).read_text(encoding="utf-8-sig")
    try:
        exp = parse_text(text, source)
    except LanguageErrors:
        print(f"Error: {source} (run {run['id']}) is no longer a valid experiment: lab check "
              f"{source}", file=sys.stderr)
        return EXIT_LANGUAGE
    if exp.faults is not None:
        print(f"Error: run {run['id']} ran {source}, which has a fault space: shrink a run of "
              "lab explore (its concrete schedule)", file=sys.stderr)
        return EXIT_USAGE
    opened = _open_store(db)
    if isinstance(opened, int):
        return opened
    failed = [e["text"] for e in opened.expectations(run["id"]) if e["passed"] is False]
    target = _strip_expect(expect) if expect else (failed[0] if failed else None)
    if target is None:
        print(f"Error: run {run['id']} failed no expectation: nothing to shrink (name one "
              "with --expect)", file=sys.stderr)
        return EXIT_USAGE
    if target not in {e.text for e in exp.expectations}:
        print(f"Error: '{target}' is not an expectation of {source} (its expectations: "
              f"{'; '.join(e.text for e in exp.expectations)})", file=sys.stderr)
        return EXIT_USAGE
    on = backend or _ran_on(run)
    if _on_backend(text, source, on) is None:
        return EXIT_LANGUAGE
    entries = timeline_entries(text, exp)
    dest = Path(out) if out else schedules_dir(opened.path) / f"{run['id']}-shrunk.exp"

    def work(runner: Runner, store: Store) -> int:
        print(f"shrinking run {run['id']} ({len(entries)} timeline statements) against "
              f"'{target}': a candidate fails when it fails in {k} of {n} runs; at most "
              f"{max_candidates} candidates", flush=True)

        def on_judged(i: int, j: Judged) -> None:
            print(f"candidate {i}: {summary_line(j.entries)}\n    {j.line()}", flush=True)

        s = Shrinking(text, exp, target, runner, k=k, n=n, max_candidates=max_candidates,
                      on_judged=on_judged)
        try:
            smallest = s.shrink(entries)
            final = s.judge(smallest)  # confirmed k of n (cached when already judged)
        except Interrupted as e:
            print(f"interrupted during run {e.trial.run_id}: nothing written", file=sys.stderr)
            return EXIT_INCOMPLETE
        runs = sum(len(j.trials) for j in s.judged)
        if not final.fails:
            print(f"the failure did not reproduce in {k} of {n} runs "
                  f"({final.line()}); nothing written; {runs} runs stored")
            return EXIT_EXPECTATION
        comment = (f"shrunk by lab shrink from run {run['id']} ({len(entries)} timeline "
                   f"statements -> {len(smallest)}):\n'{target}' failed in {final.failures} "
                   f"of {len(final.trials)} runs: {', '.join(t.run_id for t in final.trials)}")
        dest.parent.mkdir(parents=True, exist_ok=True)
        written = s.candidate_text(smallest, comment)  # where its runs ran (--backend)
        dest.write_text(with_backend(written, parse_text(written, str(dest)), on),
                        encoding="utf-8")
        print()
        print(f"smallest schedule ({len(entries)} statements -> {len(smallest)}): "
              f"{summary_line(smallest)}")
        print(f"  {final.line()}")
        print(f"{len(s.judged)} candidates, {runs} runs, all stored (lab runs)")
        if s.budget_spent:
            print(f"the budget of {max_candidates} candidates was spent before the end: its "
                  "faults may shorten or move earlier still (--max-candidates)")
        print(f"written to {dest} (lab run {dest})")
        return EXIT_OK

    return _with_runner(db, work, on)


def cmd_search(path: str, knob: str, low: str, high: str, expect: str | None = None,
               resolution: str | None = None, k: int = 2, n: int = 3,
               db: str | None = None, as_json: bool = False,
               backend: str | None = None) -> int:
    """Where, between ``low`` and ``high`` of ``knob``, the expectation flips. ``as_json``:
    the progress goes to stderr and stdout gets one JSON object (``lab.explore.search.summary``,
    with the search's arguments), also when no boundary is found."""
    import json

    from dsl.api import check_text, format_errors, load_experiment
    from lab.exits import EXIT_EXPECTATION
    from lab.explore.schedules import Interrupted
    from lab.explore.search import (
        Boundary,
        KnobError,
        NoBoundary,
        Point,
        bisect,
        knob_text,
        parse_value,
        render,
        repeated_judge,
        summary,
    )

    if not 1 <= k <= n:
        print(f"Error: --fails {k} --of {n}: need 1 <= K <= N", file=sys.stderr)
        return EXIT_USAGE
    if _language_errors(path):
        return EXIT_LANGUAGE
    exp = load_experiment(path)
    text = Path(path).read_text(encoding="utf-8-sig")
    try:
        a, b = parse_value(low), parse_value(high)
        step = parse_value(resolution) if resolution else None
        if a.kind != b.kind or (step is not None and step.kind != a.kind):
            raise KnobError(f"--from {low}, --to {high}"
                            + (f", --resolution {resolution}" if resolution else "")
                            + ": give them in one kind of unit")
        if a.value == b.value:
            raise KnobError("--from and --to are the same value")
        kind = a.kind
        texts = {v: knob_text(text, exp, knob, render(v, kind)) for v in (a.value, b.value)}
    except KnobError as e:
        print(f"Error: {e}", file=sys.stderr)
        return EXIT_USAGE
    for v, t in texts.items():
        errors = check_text(t, path)
        if errors:
            print(f"Error: with {knob} = {render(v, kind)} the file is not a valid experiment:",
                  file=sys.stderr)
            print(format_errors(errors, {path: t}), file=sys.stderr)
            return EXIT_LANGUAGE
        if _on_backend(t, path, backend) is None:  # the ends as they run: on --backend
            return EXIT_LANGUAGE
    texts_of = [e.text for e in exp.expectations]
    target = _strip_expect(expect) if expect else (texts_of[0] if len(texts_of) == 1 else None)
    if target is None or target not in texts_of:
        print(f"Error: name the expectation with --expect (its expectations: "
              f"{'; '.join(texts_of) or 'none'})", file=sys.stderr)
        return EXIT_USAGE
    width = abs(b.value - a.value)
    res = step.value if step is not None else width / 8
    integer = kind == "count" and float(a.value).is_integer() and float(b.value).is_integer()

    def shown(v: float) -> str:
        return render(v, kind)

    progress = sys.stderr if as_json else sys.stdout

    def emit(points: list[Point], found: Boundary | None, message: str | None) -> None:
        out = {"file": path, "knob": knob, "expectation": target, "from": low, "to": high,
               "resolution": shown(res), "fails": k, "of": n, "message": message,
               **summary(points, kind, found)}
        print(json.dumps(out, indent=2))

    def work(runner: Runner, store: Store) -> int:
        print(f"searching {knob} from {shown(a.value)} to {shown(b.value)} in {path} for where "
              f"'{target}' flips: each value judged from up to {n} runs, failing when {k} "
              f"fail; resolution {shown(res)}", file=progress, flush=True)

        def on_point(p: Point) -> None:
            verdict = "fails" if p.fails else "holds"
            print(f"{knob} = {shown(p.value)}: {verdict} (failed {p.failures} of {p.runs} runs: "
                  f"{', '.join(t.run_id for t in p.trials)})", file=progress, flush=True)

        judge = repeated_judge(lambda v: knob_text(text, exp, knob, shown(v)), runner, target,
                               k, n, on_point)
        try:
            found = bisect(a.value, b.value, judge, res, integer=integer)
        except NoBoundary as e:
            if as_json:
                emit(e.points, None, f"no boundary: {e}")
            else:
                print(f"no boundary: {e}")
            return EXIT_EXPECTATION
        except Interrupted as e:
            print(f"interrupted during run {e.trial.run_id}", file=sys.stderr)
            return EXIT_INCOMPLETE
        if as_json:
            emit(found.points, found, None)
            return EXIT_OK
        print()
        print(f"boundary of '{target}' over {knob}: between {shown(found.low)} and "
              f"{shown(found.high)}")
        for label, p in (("holds", found.holds), ("fails", found.fails)):
            lo, hi = p.rate_interval()
            print(f"  {label} at {shown(p.value)}: failed {p.failures} of {p.runs} runs "
                  f"(failure rate 95% CI {lo:.0%}–{hi:.0%}): "
                  f"{', '.join(t.run_id for t in p.trials)}")
        runs = sum(p.runs for p in found.points)
        print(f"{len(found.points)} values, {runs} runs, all stored; assumes one flip between "
              f"{shown(a.value)} and {shown(b.value)}")
        return EXIT_OK

    return _with_runner(db, work, backend)
