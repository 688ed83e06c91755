"""Shared machinery of the bench scripts: interleaved rounds, medians with their spread, targets.

One sample is not a figure: every figure is the median of at least ``MIN_ROUNDS`` rounds, shown
with its min–max, and a ratio against a peer (dbdeployer, sysbench, recording off...) is taken
round by round against the peer measured in the same round (lab, then peer, round after round),
then summarised the same way. Each figure is printed for people and as one machine-readable line

    BENCH-RESULT {"script": ..., "figure": ..., "value": ..., "min": ..., "max": ..., ...}

which ``bench/run_all.py`` collects into ``bench/results.md``. ``Bench.finish()`` prints
``BENCH-DONE {...}`` last: a script that exits without it crashed.

    rounds = harness.rounds()                  # BENCH_ROUNDS, default 3, never below 3
    s = harness.run_rounds(rounds, [("lab", lab_once), ("peer", peer_once)])
    b = harness.Bench("bench_x")
    b.figure("ready", s["lab"], "s", peer="peer", peer_samples=s["peer"],
             target=harness.Target("<=", 1.2, on="ratio", text="lab / peer <= 1.2"))
    sys.exit(b.finish())                       # 1 when a target is missed
"""

from __future__ import annotations

import json
import math
import operator
import os
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TextIO

PREFIX = "BENCH-RESULT "
DONE_PREFIX = "BENCH-DONE "
MIN_ROUNDS = 3
DEFAULT_ROUNDS = 3
ENV_ROUNDS = "BENCH_ROUNDS"

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def rounds(requested: int | None = None, env: Mapping[str, str] | None = None) -> int:
    """How many rounds to run: ``requested`` (a script's ``--rounds``), else ``$BENCH_ROUNDS``,
    else 3; never fewer than ``MIN_ROUNDS`` (asking for fewer says so on stderr)."""
    env = os.environ if env is None else env
    n = requested
    if n is None:
        raw = env.get(ENV_ROUNDS, "").strip()
        if raw:
            try:
                n = int(raw)
            except ValueError:
                raise ValueError(f"{ENV_ROUNDS}={raw!r} is not a whole number") from None
        else:
            n = DEFAULT_ROUNDS
    if n < MIN_ROUNDS:
        print(
            f"bench: {n} round(s) asked, running {MIN_ROUNDS}: one sample is not a figure",
            file=sys.stderr,
        )
        n = MIN_ROUNDS
    return n


@dataclass(frozen=True)
class Spread:
    """The median of some samples and their min–max."""

    median: float
    min: float
    max: float
    n: int

    @classmethod
    def of(cls, samples: Sequence[float]) -> Spread:
        if len(samples) < MIN_ROUNDS:
            raise ValueError(
                f"{len(samples)} sample(s): a figure needs at least {MIN_ROUNDS} rounds"
            )
        xs = [float(x) for x in samples]
        if any(math.isnan(x) for x in xs):
            raise ValueError("a sample is NaN")
        return cls(statistics.median(xs), min(xs), max(xs), len(xs))


def round_ratios(samples: Sequence[float], peer_samples: Sequence[float]) -> list[float]:
    """Each round's figure over the peer measured in the same round."""
    if len(samples) != len(peer_samples):
        raise ValueError(
            f"{len(samples)} samples against {len(peer_samples)} peer samples: "
            "ratios are taken round by round"
        )
    out = []
    for i, (a, b) in enumerate(zip(samples, peer_samples, strict=True), 1):
        if b == 0:
            raise ValueError(f"round {i}: the peer measured 0, no ratio")
        out.append(a / b)
    return out


@dataclass(frozen=True)
class Target:
    """``value op limit``, checked on the figure's median (``on="value"``) or on the median of
    its per-round ratios to the peer (``on="ratio"``)."""

    op: Literal["<", "<=", ">", ">="]
    limit: float
    on: Literal["value", "ratio"] = "value"
    text: str = ""

    def __post_init__(self) -> None:
        if self.op not in _OPS:
            raise ValueError(f"unknown comparison {self.op!r}")
        if self.on not in ("value", "ratio"):
            raise ValueError(f"a target is on 'value' or 'ratio', not {self.on!r}")

    def describe(self, unit: str = "") -> str:
        if self.text:
            return self.text
        what = "ratio" if self.on == "ratio" else ""
        u = "" if self.on == "ratio" or not unit else f" {unit}"
        return f"{what} {self.op} {self.limit:g}{u}".strip()

    def met(self, x: float) -> bool:
        return _OPS[self.op](x, self.limit)


