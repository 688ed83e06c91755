"""The fields of a history's records as arrays, read from the ``Op`` objects block by block:
what ``Columns`` (``lab.judge.checkers.columns``) pairs and the checkers select from.

``Fields`` holds them for one history: per record the code of its (process, type, f,
workload, endpoint, node, error) combination, its time, and the class of its key and value
(codes into ``classes``) with the ints themselves where they fit in 64 bits (the records of
those beyond are listed in ``big``). Every field of a block of ``BLOCK`` records is read while
its objects are still in the CPU's cache.

``RecordedFields`` reads them as the history is recorded: the recorder (``lab.run.recorder``)
feeds it every record it appends, in order (its writer thread after each write when it streams
to SQLite, else the recording thread every ``BLOCK`` records), and hands the history out as a
``RecordedHistory`` that carries it. ``Columns`` then copies what was read at record time and
reads only the records recorded since, and the key and value of the invokes whose operations
take them from the invoke (neither way reads an invoke's at first: most are never needed); a
plain list, e.g. a history loaded from the database, is read whole at check time. Either way
the arrays hold the same values: the codes are given in the order values are first seen, and
only equality of codes is ever used.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from itertools import compress
from operator import attrgetter
from typing import Any, SupportsIndex

import numpy as np
import numpy.typing as npt

from lab.history import Op

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]

# the fields with few values: one code per distinct combination
_FEW = attrgetter("process", "type", "f", "workload", "endpoint", "node", "error")
_TIME = attrgetter("time")
_KEY = attrgetter("key")
_VALUE = attrgetter("value")
# records read per block: every field of a block is read while its objects are still in the
# CPU's cache (one pass over the history per field would fetch each record from memory again)
BLOCK = 1024
_INT_NONE = frozenset({int, type(None)})


class Codes(dict[Any, int]):
    """Value -> code, a new value taking the next code as it is first seen."""

    def __missing__(self, key: Any) -> int:
        code = self[key] = len(self)
        return code


class Fields:
    """The fields of ``size`` records (see the module docstring); ``read`` fills them."""

    def __init__(self, size: int, combos: Codes | None = None,
                 classes: Codes | None = None) -> None:  # fmt: skip
        self.size = size
        self.combos = Codes() if combos is None else combos
        self.classes = Codes({int: 0, type(None): 1}) if classes is None else classes
        self.combo: I32 = np.empty(size, np.int32)
        self.time: I64 = np.empty(size, np.int64)
        self.key_cls: I32 = np.zeros(size, np.int32)
        self.value_cls: I32 = np.zeros(size, np.int32)
        self.key_int: I64 = np.zeros(size, np.int64)
        self.value_int: I64 = np.zeros(size, np.int64)
        self.big: dict[str, list[int]] = {"key": [], "value": []}
        # an invoke's key and value were left unread (``read(..., invokes=False)``)
        self.skipped_invokes = False
        self.filled = 0  # the first records already read (``RecordedFields.fields``)
        # per combination code: is it an invoke's (grown as new combinations appear)
        self.invoke: npt.NDArray[np.bool_] = np.zeros(0, np.bool_)

    def read(self, history: Sequence[Op], a: int, b: int, *, invokes: bool = True,
             base: int = 0) -> None:  # fmt: skip
        """Read the records ``history[a:b]`` into the same positions. ``invokes=False``: an
        invoke's key and value are left unread (``Columns`` reads those its operations take
        from it, and no others). ``big`` lists positions plus ``base`` (``history`` a part of
        the history from position ``base``)."""
        get = self.combos.__getitem__
        combo, time = self.combo, self.time
        for s in range(a, b, BLOCK):
            part = history[s : min(s + BLOCK, b)]
            m = len(part)
            codes = np.fromiter(map(get, map(_FEW, part)), np.int32, m)
            combo[s : s + m] = codes
            time[s : s + m] = np.fromiter(map(_TIME, part), np.int64, m)
            if invokes:
                self.key_value(part, np.arange(s, s + m), base)
                continue
            if len(self.combos) > len(self.invoke):
                self.invoke = np.array([t[1] == "invoke" for t in self.combos], np.bool_)
            keep = ~self.invoke[codes]
            at = np.flatnonzero(keep)
            if len(at) < m:
                self.skipped_invokes = True
            if len(at) == m:
                self.key_value(part, np.arange(s, s + m), base)
            elif len(at):
                self.key_value(list(compress(part, keep.tolist())), at + s, base)

    def key_value(self, recs: Sequence[Op], at: I64, base: int = 0) -> None:
        """Read the key and value of the records (at positions ``at``)."""
        m = len(recs)
        for name, getter, cls, ints in (("key", _KEY, self.key_cls, self.key_int),
                                        ("value", _VALUE, self.value_cls, self.value_int)):
            objs = np.fromiter(map(getter, recs), object, m)
            out = np.zeros(m, np.int64)
            cls[at] = self._ints(objs, out, at, self.big[name], base)
            ints[at] = out

    def _ints(self, objs: npt.NDArray[np.object_], out: I64, at: I64, big: list[int],
              base: int) -> I32:  # fmt: skip
        """The class codes of the objects (of the records at ``at``); ``out``: those that
        are ints as int64, the records of those beyond 64 bits listed in ``big`` instead."""
        kinds = set(map(type, objs))
        if kinds <= _INT_NONE:  # the usual case: ints (code 0) and None (code 1)
            none = objs == None  # noqa: E711 - elementwise, on an object array
            cls: I32 = none.astype(np.int32)
            is_int = ~none
        else:
            cls = np.fromiter(map(self.classes.__getitem__, map(type, objs)), np.int32,
                              len(objs))  # fmt: skip
            is_int = cls == 0
        if int not in kinds:
            return cls
        src = objs if len(kinds) == 1 else np.where(is_int, objs, 0)
        try:
            out[:] = src.astype(np.int64)
        except OverflowError:
            for j in np.flatnonzero(is_int).tolist():
                x = objs[j]
                if -(2**63) <= x < 2**63:
                    out[j] = x
                else:
                    big.append(int(at[j]) + base)
        return cls


class RecordedFields:
    """``Fields`` read as a history is recorded (see the module docstring): ``feed`` the
    records in history order; ``fields(size)`` copies what was read into the ``Fields`` of a
    history of ``size`` records (``n`` of them read so far). Safe across threads: one feeds,
    any may copy."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.combos = Codes()
        self.classes = Codes({int: 0, type(None): 1})
        self._parts: list[Fields] = []
        self.invoke = np.zeros(0, np.bool_)
        self.skipped_invokes = False
        self.big: dict[str, list[int]] = {"key": [], "value": []}
        self.n = 0

    def feed(self, ops: Sequence[Op], start: int) -> None:
        """Read ``ops``, the history's records from position ``start`` (``n``: the next)."""
        m = len(ops)
        if not m:
            return
        with self._lock:
            if start != self.n:
                raise ValueError(f"fed records from {start}, {self.n} read so far")
            part = Fields(m, self.combos, self.classes)
            part.invoke = self.invoke
            # an invoke's key and value are left to ``Columns`` (the few its operation takes
            # from it): a quarter of the reading, saved on every record while the load runs
            part.read(ops, 0, m, base=start, invokes=False)
            self.invoke = part.invoke
            self.skipped_invokes |= part.skipped_invokes
            for name in ("key", "value"):
                self.big[name].extend(part.big[name])
            self._parts.append(part)
            self.n += m

    def fields(self, size: int) -> Fields:
        """The ``Fields`` of a history of ``size`` records whose first ``min(n, size)`` are
        those fed here, those read; the caller reads the rest (``Fields.read``)."""
        with self._lock:
            parts, n = list(self._parts), self.n
            out = Fields(size, Codes(self.combos), Codes(self.classes))
            out.skipped_invokes = self.skipped_invokes
            big = {k: [i for i in v if i < size] for k, v in self.big.items()}
        out.big = big
        k = out.filled = min(n, size)
        if k:
            for name in ("combo", "time", "key_cls", "value_cls", "key_int", "value_int"):
                getattr(out, name)[:k] = np.concatenate([getattr(p, name) for p in parts])[:k]
        return out


