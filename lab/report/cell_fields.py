"""Reading a cell's summary (the JSON dict of its measurements) defensively: a number that is
one, a dict that is one, a checker's result and its subjects. Shared by the matrix, its
findings and its faults timeline."""

from __future__ import annotations

from typing import Any, TypeGuard


def _num(v: Any) -> TypeGuard[int | float]:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _checker(cell: dict[str, Any], name: str) -> dict[str, Any] | None:
    m = (cell.get("measurements") or {}).get(name)
    return m if isinstance(m, dict) else None


def _subjects(cell: dict[str, Any], checker: str) -> dict[str, dict[str, Any]]:
    s = _dict(_dict(_checker(cell, checker)).get("subjects"))
    return {k: v for k, v in s.items() if isinstance(v, dict)}
