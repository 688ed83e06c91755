"""Results in SQLite (through sqlite-utils): runs, cells, operations, faults, samples,
measurements, expectations. The schema is documented in docs/results.md.

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

import datetime as dt
import errno
import json
import math
import os
import shutil
import socket
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import sqlite_utils

from lab.history import FaultWindow, Op, Sample
from lab.store.location import connect_read_only, read_only_reason, remove_files
from runners import runtime

if TYPE_CHECKING:
    from lab.judge.checkers.base import CheckResult
    from lab.judge.expectations import ExpectationOutcome

RUN_STATUSES = ("running", "passed", "failed", "interrupted", "error", "abandoned")
CELL_STATUSES = ("running", "passed", "failed", "interrupted", "error", "skipped", "abandoned")
MIN_FREE_BYTES = 16 * 1024 * 1024  # room `lab run` wants next to the database before it starts
AMBIGUOUS_SHOWN = 20  # matches an ambiguous run id lists


def lab_home() -> Path:
    home = os.environ.get("LAB_HOME")
    return Path(home) if home else Path.home() / ".local" / "share" / "replica-chaos-lab"


def default_db_path() -> Path:
    """``$LAB_HOME/results.db``; LAB_HOME defaults to ``~/.local/share/replica-chaos-lab``."""
    return lab_home() / "results.db"


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


# --- the fallback file: what could not be written to the database ---------------------------


def fallback_path(db_path: str | Path, run_id: str) -> Path:
    """``<db>.<run id>.fallback.jsonl`` next to the database: what a run could not write there
    (docs/results.md, "When the results database fails")."""
    p = Path(db_path)
    return p.with_name(f"{p.name}.{run_id}.fallback.jsonl")


def append_fallback(path: str | Path, records: Iterable[Mapping[str, Any] | str]) -> None:
    """Append JSON lines (a mapping is encoded, a string is written as it is) and flush them
    to the disk: an ``OSError`` here means they are not there."""
    with open(path, "a", encoding="utf-8") as f:
        for r in records:
            f.write((r if isinstance(r, str) else json.dumps(_clean(r), default=str)) + "\n")
        f.flush()
        os.fsync(f.fileno())


def read_fallback(path: str | Path) -> list[dict[str, Any]]:
    """The records of a fallback file (a torn last line, from a kill, is left out)."""
    out: list[dict[str, Any]] = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def fallback_ops_record(run_id: str, cell: int, ops: Sequence[Op]) -> str:
    """One fallback line holding operations, in the ``operation_batches.ops`` format."""
    head = json.dumps({"kind": "operations", "run_id": run_id, "cell": cell})
    return head[:-1] + ', "ops": ' + encode_ops(ops) + "}"


def fallback_samples_record(run_id: str, cell: int, samples: Sequence[Sample]) -> dict[str, Any]:
    return {"kind": "samples", "run_id": run_id, "cell": cell,
            "samples": [[s.series, s.subject, s.time, s.values] for s in samples]}  # fmt: skip


def fallback_faults_record(run_id: str, cell: int, faults: Iterable[FaultWindow]) -> dict[str, Any]:
    return {"kind": "faults", "run_id": run_id, "cell": cell,
            "faults": [{"name": f.name, "node": f.node, "start_ns": f.start, "end_ns": f.end,
                        "ok": f.ok, "detail": f.detail, "error_msg": f.error_msg}
                       for f in faults]}  # fmt: skip


# --- value encoding -----------------------------------------------------------------------


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
_OP_FIELDS = attrgetter(
    "index", "type", "f", "process", "time", "workload", "endpoint", "node", "key", "value",
    "error", "error_msg",
)  # fmt: skip


def encode_ops(ops: Sequence[Op]) -> str:
    """A batch of operations as one JSON array of arrays ``[idx, type, f, process, time_ns,
    workload, endpoint, node, key, value, error, error_msg]`` (C-speed: this runs while the
    clients run)."""
    rows = list(map(_OP_FIELDS, ops))
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


# --- migrations ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    apply: Callable[[sqlite_utils.Database], None]


MIGRATIONS: list[Migration] = []


def migration(
    version: int, name: str
) -> Callable[[Callable[[sqlite_utils.Database], None]], Callable[[sqlite_utils.Database], None]]:
    def register(
        fn: Callable[[sqlite_utils.Database], None],
    ) -> Callable[[sqlite_utils.Database], None]:
        if any(m.version == version for m in MIGRATIONS):
            raise ValueError(f"two migrations with version {version}")
        MIGRATIONS.append(Migration(version, name, fn))
        MIGRATIONS.sort(key=lambda m: m.version)
        return fn

    return register


@migration(1, "initial schema")
def _m1_initial(db: sqlite_utils.Database) -> None:
    db.table("runs").create(
        {
            "id": str, "experiment": str, "source": str, "started_at": str, "ended_at": str,
            "status": str, "exit_code": int, "message": str, "summary": str, "host": str,
            "lab_version": str,
        },
        pk="id",
        not_null={"experiment", "started_at", "status"},
    )  # fmt: skip
    db.table("cells").create(
        {
            "run_id": str, "idx": int, "label": str, "variant": str, "sweep": str,
            "repeat": int, "status": str, "started_at": str, "ended_at": str,
            "load_start_ns": int, "load_end_ns": int,
        },
        pk=("run_id", "idx"),
        foreign_keys=[("run_id", "runs", "id")],
    )  # fmt: skip
    db.table("operations").create(
        {
            "run_id": str, "cell": int, "idx": int, "type": str, "f": str, "process": int,
            "time_ns": int, "workload": str, "endpoint": str, "node": str, "key": int,
            "value": str, "error": int, "error_msg": str,
        },
        pk=("run_id", "cell", "idx"),
    )  # fmt: skip
    db.table("faults").create(
        {
            "id": int, "run_id": str, "cell": int, "name": str, "node": str, "start_ns": int,
            "end_ns": int, "ok": int, "detail": str, "error_msg": str,
        },
        pk="id",
    )  # fmt: skip
    db.table("samples").create(
        {"id": int, "run_id": str, "cell": int, "series": str, "subject": str, "time_ns": int,
         "values": str},
        pk="id",
    )  # fmt: skip
    db.table("measurements").create(
        {"id": int, "run_id": str, "cell": int, "checker": str, "subject": str, "name": str,
         "value": float, "json": str},
        pk="id",
    )  # fmt: skip
    db.table("checks").create(
        {"run_id": str, "cell": int, "checker": str, "valid": int, "details": str},
        pk=("run_id", "cell", "checker"),
    )  # fmt: skip
    db.table("expectations").create(
        {
            "id": int, "run_id": str, "cell": int, "position": int, "text": str, "line": int,
            "metric": str, "passed": int, "measured": float, "unit": str, "lower_bound": int,
            "explanation": str,
        },
        pk="id",
    )  # fmt: skip
    db.table("runs").create_index(["started_at"])
    db.table("runs").create_index(["experiment", "started_at"])
    db.table("faults").create_index(["run_id", "cell", "start_ns"])
    db.table("samples").create_index(["run_id", "cell", "series", "subject", "time_ns"])
    db.table("measurements").create_index(["run_id", "cell", "checker", "subject"])
    db.table("expectations").create_index(["run_id", "cell", "position"])


@migration(2, "full checker metrics in checks; cell error message")
def _m2_metrics_and_errors(db: sqlite_utils.Database) -> None:
    db.table("checks").add_column("metrics", str)
    db.table("cells").add_column("error", str)


@migration(3, "operations as a WITHOUT ROWID table: one b-tree, cheaper inserts")
def _m3_operations_without_rowid(db: sqlite_utils.Database) -> None:
    db.execute("drop table if exists operations_new")  # left by an interrupted attempt
    db.execute(
        "create table operations_new (run_id text, cell integer, idx integer, type text, "
        "f text, process integer, time_ns integer, workload text, endpoint text, node text, "
        "key integer, value text, error integer, error_msg text, "
        "primary key (run_id, cell, idx)) without rowid"
    )
    db.execute(f"insert into operations_new ({_OPS_COLUMNS}) select {_OPS_COLUMNS} from operations")
    db.execute("drop table operations")
    db.execute("alter table operations_new rename to operations")


@migration(4, "operations stored in batches (one JSON row per batch); operations is a view")
def _m4_operation_batches(db: sqlite_utils.Database) -> None:
    db.execute(
        "create table operation_batches (run_id text not null, cell integer not null, "
        "first_idx integer not null, last_idx integer not null, n integer not null, "
        "ops text not null, primary key (run_id, cell, first_idx)) without rowid"
    )
    # move what the old table holds (a database from before this migration)
    cur = db.execute(
        f"select {_OPS_COLUMNS} from operations order by run_id, cell, idx"
    )  # fmt: skip
    batch: list[Op] = []
    key: tuple[str, int] | None = None

    def flush() -> None:
        if batch and key is not None:
            db.execute(
                "insert or replace into operation_batches values (?, ?, ?, ?, ?, ?)",
                [key[0], key[1], batch[0].index, batch[-1].index, len(batch), encode_ops(batch)],
            )
        batch.clear()

    for rid, cell, i, t, f, p, tm, w, ep, n, k, v, e, em in cur.fetchall():
        if key != (rid, cell) or len(batch) >= OPS_PER_BATCH:
            flush()
            key = (rid, cell)
        batch.append(Op(t, f, p, tm, w or "", ep or "", n, k, decode_value(v), e, em, i))
    flush()
    db.execute("drop table operations")
    db.execute(_OPERATIONS_VIEW)


@migration(5, "runs.owner_pid, runs.owner_start: the lab process that runs it (abandoned runs)")
def _m5_run_owner(db: sqlite_utils.Database) -> None:
    db.table("runs").add_column("owner_pid", int)
    db.table("runs").add_column("owner_start", int)


@migration(6, "runs.backend, runs.topology, runs.context: the run's identity (back-end, "
              "topology, engine, versions, effective config)")
def _m6_run_identity(db: sqlite_utils.Database) -> None:
    for col in ("backend", "topology", "context"):
        db.table("runs").add_column(col, str)
    # runs stored before: the topology is in their summary; the back-end was not recorded
    db.execute(
        "update runs set topology = json_extract(summary, '$.topology') "
        "where summary is not null and json_valid(summary)"
    )


_OPERATIONS_VIEW = """
create view operations as
select b.run_id as run_id, b.cell as cell,
       j.value ->> 0 as idx, j.value ->> 1 as type, j.value ->> 2 as f,
       j.value ->> 3 as process, j.value ->> 4 as time_ns, j.value ->> 5 as workload,
       j.value ->> 6 as endpoint, j.value ->> 7 as node, j.value ->> 8 as key,
       case when json_type(j.value, '$[9]') = 'null' then null else j.value -> 9 end as value,
       j.value ->> 10 as error, j.value ->> 11 as error_msg
