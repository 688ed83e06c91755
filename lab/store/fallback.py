"""The fallback file: what a run could not write to the results database (the disk filled
mid-run) goes to JSON lines next to it (docs/results.md, "When the results database fails")."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from lab.history import FaultWindow, Op, Sample
from lab.store.records import _clean, encode_ops


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
    # "\n" only: a record may hold U+2028, U+2029 or U+0085 unescaped (orjson writes them as
    # they are), which str.splitlines() would also take for line ends
    for line in Path(path).read_text(encoding="utf-8").split("\n"):
        if not line:
            continue
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
