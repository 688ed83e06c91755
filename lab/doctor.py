"""`lab doctor`: every component the lab can drive, where it is, its version and status."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from runners.components import Found, survey


def doctor_rows() -> list[Found]:
    return survey()


def render(found: list[Found], console: Console) -> None:
    table = Table(title="replica-chaos-lab components", show_lines=False)
    for col in ("component", "status", "version", "path", "used for / how to get"):
        table.add_column(col, overflow="fold")
    for f in found:
        style = {"ok": "green", "missing": "red"}.get(f.status, "yellow")
        note = f.spec.purpose if f.ok else f.spec.how_to_get
        if f.ok and not f.spec.exercised_here:
            note += " — supported, never run against the real binary on this machine kind"
        if not f.ok and not f.spec.needed_by_default:
            note = "(optional) " + note
        table.add_row(f.name, f"[{style}]{f.status}[/]", f.version or "-", f.path or "-", note)
    console.print(table)


def exit_status(found: list[Found]) -> int:
    """1 only when a component that the default experiments need is missing."""
    return 1 if any(not f.ok and f.spec.needed_by_default for f in found) else 0
