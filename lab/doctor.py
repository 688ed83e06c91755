"""`lab doctor`: every component the lab can drive, where it is on this machine, its version
and status, and for a missing one how to get it. A table on a terminal; one plain line per
component otherwise (piped or in a log, a table would wrap into a column)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from runners.components import Found, survey


def doctor_rows() -> list[Found]:
    return survey()


def note(f: Found) -> str:
    """What the component is for (found), or how to get it (missing): one line."""
    if f.ok:
        return f.spec.purpose
    return ("(optional) " if not f.spec.needed_by_default else "") + f.spec.how_to_get


def plain_lines(found: list[Found]) -> list[str]:
    """``name  status  version  path  note``, aligned, one line each, never wrapped."""
    rows = [(f.name, f.status, f.version or "-", f.path or "-", note(f)) for f in found]
    widths = [max((len(r[i]) for r in rows), default=0) for i in range(4)]
    return ["  ".join([*(c.ljust(w) for c, w in zip(r[:4], widths, strict=True)), r[4]])
            for r in rows]


def render(found: list[Found], console: Console) -> None:
    if not console.is_terminal:
        for line in plain_lines(found):
            console.print(Text(line), soft_wrap=True)
        return
    table = Table(title="replica-chaos-lab components", show_lines=False)
    for col in ("component", "status", "version", "path", "used for / how to get"):
        table.add_column(col, overflow="fold")
    for f in found:
        style = {"ok": "green", "missing": "red"}.get(f.status, "yellow")
        table.add_row(f.name, f"[{style}]{f.status}[/]", f.version or "-", f.path or "-", note(f))
    console.print(table)


def exit_status(found: list[Found]) -> int:
    """1 only when a component that the default experiments need is missing."""
    return 1 if any(not f.ok and f.spec.needed_by_default for f in found) else 0
