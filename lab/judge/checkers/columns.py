"""The client operations of a history as columns: numpy arrays, built once per history and
shared by the checkers (``CheckContext.columns``).

A history of a million operations is two million ``Op`` objects; a checker that walks one
``Completed`` object per operation spends most of its time creating and reading them. Here the
history is read once, in blocks of ``BLOCK`` records: every field of a block (in C) while its
objects are still in the CPU's cache (a pass per field over the whole history fetched every
record from memory again, which cost most of the time); ``lab.judge.checkers.record_fields``
reads them. A history the recorder hands out (``RecordedHistory``) carries the fields it read
while recording: only the records recorded since are read here (the read of two million
records, about 0.7 s, is then paid while the load runs). The invokes are paired with their
completions by sorting on the process instead of a loop, and every checker then selects,
groups and counts with array operations. Keys and values are kept as ints, with the code of
their class (``int_field``: which are None, ints or something else is known without looking at
each object again); the objects themselves are read back from the history for the few
operations that need them (examples, keys that are no ints). The key and value of an invoke
are read only where its operation takes them from it (the completion has None there, or there
is no completion): ``Completed`` takes them from the completion first, so most invokes' are
never needed (reading them all cost about a tenth of the columns' time).

Position ``i`` of every array is the ``i``-th operation of ``pair_ops(history).ops``: the same
pairing, the same order (completion-time order, stable; the operations that never completed
last, by invoke time), the same fields (see ``lab.history.Completed``); the unit tests compare
the two on random irregular histories (``tests/unit/test_checkers_columnar.py``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from functools import cached_property
from operator import attrgetter
from typing import Any

import numpy as np
import numpy.typing as npt

from lab.history import NEMESIS, Completed, Op, Paired
from lab.judge.checkers.record_fields import BLOCK, Codes, Fields, RecordedFields

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
Bools = npt.NDArray[np.bool_]


class Columns:
    """The paired client operations of one history, as arrays (see the module docstring).

    Strings (operation, workload, endpoint, node, type; None for no node) are codes into
    ``names``: ``code(s)`` is a string's code, -1 when no operation has it. ``n`` operations,
    the first ``n_done`` completed (``comp[i] >= 0``), the rest never did.
    """

    def __init__(self, history: Sequence[Op]) -> None:
        self.history = history
        enc = self._codes = Codes()
        size = len(history)
        # one pass over the records, block by block (``_fields``; ``record_fields``): each
        # distinct (process, type, f, workload, endpoint, node, error) gets a code, then each
        # field its own; the time, and the key and value (their classes, as ``classes``'
        # codes, and the ints) of each
        fields = self._fields(history)
        combos = fields.combos
        self.classes: Codes = fields.classes
        combo, time = fields.combo, fields.time
        self._time = time
        self._key_cls, self._value_cls = fields.key_cls, fields.value_cls
        self._key_int, self._value_int = fields.key_int, fields.value_int
        self._big = fields.big
        table = list(combos)
        get = enc.__getitem__
        # per field, combination -> the field's code (taken at the records that need it)
        lp, lt, lf, lw, le, ln, lerr = (np.array([get(t[i]) for t in table], np.int32)
                                        for i in range(7))  # fmt: skip
        self.names: list[Any] = list(enc)
        # every node a client record names (each combination is some record's)
        self.client_nodes: set[Any] = {t[5] for t in table if t[0] != NEMESIS}
        invoke = self.code("invoke")

        # the process of each record (a radix sort below when the codes fit in 16 bits)
        cp = (lp.astype(np.uint16) if len(self.names) < 65536 else lp)[combo]
        nem = lp[combo] == self.code(NEMESIS) if NEMESIS in enc else np.zeros(size, np.bool_)
        self.fault_index: I64 = np.flatnonzero(nem)
        n_client = size - len(self.fault_index)
        # (first, last) time of the client records, as ``time_bounds`` over them
        self.time_bounds: tuple[int, int] | None = (
            (int(time.min(where=~nem, initial=2**63 - 1)),
             int(time.max(where=~nem, initial=-(2**63)))) if n_client else None)
        # each process's records together, in history order: a stable sort on the process
        pos = np.argsort(cp, kind="stable")
        pp = cp[pos]
        # the faults' records are no invokes here: they pair with nothing
        is_inv = (lt == invoke)[combo[pos]] & ~nem[pos]
        same = pp[1:] == pp[:-1]
        # a completion pairs with the record before it when that is its process's invoke
        pair = np.flatnonzero(is_inv[:-1] & ~is_inv[1:] & same)
        self.orphans = int(n_client - np.count_nonzero(is_inv) - len(pair))
        inv_done = pos[pair]
        comp_done = pos[pair + 1]
        # the completion records in history order (a scatter, not a sort)
        slot = np.full(size, -1, np.int64)
        slot[comp_done] = np.arange(len(comp_done))
        o = slot[slot >= 0]
        ends = time[comp_done[o]]
        if len(ends) > 1 and bool(np.any(ends[1:] < ends[:-1])):
            o = o[np.argsort(ends, kind="stable")]
        pending = self._pending(is_inv, same, pair, pos, time)
        nd = self.n_done = len(o)
        inv = self.inv = np.concatenate([inv_done[o], np.asarray(pending, np.int64)])
        comp = self.comp = np.concatenate([comp_done[o], np.full(len(pending), -1, np.int64)])
        self.n = len(inv)
        cd = comp[:nd]
        self._read_invokes(history, fields)
        self.start: I64 = time[inv]
        # never completed: the end is unknown; ``end`` holds the start there (see ``n_done``)
        self.end: I64 = np.concatenate([time[cd], self.start[nd:]])
        info = self._code_of("info")
        ci, cc = combo[inv], combo[cd]
        self.type: I32 = np.concatenate([lt[cc], np.full(self.n - nd, info, np.int32)])
        self.process_code: I32 = lp[ci]
        self.f: I32 = lf[ci]
        self.workload: I32 = self._either(lw[ci], lw[cc], self.code(""))
        self.endpoint: I32 = self._either(le[ci], le[cc], self.code(""))
        # node: the completion's, else the invoke's (never completed: the invoke's)
        node = ln[ci]
        cn = ln[cc]
        none = self.code(None)
        node[:nd] = np.where(cn == none, node[:nd], cn) if none >= 0 else cn
        self.node: I32 = node
        # where: the node that answered, else the endpoint
        where = node.copy()
        for falsy in (None, ""):
            c = self.code(falsy)
            if c >= 0:
                m = node == c
                where[m] = self.endpoint[m]
        self.where: I32 = where
        self.ok: Bools = self.type == self.code("ok")
        # the completion's error (never completed: None)
        self.error: I32 = np.concatenate([lerr[cc], np.full(self.n - nd, self._code_of(None),
                                                             np.int32)])

    # --- construction helpers ------------------------------------------------------------

    def _fields(self, history: Sequence[Op]) -> Fields:
        """Every record's fields (``record_fields``): those read when the history was
        recorded (a ``RecordedHistory``), the others read now (a plain list: all of them);
        an invoke's key and value are read only where its operation takes them from it
        (``_read_invokes``)."""
        size = len(history)
        rec = getattr(history, "fields", None)
        if isinstance(rec, RecordedFields):
            fields = rec.fields(size)
            fields.read(history, fields.filled, size, invokes=False)
            return fields
        fields = Fields(size)
        fields.read(history, 0, size, invokes=False)
        return fields

    def _read_invokes(self, history: Sequence[Op], fields: Fields) -> None:
        """The key and value of the invokes that the operations take them from: where the
        completion has None (or there is no completion); ``_fields`` skipped them."""
        if not fields.skipped_invokes:
            return
        nd = self.n_done
        cd = self.comp[:nd]
        none = self.classes[type(None)]
        need = (self._key_cls[cd] == none) | (self._value_cls[cd] == none)
        rec = np.sort(np.concatenate([self.inv[:nd][need], self.inv[nd:]]))
        for a in range(0, len(rec), BLOCK):
            at = rec[a : a + BLOCK]
            fields.key_value(list(map(history.__getitem__, at.tolist())), at)

    def _code_of(self, name: Any) -> int:
        """The code of ``name``, added to ``names`` when no record has it."""
        if name not in self._codes:
            self._codes[name] = len(self.names)
            self.names.append(name)
        return self._codes[name]

    @staticmethod
    def _either(at_inv: I32, at_comp: I32, empty: int) -> I32:
        """The invoke's field, else (when it is empty) the completion's."""
        out = at_inv.copy()
        if empty >= 0:
            head = out[: len(at_comp)]
            out[: len(at_comp)] = np.where(head == empty, at_comp, head)
        return out

    @staticmethod
    def _pending(is_inv: Bools, same: Bools, pair: I64, pos: I64, time: I64) -> list[int]:
        """The invokes that never completed, in ``pair_ops``' order: those a later invoke of
        their process displaced (in the order of the displacing invokes), then those still
        open at the end (in the order their process last became busy), then by invoke time,
        stably."""
        paired = np.zeros(len(is_inv), np.bool_)
        paired[pair] = True
        lone = np.flatnonzero(is_inv & ~paired)
        if not len(lone):
            return []
        m = len(is_inv)
        items: list[tuple[int, int, int]] = []
        for j in lone.tolist():
            if j + 1 < m and same[j] and is_inv[j + 1]:
                items.append((0, int(pos[j + 1]), int(pos[j])))
            else:  # its process's last record: open at the end since its run of invokes began
                k = j
                while k > 0 and same[k - 1] and is_inv[k - 1]:
                    k -= 1
                items.append((1, int(pos[k]), int(pos[j])))
        items.sort()
        out = [i for _, _, i in items]
        out.sort(key=lambda i: int(time[i]))
        return out

    # --- lookups -------------------------------------------------------------------------

    def code(self, name: Any) -> int:
        """The code of a string (or None), -1 when no operation has it."""
        return self._codes.get(name, -1)

    def codes(self, names: Any) -> list[int]:
        """The codes of those of ``names`` that some operation has."""
        return [c for c in (self.code(n) for n in names) if c >= 0]

    def name(self, code: int) -> Any:
        return self.names[code]

    @property
    def done(self) -> Bools:
        out = np.zeros(self.n, np.bool_)
        out[: self.n_done] = True
        return out

    def completed(self, i: int) -> Completed:
        """Position ``i`` as ``pair_ops`` has it."""
        c = int(self.comp[i])
        return Completed(self.history[int(self.inv[i])], self.history[c] if c >= 0 else None)

    def completed_at(self, sel: Sequence[int] | I64) -> list[Completed]:
        h = self.history
        get = h.__getitem__
        inv = self.inv[sel].tolist()
        comp = self.comp[sel].tolist()
        return [Completed(get(i), get(c) if c >= 0 else None)
                for i, c in zip(inv, comp, strict=True)]

    def _source(self, cls: I32, sel: I64) -> I64:
        """The records a field of ``Completed`` comes from at the positions: the
        completion's, else (None there, or never completed) the invoke's."""
        comp = self.comp[sel]
        inv = self.inv[sel]
        none = self.classes.get(type(None), -1)
        if none < 0:
            return np.where(comp >= 0, comp, inv)
        return np.where((comp >= 0) & (cls[comp] != none), comp, inv)

    def int_field(self, name: str, sel: I64) -> IntField:
        """``Completed.key`` (``name`` "key") or ``.value`` at the positions, typed."""
        cls = self._key_cls if name == "key" else self._value_cls
        rec = self._source(cls, sel)
        c = cls[rec]
        present = np.flatnonzero(np.bincount(c, minlength=len(self.classes))).tolist()
        table = list(self.classes)
        ints = self._key_int if name == "key" else self._value_int
        big = self._big[name]
        at_big = np.isin(rec, big) if big else np.zeros(len(rec), np.bool_)
        return IntField(rec, c, ints[rec], at_big, {table[i] for i in present},
                        self.classes.get(int, -1), self.classes.get(type(None), -1))

    def objects(self, name: str, rec: I64) -> npt.NDArray[np.object_]:
        """The keys (``name`` "key") or values of the records, read from the history."""
        get = self.history.__getitem__
        return np.fromiter(map(attrgetter(name), map(get, rec.tolist())), object, len(rec))

    def object_at(self, name: str, rec: int) -> Any:
        """The key (``name`` "key") or value of one record."""
        return getattr(self.history[rec], name)

    def keys_values(self, sel: I64) -> tuple[list[Any], list[Any]]:
        """``keys(sel)`` and ``values(sel)``."""
        k, v = self.key_value_arrays(sel)
        return k.tolist(), v.tolist()

    def key_value_arrays(self, sel: I64) -> tuple[npt.NDArray[np.object_],
                                                  npt.NDArray[np.object_]]:
        """``keys(sel)`` and ``values(sel)`` as object arrays."""
        return (self.objects("key", self._source(self._key_cls, sel)),
                self.objects("value", self._source(self._value_cls, sel)))

    def keys(self, sel: I64) -> list[Any]:
        """``Completed.key`` at the positions: the completion's, else the invoke's."""
        return self.objects("key", self._source(self._key_cls, sel)).tolist()  # type: ignore[no-any-return]

    def values(self, sel: I64) -> list[Any]:
        """``Completed.value`` at the positions: the completion's, else the invoke's."""
        return self.objects("value", self._source(self._value_cls, sel)).tolist()  # type: ignore[no-any-return]

    def errors(self, sel: I64) -> list[int | None]:
        """``Completed.error`` at the positions (None: never completed)."""
        names = self.names
        return [names[c] for c in self.error[sel].tolist()]

    def f_positions(self, names: Any) -> I64:
        """Positions of the operations whose ``f`` is one of ``names``, as ``by_f`` has them:
        by operation (first seen first), each in order."""
        parts = [np.flatnonzero(self.f == self.code(f)) for f in self.f_order if f in names]
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)

    @cached_property
    def f_order(self) -> list[str]:
        """The operations (``f``) in the order they are first seen."""
        codes, first = np.unique(self.f, return_index=True)
        return [self.names[c] for c in codes[np.argsort(first)].tolist()]

    def error_msgs(self, sel: I64) -> list[str | None]:
        h = self.history
        return [h[c].error_msg if c >= 0 else "no completion recorded"
                for c in self.comp[sel].tolist()]  # fmt: skip

    def of_f(self, names: Any) -> I64:
        """Positions (in order) of the operations whose ``f`` is one of ``names``."""
        cs = self.codes(names)
        if not cs:
            return np.zeros(0, np.int64)
        if len(cs) == 1:
            return np.flatnonzero(self.f == cs[0])
        return np.flatnonzero(np.isin(self.f, cs))

    @cached_property
    def faults(self) -> list[Op]:
        h = self.history
        return [h[i] for i in self.fault_index.tolist()]

    def paired(self) -> Paired:
        """``pair_ops(history)``, from the columns: one ``Completed`` per operation (for the
        checkers that still walk objects)."""
        return Paired(self.completed_at(np.arange(self.n)), self.orphans, self.faults)

    def by_f(self) -> Mapping[str, list[Completed]]:
        return LazyGroups(self)

    @cached_property
    def by_where(self) -> list[tuple[tuple[int, int], I64]]:
        """Positions grouped by (workload, where), groups first seen first (as
        ``CheckContext.by_where``): latency and errors share it."""
        return [((w, e), g) for (w, e), g in self.groups(self.workload, self.where)]

    def groups(self, *cols: I32, sel: I64 | None = None) -> list[tuple[tuple[int, ...], I64]]:
        """The positions (``sel``, default every operation) grouped by the codes of ``cols``,
        groups in the order they are first seen in ``sel``, positions in ``sel``'s order
        within each."""
        idx = np.arange(self.n) if sel is None else sel
        return [(codes, idx[rows]) for codes, rows in group_rows(*(c[idx] for c in cols))]



class IntField:
    """A field (key or value) of ``Completed`` at some positions, typed: ``rec`` the records
    it comes from, ``cls`` the code of its class (``Columns.classes``), ``ints`` its value
    where it is an int within 64 bits (else 0), ``big`` where it is an int beyond, ``types``
    the classes present."""

    __slots__ = ("big", "cls", "int_code", "ints", "none_code", "rec", "types")

    def __init__(self, rec: I64, cls: I32, ints: I64, big: Bools, types: set[type],
                 int_code: int, none_code: int) -> None:  # fmt: skip
        self.rec, self.cls, self.ints, self.big, self.types = rec, cls, ints, big, types
        self.int_code, self.none_code = int_code, none_code

    @property
    def none(self) -> Bools:
        """Where the field is None."""
        out: Bools = self.cls == self.none_code
        return out

    @property
    def is_int(self) -> Bools:
        """Where the field's class is ``int`` (within 64 bits or not)."""
        out: Bools = self.cls == self.int_code
        return out


