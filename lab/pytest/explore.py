"""Exploration and search as pytest items, beside the cells of ``lab.pytest.plugin``.

Loaded with the plugin (its ``pytest_plugins``); it adds items only when asked:

- ``--lab-explore N`` (``--lab-explore-seed S``, default each file's ``seed``): every collected
  ``.exp`` with a fault space gets N more items, one per drawn schedule, named
  ``explore[seedS-K]``; each runs schedule K of seed S (``lab.explore.schedules.concrete_schedule``,
  the same schedule as ``lab explore FILE --seed S``) as a stored run. A failing one shows its
  schedule, the expectations that failed with the measured figure, the stored ``.exp`` and the
  commands to replay and shrink it; with ``--lab-shrink K/N`` it is shrunk there and then
  (``lab.explore.shrink``, a candidate failing in K of N runs) and the failure shows the smallest
  schedule and the file it was written to. "Explore 20 schedules" nightly is ``pytest
  experiments/x.exp --lab-explore 20 -k "explore["``.
- ``--lab-search KNOB=A..B`` (``--lab-search-expect``, ``--lab-search-repeats K/N``,
  ``--lab-search-resolution``, ``--lab-search-within LO..HI``): every collected ``.exp`` gets
  one item ``search[KNOB=A..B]`` that bisects the knob as ``lab search`` does. It fails when
  the expectation does not flip between A and B, or (``--within``) when the boundary found is
  not inside LO..HI; a boundary found is printed in the "lab search" section of the summary.

Two collectors of one path are fine in pytest (pytest-mypy does the same); the cells' own
collector (``ExpFile``) is untouched.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from lab.pytest.plugin import CellNotPassed, _LabItem, _shown_path, session_store

if TYPE_CHECKING:
    from dsl.models import Experiment
    from lab.explore.schedules import Runner, Trial
    from lab.store.db import Store

_SEARCHES = pytest.StashKey[list[str]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("lab", "replica-chaos-lab experiments (.exp files)")
    group.addoption("--lab-explore", type=int, default=0, metavar="N",
                    help="run N schedules drawn from each file's fault space (lab explore)")
    group.addoption("--lab-explore-seed", type=int, default=None, metavar="S",
                    help="the seed of the draws (default: each file's seed)")
    group.addoption("--lab-shrink", default=None, metavar="K/N",
                    help="shrink a failing schedule at once: a candidate fails in K of N runs")
    group.addoption("--lab-search", default=None, metavar="KNOB=A..B",
                    help="search the knob of each file for where its expectation flips")
    group.addoption("--lab-search-expect", default=None, metavar="TEXT",
                    help="the expectation searched (default: the file's only one)")
    group.addoption("--lab-search-repeats", default="2/3", metavar="K/N",
                    help="a value fails when it fails in K of N runs (default 2/3)")
    group.addoption("--lab-search-resolution", default=None, metavar="R",
                    help="stop when the interval is this narrow (default: an eighth of A..B)")
    group.addoption("--lab-search-within", default=None, metavar="LO..HI",
                    help="fail unless the boundary lies between LO and HI")


def pytest_configure(config: pytest.Config) -> None:
    """The options checked before anything is collected (a usage error, exit 4)."""
    config.stash[_SEARCHES] = []
    shrink = config.getoption("lab_shrink", None)
    if shrink:
        k_of_n(shrink, "--lab-shrink")
    search = config.getoption("lab_search", None)
    if search:
        knob_and_range(search)
        k_of_n(config.getoption("lab_search_repeats", "2/3"), "--lab-search-repeats")
        within = config.getoption("lab_search_within", None)
        if within:
            value_range(within, "--lab-search-within")


def k_of_n(text: str, option: str) -> tuple[int, int]:
    """``"2/3"`` -> (2, 3); a usage error otherwise."""
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise pytest.UsageError(f"{option} {text}: give K/N, e.g. 2/3") from None
    if not 1 <= k <= n:
        raise pytest.UsageError(f"{option} {text}: need 1 <= K <= N")
    return k, n


def value_range(text: str, option: str) -> tuple[str, str]:
    """``"200ms..3s"`` -> ("200ms", "3s")."""
    low, sep, high = text.partition("..")
    if not sep or not low or not high:
        raise pytest.UsageError(f"{option} {text}: give a range, A..B (e.g. 200ms..3s)")
    return low, high


def knob_and_range(text: str) -> tuple[str, str]:
    """``"26:at=6s..9s"`` -> ("26:at", "6s..9s")."""
    knob, sep, span = text.rpartition("=")
    if not sep or not knob:
        raise pytest.UsageError(f"--lab-search {text}: give KNOB=A..B (e.g. w.rate=50/s..400/s)")
    value_range(span, "--lab-search")
    return knob, span


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> ExploreFile | None:
    config = parent.config
    if file_path.suffix != ".exp":
        return None
    if not (config.getoption("lab_explore", 0) or config.getoption("lab_search", None)):
        return None
    try:
        text = file_path.read_text(encoding="utf-8-sig")
    except OSError:
        return None  # the cells' collector says why
    if "experiment" not in text:
        return None
    return ExploreFile.from_parent(parent, path=file_path)


class ExploreFile(pytest.File):
    """The explore and search items of one ``.exp`` file (an invalid file collects nothing
    here: the cells' collector reports its errors)."""

    def collect(self) -> Iterator[pytest.Item]:
        from dsl.api import load_experiment
        from dsl.errors import LanguageErrors

        try:
            exp = load_experiment(self.path)
        except LanguageErrors:
            return
        config = self.config
        runs = config.getoption("lab_explore", 0)
        if runs and exp.faults is not None:
            seed = config.getoption("lab_explore_seed", None)
            seed = exp.seed if seed is None else seed
            for i in range(1, runs + 1):
                yield ScheduleItem.from_parent(self, name=f"explore[seed{seed}-{i}]",
                                               exp=exp, seed=seed, index=i, runs=runs)
        search = config.getoption("lab_search", None)
        if search:
            knob, span = knob_and_range(search)
            yield SearchItem.from_parent(self, name=f"search[{search}]", exp=exp, knob=knob,
                                         span=span)


class _RunsItem(_LabItem):
    """An item that runs experiment texts as stored runs (``lab.explore.schedules.real_runner``)."""

    def __init__(self, *, exp: Experiment, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.exp = exp
        self.shown = _shown_path(self.path)
        self.text = self.path.read_text(encoding="utf-8-sig")
        self.store: Store | None = None

    def db_arg(self) -> str:
        db = self.config.getoption("lab_db", None)
        return f" --db {db}" if db else ""

    def runner(self) -> Runner:
        """Skips when the experiment cannot run here; the store from ``--lab-db``."""
        from dsl.compile import compile_experiment
        from lab.explore.schedules import real_runner
        from lab.run.cell_run import why_not_runnable

        reason = why_not_runnable(compile_experiment(self.exp))
        if reason:
            pytest.skip(reason)
        self.store = session_store(self.config)
        return real_runner(self.store)

    def teardown(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None

    def reportinfo(self) -> tuple[os.PathLike[str] | str, int | None, str]:
        return self.path, None, self.name


class ScheduleItem(_RunsItem):
    """Schedule ``index`` of ``seed``, drawn from the file's fault space, run once."""

    def __init__(self, *, seed: int, index: int, runs: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.seed, self.index, self.runs = seed, index, runs

    def runtest(self) -> None:
        from dsl.space import summary_line
        from lab.explore.schedules import Interrupted, concrete_schedule, failed_lines

        text, entries = concrete_schedule(self.text, self.exp, self.seed, self.index,
                                          self.runs, self.shown)
        runner = self.runner()
        try:
            trial = runner(text, f"schedule {self.index}")
        except Interrupted as e:
            raise KeyboardInterrupt(str(e)) from None
        self.user_properties.append(("lab_run", trial.run_id))
        if trial.status == "passed":
            return
        lines = [f"schedule {self.index} of seed {self.seed}: run {trial.run_id} "
                 f"{trial.status}: {summary_line(entries)}"]
        lines += failed_lines(trial)
        if trial.message and not trial.failed:
            lines.append(f"    {trial.message}")
        lines.append(f"its .exp: {trial.path}")
        db = self.db_arg()
        lines.append(f"again: lab replay {trial.run_id}{db}")
        shrink = self.config.getoption("lab_shrink", None)
        if trial.failed and shrink:
            lines += self.shrunk(text, trial, runner, *k_of_n(shrink, "--lab-shrink"))
        elif trial.failed:
            lines.append(f"shrink it: lab shrink {trial.run_id}{db}")
        raise CellNotPassed("\n".join(lines))

    def shrunk(self, text: str, trial: Trial, runner: Runner, k: int, n: int) -> list[str]:
        """Shrink the failing schedule here; the lines that say what is left."""
        from dsl.api import parse_text
        from dsl.space import summary_line, timeline_entries
        from lab.explore.schedules import Interrupted
        from lab.explore.shrink import Shrinking

        exp = parse_text(text, str(trial.path))
        entries = timeline_entries(text, exp)
        target = trial.failed[0]
        s = Shrinking(text, exp, target, runner, k=k, n=n)
        try:
            smallest = s.shrink(entries)
            final = s.judge(smallest)
        except Interrupted as e:
            raise KeyboardInterrupt(str(e)) from None
        runs = sum(len(j.trials) for j in s.judged)
        if not final.fails:
            return [f"shrinking: '{target}' did not fail again in {k} of {n} runs "
                    f"({final.line()}); {runs} runs stored"]
        dest = trial.path.with_name(f"{trial.run_id}-shrunk.exp")
        comment = (f"shrunk by lab shrink (pytest) from run {trial.run_id} ({len(entries)} "
                   f"timeline statements -> {len(smallest)}):\n'{target}' failed in "
                   f"{final.failures} of {len(final.trials)} runs: "
                   f"{', '.join(t.run_id for t in final.trials)}")
        dest.write_text(s.candidate_text(smallest, comment), encoding="utf-8")
        return [f"shrunk ({len(entries)} statements -> {len(smallest)}, a candidate failing in "
                f"{k} of {n} runs; {len(s.judged)} candidates, {runs} runs): "
                f"{summary_line(smallest)}",
                f"  {final.line()}",
                f"written to {dest}"]


@dataclass(frozen=True)
class _Search:
    knob: str
    low: str
    high: str
    expect: str | None
    resolution: str | None
    k: int
    n: int
    within: tuple[str, str] | None


class SearchItem(_RunsItem):
    """``lab search`` of one knob over A..B as an item."""

    def __init__(self, *, knob: str, span: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        low, high = value_range(span, "--lab-search")
        c = self.config
        within = c.getoption("lab_search_within", None)
        k, n = k_of_n(c.getoption("lab_search_repeats", "2/3"), "--lab-search-repeats")
        self.search = _Search(knob, low, high, c.getoption("lab_search_expect", None),
                              c.getoption("lab_search_resolution", None), k, n,
                              value_range(within, "--lab-search-within") if within else None)

    def runtest(self) -> None:
        from lab.explore.schedules import Interrupted
        from lab.explore.search import (
            KnobError,
            NoBoundary,
            bisect,
            knob_text,
            render,
            repeated_judge,
        )

        s = self.search
        try:
            a, b, step, kind, target = self._setup()
        except KnobError as e:
            raise CellNotPassed(f"{self.shown}: {e}") from None
        runner = self.runner()
        judge = repeated_judge(lambda v: knob_text(self.text, self.exp, s.knob, render(v, kind)),
                               runner, target, s.k, s.n)
        integer = kind == "count" and float(a).is_integer() and float(b).is_integer()
        try:
            found = bisect(a, b, judge, step, integer=integer)
        except NoBoundary as e:
            raise CellNotPassed("\n".join(
                [f"{s.knob} from {s.low} to {s.high}: {e}"]
                + [f"  {s.knob} = {render(p.value, kind)}: failed {p.failures} of {p.runs} runs "
                   f"({', '.join(t.run_id for t in p.trials)})" for p in e.points])) from None
        except Interrupted as e:
            raise KeyboardInterrupt(str(e)) from None
        runs = sum(p.runs for p in found.points)
        h, f = found.holds, found.fails
        line = (f"{self.shown}: '{target}' flips over {s.knob} between {render(found.low, kind)} "
                f"and {render(found.high, kind)}: holds at {render(h.value, kind)} ({h.failures} "
                f"of {h.runs} runs failed), fails at {render(f.value, kind)} ({f.failures} of "
                f"{f.runs}); {len(found.points)} values, {runs} runs: "
                f"{', '.join(t.run_id for p in found.points for t in p.trials)}")
        self.user_properties.append(("lab_search", line))
        self.config.stash[_SEARCHES].append(line)
        if s.within is not None:
            lo, hi = (_value(v) for v in s.within)
            if not (min(lo, hi) <= found.low and found.high <= max(lo, hi)):
                raise CellNotPassed(f"the boundary is not within {s.within[0]}..{s.within[1]}:"
                                    f"\n{line}")

    def _setup(self) -> tuple[float, float, float, str, str]:
        from dsl.api import check_text
        from lab.explore.search import KnobError, knob_text, render

        s = self.search
        a, b = _quantity(s.low), _quantity(s.high)
        step = _quantity(s.resolution) if s.resolution else None
        if a.kind != b.kind or (step is not None and step.kind != a.kind):
            raise KnobError(f"{s.low}..{s.high}: give both ends in one kind of unit")
        if a.value == b.value:
            raise KnobError("both ends are the same value")
        for v in (a.value, b.value):
            errors = check_text(knob_text(self.text, self.exp, s.knob, render(v, a.kind)),
                                self.shown)
            if errors:
                raise KnobError(f"with {s.knob} = {render(v, a.kind)} the file is not a valid "
                                f"experiment: {errors[0].message}")
        texts = [e.text for e in self.exp.expectations]
        target = None
        if s.expect:
            want = " ".join(s.expect.split())
            target = want if want.startswith("expect ") else f"expect {want}"
        elif len(texts) == 1:
            target = texts[0]
        if target is None or target not in texts:
            raise KnobError(f"name the expectation with --lab-search-expect (its expectations: "
                            f"{'; '.join(texts) or 'none'})")
        res = step.value if step is not None else abs(b.value - a.value) / 8
        return a.value, b.value, res, a.kind, target


def _quantity(text: str) -> Any:
    from lab.explore.search import parse_value

    return parse_value(text)


def _value(text: str) -> float:
    return float(_quantity(text).value)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config
                            ) -> None:  # fmt: skip
    lines = config.stash.get(_SEARCHES, [])
    if lines:
        terminalreporter.section("lab search")
        for line in lines:
            terminalreporter.line(line)