def result(
    script: str,
    figure: str,
    samples: Sequence[float],
    unit: str,
    *,
    peer: str | None = None,
    peer_samples: Sequence[float] | None = None,
    peer_unit: str | None = None,
    target: Target | None = None,
) -> dict[str, Any]:
    """The machine-readable record of one figure (what follows ``BENCH-RESULT``).

    ``met`` is true or false when there is a target, null for a figure shown for information.
    """
    s = Spread.of(samples)
    rec: dict[str, Any] = {
        "script": script,
        "figure": figure,
        "value": s.median,
        "min": s.min,
        "max": s.max,
        "unit": unit,
        "rounds": s.n,
        "samples": [float(x) for x in samples],
        "peer": None,
        "peer_value": None,
        "peer_min": None,
        "peer_max": None,
        "peer_unit": None,
        "peer_samples": None,
        "ratio": None,
        "ratio_min": None,
        "ratio_max": None,
        "target": None,
        "target_on": None,
        "target_op": None,
        "target_limit": None,
        "met": None,
        "missed_by": None,
    }
    if (peer is None) != (peer_samples is None):
        raise ValueError("a peer needs its name and its samples")
    if peer is not None and peer_samples is not None:
        p = Spread.of(peer_samples)
        r = Spread.of(round_ratios(samples, peer_samples))
        rec.update(
            peer=peer,
            peer_value=p.median,
            peer_min=p.min,
            peer_max=p.max,
            peer_unit=peer_unit or unit,
            peer_samples=[float(x) for x in peer_samples],
            ratio=r.median,
            ratio_min=r.min,
            ratio_max=r.max,
        )
    if target is not None:
        if target.on == "ratio":
            if rec["ratio"] is None:
                raise ValueError(f"{figure}: a target on the ratio needs a peer")
            checked = rec["ratio"]
        else:
            checked = s.median
        rec.update(target=target.describe(unit), target_on=target.on, target_op=target.op,
                   target_limit=float(target.limit), met=target.met(checked))  # fmt: skip
        if not rec["met"]:
            rec["missed_by"] = shortfall(checked, target, "" if target.on == "ratio" else unit)
    return rec


def shortfall(got: float, target: Target, unit: str = "") -> str:
    """By how much ``got`` misses ``target``: ``by 3.06 s (4.06 s, 4.06× the limit)`` for an
    upper bound, ``by 0.081× (0.919×, 8.1 % short)`` for a lower one (ratios in ×)."""
    u = f" {unit}" if unit else "×"
    limit = float(target.limit)
    gap = abs(got - limit)
    if target.op in ("<", "<="):
        rel = f"{fmt(got / limit)}× the limit" if limit else "over"
    else:
        rel = f"{fmt(gap / limit * 100)} % short" if limit else "short"
    return f"by {fmt(gap)}{u} ({fmt(got)}{u}, {rel})"


def verdict(rec: Mapping[str, Any]) -> str:
    """``met``, ``MISSED by …`` (or plain ``MISSED`` for a record without the shortfall)."""
    if rec.get("met"):
        return "met"
    by = rec.get("missed_by")
    return f"MISSED {by}" if by else "MISSED"


def _decimals(a: float) -> int:
    if a >= 100 or a == 0:
        return 0
    if a >= 10:
        return 1
    if a >= 1:
        return 2
    return min(9, 2 - math.floor(math.log10(a)))


def fmt(x: float | None, like: float | None = None) -> str:
    """A number for people: about three significant figures (those of ``like`` when given, so a
    min–max reads at the precision of its median), thousands separated."""
    if x is None:
        return "—"
    if math.isinf(x) or math.isnan(x):
        return str(x)
    ref = abs(x if like is None or math.isinf(like) or math.isnan(like) else like)
    d = _decimals(ref)
    if x == 0 and like is None:
        return "0"
    return f"{x:,.{d}f}"


def with_unit(x: float | None, unit: str | None) -> str:
    s = fmt(x)
    return s if not unit or x is None else f"{s} {unit}"


