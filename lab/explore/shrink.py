"""``lab shrink``: from a failing run, a smallest schedule that still fails the same expectation.

Three passes over the run's timeline (its ``at`` statements, ``dsl.space.timeline_entries``):

1. **ddmin** (Zeller and Hildebrandt's delta debugging) over the statements: the result is
   1-minimal, no single statement of it can be left out and still fail;
2. each fault's ``for`` shortened: bisection between 0.1 s and its length;
3. each statement moved earlier: bisection between 0 s and its time.

Real servers are noisy, so a candidate counts as failing only when it fails in ``k`` of ``n``
runs (``Repeats``; it stops as soon as the answer is known: ``k`` failures, or more than ``n -
k`` passes). A candidate that is not a valid experiment (``lab check`` errors: a ``start`` left
without its ``kill`` is fine, a ``wait until`` of a node never stopped may not be) counts as not
failing and runs nothing. Every run is stored (``lab.explore.schedules.Runner``); a candidate
already judged is not run again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

from dsl.models import Experiment
from dsl.space import RESOLUTION, Entry, schedule_text, summary_line
from lab.explore.schedules import Interrupted, Runner, Trial

T = TypeVar("T")


def ddmin(items: Sequence[T], fails: Callable[[list[T]], bool], try_empty: bool = True) -> list[T]:
    """A 1-minimal sublist of ``items`` (order kept) for which ``fails`` holds, assuming it
    holds for ``items``. ``try_empty``: first ask whether nothing at all fails (then ``[]``)."""
    current = list(items)
    if try_empty and current and fails([]):
        return []
    n = 2
    while len(current) >= 2:
        size = len(current)
        chunks = [current[i * size // n:(i + 1) * size // n] for i in range(n)]
        chunks = [c for c in chunks if c]
        for c in chunks:  # reduce to a subset
            if len(c) < size and fails(c):
                current, n = c, 2
                break
        else:
            for i in range(len(chunks)):  # reduce to a complement
                rest = [x for j, c in enumerate(chunks) if j != i for x in c]
                if len(chunks) > 2 and rest and fails(rest):
                    current, n = rest, max(n - 1, 2)
                    break
            else:
                if n >= size:
                    break
                n = min(size, 2 * n)
    return current


def bisect_down(low: float, high: float, fails: Callable[[float], bool],
                resolution: float = RESOLUTION, steps: int = 4) -> float:
    """The smallest value in [low, high] (on ``resolution``) found failing by bisection,
    ``fails(high)`` being known true; at most ``steps`` probes."""
    for _ in range(steps):
        if high - low <= resolution * 1.5:
            break
        mid = round(round((low + high) / 2 / resolution) * resolution, 3)
        if mid <= low or mid >= high:
            break
        if fails(mid):
            high = mid
        else:
            low = mid
    return high


@dataclass
class Judged:
    """A candidate's verdict: the runs behind it (empty when it could not be an experiment)."""

    entries: list[Entry]
    fails: bool
    failures: int = 0
    trials: list[Trial] = field(default_factory=list)
    invalid: str | None = None

    def line(self) -> str:
        if self.invalid is not None:
            return f"not an experiment ({self.invalid}): counts as passing"
        runs = ", ".join(t.run_id for t in self.trials)
        verdict = "fails" if self.fails else "passes"
        return f"{verdict}: failed {self.failures} of {len(self.trials)} runs ({runs})"


@dataclass
class Shrinking:
    """The state of one shrink: the experiment, the expectation, the rule and the log."""

    text: str
    exp: Experiment
    expectation: str
    runner: Runner
    k: int = 2
    n: int = 3
    max_candidates: int = 40
    on_judged: Callable[[int, Judged], None] | None = None
    judged: list[Judged] = field(default_factory=list)
    cache: dict[tuple[str, ...], Judged] = field(default_factory=dict)
    budget_spent: bool = False  # a candidate went unjudged: max_candidates were judged

    def candidate_text(self, entries: Sequence[Entry], comment: str | None = None) -> str:
        return schedule_text(self.text, self.exp, entries, comment)

    def judge(self, entries: Sequence[Entry]) -> Judged:
        key = tuple(e.text for e in entries)
        if key in self.cache:
            return self.cache[key]
        if len(self.judged) >= self.max_candidates:
            self.budget_spent = True
            return Judged(list(entries), False, invalid="the trial budget is spent")
        from dsl.api import check_text

        text = self.candidate_text(entries)
        errors = check_text(text, "candidate.exp")
        if errors:
            j = Judged(list(entries), False, invalid=errors[0].message)
        else:
            j = Judged(list(entries), False)
            passes = 0
            label = f"candidate {len(self.judged) + 1}: {summary_line(entries)}"
            while j.failures < self.k and passes <= self.n - self.k:
                try:
                    t = self.runner(text, label)
                except Interrupted as e:
                    j.trials.append(e.trial)
                    self._record(j)
                    raise
                j.trials.append(t)
                if t.fails(self.expectation):
                    j.failures += 1
                else:
                    passes += 1
            j.fails = j.failures >= self.k
        self.cache[key] = j
        self._record(j)
        return j

    def _record(self, j: Judged) -> None:
        self.judged.append(j)
        if self.on_judged is not None:
            self.on_judged(len(self.judged), j)

    def fails(self, entries: Sequence[Entry]) -> bool:
        return self.judge(entries).fails

    def shrink(self, entries: list[Entry]) -> list[Entry]:
        """ddmin over the statements, then shorter faults, then earlier times."""
        current = ddmin(entries, self.fails)
        for i in range(len(current)):  # shorter faults
            e = current[i]
            if e.lasts is None or e.lasts <= RESOLUTION:
                continue

            def shorter(d: float, i: int = i) -> bool:
                return self.fails(current[:i] + [replace(current[i], lasts=d)] + current[i + 1:])

            current[i] = replace(e, lasts=bisect_down(RESOLUTION, e.lasts, shorter))
        for i in range(len(current)):  # earlier
            e = current[i]
            if e.at <= 0:
                continue

            def earlier(at: float, i: int = i) -> bool:
                return self.fails(current[:i] + [replace(current[i], at=at)] + current[i + 1:])

            current[i] = replace(e, at=bisect_down(0.0, e.at, earlier))
        return current
