"""Writing a run to the results database: a run's life (created, finished, marked
``abandoned`` when its lab process is gone), its cells, its recorded history (operations in
batches, samples, faults) and its results (measurements, checks, expectations).
``StoreWriting`` is a part of ``lab.store.db.Store``."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lab.history import FaultWindow, Op, Sample
from lab.store.fallback import fallback_path
from lab.store.queries import StoreQueries
from lab.store.records import (
    CELL_STATUSES,
    OPS_PER_BATCH,
    RUN_STATUSES,
    _clean,
    _finite,
    _json,
    encode_ops,
    lab_version,
    new_run_id,
    now_iso,
)
from runners import runtime

if TYPE_CHECKING:
    from lab.judge.checkers.base import CheckResult
    from lab.judge.expectations import ExpectationOutcome


class StoreWriting(StoreQueries):
    """The writes of ``lab.store.db.Store`` (a writer reads too)."""

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

    def insert_operations(
        self, run_id: str, cell: int, ops: Sequence[Op], *, pause: Callable[[], None] | None = None
    ) -> int:
        """Store operations in one transaction, ``OPS_PER_BATCH`` per ``operation_batches`` row
        (writing the same batch again replaces it). Query them through the ``operations``
        view. ``pause``: called between pieces of the encoding (``encode_ops``), so that a long
        batch never holds the GIL for long (the recorder's writer, while clients run)."""
        n = len(ops)
        if not n:
            return 0
        rows = []
        for k in range(0, n, OPS_PER_BATCH):
            if k and pause is not None:
                pause()
            chunk = ops[k : k + OPS_PER_BATCH]
            rows.append((run_id, cell, chunk[0].index, chunk[-1].index, len(chunk),
                         encode_ops(chunk, pause)))  # fmt: skip
        with self.conn:
            self.conn.executemany(
                "insert or replace into operation_batches (run_id, cell, first_idx, last_idx, "
                "n, ops) values (?, ?, ?, ?, ?, ?)",
                rows,
            )
        return n

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
