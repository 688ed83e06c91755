"""stale_reads over the columns: the reads, polls and writes of the history as arrays, each
key's writes searched with ``numpy.searchsorted`` instead of one ``bisect`` per read.

The figures are those of ``stale_reads`` (its docstring defines them): the same reads, the same
order of examples, the same visibility times. A key's writes are a ``KeyWrites`` as there; the
arrays are made per key, so a workload whose reads touch very many keys (``MANY_KEYS``) is left
to the per-object path (``stale_reads.check_objects``), which costs less there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from lab.history import READ_FS, REREAD_FS, WRITE_FS, Completed
from lab.judge.checkers.columns import I64, Bools, Columns, group_rows

MANY_KEYS = 4096
NOTHING_SEEN = -(2**63)
_INT64 = (-(2**63), 2**63)


def seen_of(v: Any, version: Any) -> int | None:
    """The version a look saw: NOTHING_SEEN for an absent row, None when it is no version."""
    if v is None:
        return NOTHING_SEEN
    got: int | None = v if type(v) is int else version(v)
    return got


@dataclass(slots=True)
class NodeLooks:
    """What one workload read on one node: its first reads (``READ_FS``, with a key) and
    every look at a key (first reads, re-reads and each key of a poll) that saw a version.

    ``read_rows`` index the looks' arrays of ``gather`` (``Gathered``); a first read's
    ``read_seen`` is its version (``read_none``: it found no row; ``incomparable`` counts
    those whose value is no version and are left out)."""

    read_rows: I64
    read_key: I64
    read_start: I64
    read_seen: I64
    read_none: Bools
    incomparable: int
    look_key: I64
    look_start: I64
    look_end: I64
    look_seen: I64
    first_rows: I64  # every first read with a key, comparable or not
    plain_rows: I64  # every look but the polls'
    poll_looks: list[tuple[int, int, int, Any]]  # (key, start, end, value) of each poll key

    def objects(self, g: Gathered, col: Columns) -> tuple[list[Completed], list[Any]]:
        """The first reads as ``Completed`` and every look as ``stale_reads.Look``, for the
        per-object path."""
        rs = [col.completed(int(g.pos[j])) for j in self.first_rows.tolist()]
        start, end = col.start[g.pos], col.end[g.pos]
        keys, values = g.keys.all, g.values.all
        looks = [(keys[j], int(start[j]), int(end[j]), values[j])
                 for j in self.plain_rows.tolist()]  # fmt: skip
        return rs, looks + self.poll_looks


class Lazy:
    """A field (key or value) of some records as objects: ``[j]`` one, ``all`` every one (an
    object array, made on first use: the array path needs only the few in its examples)."""

    def __init__(self, col: Columns, name: str, rec: I64) -> None:
        self.col, self.name, self.rec = col, name, rec
        self._all: npt.NDArray[np.object_] | None = None

    def __getitem__(self, j: int) -> Any:
        if self._all is not None:
            return self._all[j]
        return self.col.object_at(self.name, int(self.rec[j]))

    @property
    def all(self) -> npt.NDArray[np.object_]:
        if self._all is None:
            self._all = self.col.objects(self.name, self.rec)
        return self._all


@dataclass(slots=True)
class Gathered:
    """The ok reads and polls of the history (rows, in ``by_f``'s order)."""

    pos: I64  # their positions in the columns
    keys: Lazy
    values: Lazy
    nodes: dict[str, dict[str, NodeLooks]]
    order: list[str]  # the workloads, as stale_reads lists them


def gather(col: Columns, version: Any) -> Gathered | None:
    """Per workload and node (the node that answered, else the endpoint), its looks; and the
    workloads in ``stale_reads``' order: those with a first read, by their first one, then
    the others by their first look. None when a key is no int or a version is beyond 64 bits
    (the per-object path takes the history)."""
    pos = col.f_positions(READ_FS | REREAD_FS)
    pos = pos[col.ok[pos]]
    n = len(pos)
    kf, vf = col.int_field("key", pos), col.int_field("value", pos)
    tk, tv = kf.types, vf.types
    if not tk <= {int, type(None)} or kf.big.any():
        return None  # a key that is no int, or beyond 64 bits
    keys, values = Lazy(col, "key", kf.rec), Lazy(col, "value", vf.rec)
    try:
        has_key = ~kf.none
        key = kf.ints
        poll = (np.fromiter((isinstance(v, list) for v in values.all), np.bool_, n)
                if tv - {int, type(None)} else np.zeros(n, np.bool_))  # fmt: skip
        vnone = vf.none
        if tv <= {int, type(None)}:
            if vf.big.any():
                return None
            seen = np.where(vnone, NOTHING_SEEN, vf.ints)
            has_seen = np.ones(n, np.bool_)
        else:
            raw = [None if p else seen_of(v, version)
                   for p, v in zip(poll.tolist(), values.all.tolist(), strict=True)]  # fmt: skip
            has_seen = np.fromiter((x is not None for x in raw), np.bool_, n)
            seen = np.fromiter((0 if x is None else x for x in raw), np.int64, n)
    except OverflowError:
        return None
    first = np.isin(col.f[pos], col.codes(READ_FS))
    plain = has_key & ~poll
    start, end = col.start[pos], col.end[pos]
    polls: dict[int, list[tuple[int, int, int, Any]]] = {}
    for j in np.flatnonzero(poll).tolist():
        polls[j] = [(int(pair[0]), int(start[j]), int(end[j]), pair[1]) for pair in values[j]
                    if isinstance(pair, list | tuple) and len(pair) == 2]  # fmt: skip
    out: dict[str, dict[str, NodeLooks]] = {}
    first_read: dict[str, int] = {}
    for (wc, ec), g in group_rows(col.workload[pos], col.where[pos]):
        w = col.name(wc)
        reads = g[plain[g] & first[g]]
        if len(reads) and (w not in first_read or int(reads[0]) < first_read[w]):
            first_read[w] = int(reads[0])
        comparable = reads[has_seen[reads]]
        lk = g[plain[g] & has_seen[g]]
        pl = [x for j in g[poll[g]].tolist() for x in polls[j]]
        pseen = [seen_of(v, version) for _, _, _, v in pl]
        pk = [x for x, s_ in zip(pl, pseen, strict=True) if s_ is not None]
        if any(not (-(2**63) <= x[0] < 2**63) for x in pk):
            return None
        ps = [s_ for s_ in pseen if s_ is not None]
        if any(not (-(2**63) <= x < 2**63) for x in ps):
            return None
        out.setdefault(w, {})[col.name(ec)] = NodeLooks(
            read_rows=comparable, read_key=key[comparable], read_start=start[comparable],
            read_seen=np.where(vnone[comparable], 0, seen[comparable]),
            read_none=vnone[comparable], incomparable=len(reads) - len(comparable),
            look_key=np.concatenate([key[lk], np.array([x[0] for x in pk], np.int64)]),
            look_start=np.concatenate([start[lk], np.array([x[1] for x in pk], np.int64)]),
            look_end=np.concatenate([end[lk], np.array([x[2] for x in pk], np.int64)]),
            look_seen=np.concatenate([seen[lk], np.array(ps, np.int64)]),
            first_rows=reads, plain_rows=g[plain[g]], poll_looks=pl)
    order = sorted(first_read, key=first_read.__getitem__)
    order += [w for w in out if w not in first_read]
    return Gathered(pos, keys, values, out, order)


def write_pairs(col: Columns, workloads: set[str], version: Any
                ) -> dict[str, dict[Any, list[tuple[int, int]]]]:
    """Per workload (of ``workloads``) and key, its acknowledged writes (ack, version), as
    ``stale_reads`` collects them (in ``by_f``'s order)."""
    pos = col.f_positions(WRITE_FS)
    pos = pos[col.ok[pos] & np.isin(col.workload[pos], col.codes(workloads))]
    keys, values = col.keys_values(pos)
    wl = col.workload[pos].tolist()
    ack = col.end[pos].tolist()
    out: dict[str, dict[Any, list[tuple[int, int]]]] = {}
    names = col.names
    for j, (k, v) in enumerate(zip(keys, values, strict=True)):
        if k is None:
            continue
        if type(v) is not int:
            v = version(v)
            if v is None:
                continue
        per_key = out.get(names[wl[j]])
        if per_key is None:
            per_key = out[names[wl[j]]] = {}
        lst = per_key.get(k)
        if lst is None:
            per_key[k] = [(ack[j], v)]
        else:
            lst.append((ack[j], v))
    return out


Pairs = dict[Any, list[tuple[int, int]]]


def write_arrays(col: Columns, workloads: set[str]
                 ) -> tuple[dict[str, dict[int, KeyArrays]], dict[str, Pairs]] | None:
    """``write_pairs`` made with arrays: per workload, ``key_arrays`` per key, or (a workload
    with more than ``MANY_KEYS`` keys, for the per-object path) its pairs. None unless every
    key and value (of the writes with both) is an int within 64 bits (then ``write_pairs``)."""
    pos = col.f_positions(WRITE_FS)
    pos = pos[col.ok[pos] & np.isin(col.workload[pos], col.codes(workloads))]
    kf, vf = col.int_field("key", pos), col.int_field("value", pos)
    # a write without a key, or without a value (no version), is left out
    keep = ~kf.none & ~vf.none
    if not (kf.is_int[keep].all() and vf.is_int[keep].all()):
        return None  # a key or value that is no int
    if kf.big[keep].any() or vf.big[keep].any():
        return None  # beyond 64 bits
    k, v = kf.ints[keep], vf.ints[keep]
    wl = col.workload[pos][keep]
    ack = col.end[pos][keep]
    arrays: dict[str, dict[int, KeyArrays]] = {}
    many: dict[str, Pairs] = {}
    for (wc,), rows in group_rows(wl):
        o = rows[np.lexsort((v[rows], ack[rows], k[rows]))]  # by key, then ack, then version
        ks = k[o]
        cuts = (np.flatnonzero(ks[1:] != ks[:-1]) + 1).tolist()
        if len(cuts) + 1 > MANY_KEYS:
            pairs: Pairs = {}
            for key, a, ver in zip(ks.tolist(), ack[o].tolist(), v[o].tolist(), strict=True):
                pairs.setdefault(key, []).append((a, ver))
            many[col.name(wc)] = pairs
            continue
        per_key: dict[int, KeyArrays] = {}
        for a, b in zip([0, *cuts], [*cuts, len(o)], strict=True):
            acks, versions = ack[o[a:b]], v[o[a:b]]
            monotonic = bool(np.all(versions[1:] >= versions[:-1]))
            per_key[int(ks[a])] = KeyArrays(acks, versions, np.maximum.accumulate(versions),
                                            monotonic)
        arrays[col.name(wc)] = per_key
    return arrays, many


@dataclass(slots=True)
class KeyArrays:
    """One key's acknowledged writes as arrays, in ``KeyWrites``' order (by ack, then
    version)."""

    acks: I64
    versions: I64
    prefix_max: I64
    monotonic: bool


def key_arrays(pairs: Sequence[tuple[int, int]]) -> KeyArrays | None:
    """None when a version does not fit in 64 bits (the per-object path takes the key)."""
    if not all(_INT64[0] <= v < _INT64[1] for _, v in pairs):
        return None
    a = np.array(sorted(pairs), np.int64).reshape(-1, 2)
    acks, versions = a[:, 0], a[:, 1]
    monotonic = bool(np.all(versions[1:] >= versions[:-1])) if len(versions) > 1 else True
    return KeyArrays(acks, versions, np.maximum.accumulate(versions), monotonic)


@dataclass(slots=True)
class Stale:
    """A stale read: its index among the node's first reads, versions and time behind, the
    version required."""

    j: int
    missed: int
    behind: int
    required: int


def stale_of_key(kw: KeyArrays, starts: I64, seen: I64, seen_none: np.ndarray[Any, Any],
                 rows: I64) -> tuple[int, int, list[Stale]]:
    """One key's reads on one node: (eligible, without an earlier write, the stale ones)."""
    i = np.searchsorted(kw.acks, starts, side="left")
    elig = i > 0
    without = int(np.count_nonzero(~elig))
    ie = i[elig]
    required = kw.prefix_max[ie - 1]
    se, sn = seen[elig], seen_none[elig]
    bad = sn | (se < required)
    stale: list[Stale] = []
    if not np.any(bad):
        return int(len(ie)), without, stale
    ib, sb, nb, rb = ie[bad], se[bad], sn[bad], required[bad]
    jb = rows[elig][bad]
    if kw.monotonic:
        lo = np.where(nb, 0, np.minimum(np.searchsorted(kw.versions, sb, side="right"), ib))
        missed = ib - lo
        newest = kw.acks[ib - 1]
    else:
        missed = np.zeros(len(ib), np.int64)
        newest = np.zeros(len(ib), np.int64)
        for t, (n, s, none) in enumerate(zip(ib.tolist(), sb.tolist(), nb.tolist(),
                                             strict=True)):
            vs = kw.versions[:n]
            newer = np.ones(n, np.bool_) if none else vs > s
            missed[t] = int(np.count_nonzero(newer))
            hits = np.flatnonzero(newer)
            newest[t] = int(kw.acks[hits[-1]]) if len(hits) else int(kw.acks[0])
    behind = starts[elig][bad] - newest
    for j, m, b, r in zip(jb.tolist(), missed.tolist(), behind.tolist(), rb.tolist(),
                          strict=True):
        stale.append(Stale(j, m, b, r))
    return int(len(ie)), without, stale


def visibility_of_key(kw: KeyArrays, ends: I64, starts: I64, seen: I64,
                      times: list[int], bounds: list[int], gaps: list[int]) -> None:
    """``stale_reads._visibility`` for one key's looks on one node."""
    o = np.lexsort((seen, starts, ends))
    e = ends[o]
    best = np.maximum.accumulate(seen[o])
    j = np.searchsorted(best, kw.versions, side="left")
    never = j == len(best)
    if np.any(never):
        late = never & (e[-1] > kw.acks)
        bounds.extend((e[-1] - kw.acks[late]).tolist())
    ok = ~never
    if not np.any(ok):
        return
    jj, ack = j[ok], kw.acks[ok]
    at = e[jj]
    times.extend(np.maximum(0, at - ack).tolist())
    before = np.where(jj > 0, e[np.maximum(jj - 1, 0)], ack)
    prev = np.where((jj > 0) & (before > ack), before, ack)
    gaps.extend(np.maximum(0, at - prev).tolist())
