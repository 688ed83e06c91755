"""Drawing ``lab compare``: a rich table for the terminal, a Markdown table to paste into a
ticket, JSON. The same rows in all three (``lab.report.compare``); numbers through
``lab.figures_format.format_value``.

Runs side by side: one column per cell, then ``× first`` (its ratio to the first) after each
other one. Variants: one line per figure and group — n, median, min–max, the 95 % interval of
the mean, the ratio of medians to the base — so that the table keeps its width whatever the
number of groups.
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape

from lab.figures_format import format_figure
from lab.report.compare import RunComparison, VariantComparison, VariantRow, ratio_text
from lab.report.stats import Spread
from lab.report.term_fit import block_lines, fitted_table


def _fig(value: float | None, row: VariantRow, lower: bool = False) -> str:
    if value is None or row.unit is None:
        return "unknown"
    # the bound's label ("still down at end") is said once, on the median
    return format_figure(value, row.unit, lower, row.figure if lower else "")


def _short(value: float | None, row: VariantRow, lower: bool) -> str:
    text = _fig(value, row)
    return f"≥ {text}" if lower and value is not None else text


def spread_texts(row: VariantRow, sp: Spread) -> dict[str, str]:
    """n, median, min–max, CI texts of one group's figure."""
    n = f"{sp.n}" if sp.n == sp.of else f"{sp.n} of {sp.of}"
    if sp.n == 0:
        return {"n": n, "median": "unknown", "min–max": "–", "ci": "n/a (no value)"}
    lo_hi = f"{_short(sp.min, row, sp.lower_bound)}–{_short(sp.max, row, sp.lower_bound)}"
    if sp.ci is not None:
        ci = f"{_fig(sp.ci[0], row)}–{_fig(sp.ci[1], row)}"
    else:
        ci = "n/a" + (" (lower bounds)" if sp.lower_bound else " (1 repeat)" if sp.n == 1 else "")
    return {"n": n, "median": _fig(sp.median, row, sp.lower_bound),
            "min–max": lo_hi if sp.n > 1 else "–", "ci": ci}


# --- runs ---------------------------------------------------------------------------------------


def runs_table_rows(cmp: RunComparison) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the runs table."""
    header = ["figure"]
    for i, c in enumerate(cmp.columns):
        header.append(c.title)
        if i:
            header.append(f"× {cmp.columns[0].run_id[:8]}")
    rows = []
    for r in cmp.rows:
        line = [r.figure]
        for i, v in enumerate(r.values):
            line.append(v.text(r.figure))
            if i:
                line.append(ratio_text(r.ratios[i]))
        rows.append(line)
    return header, rows


def render_warnings(warnings: list[str], console: Console) -> None:
    for w in warnings:
        console.print(f"[bold yellow]warning:[/] [yellow]{escape(w)}[/]")


def render_runs(cmp: RunComparison, console: Console) -> None:
    """The runs side by side; when no table fits the terminal without breaking a figure
    (``lab.report.term_fit``), one block per figure: each cell's value and ratio."""
    header, rows = runs_table_rows(cmp)
    title = "compare: ratios against the first run" + (
        f"; series over the last {cmp.last:g} s of the load" if cmp.last is not None else "")
    render_warnings(cmp.warnings, console)
    t = fitted_table(header, rows, console, ["left"] + ["right"] * (len(header) - 1),
                     title=escape(title), box=box.SIMPLE_HEAD, pad_edge=False)
    if t is not None:
        console.print(t)
        return
    console.print(escape(title), soft_wrap=True)
    for r, line in zip(cmp.rows, rows, strict=True):
        console.print(escape(line[0]), soft_wrap=True)
        for i, (c, v) in enumerate(zip(cmp.columns, r.values, strict=True)):
            items = [("", v.text(r.figure))]
            if i:
                items.append(("", f"({ratio_text(r.ratios[i])} against the first)"))
            for text in block_lines(f"  {c.title}:", items, console.width, indent="    "):
                console.print(escape(text), soft_wrap=True)


# --- variants -----------------------------------------------------------------------------------

VARIANT_HEADER = ["figure", "group", "n", "median", "min–max", "95% CI (mean)", "× base"]


def variants_table_rows(cmp: VariantComparison) -> list[list[str]]:
    out = []
    for r in cmp.rows:
        for gi, (g, gf) in enumerate(zip(cmp.groups, r.groups, strict=True)):
            t = spread_texts(r, gf.spread)
            is_base = g.base is not None and cmp.groups[g.base] is g
            rt = "base" if is_base else ratio_text(gf.ratio)
            out.append([r.figure if gi == 0 else "", g.label, t["n"], t["median"], t["min–max"],
                        t["ci"], rt])  # fmt: skip
    return out


def render_variants(cmp: VariantComparison, console: Console) -> None:
    title = (f"{cmp.experiment} — run {cmp.run_id}: medians over repeats; ratio of medians "
             "against the base variant")
    if cmp.last is not None:
        title += f"; series over the last {cmp.last:g} s of the load"
    rows = variants_table_rows(cmp)
    sections = [k for k, line in enumerate(rows) if line[0] and k]
    t = fitted_table(VARIANT_HEADER, rows, console, ["left"] * 2 + ["right"] * 5, sections,
                     title=escape(title), box=box.SIMPLE_HEAD, pad_edge=False)
    if t is not None:
        console.print(t)
    else:  # one block per figure and group, never a figure broken
        console.print(escape(title), soft_wrap=True)
        for line in rows:
            if line[0]:
                console.print(escape(line[0]), soft_wrap=True)
            pairs = list(zip(VARIANT_HEADER[2:], line[2:], strict=True))
            for text in block_lines("  " + line[1], pairs, console.width, indent="    "):
                console.print(escape(text), soft_wrap=True)
    console.print(f"[dim]interval: {escape(cmp.ci_method)}; n/a with one repeat[/]")
    if cmp.claims:
        console.print("[bold]claims across cells[/] [dim](the run's, as judged then)[/]")
        for c in cmp.claims:
            console.print(escape(c), soft_wrap=True)


# --- Markdown -----------------------------------------------------------------------------------


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(_md_cell(h) for h in header) + " |",
             "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(_md_cell(x) for x in row) + " |" for row in rows]
    return "\n".join(lines)


def runs_markdown(cmp: RunComparison) -> str:
    header, rows = runs_table_rows(cmp)
    note = "Ratios against the first run"
    if cmp.last is not None:
        note += f"; `last {cmp.last:g}s`: the last {cmp.last:g} s of the load"
    warn = "".join(f"**Warning:** {_md_cell(w)}.\n\n" for w in cmp.warnings)
    return warn + markdown_table(header, rows) + f"\n\n{note}.\n"


def variants_markdown(cmp: VariantComparison) -> str:
    note = (f"{cmp.experiment}, run `{cmp.run_id}`: medians over repeats; × base: ratio of "
            f"medians against the base variant; interval: {cmp.ci_method}")
    if cmp.last is not None:
        note += f"; `last {cmp.last:g}s`: the last {cmp.last:g} s of the load"
    claims = "".join(f"- {_md_cell(c)}\n" for c in cmp.claims)
    if claims:
        claims = "\nClaims across cells (the run's, as judged then):\n\n" + claims
    return (markdown_table(VARIANT_HEADER, variants_table_rows(cmp)) + f"\n\n{note}.\n"
            + claims)


def to_json(cmp: RunComparison | VariantComparison) -> dict[str, Any]:
    return cmp.to_json()
