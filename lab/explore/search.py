"""``lab search``: where, over one numeric knob of an experiment, an expectation flips.

The knob (``knob_text``) is one of

* the name of a ``vary`` (``vary clients in ...`` or ``vary config KEY in ...``): the sweep
  is replaced by the one value;
* a server setting set in a ``config`` or ``variant`` block (``rpl_semi_sync_master_timeout``):
  every ``KEY = VALUE`` of it takes the value;
* ``WORKLOAD.FIELD`` (``w.rate``, ``w.every``, ``w.clients`` ...): that statement of the
  workload;
* ``LINE:for``, ``LINE:at`` or ``LINE:size``: the ``for`` duration, the time or the size
  (a network latency's delay, a bandwidth) of the timeline statement at that line.

``bisect`` judges both ends, then halves the interval between the last value where the
expectation held and the first where it failed, until it is no wider than the resolution. Each
value is judged from up to ``n`` runs (``k`` failures: it fails; more than ``n - k`` passes:
it holds); the expectation is assumed to flip once over the interval (monotone). The result
gives the boundary as an interval, each bracketing value with its runs and the 95 % Wilson
interval of its failure rate: the stated confidence.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dsl.models import Experiment, Quantity
from dsl.units import parse_quantity
from lab.explore.schedules import Runner, Trial


class KnobError(ValueError):
    """The knob names nothing in the file, or a value of the wrong kind."""


# --- the knob -----------------------------------------------------------------------------------


def render(value: float, kind: str) -> str:
    """A value of the knob's kind, as the language writes it."""
    if kind == "duration":
        ms = round(value * 1000, 3)
        return f"{ms:g}ms" if ms < 1000 else f"{round(value, 3):g}s"
    if kind == "rate":
        return f"{round(value, 3):g}/s"
    if kind == "percent":
        return f"{round(value * 100, 3):g}%"
    if kind == "size":
        return f"{int(round(value))}B"
    if kind == "bandwidth":
        return f"{int(round(value))}B/s"
    return f"{int(round(value))}" if float(value).is_integer() else f"{round(value, 6):g}"


def parse_value(text: str) -> Quantity:
    try:
        return parse_quantity(text)
    except ValueError as e:
        raise KnobError(f"'{text}' is not a number with a unit ({e})") from None


def _replace_in(text: str, start: int, end: int, pattern: str, value: str, what: str) -> str:
    part = text[start:end]
    new, n = re.subn(pattern, lambda m: m.group(1) + value, part)
    if n == 0:
        raise KnobError(f"{what}: nothing to set")
    return text[:start] + new + text[end:]


def knob_text(text: str, exp: Experiment, knob: str, value: str) -> str:
    """The experiment's text with ``knob`` set to ``value`` (as written: ``750ms``, ``4``)."""
    lines = text.split("\n")

    def offset(line: int, column: int) -> int:
        return sum(len(x) + 1 for x in lines[:line - 1]) + column - 1

    m = re.fullmatch(r"(\d+):(for|at|size)", knob)
    if m:
        line, part = int(m.group(1)), m.group(2)
        timed = next((t for t in exp.timeline if t.span.line == line), None)
        if timed is None:
            raise KnobError(f"line {line} has no timeline statement (at ...); the timeline is on "
                            f"lines {', '.join(str(t.span.line) for t in exp.timeline) or 'none'}")
        s, e = offset(timed.span.line, timed.span.column), offset(timed.span.end_line,
                                                                   timed.span.end_column)
        pattern = {"for": r"(\bfor\s+)[0-9][^\s#]*", "at": r"^(at\s+)[0-9][^\s#]*",
                   "size": r"(\b(?:latency|bandwidth)\s+\S+\s+)[0-9][^\s#]*"}[part]
        return _replace_in(text, s, e, pattern, value, f"line {line}: '{part}'")
    for sweep in exp.sweeps:
        if sweep.name == knob:
            s, e = offset(sweep.span.line, sweep.span.column), offset(sweep.span.end_line,
                                                                      sweep.span.end_column)
            head = "vary config" if sweep.target == "config" else "vary"
            return text[:s] + f"{head} {knob} in {value}" + text[e:]
    if "." in knob and not re.search(r"\d", knob.split(".")[0][:1]):
        wname, field_name = knob.split(".", 1)
        w = next((w for w in exp.workloads if w.name == wname), None)
        if w is not None:
            s, e = offset(w.span.line, w.span.column), offset(w.span.end_line, w.span.end_column)
            return _replace_in(text, s, e, rf"(\b{re.escape(field_name)}\s+)[0-9$][^\s}}#]*",
                               value, f"workload {wname}: '{field_name}'")
    blocks = list(exp.configs) + list(exp.topology.configs)
    settings = [(c.span, c.settings) for c in blocks]
    settings += [(v.span, v.settings) for v in exp.variants]
    norm = knob.replace("-", "_")
    spans = [span for span, st in settings if any(k.replace("-", "_") == norm for k in st)]
    if spans:
        out = text
        for span in sorted(spans, key=lambda sp: (sp.line, sp.column), reverse=True):
            s, e = offset(span.line, span.column), offset(span.end_line, span.end_column)
            key = re.escape(knob).replace(r"_", "[_-]").replace(r"\-", "[_-]")
            out = _replace_in(out, s, e, rf"((?<![\w.-]){key}\s*=\s*)[^\s}}#]+", value,
                              f"setting {knob}")
        return out
    sweeps = ", ".join(w.name for w in exp.sweeps) or "none"
    raise KnobError(
        f"no knob '{knob}' in this file: name a vary ({sweeps}), a setting of a config block, "
        "WORKLOAD.FIELD (w.rate), or LINE:for / LINE:at / LINE:size of a timeline statement")


