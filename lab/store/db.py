"""Results in SQLite (through sqlite-utils): runs, cells, operations, faults, samples,
measurements, expectations. The schema is documented in docs/results.md. ``Store`` is opened
here; its reads are in ``lab.store.queries``, its writes in ``lab.store.writing``, the schema
and its migrations in ``lab.store.schema``, the errors in ``lab.store.errors``, the encoding
of rows in ``lab.store.records`` and the fallback file in ``lab.store.fallback``.

Schema changes go through ``MIGRATIONS``: each is a function applied once, in version order,
and recorded in the ``migrations`` table; opening a ``Store`` applies what is missing. The
database runs in WAL mode so that the recorder's writer thread (its own connection) and the
engine can write while ``lab runs`` reads.

A database that cannot be opened, read or written raises ``StoreUnavailable``, whose text is
the one line the CLI prints (``results database <path> is unreadable: <cause>``). What a run
could not write (the disk filled mid-run) goes to a JSON-lines file next to the database
(``fallback_path``); a run whose ``lab`` process is gone without finishing it (``kill -9``) is
marked ``abandoned`` by ``mark_abandoned`` (``lab runs``, ``lab gc``).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from types import TracebackType

import sqlite_utils

from lab.store.errors import StoreError as StoreError  # lab/report/compare.py imports it here
from lab.store.errors import StoreMissing, StoreUnavailable, format_bytes, free_bytes
from lab.store.location import connect_read_only, read_only_reason, remove_files
from lab.store.schema import MIGRATIONS, applied_migrations, migrate
from lab.store.writing import StoreWriting

MIN_FREE_BYTES = 16 * 1024 * 1024  # room `lab run` wants next to the database before it starts


def lab_home() -> Path:
    home = os.environ.get("LAB_HOME")
    return Path(home) if home else Path.home() / ".local" / "share" / "replica-chaos-lab"


def default_db_path() -> Path:
    """``$LAB_HOME/results.db``; LAB_HOME defaults to ``~/.local/share/replica-chaos-lab``."""
    return lab_home() / "results.db"


class Store(StoreWriting):
    """The results database. Opening it applies the missing migrations; a file that is not a
    database, a corrupt one, or one that cannot be created or migrated (a full disk, no
    permission, a read-only location) raises ``StoreUnavailable``; a create that fails leaves
    no file behind.

    Only the database file is ever created, never a directory, except ``$LAB_HOME`` for the
    default path (a mistyped ``--db`` is refused). ``write=False`` (``lab runs``, ``lab show``,
    ``lab compare``, ``lab report``): a missing file raises ``StoreMissing`` and nothing is
    created; a database in a read-only location is opened read-only (``read_only``)."""

    def __init__(self, path: str | Path | None = None, *, write: bool = True) -> None:
        self.path = Path(path) if path is not None else default_db_path()
        self.read_only = False
        conn: sqlite3.Connection | None = None
        memory = str(self.path) == ":memory:"
        existed = memory or self.path.exists()
        try:
            if not memory:
                self.read_only = self._prepare(existed, write)
            if self.read_only:
                conn = connect_read_only(self.path)
            else:
                conn = sqlite3.connect(str(self.path), timeout=30.0)
            conn.execute("pragma busy_timeout = 30000")
            if not memory and not self.read_only:
                conn.execute("pragma journal_mode = wal")
                conn.execute("pragma synchronous = normal")
            conn.execute("pragma foreign_keys = on")
            self.db = sqlite_utils.Database(conn)
            if self.read_only:
                missing = [m.version for m in MIGRATIONS
                           if m.version not in set(applied_migrations(self.db))]  # fmt: skip
                if missing:
                    raise StoreUnavailable(
                        self.path, f"{read_only_reason(self.path)}, and it needs this lab's "
                        f"schema changes {', '.join(map(str, missing))}", "cannot be upgraded",
                    )  # fmt: skip
                self.migrated: list[int] = []
            else:
                self.migrated = migrate(self.db)
        except (sqlite3.Error, OSError, StoreUnavailable) as e:
            if conn is not None:
                conn.close()
            if not existed:  # a failed create leaves nothing behind
                remove_files(self.path)
            raise StoreUnavailable.of(self.path, e, writing=write) from e

    def _prepare(self, existed: bool, write: bool) -> bool:
        """Check the location before sqlite3 touches it; True: open it read-only."""
        parent = self.path.parent
        if not existed and not write:
            raise StoreMissing(self.path)
        if not parent.is_dir():
            if parent.exists():
                raise StoreUnavailable(self.path, f"{parent} is not a directory",
                                       "cannot be created")  # fmt: skip
            if self.path.resolve() != default_db_path().resolve():
                raise StoreUnavailable(
                    self.path, f"directory {parent} does not exist (the lab creates the "
                    "database file, never its directory: is the path mistyped?)",
                    "cannot be created",
                )  # fmt: skip
            parent.mkdir(parents=True, exist_ok=True)  # $LAB_HOME, the first time
        reason = read_only_reason(self.path)
        if reason is None:
            return False
        if write:
            raise StoreUnavailable(self.path, reason, "cannot be written")
        return True

    @classmethod
    def open_existing(cls, path: str | Path | None = None) -> Store | None:
        """The database when its file exists (None otherwise: nothing is created)."""
        p = Path(path) if path is not None else default_db_path()
        return cls(p) if p.exists() else None

    def check_room(self, need: int = MIN_FREE_BYTES) -> None:
        """Raise ``StoreUnavailable`` when the file system of the database has less than
        ``need`` bytes free: ``lab run`` checks this before any server starts."""
        if str(self.path) == ":memory:":
            return
        free = free_bytes(self.path)
        if free is not None and free < need:
            raise StoreUnavailable(
                self.path,
                f"only {format_bytes(free)} free on its file system; a run needs "
                f"{format_bytes(need)} at least",
                "cannot be written",
            )

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
