"""What goes wrong with the results database, in one line each: ``StoreError`` and its kinds
(``RunNotFound``, ``AmbiguousRun``, ``StoreUnavailable``, ``StoreMissing``), the cause of a
failure in a few words (``describe_failure``) and the free room on the database's file system."""

from __future__ import annotations

import errno
import shutil
import sqlite3
from collections.abc import Sequence
from pathlib import Path

AMBIGUOUS_SHOWN = 20  # matches an ambiguous run id lists


class StoreError(Exception):
    pass


class RunNotFound(StoreError):
    def __init__(self, ref: str) -> None:
        super().__init__(f"no run '{ref}' (see `lab runs`)")
        self.ref = ref


class AmbiguousRun(StoreError):
    """``matches``: the ids the prefix matches, most recent first."""

    def __init__(self, ref: str, matches: Sequence[str]) -> None:
        shown = ", ".join(matches[:AMBIGUOUS_SHOWN])
        more = len(matches) - AMBIGUOUS_SHOWN
        if more > 0:
            shown += f" and {more} more"
        super().__init__(
            f"run id '{ref}' is ambiguous: it matches {len(matches)} runs: {shown}; "
            "give more characters"
        )
        self.ref = ref
        self.matches = list(matches)


class StoreUnavailable(StoreError):
    """The results database cannot be opened, read or written. ``str()`` is one line:
    ``results database <path> is unreadable: <cause>`` (or ``cannot be written: <cause>``)."""

    def __init__(self, path: str | Path, cause: str, verb: str = "is unreadable") -> None:
        super().__init__(f"results database {path} {verb}: {cause}")
        self.path = Path(path)
        self.cause = cause
        self.verb = verb

    @classmethod
    def of(cls, path: str | Path, e: BaseException, writing: bool = False) -> StoreUnavailable:
        """From the exception sqlite3 or the file system raised. ``writing``: what the caller
        was doing when the cause does not say (a corrupt file is unreadable either way, a full
        disk is never)."""
        if isinstance(e, StoreUnavailable):
            return e
        return cls(path, describe_failure(path, e), _verb(e, writing))


class StoreMissing(StoreError):
    """A command that only reads named a database file that does not exist: nothing is
    created. ``str()`` is one line."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(
            f"no results database at {path} (nothing has been stored there: `lab run` creates "
            "it; is the path mistyped?)"
        )
        self.path = Path(path)


_UNREADABLE = ("SQLITE_NOTADB", "SQLITE_CORRUPT")
_UNWRITABLE = ("SQLITE_FULL", "SQLITE_READONLY")


def _verb(e: BaseException, writing: bool) -> str:
    name = str(getattr(e, "sqlite_errorname", "") or "")
    if name.startswith(_UNREADABLE):
        return "is unreadable"
    if name.startswith(_UNWRITABLE) or _errno(e) in (errno.ENOSPC, errno.EROFS, errno.EDQUOT):
        return "cannot be written"
    if name.startswith("SQLITE_CANTOPEN"):
        return "cannot be opened"
    if isinstance(e, sqlite3.DatabaseError) and not isinstance(e, sqlite3.OperationalError):
        return "is unreadable"
    return "cannot be written" if writing else "cannot be opened"


def _errno(e: BaseException) -> int | None:
    return e.errno if isinstance(e, OSError) else None


def describe_failure(path: str | Path, e: BaseException) -> str:
    """The cause in a few words: sqlite3's message or the system's; a full disk says how much
    room is left where the database lives."""
    if isinstance(e, OSError) and e.strerror:
        text = e.strerror + (f" ({e.filename})" if e.filename else "")
    else:
        text = str(e) or type(e).__name__
    name = str(getattr(e, "sqlite_errorname", "") or "")
    if name.startswith("SQLITE_FULL") or _errno(e) in (errno.ENOSPC, errno.EDQUOT):
        free = free_bytes(path)
        if free is not None:
            text += f" ({format_bytes(free)} free on its file system)"
    return text


def free_bytes(path: str | Path) -> int | None:
    """Free bytes on the file system that holds ``path`` (or its nearest existing parent)."""
    p = Path(path)
    for d in (p, *p.parents):
        if d.exists():
            try:
                return shutil.disk_usage(d).free
            except OSError:
                return None
    return None


def format_bytes(n: int) -> str:
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"
