"""The end-of-run report: measurements and expectations, side by side for every cell.

Every number goes through ``lab.figures_format.format_value`` (the lab's one formatter: no
scientific notation, one duration format, thousands separators). What the figures mean:

- an outage still open at the end of the load is a lower bound: ``≥ 4.20 s (still down at
  end)``;
- visibility times carry their resolution (``± 10.0 ms``, the poll interval actually seen) and
  are a lower bound (``≥``) when a write never seen there could change them;
- figures that mean nothing for a workload or a topology are left out: stale reads and their
  visibility only for ``read_your_writes``, duplicate keys only for inserts that can collide
  (not the upserts of ``read_your_writes``), missing transactions not on Galera. The kinds and
  the topology come from the summary's ``cells[].workloads`` / ``topology`` when present;
  without them, a workload with eligible reads is taken for ``read_your_writes``;
- cell notes (what the reader must know: replication did not settle ...) are printed under the
  tables, in yellow.
"""


from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from lab.figures_format import figure_clause
from lab.judge.claims import claim_lines
from lab.report.metrics import METRIC_VIEWS
from lab.report.rows import Rows, _num, cell_info


def measurement_rows(summary: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(figure, one text per cell) for the measurements table: each checker's rows
    (``lab.report.rows``), in the order of ``lab.report.metrics.METRIC_VIEWS``."""
    cells = summary.get("cells", [])
    rows = Rows(len(cells))
    for view in METRIC_VIEWS:
        if view.all_rows is None:
            continue
        for ci, c in enumerate(cells):
            m = (c.get("measurements") or {}).get(view.name)
            if isinstance(m, dict):
                view.all_rows(rows, ci, m, cell_info(summary, c))
    return list(rows)


# --- expectations and report lines ---------------------------------------------------------


def expectation_text(e: dict[str, Any]) -> str:
    mark = {True: "[green]PASS[/]", False: "[red]FAIL[/]", None: "[yellow]UNKNOWN[/]"}[
        e.get("passed")
    ]
    return f"{mark} {escape(str(e.get('explanation', '')))}".strip()


def report_text(r: dict[str, Any]) -> str:
    """A ``report`` line's figure, formatted again from its value (a summary written before
    the formatter changed still shows the same format)."""
    value, unit = r.get("value"), r.get("unit")
    display = str(r.get("display", ""))
    metric = str(r.get("metric", ""))
    if _num(value) and isinstance(unit, str):
        lower = display.startswith(("at least", "≥"))
        return figure_clause(metric, float(value), unit, lower)  # type: ignore[arg-type]
    return f"{metric}: {display}"


def _label(c: dict[str, Any]) -> str:
    return escape(str(c.get("label") or f"cell {c['index']}"))


def render_summary(summary: dict[str, Any], console: Console) -> None:
    """Every figure (``lab show RUN --all``): expectations, report lines, the measurements
    table, notes. The compact summary is ``lab.report.summary_matrix``."""
    from lab.run.context import context_line

    cells = summary.get("cells", [])
    ctx = context_line(summary.get("context"), backend=summary.get("backend"),
                       topology=summary.get("topology"))
    console.print(f"[dim]{escape(ctx)}[/]")
    render_expectations(summary, console)
    render_reports(summary, console)
    rows = measurement_rows(summary)
    if rows:
        meas = Table(title="measurements")
        meas.add_column("figure")
        for c in cells:
            meas.add_column(_label(c), overflow="fold")
        for name, vals in rows:
            meas.add_row(escape(name), *(escape(v) for v in vals))
        console.print(meas)
    render_claims(summary, console)
    render_notes(summary, console)


def _title(summary: dict[str, Any]) -> str:
    return f"{summary['experiment']} — run {summary['run_id']} — {summary['status']}"


def render_expectations(summary: dict[str, Any], console: Console,
                        title: str | None = "") -> None:
    """The expectations table, one column per cell. ``title``: "" the run's (experiment, id,
    status), None "expectations"."""
    from lab.report.term_fit import block_lines, fitted_table

    cells = summary.get("cells", [])
    heading = _title(summary) if title == "" else (title or "expectations")
    texts: list[str] = []
    for c in cells:
        for e in c.get("expectations", []):
            if e["text"] not in texts:
                texts.append(e["text"])
    if not texts:
        return
    header = ["expect", *(str(c.get("label") or f"cell {c['index']}") for c in cells)]
    rows = []
    for t in texts:
        row = [t]
        for c in cells:
            e = next((x for x in c.get("expectations", []) if x["text"] == t), None)
            row.append("-" if e is None else plain_expectation(e))
        rows.append(row)
    exp = fitted_table(header, rows, console, title=escape(heading), colors=VERDICT_COLORS)
    if exp is not None:
        console.print(exp)
        return
    console.print(escape(heading), soft_wrap=True)  # too narrow for a table: one block a line
    for row in rows:
        for line in block_lines(row[0], list(zip(header[1:], row[1:], strict=True)),
                                console.width, indent="    "):
            console.print(escape(line), soft_wrap=True)


VERDICT_COLORS = {"PASS": "green", "FAIL": "red", "UNKNOWN": "yellow"}


def plain_expectation(e: dict[str, Any]) -> str:
    """``PASS <explanation>`` without markup (``expectation_text`` with it)."""
    mark = {True: "PASS", False: "FAIL", None: "UNKNOWN"}[e.get("passed")]
    return f"{mark} {e.get('explanation', '')}".strip()


def render_reports(summary: dict[str, Any], console: Console) -> None:
    """The file's ``report`` lines, one column per cell."""
    cells = summary.get("cells", [])
    rep_texts: list[str] = []
    for c in cells:
        for r in c.get("reports") or []:
            if r["text"] not in rep_texts:
                rep_texts.append(r["text"])
    if rep_texts:
        rep = Table(title="reports")
        rep.add_column("report")
        for c in cells:
            rep.add_column(_label(c), overflow="fold")
        for t in rep_texts:
            row = [escape(t)]
            for c in cells:
                r = next((x for x in c.get("reports") or [] if x["text"] == t), None)
                row.append(escape(report_text(r)) if r else "-")
            rep.add_row(*row)
        console.print(rep)


def render_claims(summary: dict[str, Any], console: Console) -> None:
    """The claims across cells (``expect X in a >= 1.3 × X in b``): both figures and ratio."""
    claims = claim_lines(summary)
    if claims:
        console.print("[bold]claims across cells[/]")
        for line in claims:
            console.print(escape(line))


def render_notes(summary: dict[str, Any], console: Console) -> None:
    """What the reader must know about a cell (its notes) and why a cell could not complete,
    under the tables, in yellow / red (the text alone without colours)."""
    cells = summary.get("cells", [])
    if summary.get("status") == "abandoned" and summary.get("message"):
        console.print(f"[red]{escape(str(summary['message']))}[/]")
    for c in cells:
        who = f"cell {c.get('index')}" + (f" ({c['label']})" if c.get("label") else "")
        for note in c.get("notes") or []:
            console.print(f"[bold yellow]note[/] [yellow]{escape(who)}: {escape(str(note))}[/]")
        if c.get("error"):
            console.print(f"[red]{escape(who)}: {escape(str(c['error']))}[/]")

