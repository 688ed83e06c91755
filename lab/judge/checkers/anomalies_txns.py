"""The transactions of a list_append workload as the ``anomalies`` checker
(``lab.judge.checkers.anomalies``) reads them: their micro-operations (``_mops``), the cases
found within one transaction (Elle's internal and future read), and how a value is shown in an
example (the last ``MAX_LIST`` elements of a list)."""

from __future__ import annotations

from typing import Any

from lab.history import Completed

MAX_LIST = 8  # elements of a list shown in an example (the last ones)

Mop = tuple[str, Any, Any]


class _Txn:
    __slots__ = ("id", "c", "type", "mops")

    def __init__(self, id_: int, c: Completed, mops: list[Mop]) -> None:
        self.id = id_
        self.c = c
        self.type = c.type
        self.mops = mops


def _mops(value: Any) -> list[Mop] | None:
    """The micro-operations of a transaction, or None when they are not list_append's."""
    if not isinstance(value, list | tuple):
        return None
    out: list[Mop] = []
    for m in value:
        if not isinstance(m, list | tuple) or len(m) != 3:
            return None
        f, k, v = m
        if isinstance(k, bool) or not isinstance(k, int | str):
            return None
        if f == "append":
            if isinstance(v, bool) or not isinstance(v, int):
                return None
        elif f == "r":
            if isinstance(v, tuple):
                v = list(v)
            elif v is not None and not isinstance(v, list):
                return None
        else:
            return None
        out.append((f, k, v))
    return out


def _internal_case(mops: list[Mop]) -> tuple[int, list[Any]] | None:
    """Elle's op-int-case: the first read that disagrees with the transaction's own earlier
    reads and appends of the key: (its index, what it should have read; "..." when the prefix
    is unknown)."""
    state: dict[Any, tuple[list[int] | None, list[int]]] = {}
    for i, (f, k, v) in enumerate(mops):
        s = state.get(k)
        if f == "append":
            state[k] = (None, [v]) if s is None else (s[0], [*s[1], v])
            continue
        if v is None:
            continue
        if s is not None:
            prefix, suffix = s
            n = len(suffix)
            if prefix is None:
                bad = len(v) < n or v[len(v) - n:] != suffix
            else:
                p = len(prefix)
                bad = len(v) != p + n or v[:p] != prefix or v[p:] != suffix
            if bad:
                return i, (["..."] + suffix if prefix is None else _short(prefix + suffix))
        state[k] = (v, [])
    return None


def _future_read(mops: list[Mop]) -> tuple[Any, int, list[int]] | None:
    """Elle's op-future-read-case: a read shows an element the transaction appends later."""
    reads: dict[Any, list[list[int]]] = {}
    for f, k, v in mops:
        if f == "r":
            if v:
                reads.setdefault(k, []).append(v)
        else:
            for r in reads.get(k, ()):
                if v in r:
                    return k, v, r
    return None


def _last(v: list[int]) -> int | None:
    return v[-1] if v else None


def _counts(xs: list[int]) -> dict[int, int]:
    out: dict[int, int] = {}
    for x in xs:
        out[x] = out.get(x, 0) + 1
    return out


def _short(v: Any) -> Any:
    """A list as shown in an example: its last ``MAX_LIST`` elements after "...+N" when longer."""
    if isinstance(v, list) and len(v) > MAX_LIST:
        return [f"...+{len(v) - MAX_LIST}", *v[-MAX_LIST:]]
    return v


def _text(v: Any) -> str:
    s = _short(v)
    if isinstance(s, list):
        return "[" + ", ".join(str(x) for x in s) + "]"
    return str(s)


def _secs(s: float | None) -> str:
    return "?" if s is None else f"{s:.3f} s"
