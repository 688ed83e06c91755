"""The SQL of docs/results.md ("Example queries") runs against the lab's real schema, and the
window queries added for issue 24 item 9 count what they say on a small hand-made run."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from lab.history import FaultWindow, Op
from lab.store.db import Store

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
RUN = "3f2a9c41d0b7"
NS = 1_000_000_000


def queries() -> list[str]:
    out = []
    for block in re.findall(r"```sql\n(.*?)```", DOC, re.S):
        text = "\n".join(line for line in block.splitlines() if not line.startswith("--"))
        out += [q.strip() for q in text.split(";") if q.strip()]
    return out


def query(name: str) -> str:
    """The query that follows the comment line containing ``name``."""
    block = DOC.split(name, 1)[1]
    body = "\n".join(line for line in block.splitlines()[1:] if not line.startswith("--"))
    return body.split(";", 1)[0]


def test_every_example_query_runs_on_the_schema(tmp_path: Path) -> None:
    qs = queries()
    assert len(qs) >= 7
    with Store(tmp_path / "r.db") as s:
        for q in qs:
            try:
                s.conn.execute(q).fetchall()
            except sqlite3.Error as e:  # pragma: no cover - the message names the query
                raise AssertionError(f"{e}: {q}") from None


def test_the_window_queries_count_what_they_say(tmp_path: Path) -> None:
    with Store(tmp_path / "r.db") as s:
        s.create_run("e", run_id=RUN)
        s.create_cell(RUN, 1)
        s.conn.execute("update cells set load_start_ns = ? where run_id = ?", [100 * NS, RUN])
        s.conn.commit()
        ops: list[Op] = []
        for sec in range(30):  # one ok write a second; errors at 12 s and 13 s
            t = (100 + sec) * NS
            ops.append(Op(type="invoke", f="write", process=0, time=t, workload="w", value=sec,
                          index=len(ops)))  # fmt: skip
            bad = sec in (12, 13)
            ops.append(Op(type="fail" if bad else "ok", f="write", process=0,
                          time=t + NS // 2, workload="w", value=sec,
                          error=2002 if bad else None, index=len(ops)))  # fmt: skip
        s.insert_operations(RUN, 1, ops)
        s.write_faults(RUN, 1, [
            FaultWindow(name="link_down", node="db1", start=(100 + 12) * NS,
                        end=(100 + 12) * NS + 1000, ok=True),
            FaultWindow(name="heal", node="db1", start=(100 + 14) * NS,
                        end=(100 + 14) * NS + 1000, ok=True),
        ])  # fmt: skip
        per_second = s.conn.execute(query("the throughput of")).fetchone()[0]
        errors = s.conn.execute(query("and during a named fault")).fetchone()[0]
    assert per_second == 0.8  # 10 s .. 20 s: 8 ok of 10
    assert errors == 2