def group_rows(*cols: I32) -> list[tuple[tuple[int, ...], I64]]:
    """Row numbers grouped by the codes in ``cols`` (arrays of one length), groups in the
    order they are first seen, rows in order within each."""
    if not cols or not len(cols[0]):
        return []
    key = np.zeros(len(cols[0]), np.int64)
    for c in cols:
        key = key * (int(c.max()) + 1) + c
    # a radix sort when the combined codes fit in 16 bits (the usual case: few names)
    order = np.argsort(key.astype(np.uint16) if int(key.max()) < 65536 else key,
                       kind="stable")  # fmt: skip
    k = key[order]
    cuts = np.flatnonzero(k[1:] != k[:-1]) + 1
    starts = np.concatenate([[0], cuts]).tolist()
    stops = np.concatenate([cuts, [len(k)]]).tolist()
    out = []
    for a, b in zip(starts, stops, strict=True):
        rows = order[a:b]
        first = int(rows[0])
        out.append((first, tuple(int(c[first]) for c in cols), rows))
    out.sort(key=lambda x: x[0])
    return [(codes, rows) for _, codes, rows in out]


class LazyGroups(Mapping[str, list[Completed]]):
    """``CheckContext.by_f``: the ``Completed`` objects of an operation kind, made when that
    kind is asked for (a checker that looks for ``rmw`` in a history without any pays
    nothing)."""

    def __init__(self, col: Columns) -> None:
        self.col = col
        self._made: dict[str, list[Completed]] = {}
        self._order: list[str] = col.f_order

    def __getitem__(self, f: str) -> list[Completed]:
        got = self._made.get(f)
        if got is None:
            if f not in self._order:
                raise KeyError(f)
            got = self._made[f] = self.col.completed_at(self.col.of_f([f]))
        return got

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)



