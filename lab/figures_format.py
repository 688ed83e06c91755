"""How the lab writes a number: the one formatter (``format_value``) of expectation
explanations, ``report`` lines, the end-of-run tables, ``lab compare``, the HTML report and the
live view; durations (``format_duration``), counts, rates, percentages, sizes; a figure with
its lower-bound label (``format_figure``) and with its name (``figure_clause``).
"""

from __future__ import annotations

import math

from dsl.metrics import METRICS as METRIC_SPECS
from dsl.models import UnitKind


def _sig(x: float, digits: int = 3) -> str:
    """``x`` to ``digits`` significant digits in fixed notation, with thousands separators:
    never scientific notation (2.03, 10.8, 123, 1,235, 0.0052)."""
    if x == 0:
        return "0"
    r = float(f"{x:.{digits - 1}e}")  # rounded first, so that 9.996 becomes 10.0, not 10.00
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(r))))
    return f"{r:,.{decimals}f}"


def format_duration(seconds: float) -> str:
    """One duration format everywhere (latency, lag, downtime, visibility): 0.52 ms, 4.9 ms,
    497 ms, 2.03 s, 10.8 s, 123 s, 1,234 s."""
    a = abs(seconds)
    if a == 0:
        return "0 s"
    ms = seconds * 1000
    if a * 1000 < 0.995:
        return f"{_sig(ms, 2)} ms" if a * 1000 >= 0.000_5 else "< 0.001 ms"
    if a * 1000 < 99.95:
        return f"{ms:.1f} ms"
    if a * 1000 < 999.5:
        return f"{ms:.0f} ms"
    if a < 999.5:
        return f"{_sig(seconds, 3)} s"
    return f"{seconds:,.0f} s"


def format_value(value: float | None, unit: UnitKind) -> str:
    """The one number formatter of the lab: expectation explanations, ``report`` lines, the
    end-of-run tables and the live view all use it. Never scientific notation; durations as
    ``format_duration``; counts as integers with thousands separators (47,185); rates 20.0/s
    (3,055/s from 1,000 up); percentages 87.2%; sizes in B, KiB, MiB, GiB."""
    if value is None:
        return "unknown"
    value = float(value)
    if math.isnan(value):
        return "unknown"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    if unit == "duration":
        return format_duration(value)
    if unit == "percent":
        p = value * 100
        if p != 0 and abs(p) < 0.095:
            return f"{_sig(p, 2)}%"
        return f"{p:.1f}%"
    if unit == "rate":
        if value != 0 and abs(value) < 0.095:
            return f"{_sig(value, 2)}/s"
        return f"{value:,.1f}/s" if abs(value) < 999.95 else f"{value:,.0f}/s"
    if unit in ("size", "bandwidth"):
        suffix = "/s" if unit == "bandwidth" else ""
        for name, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
            if abs(value) >= scale * 0.9995:
                return f"{_sig(value / scale, 3)} {name}{suffix}"
        return f"{value:,.0f} B{suffix}"
    if value.is_integer():
        return f"{value:,.0f}"
    return _sig(value, 3)


def format_count(n: float | None) -> str:
    """A count: 47,185."""
    return format_value(n, "count")


def format_figure(value: float | None, unit: UnitKind, lower_bound: bool = False,
                  metric: str = "") -> str:
    """A figure as shown in every table: ``2.03 s``, or for a lower bound ``≥ 4.20 s (still
    down at end)`` (the label depends on the metric's name, ``downtime(w).max`` → downtime)."""
    if metric.endswith("errno") and value is not None and float(value).is_integer():
        shown = str(int(value))  # an error code, not a count: 1062, never 1,062
    else:
        shown = format_value(value, unit)
    if not lower_bound or value is None:
        return shown
    spec = METRIC_SPECS.get(metric.split("(", 1)[0].split(".", 1)[0])
    label = spec.open_label if spec is not None else ""
    return f"≥ {shown}" + (f" ({label})" if label else "")


def figure_clause(name: str, value: float | None, unit: UnitKind, lower_bound: bool = False
                  ) -> str:  # fmt: skip
    """``downtime(w).max = 2.03 s``; a lower bound: ``downtime(w).max ≥ 4.20 s (still down at
    end)``."""
    shown = format_figure(value, unit, lower_bound, name)
    if shown.startswith("≥ "):
        return f"{name} {shown}"
    return f"{name} = {shown}"
