"""Reading the results database: runs (by id or a unique prefix), cells, the recorded history
(operations, samples, faults), results (measurements, checks, expectations) and a run's JSON
summary (``summary``, rebuilt from the tables when it was not stored). ``StoreQueries`` is a
part of ``lab.store.db.Store``."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import sqlite_utils

from lab.history import FaultWindow, Op, Sample
from lab.store.errors import AmbiguousRun, RunNotFound
from lab.store.records import decode_ops


class StoreQueries:
    """The reads of ``lab.store.db.Store``."""

    path: Path
    db: sqlite_utils.Database

    @property
    def conn(self) -> sqlite3.Connection:
        return self.db.conn

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

    def cells(self, run_id: str) -> list[dict[str, Any]]:
        out = []
        for r in self.db.query("select * from cells where run_id = ? order by idx", [run_id]):
            r = dict(r)
            r["sweep"] = json.loads(r["sweep"]) if r["sweep"] else {}
            out.append(r)
        return out

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