def columns(history: Sequence[Op]) -> Columns:
    """The columns of a history (not cached: ``CheckContext.columns`` keeps them per run)."""
    return Columns(history)


def summary_ints(values: I64, *, scale: float = 1.0) -> dict[str, Any]:
    """``base.summary`` of integers (ns) in an array, with the same figures to the bit: the
    mean of the exact sum rounded once (what ``math.fsum`` gives for integers below 2**53),
    the percentiles by the same nearest rank."""
    n = len(values)
    if n == 0:
        return {"count": 0, "mean": None, "min": None, "p50": None, "p90": None, "p95": None,
                "p99": None, "p999": None, "max": None}  # fmt: skip
    xs = np.sort(values)
    # the exact sum: in int64 while it cannot overflow, else in Python
    top = max(abs(int(xs[0])), abs(int(xs[-1])))
    big = top >= 2**53 or top * n >= 2**62
    total = math.fsum(xs.tolist()) if big else float(int(xs.sum(dtype=np.int64)))
    from lab.judge.checkers.base import summary_of_sorted  # base imports this module

    return summary_of_sorted(xs, total, scale=scale)  # type: ignore[arg-type]


def error_labels(col: Columns, sel: I64) -> list[str]:
    """``downtime.error_label`` of the operations at the positions: ``incomplete``, the error
    code, else ``timeout`` (info) or ``fail``."""
    info = col.code("info")
    out = []
    for i, e, t in zip(sel.tolist(), col.errors(sel), col.type[sel].tolist(), strict=True):
        if i >= col.n_done:
            out.append("incomplete")
        elif e is not None:
            out.append(str(e))
        else:
            out.append("timeout" if t == info else "fail")
    return out
