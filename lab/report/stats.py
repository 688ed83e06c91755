"""Statistics over the repeats of a cell (``lab compare --variants``): median, spread (min–max)
and a 95 % confidence interval of the mean, and ratios against a base.

The interval is Student's t interval of the mean, ``mean ± t(0.975, n-1) · s / √n`` (s: the
sample standard deviation of the n repeats): it assumes the repeats vary around a true mean
roughly normally, and it is wide with few repeats (t = 12.7 with 2, 4.30 with 3) — which is
what two or three repeats can tell. With one repeat there is no interval (``None``), never an
invented one. For a figure that cannot be negative (every value is >= 0) an interval that
would reach below 0 starts at 0. ``t_quantile`` is computed here (regularised incomplete beta
function, then bisection), so no statistics package is needed.

A figure that is only a lower bound in some repeat (an outage still open at the end of the
load) makes the median, min, max and mean lower bounds too (each true value is at least its
bound, and these statistics only grow with their inputs); no interval is given then.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

CONFIDENCE = 0.95
CI_METHOD = "95% t-interval of the mean (Student's t, n-1 degrees of freedom)"


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) \
        + b * math.log1p(-x)
    front = math.exp(ln)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom."""
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t (0 < p < 1): t_quantile(0.975, 2) = 4.303."""
    if not 0.0 < p < 1.0 or df <= 0:
        raise ValueError(f"t_quantile needs 0 < p < 1 and df > 0 (got p={p}, df={df})")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return (lo + hi) / 2.0


def median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    n = len(s)
    if not n:
        raise ValueError("median of nothing")
    mid = n // 2
    return s[mid] if n % 2 else (s[mid - 1] + s[mid]) / 2.0


def t_interval(xs: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """Student's t interval of the mean; None with fewer than two values."""
    n = len(xs)
    if n < 2:
        return None
    mean = sum(xs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    half = t_quantile(0.5 + confidence / 2.0, n - 1) * sd / math.sqrt(n)
    return mean - half, mean + half


@dataclass(frozen=True)
class Spread:
    """A figure over the repeats of one group of cells."""

    n: int  # repeats with a value
    of: int  # repeats
    median: float | None = None
    min: float | None = None
    max: float | None = None
    mean: float | None = None
    ci: tuple[float, float] | None = None  # CI_METHOD
    lower_bound: bool = False  # some repeat gave only a lower bound
    no_ci: str | None = None  # why there is no interval

    def to_json(self) -> dict[str, object]:
        return {"n": self.n, "of": self.of, "median": self.median, "min": self.min,
                "max": self.max, "mean": self.mean,
                "ci": list(self.ci) if self.ci is not None else None,
                "lower_bound": self.lower_bound, "no_ci": self.no_ci}  # fmt: skip


def spread(values: Sequence[float | None], lower_bounds: Sequence[bool] = ()) -> Spread:
    """Median, min–max, mean and its interval over the known values (None: unknown in that
    repeat, left out: ``n`` counts the others)."""
    bounds = list(lower_bounds) + [False] * (len(values) - len(lower_bounds))
    known = [(float(v), b) for v, b in zip(values, bounds, strict=True)
             if v is not None and math.isfinite(float(v))]  # fmt: skip
    xs = [v for v, _ in known]
    if not xs:
        return Spread(0, len(values), no_ci="no repeat has a value")
    lower = any(b for _, b in known)
    ci = None if lower else t_interval(xs)
    if ci is not None and min(xs) >= 0 and ci[0] < 0:
        ci = (0.0, ci[1])  # a figure that cannot be negative: the interval starts at 0
    why = None
    if lower:
        why = "some repeats give only a lower bound"
    elif ci is None:
        why = "one repeat: no interval"
    return Spread(len(xs), len(values), median(xs), min(xs), max(xs), sum(xs) / len(xs), ci,
                  lower, why)  # fmt: skip


@dataclass(frozen=True)
class Ratio:
    """``value`` / ``base``; ``bound``: "≥" or "≤" when only a bound is known; ``value`` None
    when it is not defined (a base of 0, an unknown side, bounds on both sides)."""

    value: float | None
    bound: str = ""
    why: str | None = None

    def to_json(self) -> dict[str, object]:
        return {"value": self.value, "bound": self.bound or None, "why": self.why}


def ratio(value: float | None, base: float | None, value_lower: bool = False,
          base_lower: bool = False) -> Ratio:  # fmt: skip
    """The ratio of two figures that may be lower bounds: a lower bound over an exact base is a
    lower bound; an exact value over a lower-bound base is an upper bound; bounds on both
    sides say nothing."""
    if value is None or base is None:
        return Ratio(None, why="unknown")
    if base == 0:
        return Ratio(None, why="the base is 0")
    if value_lower and base_lower:
        return Ratio(None, why="both are lower bounds")
    if (value_lower or base_lower) and (value < 0 or base < 0):
        return Ratio(None, why="a bound on a negative figure")
    r = value / base
    if value_lower:
        return Ratio(r, "≥")
    if base_lower:
        return Ratio(r, "≤")
    return Ratio(r)
