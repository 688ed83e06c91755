"""stale_reads over the columns: the reads, polls and writes of the history as arrays, each
key's writes searched with ``numpy.searchsorted`` instead of one ``bisect`` per read.

The figures are those of ``stale_reads`` (its docstring defines them): the same reads, the same
order of examples, the same visibility times. A key's writes are a ``KeyWrites`` as there; the
arrays are made per key, so a workload whose reads touch very many keys (``MANY_KEYS``) is left
to the per-object path (``stale_reads.check_objects``), which costs less there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lab.checkers.columns import I64, Columns, group_rows
from lab.history import READ_FS, REREAD_FS, WRITE_FS

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
    """What one workload read on one node: its first reads (``READ_FS``: positions, keys,
    invoke times, values) and every look at a key (reads and polls: key, start, end, the
    version seen, None when no version)."""

    read_col: list[int] = field(default_factory=list)  # positions in the columns
    read_key: list[Any] = field(default_factory=list)
    read_start: list[int] = field(default_factory=list)
    read_value: list[Any] = field(default_factory=list)
    look_key: list[int] = field(default_factory=list)
    look_start: list[int] = field(default_factory=list)
    look_end: list[int] = field(default_factory=list)
    look_value: list[Any] = field(default_factory=list)


def gather(col: Columns) -> tuple[dict[str, dict[str, NodeLooks]], list[str]]:
    """Per workload and node (the node that answered, else the endpoint), its looks; and the
    workloads in ``stale_reads``' order: those with a first read, by their first one, then
    the others by their first look."""
    pos = col.f_positions(READ_FS | REREAD_FS)
    pos = pos[col.ok[pos]]
    keys, values = col.keys_values(pos)
    first = np.isin(col.f[pos], col.codes(READ_FS)).tolist()
    start = col.start[pos].tolist()
    pcol = pos.tolist()
    end = col.end[pos].tolist()
    out: dict[str, dict[str, NodeLooks]] = {}
    first_read: dict[str, int] = {}
    for (wc, ec), rows in group_rows(col.workload[pos], col.where[pos]):
        w = col.name(wc)
        nl = out.setdefault(w, {}).setdefault(col.name(ec), NodeLooks())
        for j in rows.tolist():
            v = values[j]
            if isinstance(v, list):  # a poll: [[key, version or None], ...]
                for pair in v:
                    if isinstance(pair, list | tuple) and len(pair) == 2:
                        nl.look_key.append(int(pair[0]))
                        nl.look_start.append(start[j])
                        nl.look_end.append(end[j])
                        nl.look_value.append(pair[1])
                continue
            k = keys[j]
            if k is None:
                continue
            nl.look_key.append(k)
            nl.look_start.append(start[j])
            nl.look_end.append(end[j])
            nl.look_value.append(v)
            if first[j]:
                nl.read_col.append(pcol[j])
                nl.read_key.append(k)
                nl.read_start.append(start[j])
                nl.read_value.append(v)
                if w not in first_read or j < first_read[w]:
                    first_read[w] = j
    order = sorted(first_read, key=first_read.__getitem__)
    order += [w for w in out if w not in first_read]
    return out, order


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