from operation_batches b, json_each(b.ops) j
"""


def applied_migrations(db: sqlite_utils.Database) -> list[int]:
    if not db.table("migrations").exists():
        return []
    return [r["version"] for r in db.query("select version from migrations order by version")]


def migrate(db: sqlite_utils.Database) -> list[int]:
    """Apply every migration not applied yet; returns the versions applied now."""
    if not db.table("migrations").exists():
        db.table("migrations").create(
            {"version": int, "name": str, "applied_at": str}, pk="version", if_not_exists=True
        )
    done = set(applied_migrations(db))
    applied: list[int] = []
    for m in MIGRATIONS:
        if m.version in done:
            continue
        with db.conn:
            m.apply(db)
            db.table("migrations").insert(
                {"version": m.version, "name": m.name, "applied_at": now_iso()}
            )
        applied.append(m.version)
    return applied


# --- the store ----------------------------------------------------------------------------


class Store:
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

    @property
    def conn(self) -> sqlite3.Connection:
        return self.db.conn

    # --- runs ---------------------------------------------------------------------------

    def create_run(
        self,
        experiment: str,
        source: str | None = None,
        *,
        run_id: str | None = None,
        host: str | None = None,
        version: str | None = None,
        started_at: str | None = None,
        owner: tuple[int, int | None] | None = None,
        context: Mapping[str, Any] | None = None,
    ) -> str:
        """``owner``: (pid, start time) of the lab process that runs it, this one by default:
        when it is gone and the run is still ``running``, ``mark_abandoned`` says so.
        ``context``: the run's identity (``lab.run.context.run_context``): its ``backend`` and
        ``topology`` are columns too."""
        rid = run_id or new_run_id()
        pid, start = owner or runtime.owner_identity()
        with self.conn:
            self.db.table("runs").insert({
                "id": rid, "experiment": experiment, "source": source,
                "started_at": started_at or now_iso(), "status": "running",
                "host": host or socket.gethostname(), "lab_version": version or lab_version(),
                "owner_pid": pid, "owner_start": start,
                "backend": (context or {}).get("backend"),
                "topology": (context or {}).get("topology"),
                "context": _json(_clean(dict(context))) if context else None,
            })  # fmt: skip
        return rid

    def finish_run(
        self,
        run_id: str,
        status: str,
        exit_code: int | None,
        *,
        summary: Mapping[str, Any] | None = None,
        message: str | None = None,
        ended_at: str | None = None,
    ) -> None:
        if status not in RUN_STATUSES:
            raise ValueError(f"unknown run status {status!r} (known: {', '.join(RUN_STATUSES)})")
        with self.conn:
            self.db.table("runs").update(run_id, {
                "status": status, "exit_code": exit_code, "message": message,
                "summary": _json(_clean(summary)), "ended_at": ended_at or now_iso(),
            })  # fmt: skip

    def abandoned_runs(self) -> list[tuple[str, int]]:
        """``(run id, owner pid)`` of every run still ``running`` whose lab process is gone:
        same host, and no process with its pid and start time. A run of another host, or one
        stored before owners were recorded, cannot be judged and stays ``running``."""
        host = socket.gethostname()
        rows = self.conn.execute(
            "select id, owner_pid, owner_start, host from runs "
            "where status = 'running' and owner_pid is not null"
        ).fetchall()
        return [
            (str(rid), int(pid))
            for rid, pid, start, h in rows
            if h == host and not runtime.alive(int(pid), None if start is None else int(start))
        ]

    def mark_abandoned(self) -> list[str]:
        """Mark ``abandoned`` every run whose lab process is gone without finishing it (and
        its cells still ``running``); what they recorded stays. Returns their ids."""
        marked: list[str] = []
        for rid, pid in self.abandoned_runs():
            msg = (
                f"abandoned: the lab process that ran it (pid {pid}) is gone without finishing "
                f"it (killed, e.g. kill -9, or the machine stopped); noticed at {now_iso()}; "
                "what it recorded is kept"
            )
            fb = fallback_path(self.path, rid)
            if str(self.path) != ":memory:" and fb.exists():
                msg += f"; what it could not store here is in {fb}"
            with self.conn:
                cur = self.conn.execute(
                    "update runs set status = 'abandoned', message = ? "
                    "where id = ? and status = 'running'",
                    [msg, rid],
                )
                self.conn.execute(
                    "update cells set status = 'abandoned' where run_id = ? and status = 'running'",
                    [rid],
                )
            if cur.rowcount:
                marked.append(rid)
        return marked

    def list_runs(
        self, limit: int | None = 50, experiment: str | None = None
    ) -> list[dict[str, Any]]:
        """Most recent first."""
        sql = "select * from runs"
        params: list[Any] = []
        if experiment:
            sql += " where experiment = ?"
            params.append(experiment)
        sql += " order by started_at desc, rowid desc"
        if limit is not None:
            sql += " limit ?"
            params.append(limit)
        return [_run_row(r) for r in self.db.query(sql, params)]

    def resolve_run_id(self, ref: str) -> str:
        """A full id from an id or a unique prefix of one."""
        ref = ref.strip()
        if not ref:
            raise RunNotFound(ref)
        exact = self.conn.execute("select id from runs where id = ?", [ref]).fetchone()
        if exact:
            return str(exact[0])
        like = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        rows = self.conn.execute(
            "select id from runs where id like ? escape '\\' order by started_at desc", [like]
        ).fetchall()
        if not rows:
            raise RunNotFound(ref)
        if len(rows) > 1:
            raise AmbiguousRun(ref, [r[0] for r in rows])
        return str(rows[0][0])

    def get_run(self, ref: str) -> dict[str, Any]:
        rid = self.resolve_run_id(ref)
        row = next(self.db.query("select * from runs where id = ?", [rid]))
        return _run_row(row)

    # --- cells --------------------------------------------------------------------------

    def create_cell(
        self,
        run_id: str,
        index: int,
        label: str = "",
        *,
        variant: str | None = None,
        sweep: Mapping[str, str] | None = None,
        repeat: int = 1,
    ) -> None:
        with self.conn:
            self.db.table("cells").insert({
                "run_id": run_id, "idx": index, "label": label, "variant": variant,
                "sweep": _json(dict(sweep or {})), "repeat": repeat, "status": "running",
                "started_at": now_iso(),
            }, replace=True)  # fmt: skip

    def finish_cell(
        self,
        run_id: str,
        index: int,
        status: str,
        *,
        load_start_ns: int | None = None,
        load_end_ns: int | None = None,
        error: str | None = None,
    ) -> None:
        if status not in CELL_STATUSES:
            raise ValueError(f"unknown cell status {status!r}")
        with self.conn:
            self.db.table("cells").update((run_id, index), {
                "status": status, "ended_at": now_iso(), "load_start_ns": load_start_ns,
                "load_end_ns": load_end_ns, "error": error,
            })  # fmt: skip

    def cells(self, run_id: str) -> list[dict[str, Any]]:
        out = []
        for r in self.db.query("select * from cells where run_id = ? order by idx", [run_id]):
            r = dict(r)
            r["sweep"] = json.loads(r["sweep"]) if r["sweep"] else {}
            out.append(r)
        return out

    # --- history ------------------------------------------------------------------------

    def insert_operations(self, run_id: str, cell: int, ops: Sequence[Op]) -> int:
        """Store operations, ``OPS_PER_BATCH`` per ``operation_batches`` row (writing the same
        batch again replaces it). Query them through the ``operations`` view."""
        n = len(ops)
        if not n:
            return 0
        rows = []
        for k in range(0, n, OPS_PER_BATCH):
            chunk = ops[k : k + OPS_PER_BATCH]
            rows.append((run_id, cell, chunk[0].index, chunk[-1].index, len(chunk),
                         encode_ops(chunk)))  # fmt: skip
        with self.conn:
            self.conn.executemany(
                "insert or replace into operation_batches (run_id, cell, first_idx, last_idx, "
                "n, ops) values (?, ?, ?, ?, ?, ?)",
                rows,
            )
        return n

    def operations(self, run_id: str, cell: int) -> list[Op]:
        """The recorded history of a cell, in index order."""
        out: list[Op] = []
        for (text,) in self.conn.execute(
            "select ops from operation_batches where run_id = ? and cell = ? order by first_idx",
            [run_id, cell],
        ):
            out.extend(decode_ops(text))
        out.sort(key=lambda o: o.index)
        return out

    def insert_samples(self, run_id: str, cell: int, samples: Iterable[Sample]) -> int:
        rows = [(run_id, cell, s.series, s.subject, s.time, _json(_clean(s.values)))
                for s in samples]  # NaN (unreadable) is stored as null
        if rows:
            with self.conn:
                self.conn.executemany(
                    'insert into samples (run_id, cell, series, subject, time_ns, "values") '
                    "values (?, ?, ?, ?, ?, ?)",
                    rows,
                )
        return len(rows)

    def samples(self, run_id: str, cell: int, series: str | None = None) -> list[Sample]:
        sql = 'select series, subject, time_ns, "values" from samples where run_id = ? and cell = ?'
        params: list[Any] = [run_id, cell]
        if series is not None:
            sql += " and series = ?"
            params.append(series)
        sql += " order by time_ns, id"
        return [
            Sample(se, su, t, json.loads(v) if v else {})
            for se, su, t, v in self.conn.execute(sql, params)
        ]

    def write_faults(self, run_id: str, cell: int, faults: Iterable[FaultWindow]) -> int:
        rows = [
            {
                "run_id": run_id, "cell": cell, "name": f.name, "node": f.node,
                "start_ns": f.start, "end_ns": f.end,
                "ok": None if f.ok is None else int(f.ok),
                "detail": _json(f.detail), "error_msg": f.error_msg,
            }
            for f in faults
        ]  # fmt: skip
        with self.conn:
            self.conn.execute("delete from faults where run_id = ? and cell = ?", [run_id, cell])
            if rows:
                self.db.table("faults").insert_all(rows)
        return len(rows)

    def faults(self, run_id: str, cell: int) -> list[dict[str, Any]]:
        out = []
        for r in self.db.query(
            "select * from faults where run_id = ? and cell = ? order by start_ns, id",
            [run_id, cell],
        ):
            r = dict(r)
            r["detail"] = json.loads(r["detail"]) if r["detail"] else None
            out.append(r)
        return out

    def fault_timeline(self, run_id: str, cell: int) -> list[dict[str, Any]]:
        """The cell's faults as its summary lists them (``lab.run.summary.fault_timeline``): times
        in seconds since the start of the load (or since the first fault when the load never
        started)."""
        from lab.run.summary import fault_timeline

        faults = self.faults(run_id, cell)
        row = self.conn.execute(
            "select load_start_ns from cells where run_id = ? and idx = ?", [run_id, cell]
        ).fetchone()
        origin = row[0] if row and row[0] is not None else None
        if origin is None:
            origin = min((int(f["start_ns"]) for f in faults), default=0)
        windows = [
            FaultWindow(f["name"], f["node"], int(f["start_ns"]), f["end_ns"],
                        None if f["ok"] is None else bool(f["ok"]), f["detail"], f["error_msg"])
            for f in faults
        ]  # fmt: skip
        return fault_timeline(windows, int(origin))

    # --- results ------------------------------------------------------------------------

    def write_measurements(self, run_id: str, cell: int, results: Mapping[str, CheckResult]) -> int:
        """Every checker's metrics, flattened (``CheckResult.rows()``), replacing earlier ones
        of the same cell; plus each checker's verdict in ``checks``."""
        rows = []
        for name, res in results.items():
            for m in res.rows():
                rows.append((run_id, cell, name, m.subject, m.name, _finite(m.value),
                             _json(m.json)))  # fmt: skip
        with self.conn:
            self.conn.execute(
                "delete from measurements where run_id = ? and cell = ?", [run_id, cell]
            )
            self.conn.execute("delete from checks where run_id = ? and cell = ?", [run_id, cell])
            self.conn.executemany(
                "insert into measurements (run_id, cell, checker, subject, name, value, json) "
                "values (?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            self.conn.executemany(
                "insert into checks (run_id, cell, checker, valid, details, metrics) "
                "values (?, ?, ?, ?, ?, ?)",
                [
                    (run_id, cell, name, None if r.valid is None else int(r.valid), r.details,
                     _json(_clean(r.metrics)))
                    for name, r in results.items()
                ],
            )  # fmt: skip
        return len(rows)

    def measurements(
        self, run_id: str, cell: int | None = None, checker: str | None = None
    ) -> list[dict[str, Any]]:
        sql = "select * from measurements where run_id = ?"
        params: list[Any] = [run_id]
        if cell is not None:
            sql += " and cell = ?"
            params.append(cell)
        if checker is not None:
            sql += " and checker = ?"
            params.append(checker)
        sql += " order by cell, id"
        out = []
        for r in self.db.query(sql, params):
            r = dict(r)
            r["json"] = json.loads(r["json"]) if r["json"] is not None else None
            out.append(r)
        return out

    def checks(self, run_id: str, cell: int) -> list[dict[str, Any]]:
        """Each checker's verdict, details and full metrics (as ``CheckResult.metrics``)."""
        rows = self.db.query(
            "select checker, valid, details, metrics from checks where run_id = ? and cell = ? "
            "order by rowid",
            [run_id, cell],
        )
        return [
            {**r, "valid": None if r["valid"] is None else bool(r["valid"]),
             "metrics": json.loads(r["metrics"]) if r["metrics"] else {}}
            for r in rows
        ]  # fmt: skip

    def write_expectations(
        self,
        run_id: str,
        cell: int,
        outcomes: Sequence[ExpectationOutcome],
        lines: Sequence[int | None] | None = None,
    ) -> int:
        """``lines[i]``: the source line of the i-th expectation, when known."""
        rows = [
            (run_id, cell, i, o.text, lines[i] if lines and i < len(lines) else None, o.metric,
             None if o.passed is None else int(o.passed), _finite(o.measured), o.unit,
             int(o.lower_bound), o.explanation)
            for i, o in enumerate(outcomes)
        ]  # fmt: skip
        with self.conn:
            self.conn.execute(
                "delete from expectations where run_id = ? and cell = ?", [run_id, cell]
            )
            self.conn.executemany(
                "insert into expectations (run_id, cell, position, text, line, metric, passed, "
                "measured, unit, lower_bound, explanation) "
                "values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
        return len(rows)

    def expectations(self, run_id: str, cell: int | None = None) -> list[dict[str, Any]]:
        sql = "select * from expectations where run_id = ?"
        params: list[Any] = [run_id]
        if cell is not None:
            sql += " and cell = ?"
            params.append(cell)
        sql += " order by cell, position"
        out = []
        for r in self.db.query(sql, params):
            r = dict(r)
            r["passed"] = None if r["passed"] is None else bool(r["passed"])
            r["lower_bound"] = bool(r["lower_bound"])
            out.append(r)
        return out

    # --- the JSON summary ---------------------------------------------------------------

    def summary(self, ref: str) -> dict[str, Any]:
        """The run as the JSON document ``lab run --json`` prints (docs/results.md): the one
        stored by ``finish_run`` when there is one, else rebuilt from the tables (a run that
        was killed before it could finish), in the same format."""
        run = self.get_run(ref)
        stored = run.get("summary")
        if isinstance(stored, dict) and stored.get("cells") is not None:
            out = dict(stored)
            out.setdefault("run_id", run["id"])
            for k in (
                "status",
                "exit_code",
                "message",
                "started_at",
                "ended_at",
                "host",
                "lab_version",
            ):
                out.setdefault(k, run[k])
            for k in ("backend", "topology", "context"):  # the run's identity (migration 6)
                if out.get(k) is None:
                    out[k] = run.get(k)
            # a summary stored before cells carried their fault timeline: from the table
            out["cells"] = [
                c if not isinstance(c, dict) or "faults" in c or not isinstance(c.get("index"), int)
                else {**c, "faults": self.fault_timeline(run["id"], c["index"])}
                for c in stored["cells"]
            ]
            return out
        return self.build_summary(run["id"])

    def build_summary(self, run_id: str) -> dict[str, Any]:
        """The summary rebuilt from the tables."""
        run = self.get_run(run_id)
        rid = run["id"]
        cells = []
        for c in self.cells(rid):
            checks = self.checks(rid, c["idx"])
            exps = self.expectations(rid, c["idx"])
            ops = self.conn.execute(
                "select count(*) from operations where run_id = ? and cell = ? and "
                "type = 'invoke' and process >= 0",
                [rid, c["idx"]],
            ).fetchone()[0]
            cells.append({
                "index": c["idx"], "label": c["label"], "variant": c["variant"],
                "sweep": c["sweep"], "repeat": c["repeat"], "status": c["status"],
                "error": c.get("error"), "operations": ops,
                "expectations": [
                    {"text": e["text"], "passed": e["passed"], "measured": e["measured"],
                     "unit": e["unit"], "metric": e["metric"], "lower_bound": e["lower_bound"],
                     "explanation": e["explanation"]}
                    for e in exps
                ],
                "measurements": {ch["checker"]: ch["metrics"] for ch in checks},
                "faults": self.fault_timeline(rid, c["idx"]),
            })  # fmt: skip
        return {
            "run_id": rid,
            "experiment": run["experiment"],
            "source": run["source"],
            "status": run["status"],
            "exit_code": run["exit_code"],
            "message": run["message"],
            "started_at": run["started_at"],
            "ended_at": run["ended_at"],
            "host": run["host"],
            "lab_version": run["lab_version"],
            "backend": run.get("backend"),
            "topology": run.get("topology"),
            "context": run.get("context"),
            "cells": cells,
        }


def _run_row(r: Mapping[str, Any]) -> dict[str, Any]:
    d = dict(r)
    d["summary"] = json.loads(d["summary"]) if d.get("summary") else None
    d["context"] = json.loads(d["context"]) if d.get("context") else None
    return d
