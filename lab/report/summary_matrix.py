"""The compact end-of-run summary: the faults timeline, then one matrix a DBA reads in five
seconds — one row per workload and one per node; columns for downtime, stale reads and
visibility, lost writes, errors, lag, throughput and latency — then the findings (split brain,
errant GTIDs, rows that differ, when there are any), the expectations, the ``report`` lines and
the cell notes. ``lab run`` and ``lab show RUN`` print it; ``lab show RUN
--all`` prints every figure (``lab.report.measurements.render_summary``).

The matrix is built as data (``build_matrix``: rows of formatted texts, testable) and drawn with
rich (``render_matrix_summary``). It keeps the report's rules (``lab.report.measurements``'s
docstring): every number through ``lab.figures_format.format_value``; an outage still open at the
end is ``≥ … (still down at end)``; visibility carries its resolution and is ``≥`` when a write
never seen could change it; stale reads only for ``read_your_writes``; a figure that applies but
could not be measured is ``unknown``; one that does not apply to the row is ``–``.

A node row shows what the workloads saw on that node (``w on n`` in the figures): counts and
throughput added up over the workloads, durations and percentages of the worst workload;
replication lag and replication errors are the node's own. Several cells (variants, sweeps,
repeats): one matrix still, each workload or node row followed by one line per cell, so that
the cells sit next to each other and the matrix fits an 80- or 120-column terminal whatever the
number of cells. No figure is broken across lines at any width (``lab.report.term_fit``).

The columns, which checkers name the workloads and nodes, and the findings' order come from
``lab.report.metrics``; the faults timeline is ``lab.report.timeline``, the findings' texts
``lab.report.findings``, the width fitting ``lab.report.term_fit``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

from lab.figures_format import format_count
from lab.report.cell_fields import _checker, _dict, _num, _subjects
from lab.report.measurements import (
    render_claims,
    render_expectations,
    render_notes,
    render_reports,
)
from lab.report.metrics import findings, matrix_columns, node_sources, workload_sources
from lab.report.rows import (
    RYW,
    STILL_DOWN,
    CellInfo,
    cell_info,
    fmt_count,
    fmt_duration,
    fmt_percent,
    fmt_rate,
    visibility_value,
)
from lab.report.term_fit import block_lines, fitted_table, wrap
from lab.report.timeline import render_timeline
from lab.run.context import context_line

NA = "–"  # the figure does not apply to this row
UNKNOWN = "unknown"
WRITE_KINDS = frozenset({"probe", "unique_writes", "read_your_writes", "unique_insert"})

COLUMNS: tuple[str, ...] = matrix_columns()  # lab.report.metrics
SYSBENCH_MARK = "†"
LEGEND_SYSBENCH = f"{SYSBENCH_MARK} sysbench: over its per-second p95 latency"
LEGEND_NODES = (
    "node rows: what the workloads saw on that node (counts and throughput added up, times "
    "and percentages of the worst workload; lost writes: acknowledged writes missing there at "
    "the end); lag and replication errors: the node's own, not the workloads' (its "
    "heartbeat's age behind the primary's, sampled every 200 ms)"
)


@dataclass(frozen=True)
class MatrixRow:
    """One line of the matrix: a workload or a node of one cell. ``values[column]`` is the
    text shown; a column missing from it does not apply (``–``)."""

    kind: Literal["workload", "node"]
    name: str
    cell: int  # 0-based position in the summary's cells
    values: dict[str, str]

    def text(self, column: str) -> str:
        return self.values.get(column, NA)


@dataclass
class Matrix:
    columns: list[str]  # the columns some row has a figure in, in COLUMNS order
    rows: list[MatrixRow]  # grouped: workloads, then nodes; within a name, cell by cell
    cells: list[str]  # cell labels
    legend: list[str] = field(default_factory=list)

    def row(self, name: str, cell: int = 0) -> MatrixRow:
        return next(r for r in self.rows if r.name == name and r.cell == cell)


# --- helpers over a cell's figures -----------------------------------------------------------




def _on(subjects: dict[str, dict[str, Any]], node: str) -> dict[str, dict[str, Any]]:
    """``{workload: figures}`` of the subjects ``w on node``."""
    out = {}
    for k, v in subjects.items():
        w, sep, n = k.partition(" on ")
        if sep and n == node:
            out[w] = v
    return out


def _natural(name: str) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def _is_node(name: str) -> bool:
    return "." not in name  # router.writer, router.reader are endpoints, not nodes


def workloads_of(cell: dict[str, Any], info: CellInfo) -> list[str]:
    """The cell's workloads: as declared (``cells[].workloads``), else as the figures name
    them, in order of first appearance."""
    names = list(info.kinds) if isinstance(cell.get("workloads"), dict) else []
    if names:
        return names
    for checker in workload_sources():
        for s in _subjects(cell, checker):
            if " on " not in s and s not in names:
                names.append(s)
    return names


def nodes_of(cell: dict[str, Any]) -> list[str]:
    """Nodes named by the figures (replication lag, facts, ``w on node``), in natural order."""
    found: set[str] = set()
    for checker in node_sources("own"):
        found.update(_subjects(cell, checker))
    for checker in node_sources("on"):
        for s in _subjects(cell, checker):
            _, sep, n = s.partition(" on ")
            if sep:
                found.add(n)
    return sorted((n for n in found if _is_node(n)), key=_natural)


# --- the texts of one figure -----------------------------------------------------------------


def downtime_text(figs: dict[str, Any], windows: bool = True) -> str:
    """The longest outage; ``≥ … (still down at end)`` when it was still open; the number of
    windows when there were several (and how many were stalls)."""
    if not _num(figs.get("longest")):
        return UNKNOWN
    text = fmt_duration(figs["longest"])
    if figs.get("longest_open_at_end") or figs.get("open_at_end"):
        # the longest may be a closed window while another is still open: either way the
        # workload's longest is only known to be at least this
        text = f"≥ {text} ({STILL_DOWN})"
    n = int(figs.get("count") or 0)
    stalls = int(figs.get("stalls") or 0)
    if windows and (n > 1 or stalls):
        extra = f"{format_count(n)} windows" if n > 1 else "1 window"
        if stalls:
            extra += f", {format_count(stalls)} a stall" if stalls == 1 else \
                f", {format_count(stalls)} stalls"
        text += f" ({extra})"
    return text


def stale_text(figs: list[dict[str, Any]]) -> str:
    """Stale reads over eligible reads, added up over ``figs``."""
    count = sum(int(f.get("count") or 0) for f in figs)
    eligible = sum(int(f.get("eligible_reads") or 0) for f in figs)
    if not eligible:
        return "no eligible reads" if all(_num(f.get("count")) for f in figs) else UNKNOWN
    return fmt_percent(count / eligible)


def _vis_stat(vis: dict[str, Any], stat: str) -> str:
    v = vis.get(stat)
    if not _num(v):
        return UNKNOWN
    return visibility_value(vis, stat, float(v))


def visibility_text(figs: dict[str, Any]) -> str:
    """``8.6 ms / 10.6 s ± 7.2 ms``: ack → visible at p50 / p99, with the resolution;
    writes never seen there are named."""
    vis = _dict(figs.get("visibility"))
    if not vis:
        return UNKNOWN
    text = f"{_vis_stat(vis, 'p50')} / {_vis_stat(vis, 'p99')}"
    if _num(vis.get("resolution")):
        text += f" ± {fmt_duration(vis['resolution'])}"
    unseen = int(vis.get("unseen") or 0)
    if unseen:
        text += f" ({format_count(unseen)} never seen)"
    return text


def errors_text(figs: list[dict[str, Any]]) -> str:
    if not figs or not all(_num(f.get("total")) for f in figs):
        return UNKNOWN
    total = sum(float(f["total"]) for f in figs)
    ops = sum(float(f.get("ops") or 0) for f in figs)
    text = fmt_count(total)
    if total and ops:
        text += f" ({fmt_percent(total / ops)})"
    return text


def latency_text(figs: dict[str, Any]) -> str:
    if not _num(figs.get("p50")) and not _num(figs.get("p99")):
        return UNKNOWN
    text = f"{fmt_duration(figs.get('p50'))} / {fmt_duration(figs.get('p99'))}"
    if figs.get("source") not in (None, "ops"):
        text += f" {SYSBENCH_MARK}"
    return text


def lag_text(figs: dict[str, Any], repl_errors: dict[str, Any] | None) -> str:
    unreadable = int(figs.get("unreadable") or 0)
    total = unreadable + int(figs.get("samples") or 0)
    unknown = f"{format_count(unreadable)} of {format_count(total)} samples unreadable"
    if _num(figs.get("max")):
        text = fmt_duration(figs["max"]) + (f" ({unknown})" if unreadable else "")
    elif figs.get("no_heartbeat"):  # it answered: up, but no beat ever reached it
        text = f"unknown ({NO_BEAT})" + (f"; {unknown}" if unreadable else "")
    else:
        text = f"unknown ({unknown})" if unreadable else "unknown (never read)"
    return text + _replication_stops(repl_errors)


NO_BEAT = "up, but the primary's heartbeat never reached it"


def _replication_stops(figs: dict[str, Any] | None) -> str:
    if not figs:
        return ""
    parts = []
    for th in ("sql", "io"):
        if figs.get(f"{th}_count"):
            parts.append(f"{th.upper()} stopped, error {figs.get(f'{th}_errno')}")
    if figs.get("io_reconnects"):
        errno = figs.get("io_reconnect_errno")
        why = f", error {errno}" if errno else ""
        parts.append(f"IO reconnecting at the end{why}" if figs.get("io_reconnecting")
                     else f"IO reconnected{why}")
    return ("; " + "; ".join(parts)) if parts else ""


# --- rows -------------------------------------------------------------------------------------


def workload_row(cell: dict[str, Any], w: str, info: CellInfo) -> dict[str, str]:
    """The matrix texts of workload ``w`` in ``cell``."""
    kind = info.kind(w)
    out: dict[str, str] = {}
    down = _checker(cell, "downtime")
    figs = _subjects(cell, "downtime").get(w) if down is not None else None
    if figs:
        out["downtime"] = downtime_text(figs)
    elif kind == "sysbench":
        out["downtime"] = NA  # its own client: the lab sees seconds (stalls), not operations
    elif down is not None:
        out["downtime"] = UNKNOWN
    elif cell.get("measurements"):
        out["downtime"] = UNKNOWN
    stale = _subjects(cell, "stale_reads").get(w)
    ryw = kind == RYW or (kind is None and stale is not None
                          and bool(stale.get("eligible_reads") or stale.get("count")))
    if ryw:
        out["stale reads"] = stale_text([stale]) if stale else UNKNOWN
        out["visible p50 / p99"] = visibility_text(stale) if stale else UNKNOWN
    lost = _checker(cell, "lost_writes")
    figs = _subjects(cell, "lost_writes").get(w)
    appends = _subjects(cell, "lost_appends").get(w)  # a list_append workload's
    if appends is not None:
        out["lost writes"] = (fmt_count(appends.get("count"))
                              if _num(appends.get("count")) else "unknown (no final state)")
    elif figs is not None:
        text = fmt_count(figs.get("count"))
        if figs.get("unchecked"):
            text += f" (+ {format_count(figs['unchecked'])} unchecked)"
        out["lost writes"] = text
    elif lost is not None and w in (lost.get("unchecked_workloads") or []):
        out["lost writes"] = "unknown (no final state)"
    elif (kind in WRITE_KINDS and w not in info.readers) or (
            kind is None and lost is None and cell.get("measurements")):
        out["lost writes"] = UNKNOWN
    errs = _subjects(cell, "errors").get(w)
    out["errors"] = errors_text([errs]) if errs else UNKNOWN
    tput = _subjects(cell, "throughput").get(w)
    out["throughput"] = fmt_rate(tput.get("mean")) if tput else UNKNOWN
    lat = _subjects(cell, "latency").get(w)
    out["latency p50 / p99"] = latency_text(lat) if lat else UNKNOWN
    return out


def _worst(figs: Iterable[dict[str, Any]], key: str) -> dict[str, Any] | None:
    known = [f for f in figs if _num(_dict(f).get(key))]
    return max(known, key=lambda f: float(f[key])) if known else None


def node_row(cell: dict[str, Any], n: str, info: CellInfo) -> dict[str, str]:
    """The matrix texts of node ``n``: what the workloads saw there, and its own lag."""
    out: dict[str, str] = {}
    down = _on(_subjects(cell, "downtime"), n)
    if down:
        worst = _worst(down.values(), "longest")
        text = downtime_text(worst, windows=False) if worst else UNKNOWN
        if worst and not text.startswith("≥") and any(
                f.get("longest_open_at_end") or f.get("open_at_end") for f in down.values()):
            text = f"≥ {text} ({STILL_DOWN})"  # another workload there was still down
        out["downtime"] = text
    stale = {w: f for w, f in _on(_subjects(cell, "stale_reads"), n).items()
             if info.kind(w) == RYW or (info.kind(w) is None
                                        and (f.get("eligible_reads") or f.get("count")))}
    if stale:
        out["stale reads"] = stale_text(list(stale.values()))
        with_vis = [f for f in stale.values() if _num(_dict(f.get("visibility")).get("p99"))]
        worst_vis = max(with_vis, key=lambda f: float(f["visibility"]["p99"])) \
            if with_vis else None
        out["visible p50 / p99"] = visibility_text(worst_vis) if worst_vis else UNKNOWN
    lost = _on(_subjects(cell, "lost_writes"), n)
    if lost:
        total = sum(int(f.get("count") or 0) for f in lost.values())
        text = format_count(total)
        if any(f.get("authoritative") for f in lost.values()):
            text += " (authority)"
        out["lost writes"] = text
    errs = _on(_subjects(cell, "errors"), n)
    if errs:
        out["errors"] = errors_text(list(errs.values()))
    lag = _subjects(cell, "replication_lag").get(n)
    repl = _subjects(cell, "replication_errors").get(n)
    if lag is not None:
        out["lag max"] = lag_text(lag, repl)
    elif repl and _replication_stops(repl):
        out["lag max"] = _replication_stops(repl)[2:]
    tput = _on(_subjects(cell, "throughput"), n)
    if tput:
        means = [f.get("mean") for f in tput.values()]
        known = [float(m) for m in means if _num(m)]
        out["throughput"] = fmt_rate(sum(known)) if len(known) == len(means) else UNKNOWN
    lat = _on(_subjects(cell, "latency"), n)
    if lat:
        p50 = _worst(lat.values(), "p50")
        p99 = _worst(lat.values(), "p99")
        if p50 is None and p99 is None:
            out["latency p50 / p99"] = UNKNOWN
        else:
            text = (f"{fmt_duration(p50.get('p50') if p50 else None)} / "
                    f"{fmt_duration(p99.get('p99') if p99 else None)}")
            if any(f.get("source") not in (None, "ops") for f in lat.values()):
                text += f" {SYSBENCH_MARK}"
            out["latency p50 / p99"] = text
    return out


def _label(c: dict[str, Any]) -> str:
    return str(c.get("label") or f"cell {c.get('index')}")


def build_matrix(summary: dict[str, Any]) -> Matrix:
    """The matrix of every cell: workload rows, then node rows; each name's rows cell by
    cell. Columns no row has a figure in are left out."""
    cells = [c for c in summary.get("cells", []) if isinstance(c, dict)]
    per_cell = [(ci, c, cell_info(summary, c)) for ci, c in enumerate(cells)]
    workloads: list[str] = []
    nodes: list[str] = []
    for _, c, info in per_cell:
        workloads += [w for w in workloads_of(c, info) if w not in workloads]
        nodes += [n for n in nodes_of(c) if n not in nodes]
    nodes.sort(key=_natural)
    rows: list[MatrixRow] = []
    for w in workloads:
        for ci, c, info in per_cell:
            if w in workloads_of(c, info):
                rows.append(MatrixRow("workload", w, ci, workload_row(c, w, info)))
    for n in nodes:
        for ci, c, info in per_cell:
            if n in nodes_of(c):
                values = node_row(c, n, info)
                if values:
                    rows.append(MatrixRow("node", n, ci, values))
    columns = [col for col in COLUMNS if any(r.text(col) != NA for r in rows)]
    legend = []
    if any(SYSBENCH_MARK in v for r in rows for v in r.values.values()):
        legend.append(LEGEND_SYSBENCH)
    if any(r.kind == "node" for r in rows):
        legend.append(LEGEND_NODES)
    return Matrix(columns, rows, [_label(c) for c in cells], legend)


def findings_lines(cell: dict[str, Any], info: CellInfo | None = None) -> list[str]:
    """The findings DBAs check by hand, when there is something to say: a split brain, errant
    GTIDs, rows that differ between nodes, the transactional findings with their transactions,
    missing transactions (``lab.report.findings``, in ``lab.report.metrics``'s order; ``lab show
    --all`` has every figure). ``info``: the cell's (its topology), from the cell alone when
    not given."""
    return findings(cell, info if info is not None else cell_info({}, cell))


def transaction_findings(cell: dict[str, Any]) -> list[str]:
    """Transactional anomalies, lost updates and wrong bank totals, each with the transactions
    of its smallest example (``lab show RUN --all`` and the JSON have every figure)."""
    return findings(cell, cell_info({}, cell), transactions=True)


def render_findings(summary: dict[str, Any], console: Console) -> None:
    cells = [c for c in summary.get("cells", []) if isinstance(c, dict)]
    for c in cells:
        for line in findings_lines(c, cell_info(summary, c)):
            prefix = f"{_label(c)}: " if len(cells) > 1 else ""
            console.print(escape(prefix + line))


# --- drawing ----------------------------------------------------------------------------------


def _title(summary: dict[str, Any]) -> str:
    return f"{summary.get('experiment')} — run {summary.get('run_id')} — {summary.get('status')}"


def render_context(summary: dict[str, Any], console: Console) -> None:
    """The run's identity under its title: back-end, topology, engine, router, versions
    (``lab.run.context``)."""
    text = context_line(summary.get("context"), backend=summary.get("backend"),
                        topology=summary.get("topology"))
    for line in wrap(text, console.width):
        console.print(f"[dim]{escape(line)}[/]", soft_wrap=True)


# the two halves of a matrix too wide for the terminal: what clients lost, what they got
SPLIT = (COLUMNS[:4], COLUMNS[4:])


def _texts(m: Matrix, columns: list[str]) -> tuple[list[str], list[list[str]], list[int]]:
    """(header, rows, sections) of the matrix over ``columns``: a rule between the workload
    rows and the node rows."""
    several = len(m.cells) > 1
    header = ["", *(["cell"] if several else []), *columns]
    rows: list[list[str]] = []
    sections: list[int] = []
    prev: tuple[str, str] | None = None
    for r in m.rows:
        if prev is not None and prev[0] != r.kind:
            sections.append(len(rows))
        first = prev is None or prev[1] != r.name or prev[0] != r.kind
        cells = [m.cells[r.cell]] if several else []
        rows.append([r.name if first else "", *cells, *(r.text(col) for col in columns)])
        prev = (r.kind, r.name)
    return header, rows, sections


def _table(m: Matrix, columns: list[str], console: Console) -> Table | None:
    """The matrix over ``columns`` fitted to the terminal with no figure broken
    (``lab.report.term_fit``); None when it cannot fit."""
    header, rows, sections = _texts(m, columns)
    return fitted_table(header, rows, console, sections=sections, box=box.SIMPLE_HEAD,
                        pad_edge=False)


def _blocks(m: Matrix, columns: list[str], console: Console) -> None:
    """The matrix as one block per row (a terminal too narrow for any table): the row's name
    and cell, then ``column: figure`` items, a figure never split."""
    for r in m.rows:
        title = r.name + (f" ({m.cells[r.cell]})" if len(m.cells) > 1 else "")
        pairs = [(c, r.text(c)) for c in columns if r.text(c) != NA]
        for line in block_lines(title, pairs, console.width, indent="    "):
            console.print(escape(line), soft_wrap=True)


def render_matrix(summary: dict[str, Any], console: Console) -> Matrix:
    """The matrix; when it is wider than the terminal, as two tables (downtime, stale reads,
    visibility, lost writes; then errors, lag, throughput, latency); when a half does not fit
    either, one block per row. A figure is never broken across lines (``lab.report.term_fit``)."""
    m = build_matrix(summary)
    if not m.rows:
        return m
    whole = _table(m, m.columns, console)
    if whole is not None and _natural_width(m, m.columns, console) <= console.width:
        console.print(whole)
    else:
        for half in SPLIT:
            cols = [c for c in m.columns if c in half]
            if not cols:
                continue
            t = _table(m, cols, console)
            if t is not None:
                console.print(t)
            else:
                _blocks(m, cols, console)
    for line in m.legend:
        console.print(f"[dim]{escape(line)}[/]")
    return m


def _natural_width(m: Matrix, columns: list[str], console: Console) -> int:
    """The width of the matrix with no cell wrapped."""
    header, rows, _ = _texts(m, columns)
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for h in header:
        t.add_column(escape(h), no_wrap=True)
    for row in rows:
        t.add_row(*(escape(x) for x in row))
    return Measurement.get(console, console.options.update_width(10_000), t).maximum


def render_matrix_summary(summary: dict[str, Any], console: Console) -> None:
    """The compact summary: the run's title, the faults timeline, the matrix, expectations,
    report lines, notes."""
    console.print(f"[bold]{escape(_title(summary))}[/]")
    render_context(summary, console)
    render_timeline(summary, console)
    render_matrix(summary, console)
    render_findings(summary, console)
    render_expectations(summary, console, title=None)
    render_reports(summary, console)
    render_claims(summary, console)
    render_notes(summary, console)
