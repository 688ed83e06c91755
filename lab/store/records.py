"""What the rows hold: run and cell statuses, run ids, timestamps, the lab's version, and the
JSON encoding of values and of batches of operations (``operation_batches.ops``)."""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Callable, Sequence
from operator import attrgetter, itemgetter
from typing import Any

import orjson

from lab.history import Op
from runners import runtime

RUN_STATUSES = ("running", "passed", "failed", "interrupted", "error", "abandoned")
CELL_STATUSES = ("running", "passed", "failed", "interrupted", "error", "skipped", "abandoned")


def new_run_id() -> str:
    """12 hex digits; the same generator names run directories (one id everywhere)."""
    return runtime.new_run_id()


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def lab_version() -> str:
    try:
        from lab import __version__

        return str(__version__)
    except ImportError:  # pragma: no cover
        return "unknown"


def encode_value(v: Any) -> str | None:
    """Op values as JSON text (``5`` -> ``'5'``, ``"a"`` -> ``'"a"'``); None stays NULL."""
    if v is None:
        return None
    if type(v) is int:
        return str(v)
    return json.dumps(v, default=str)


def decode_value(s: str | None) -> Any:
    return None if s is None else json.loads(s)


def _json(v: Any) -> str | None:
    return None if v is None else json.dumps(v, default=str, allow_nan=False)


def _finite(v: float | None) -> float | None:
    return v if v is None or math.isfinite(v) else None


def _clean(v: Any) -> Any:
    """JSON-safe: NaN and infinities become None."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_clean(x) for x in v]
    return v


_OPS_COLUMNS = (
    "run_id, cell, idx, type, f, process, time_ns, workload, endpoint, node, key, value, error, "
    "error_msg"
)
OPS_PER_BATCH = 1000  # operations per operation_batches row
ENCODE_PIECE = 100  # operations encoded in one C call when encode_ops() is given a pause
_OP_FIELDS = attrgetter(
    "index", "type", "f", "process", "time", "workload", "endpoint", "node", "key", "value",
    "error", "error_msg",
)  # fmt: skip


def encode_ops(
    ops: Sequence[Op], pause: Callable[[], None] | None = None, piece: int = ENCODE_PIECE
) -> str:
    """A batch of operations as one JSON array of arrays ``[idx, type, f, process, time_ns,
    workload, endpoint, node, key, value, error, error_msg]`` (C-speed: this runs while the
    clients run). ``pause``: called between pieces of ``piece`` operations, each encoded in
    one C call that holds the GIL; the recorder's writer passes a short sleep so that no client
    waits behind it longer than one piece (about 0.1 ms). The text is the same either way."""
    if pause is None or len(ops) <= piece:
        return _encode(ops)
    parts = []
    for k in range(0, len(ops), piece):
        if k:
            pause()
        parts.append(_encode(ops[k : k + piece])[1:-1])
    return "[" + ",".join(parts) + "]"


# orjson writes what json.dumps(separators=(",", ":"), default=str) writes (non-ASCII as UTF-8
# rather than escaped: the same values) at a third of the cost on the recorder's writer thread
# (0.4 µs an operation instead of 1.4), for batches whose values are all of the plain types
# below (every operation of the single-statement workloads). Any other value (a list, a float,
# a subclass, an enum ...) sends the batch json's way: orjson writes some of those otherwise.
_PLAIN = frozenset({int, str, bool, type(None)})
_VALUE = itemgetter(9)


def _encode(ops: Sequence[Op]) -> str:
    rows = list(map(_OP_FIELDS, ops))
    if _PLAIN.issuperset(map(type, map(_VALUE, rows))):
        try:
            return orjson.dumps(rows, default=str).decode()
        except orjson.JSONEncodeError:  # an int beyond 64 bits, a lone surrogate: json's way
            pass
    try:
        return json.dumps(rows, separators=(",", ":"), allow_nan=False, default=str)
    except ValueError:  # NaN/inf in a value: not JSON, store it as text
        return json.dumps([r[:9] + (_clean_value(r[9]),) + r[10:] for r in rows],
                          separators=(",", ":"), default=str)  # fmt: skip


def _clean_value(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return _clean(v)


def decode_ops(text: str) -> list[Op]:
    return [
        Op(t, f, p, tm, w or "", ep or "", n, k, v, e, em, i)
        for i, t, f, p, tm, w, ep, n, k, v, e, em in json.loads(text)
    ]
