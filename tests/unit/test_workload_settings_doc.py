"""docs/language.md's table of workload settings says, for each setting, the workloads it
applies to: the same as the language accepts (``dsl.build_base.WORKLOAD_STATEMENTS``), so a
reader who writes from the table never meets "does not apply" (nor misses a setting)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dsl.build_base import WORKLOAD_STATEMENTS

DOC = Path(__file__).resolve().parents[2] / "docs" / "language.md"
KINDS = set(WORKLOAD_STATEMENTS)
# the table's first cell -> the statements it documents
SETTINGS = {
    "target": ["target"], "write": ["write"], "read": ["read"], "clients": ["clients"],
    "threads": ["threads"], "tables": ["tables", "table_size"], "rate": ["rate"],
    "every": ["every"], "operation": ["operation"], "keys sequential": ["keys"],
    "duration": ["duration"], "rows": ["rows"], "operations": ["operations"],
    "timeout": ["timeout"], "start after": ["start_after"], "keys N": ["key_count"],
    "txn_length": ["txn_length"], "read_fraction": ["read_fraction"],
    "distribution": ["distribution"], "isolation": ["isolation"], "for update": ["for_update"],
}


def _rows() -> dict[str, set[str]]:
    text = DOC.read_text()
    start = text.index("| `target ENDPOINT, ...` |")
    rows: dict[str, set[str]] = {}
    for line in text[start:].splitlines():
        if not line.startswith("| `"):
            break
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        first, applies = cells[0].strip("`"), cells[2]
        key = next(k for k in sorted(SETTINGS, key=len, reverse=True) if first.startswith(k))
        rows[key] = _kinds(applies)
    return rows


def _kinds(applies: str) -> set[str]:
    if applies == "all":
        return set(KINDS)
    if applies.startswith("all but "):
        return KINDS - {k.strip() for k in applies[len("all but "):].split(",")}
    return {k.strip() for k in applies.split(",")}


def test_the_table_has_every_setting() -> None:
    assert set(_rows()) == set(SETTINGS)


@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_each_setting_applies_where_the_language_accepts_it(setting: str) -> None:
    want = {k for k, allowed in WORKLOAD_STATEMENTS.items()
            if all(s in allowed for s in SETTINGS[setting])}
    assert _rows()[setting] == want
