"""Where the results database lives (``lab.store.db.Store`` opens it through these): whether its
location can be written, a read-only connection for one that cannot, and the files a failed
create leaves behind (docs/results.md, "Where results live")."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

_SIDE_FILES = ("-wal", "-shm", "-journal")


def read_only_reason(path: Path) -> str | None:
    """Why the database at ``path`` cannot be written, in a few words (None: it can): its
    file system is mounted read-only, its directory or the file itself is not writable."""
    d = path.parent
    try:
        if os.statvfs(d).f_flag & os.ST_RDONLY:
            return f"{d} is on a read-only file system"
    except OSError:
        return None
    if path.exists() and not os.access(path, os.W_OK):
        return "the file is read-only (no write permission)"
    if not os.access(d, os.W_OK | os.X_OK):
        return f"its directory {d} is read-only (no write permission)"
    return None


def connect_read_only(path: Path) -> sqlite3.Connection:
    """A read-only connection; ``immutable`` when there is no WAL index (``-shm``) beside the
    file: a reader that cannot write cannot make one, and a database no process has open in
    WAL mode has none."""
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    if not Path(str(path) + "-shm").exists():
        uri += "&immutable=1"
    return sqlite3.connect(uri, uri=True, timeout=30.0)


def remove_files(path: Path) -> None:
    """The database file and its WAL, index and journal: what a failed create leaves."""
    for p in (path, *(Path(str(path) + s) for s in _SIDE_FILES)):
        try:
            p.unlink(missing_ok=True)
        except OSError:
            pass