def spread_text(value: float | None, lo: float | None, hi: float | None,
                unit: str | None = None, suffix: str = "") -> str:  # fmt: skip
    """``5.21 s (5.10–5.40)``; ``—`` when there is no value."""
    if value is None:
        return "—"
    u = f" {unit}" if unit else ""
    return f"{fmt(value)}{suffix}{u} ({fmt(lo, value)}–{fmt(hi, value)}{suffix})"


def human(rec: Mapping[str, Any]) -> str:
    """One line per figure for the terminal."""
    parts = [
        f"{rec['figure']}: {spread_text(rec['value'], rec['min'], rec['max'], rec['unit'])}"
        f" median of {rec['rounds']}"
    ]
    if rec.get("peer") is not None:
        parts.append(
            f"vs {rec['peer']} "
            f"{spread_text(rec['peer_value'], rec['peer_min'], rec['peer_max'], rec['peer_unit'])}"
            f" -> ratio {spread_text(rec['ratio'], rec['ratio_min'], rec['ratio_max'], None, '×')}"
        )
    if rec.get("met") is not None:
        parts.append(f"target {rec['target']}: {verdict(rec)}")
    return "; ".join(parts)


@dataclass
class Bench:
    """The figures of one script. ``figure()`` prints each as it is measured (so a later crash
    keeps them); ``finish()`` prints the verdict and returns the exit status (1: a miss)."""

    script: str = field(default_factory=lambda: Path(sys.argv[0]).stem)
    out: TextIO | None = None
    results: list[dict[str, Any]] = field(default_factory=list)

    def _print(self, line: str) -> None:
        print(line, file=self.out or sys.stdout, flush=True)

    def figure(
        self,
        figure: str,
        samples: Sequence[float],
        unit: str,
        *,
        peer: str | None = None,
        peer_samples: Sequence[float] | None = None,
        peer_unit: str | None = None,
        target: Target | None = None,
    ) -> dict[str, Any]:
        rec = result(self.script, figure, samples, unit, peer=peer, peer_samples=peer_samples,
                     peer_unit=peer_unit, target=target)  # fmt: skip
        self.results.append(rec)
        self._print(f"  {human(rec)}")
        self._print(PREFIX + json.dumps(rec, ensure_ascii=False, allow_nan=False))
        return rec

    @property
    def missed(self) -> list[dict[str, Any]]:
        return [r for r in self.results if r["met"] is False]

    def finish(self) -> int:
        missed = self.missed
        targets = sum(1 for r in self.results if r["met"] is not None)
        if missed:
            self._print(f"{self.script}: {len(missed)} of {targets} target(s) MISSED: "
                        + "; ".join(f"{r['figure']} ({r['target']}) {verdict(r)}"
                                    for r in missed))  # fmt: skip
        else:
            self._print(f"{self.script}: all {targets} target(s) met")
        rc = 1 if missed else 0
        self._print(DONE_PREFIX + json.dumps(
            {"script": self.script, "figures": len(self.results), "missed": len(missed),
             "rc": rc}))  # fmt: skip
        return rc


Measure = Callable[[], float | Mapping[str, float]]


def run_rounds(
    n: int,
    steps: Sequence[tuple[str, Measure]],
    *,
    log: Callable[[str], None] | None = None,
) -> dict[str, list[float]]:
    """Run ``steps`` in order, ``n`` times over: round 1 of each step, then round 2...

    A step returns one number (kept under the step's name) or a mapping of named numbers (each
    kept under its own name). Returns every name's samples, one per round.
    """
    if n < MIN_ROUNDS:
        raise ValueError(f"{n} round(s): a figure needs at least {MIN_ROUNDS}")
    say = log or (lambda s: print(s, flush=True))
    out: dict[str, list[float]] = {}
    for i in range(1, n + 1):
        shown = []
        for name, fn in steps:
            t0 = time.perf_counter()
            got = fn()
            took = time.perf_counter() - t0
            items = got.items() if isinstance(got, Mapping) else [(name, got)]
            for key, value in items:
                out.setdefault(key, []).append(float(value))
            shown.append(f"{name} {took:.2f} s")
        say(f"  round {i}/{n}: " + ", ".join(shown))
    return out
