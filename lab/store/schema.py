"""The schema of the results database and its changes: ``MIGRATIONS``, each a function applied
once, in version order, and recorded in the ``migrations`` table (``migrate``). The schema is
documented in docs/results.md."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sqlite_utils

from lab.history import Op
from lab.store.records import _OPS_COLUMNS, OPS_PER_BATCH, decode_value, encode_ops, now_iso


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