class RecordedHistory(list[Op]):
    """A history (a list of ``Op``) with the ``RecordedFields`` read while it was recorded
    (``fields``): its first records are those fed there. Any change to the list drops them
    (``fields`` becomes None: the checkers read the objects themselves); a copy, a slice or a
    pickle is a plain list."""

    fields: RecordedFields | None

    def __init__(self, ops: Iterable[Op] = (), fields: RecordedFields | None = None) -> None:
        super().__init__(ops)
        self.fields = fields

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (list(self),))

    def _changed(self) -> None:
        self.fields = None

    def __setitem__(self, i: Any, v: Any) -> None:
        self._changed()
        super().__setitem__(i, v)

    def __delitem__(self, i: Any) -> None:
        self._changed()
        super().__delitem__(i)

    def __iadd__(self, other: Iterable[Op]) -> RecordedHistory:  # type: ignore[override,misc]
        self._changed()
        super().__iadd__(other)
        return self

    def __imul__(self, n: SupportsIndex) -> RecordedHistory:
        self._changed()
        super().__imul__(n)
        return self

    def append(self, op: Op) -> None:
        self._changed()
        super().append(op)

    def extend(self, ops: Iterable[Op]) -> None:
        self._changed()
        super().extend(ops)

    def insert(self, i: SupportsIndex, op: Op) -> None:
        self._changed()
        super().insert(i, op)

    def pop(self, i: SupportsIndex = -1) -> Op:
        self._changed()
        return super().pop(i)

    def remove(self, op: Op) -> None:
        self._changed()
        super().remove(op)

    def clear(self) -> None:
        self._changed()
        super().clear()

    def sort(self, *args: Any, **kwargs: Any) -> None:
        self._changed()
        super().sort(*args, **kwargs)

    def reverse(self) -> None:
        self._changed()
        super().reverse()
