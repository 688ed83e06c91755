"""Numbers with units: ``10ms``, ``1m30s``, ``64M``, ``200/s``, ``1M/s``, ``5%``, ``3``.

Normalised values: seconds, bytes (powers of 1024, as in my.cnf), operations per second,
bytes per second, ratios (``5%`` is 0.05) and plain counts. Units are case-sensitive: ``m``
is minutes and ``M`` is mebibytes.
"""

from __future__ import annotations

import math
import re

from dsl.models import NO_SPAN, Quantity, Span, UnitKind

DURATION_UNITS: dict[str, float] = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6}
SIZE_UNITS: dict[str, float] = {
    "B": 1.0,
    "K": 1024.0,
    "M": 1024.0**2,
    "G": 1024.0**3,
    "T": 1024.0**4,
}

KIND_NAMES: dict[str, str] = {
    "duration": "a duration",
    "size": "a size",
    "rate": "a rate",
    "bandwidth": "a bandwidth",
    "percent": "a percentage",
    "count": "a plain number",
}
KIND_EXAMPLES: dict[str, str] = {
    "duration": "500ms, 10s or 1m30s",
    "size": "64M or 1G",
    "rate": "200/s",
    "bandwidth": "1M/s",
    "percent": "5%",
    "count": "5",
}

MAX_DIGITS = 15
_NUMBER = r"(\d+(?:\.\d+)?)"
_COUNT = re.compile(rf"{_NUMBER}")
_PERCENT = re.compile(rf"{_NUMBER}%")
_RATE = re.compile(rf"{_NUMBER}/s")
_SIZE = re.compile(rf"{_NUMBER}([KMGT]B?|B)")
_BANDWIDTH = re.compile(rf"{_NUMBER}([KMGT]B?|B)/s")
_DURATION_PART = re.compile(rf"{_NUMBER}(ms|us|h|m|s)")


class QuantityError(ValueError):
    """The text is not a number with a known unit."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


def _number(text: str, whole: str) -> float:
    digits = text.replace(".", "")
    if len(digits) > MAX_DIGITS:
        raise QuantityError(f"'{whole}' is too large", f"use at most {MAX_DIGITS} digits")
    value = float(text)
    if not math.isfinite(value):  # pragma: no cover - guarded by MAX_DIGITS
        raise QuantityError(f"'{whole}' is too large")
    return value


def _duration(text: str) -> float | None:
    pos = 0
    total = 0.0
    last_unit: float | None = None
    while pos < len(text):
        m = _DURATION_PART.match(text, pos)
        if m is None:
            return None
        unit = DURATION_UNITS[m.group(2)]
        if last_unit is not None and unit >= last_unit:
            raise QuantityError(
                f"'{text}' mixes its units out of order",
                "write the larger unit first, each unit once: 1h30m, 1m30s, 2s500ms",
            )
        last_unit = unit
        total += _number(m.group(1), text) * unit
        pos = m.end()
    return total


# the value and kind of each quantity text read so far (a file repeats its 10ms and 30s);
# errors are not kept: they are raised afresh
_READ: dict[str, tuple[float, UnitKind]] = {}


def read_quantity(text: str) -> tuple[float, UnitKind] | None:
    """``parse_quantity``'s value and kind of ``text``, without the ``Quantity``; None when
    it is not a quantity (``parse_quantity`` says why)."""
    read = _READ.get(text)
    if read is None:
        try:
            read = _value_and_kind(text)
        except QuantityError:
            return None
        if len(_READ) >= 10_000:
            _READ.clear()
        _READ[text] = read
    return read


def parse_quantity(text: str, span: Span = NO_SPAN) -> Quantity:
    """Parse one quantity; raise ``QuantityError`` with a message and a hint."""
    read = _READ.get(text)
    if read is None:
        read = _value_and_kind(text)
        if len(_READ) >= 10_000:
            _READ.clear()
        _READ[text] = read
    return Quantity(value=read[0], kind=read[1], text=text, span=span)


def _value_and_kind(text: str) -> tuple[float, UnitKind]:
    kind: UnitKind
    if m := _COUNT.fullmatch(text):
        value, kind = _number(m.group(1), text), "count"
    elif m := _PERCENT.fullmatch(text):
        value, kind = _number(m.group(1), text) / 100.0, "percent"
    elif m := _RATE.fullmatch(text):
        value, kind = _number(m.group(1), text), "rate"
    elif m := _BANDWIDTH.fullmatch(text):
        value, kind = _number(m.group(1), text) * SIZE_UNITS[m.group(2)[0]], "bandwidth"
    elif m := _SIZE.fullmatch(text):
        value, kind = _number(m.group(1), text) * SIZE_UNITS[m.group(2)[0]], "size"
    else:
        seconds = _duration(text)
        if seconds is None:
            raise QuantityError(f"'{text}' is not a number with a known unit", _unit_hint(text))
        value, kind = seconds, "duration"
    return value, kind


def _unit_hint(text: str) -> str:
    unit = re.sub(r"^[\d.]+", "", text)
    if unit.lower() in {"sec", "secs", "second", "seconds"}:
        return f"write seconds as 's': {text[: len(text) - len(unit)]}s"
    if unit.lower() in {"min", "mins", "minute", "minutes"}:
        return f"write minutes as 'm': {text[: len(text) - len(unit)]}m"
    if unit in {"k", "kb", "mb", "gb", "g", "t", "tb"}:
        return f"sizes use upper-case units: {text[: len(text) - len(unit)]}{unit.upper()}"
    return "units: ms, s, m, h (time); K, M, G, T (size); /s (rate); M/s (bandwidth); % (ratio)"


def describe_kind(kind: str) -> str:
    return f"{KIND_NAMES[kind]} such as {KIND_EXAMPLES[kind]}"


def kind_problem(q: Quantity, expected: tuple[str, ...], what: str) -> tuple[str, str] | None:
    """``(message, hint)`` when ``q`` is not of one of the ``expected`` kinds; ``what``
    names the place (``'duration'``, ``'downtime'``...)."""
    if q.kind in expected:
        return None
    wanted = " or ".join(KIND_NAMES[k] for k in expected)
    message = f"{what} needs {wanted}, but '{q.text}' is {KIND_NAMES[q.kind]}"
    first = expected[0]
    number = re.sub(r"[^\d.].*$", "", q.text)
    if q.kind == "count" and first in {"duration", "size", "rate", "bandwidth", "percent"}:
        suffix = {"duration": "s", "size": "M", "rate": "/s", "bandwidth": "M/s", "percent": "%"}
        hint = f"add a unit: {number}{suffix[first]}"
    elif q.kind == "duration" and q.text.endswith("m") and first in {"size", "bandwidth"}:
        hint = f"'m' means minutes; for mebibytes write {number}M"
    else:
        hint = f"write {describe_kind(first)}"
    return message, hint