# --- bisection --------------------------------------------------------------------------------


def wilson(failures: int, runs: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson score interval of a failure rate seen as ``failures`` of ``runs``."""
    if runs == 0:
        return 0.0, 1.0
    p = failures / runs
    denom = 1 + z * z / runs
    centre = (p + z * z / (2 * runs)) / denom
    half = z * math.sqrt(p * (1 - p) / runs + z * z / (4 * runs * runs)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class Point:
    value: float
    fails: bool
    failures: int
    trials: list[Trial] = field(default_factory=list)

    @property
    def runs(self) -> int:
        return len(self.trials)

    def rate_interval(self) -> tuple[float, float]:
        return wilson(self.failures, self.runs)


@dataclass
class Boundary:
    """The expectation holds at ``holds.value`` and fails at ``fails.value``; the flip is
    between them."""

    holds: Point
    fails: Point
    points: list[Point]

    @property
    def low(self) -> float:
        return min(self.holds.value, self.fails.value)

    @property
    def high(self) -> float:
        return max(self.holds.value, self.fails.value)


class NoBoundary(Exception):
    def __init__(self, points: list[Point]) -> None:
        verdicts = {p.fails for p in points}
        which = "fails" if verdicts == {True} else "holds"
        super().__init__(f"the expectation {which} at both ends: no flip between them")
        self.points = points


def bisect(low: float, high: float, judge: Callable[[float], Point], resolution: float,
           integer: bool = False, max_steps: int = 20) -> Boundary:
    """The boundary between ``low`` and ``high`` where ``judge(value).fails`` flips."""
    a, b = judge(low), judge(high)
    points = [a, b]
    if a.fails == b.fails:
        raise NoBoundary(points)
    for _ in range(max_steps):
        if abs(b.value - a.value) <= resolution or (integer and abs(b.value - a.value) <= 1):
            break
        mid = (a.value + b.value) / 2
        if integer:
            mid = float(math.floor(mid))
            if mid in (a.value, b.value):
                break
        m = judge(mid)
        points.append(m)
        if m.fails == a.fails:
            a = m
        else:
            b = m
    holds, fails = (b, a) if a.fails else (a, b)
    return Boundary(holds, fails, points)


def repeated_judge(text_at: Callable[[float], str], runner: Runner, expectation: str,
                   k: int, n: int, on_point: Callable[[Point], None] | None = None,
                   ) -> Callable[[float], Point]:
    """Judge a value from up to ``n`` runs of its text: fails at ``k`` failures, holds at
    more than ``n - k`` passes (stops as soon as it is known)."""
    def judge(value: float) -> Point:
        text = text_at(value)
        p = Point(value, False, 0)
        passes = 0
        while p.failures < k and passes <= n - k:
            t = runner(text, f"value {value:g}")
            p.trials.append(t)
            if t.fails(expectation):
                p.failures += 1
            else:
                passes += 1
        p.fails = p.failures >= k
        if on_point is not None:
            on_point(p)
        return p

    return judge


def summary(points: list[Point], kind: str, found: Boundary | None) -> dict[str, Any]:
    """What ``lab search --json`` prints: the boundary (``None`` when the expectation did not
    flip between the ends), then every value judged, in order, with its runs and verdict."""
    def point(p: Point) -> dict[str, Any]:
        lo, hi = p.rate_interval()
        return {"value": p.value, "text": render(p.value, kind),
                "verdict": "fails" if p.fails else "holds", "failures": p.failures,
                "runs": p.runs, "run_ids": [t.run_id for t in p.trials],
                "failure_rate_95": [round(lo, 4), round(hi, 4)]}

    boundary = None if found is None else {
        "low": found.low, "high": found.high, "low_text": render(found.low, kind),
        "high_text": render(found.high, kind), "holds_at": found.holds.value,
        "fails_at": found.fails.value}
    return {"kind": kind, "boundary": boundary, "points": [point(p) for p in points],
            "runs": sum(p.runs for p in points)}
