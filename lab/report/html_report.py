"""The HTML report of a run (``lab report RUN --html FILE``): one self-contained file that works
offline, its charts drawn by Plotly (plotly.js is embedded in the file).

Every cell of the run is a column, so that the same chart of each cell (variants, sweeps,
repeats) sits side by side, on the same axes: the time axis spans the longest load, and the
throughput, latency, lag and error axes are shared across cells. Per cell: the expectations,
throughput per second per workload, latency percentiles per second, downtime windows, errors
by code per second (all with the fault periods shaded and labelled), replication lag per
replica, the failover phases and the distribution of visibility times. What each chart shows
and how to read it: docs/reports.md. The numbers come from ``lab.report.data``.

When the page has drawn its charts, its own script sets ``data-charts-rendered`` (how many
charts hold Plotly's SVG) and ``data-chart-rects`` (where each one is on the page) on
``<body>``: a headless browser can check that the charts really rendered.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs

from lab.figures_format import format_value
from lab.report.data import CellReport, FaultPeriod, RunReport, throughput_points
from lab.report.html_page import CSS, PAGE, SCRIPT, context_block
from lab.report.metrics import charts

# trace colours: workloads, nodes (replicas, visibility), error codes, failover phases
WORKLOAD_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2",
                   "#17becf", "#bcbd22", "#7f7f7f", "#393b79")  # fmt: skip
NODE_COLORS = ("#0b8a8f", "#7b3fb8", "#b8860b", "#c71585", "#2e8b57", "#4169e1", "#a0522d",
               "#708090")  # fmt: skip
ERROR_COLORS = ("#d62728", "#e6550d", "#fdae6b", "#843c39", "#ad494a", "#d6616b", "#e7969c",
                "#7b4173", "#a55194", "#ce6dbd")  # fmt: skip
PHASE_COLORS = ("#6baed6", "#3182bd", "#08519c", "#9ecae1", "#2171b5", "#4292c6")
OUTAGE_COLORS = {"error": "#d62728", "stall": "#ff9f1c"}
ENDPOINT_OUTAGE_COLOR = "#e45756"
LAB_CALL_COLOR = "#9e9e9e"
FAULT_FILL = {  # shading of fault periods, by family
    "kill": "rgba(214,39,40,0.13)", "stop": "rgba(214,39,40,0.13)",
    "pause": "rgba(255,159,28,0.16)", "promote": "rgba(44,160,44,0.16)",
}  # fmt: skip
FAULT_FILL_OTHER = "rgba(120,120,160,0.14)"
PATTERNS = ("", "/", ".", "x", "\\", "+")  # the workloads' bars in the errors chart
# lines that coincide stay distinguishable: each workload (node) its own dash and marker, and
# a latency's percentiles drawn wide to narrow (p50 under p95 under p99)
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "cross", "star", "pentagon")
PERCENTILE_LINES = (("p50", "solid", 4.0), ("p95", "dash", 2.5), ("p99", "dot", 1.5))
MAX_MARKER = "triangle-up"
CHART_HEIGHT = 300
ZERO_VISIBLE = 1e-4  # visibility times of 0 are drawn at 0.1 ms on the log axis
MAX_ECDF_POINTS = 2000  # per visibility curve

ERROR_NAMES = {  # the legend of the errors chart: what a code means
    "1040": "too many connections", "1047": "node not ready (Galera)",
    "1062": "duplicate key", "1205": "lock wait timeout", "1213": "deadlock",
    "1290": "read-only", "1927": "connection killed", "2002": "cannot connect (socket)",
    "2003": "cannot connect", "2006": "server has gone away",
    "2013": "lost connection during query", "-2003": "no connection within the timeout",
    "timeout": "no answer within the timeout", "fail": "failed", "incomplete": "never completed",
}  # fmt: skip

# (id, title, how to read it): the expectations, then a chart a checker (lab.report.metrics)
SECTIONS = (("expectations", "Expectations", "Each expect line of the experiment and its "
             "verdict; report lines give a figure only."),
            *((c.id, c.title, c.hint) for _, c in charts()))


@dataclass
class Chart:
    """One Plotly figure of the page, and the trace colours that must show once drawn."""

    id: str
    section: str
    cell: int
    figure: Any  # plotly.graph_objects.Figure
    colors: list[str] = field(default_factory=list)


@dataclass
class Axes:
    """Ranges shared by every cell's chart of a section."""

    time: tuple[float, float]
    throughput: float
    latency: tuple[float, float] | None  # log10 range, milliseconds
    errors: float
    lag: float
    failover: tuple[float, float] | None = None  # the failover chart's time axis


def fmt_s(v: float | None) -> str:
    return format_value(v, "duration") if v is not None else "unknown"


# --- the page ---------------------------------------------------------------------------------


def render_html(report: RunReport) -> str:
    """The whole page: header, then one row per section with one column per cell."""
    return build_page(report)[0]


def write_html(report: RunReport, path: str | Path) -> list[Chart]:
    """Write the page; returns its charts."""
    text, charts = build_page(report)
    Path(path).write_text(text, encoding="utf-8")
    return charts


def build_page(report: RunReport) -> tuple[str, list[Chart]]:
    """The page and its charts."""
    colors = Palette(report)
    axes = shared_axes(report)
    charts: list[Chart] = []
    body: list[str] = []
    n = max(1, len(report.cells))
    columns = f"repeat({n}, minmax(540px, 1fr))"
    body.append(f'<div class="grid" style="grid-template-columns: {columns}">')
    for c in report.cells:
        body.append(f'<div class="cellhead">{cell_header(c)}</div>')
    for sid, title, hint in SECTIONS:
        body.append(f'<h2 class="section" id="{sid}">{html.escape(title)}'
                    f'<span class="hint">{html.escape(hint)}</span></h2>')  # fmt: skip
        for c in report.cells:
            if sid == "expectations":
                body.append(f'<div class="slot">{expectations_table(c)}</div>')
                continue
            made = BUILDERS[sid](c, axes, colors)
            if isinstance(made, str):
                body.append(f'<div class="slot"><p class="none">{html.escape(made)}</p></div>')
                continue
            chart = Chart(f"chart-{sid}-{c.index}", sid, c.index, made[0], made[1])
            charts.append(chart)
            body.append(
                f'<div class="slot"><div class="chart" id="{chart.id}" data-section="{sid}" '
                f'data-cell="{c.index}" data-colors="{html.escape(json.dumps(chart.colors))}" '
                f'style="height:{CHART_HEIGHT}px"></div></div>'
            )
    body.append("</div>")
    page = PAGE.format(
        title=html.escape(f"{report.experiment} — run {report.run_id}"),
        css=CSS,
        plotly=get_plotlyjs(),
        header=run_header(report),
        body="\n".join(body),
        expected=len(charts),
        charts=_script_json([{"id": ch.id, "fig": json.loads(pio.to_json(ch.figure))}
                             for ch in charts]),  # fmt: skip
        script=SCRIPT,
    )
    return page, charts


def _script_json(v: Any) -> str:
    """JSON safe inside a <script> element."""
    return json.dumps(v, separators=(",", ":")).replace("</", "<\\/").replace("<!--", "<\\!--")


def run_header(r: RunReport) -> str:
    status = html.escape(r.status)
    bits = [
        f"<h1>{html.escape(r.experiment)}</h1>",
        f'<p class="meta">run <code>{html.escape(r.run_id)}</code> · '
        f'<span class="status {status}">{status}</span>'
        + (f" (exit {r.exit_code})" if r.exit_code is not None else "")
        + (f" · {html.escape(r.source)}" if r.source else "")
        + (f" · started {html.escape(r.started_at)}" if r.started_at else "")
        + (f" · ended {html.escape(r.ended_at)}" if r.ended_at else "")
        + f" · {len(r.cells)} cell{'s' if len(r.cells) != 1 else ''}</p>",
    ]
    bits.append(context_block(r.context))
    if r.message:
        bits.append(f'<p class="error">{html.escape(r.message)}</p>')
    if r.claims:  # judged over the cells, so above them
        bits.append('<h2 class="section" id="claims">Claims across cells</h2><ul class="claims">'
                    + "".join(f"<li>{html.escape(line)}</li>" for line in r.claims) + "</ul>")
    bits.append('<p class="meta">Times are seconds since the start of the load. What each '
                "chart shows: docs/reports.md.</p>")  # fmt: skip
    return "\n".join(bits)


def cell_header(c: CellReport) -> str:
    status = html.escape(c.status)
    out = [f'<h3>cell {c.index}: {html.escape(c.label)} <span class="status {status}">'
           f"{status}</span></h3>",
           f'<p class="meta">load {fmt_s(c.load_seconds)}'
           + "".join(f" · {html.escape(f.label)} at {f.start:.1f} s" for f in c.faults[:6])
           + "</p>"]  # fmt: skip
    if c.error:
        out.append(f'<p class="error">{html.escape(c.error)}</p>')
    out.extend(f'<p class="note">{html.escape(n)}</p>' for n in c.notes)
    if c.findings:  # transactional anomalies, lost updates, wrong totals: with the transactions
        out.append('<pre class="findings">' + html.escape("\n".join(c.findings)) + "</pre>")
    return "\n".join(out)


def expectations_table(c: CellReport) -> str:
    rows = []
    for e in c.expectations:
        passed = e.get("passed")
        verdict, css = ("holds", "pass") if passed is True else ("unknown", "unknown")
        if passed is False:
            verdict, css = "fails", "fail"
        rows.append(f'<tr class="{css}"><td class="verdict">{verdict}</td>'
                    f"<td><code>{html.escape(str(e.get('text') or ''))}</code></td>"
                    f"<td>{html.escape(str(e.get('explanation') or ''))}</td></tr>")  # fmt: skip
    for r in c.reports:
        rows.append(f'<tr class="report"><td class="verdict">report</td>'
                    f"<td><code>{html.escape(str(r.get('text') or ''))}</code></td>"
                    f"<td>{html.escape(str(r.get('display') or ''))}</td></tr>")  # fmt: skip
    if not rows:
        return '<p class="none">no expectations in this cell</p>'
    return ('<table class="expectations"><thead><tr><th></th><th>line</th><th>measured</th>'
            "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>")  # fmt: skip


# --- colours and shared axes ------------------------------------------------------------------


class Palette:
    """One colour per workload, node and error code over the whole run."""

    def __init__(self, report: RunReport) -> None:
        self.workload = _assign(report.workloads, WORKLOAD_COLORS)
        nodes: dict[str, None] = {}
        codes: dict[str, None] = {}
        for c in report.cells:
            for n in (*c.lag, *(v.node for v in c.visibility)):
                nodes.setdefault(n, None)
            for per_code in c.errors.values():
                for code in per_code:
                    codes.setdefault(code, None)
        self.node = _assign(sorted(nodes), NODE_COLORS)
        self.code = _assign(sorted(codes), ERROR_COLORS)


def _assign(names: Iterable[str], colors: Sequence[str]) -> dict[str, str]:
    return {n: colors[i % len(colors)] for i, n in enumerate(names)}


def shared_axes(report: RunReport) -> Axes:
    longest = max((c.load_seconds for c in report.cells), default=1.0) or 1.0
    tp = max((v for c in report.cells for s in c.throughput.values() for v in s), default=0.0)
    lats = [v for c in report.cells for s in c.latency.values()
            for v in (*s.p50, *s.p95, *s.p99, *s.max) if v > 0]  # fmt: skip
    lat = ((math.log10(min(lats) * 1000) - 0.2, math.log10(max(lats) * 1000) + 0.2)
           if lats else None)  # fmt: skip
    errs = 0.0
    for c in report.cells:
        per_sec: dict[int, int] = {}
        for codes in c.errors.values():
            for row in codes.values():
                for i, v in enumerate(row):
                    per_sec[i] = per_sec.get(i, 0) + v
        errs = max(errs, float(max(per_sec.values(), default=0)))
    lag = max((v for c in report.cells for pts in c.lag.values() for _, v in pts
               if v is not None), default=0.0)  # fmt: skip
    phases = [p for c in report.cells for f in c.failovers for p in f.phases]
    span = None
    if phases:  # from a little before the first failover to a little after the last
        lo, hi = min(p.start for p in phases), max(p.end for p in phases)
        pad = max(0.5, (hi - lo) * 0.15)
        span = (max(0.0, lo - pad), hi + pad)
    return Axes((0.0, longest), tp * 1.08 or 1.0, lat, errs * 1.08 or 1.0, lag * 1.1 or 1.0,
                span)


# --- the charts -------------------------------------------------------------------------------

Built = tuple[Any, list[str]] | str  # (figure, trace colours) or why there is no chart
Builder = Callable[["CellReport", "Axes", "Palette"], Built]
BUILDERS: dict[str, Builder] = {}  # section id (lab.report.metrics' charts) -> its chart


def draws(section: str) -> Callable[[Builder], Builder]:
    """Registers the function that draws a section's chart of one cell."""
    def put(build: Builder) -> Builder:
        BUILDERS[section] = build
        return build
    return put


def _figure(axes: Axes, *, time_axis: bool = True, **layout: Any) -> Any:
    fig = go.Figure()
    fig.update_layout(
        height=CHART_HEIGHT, margin={"l": 60, "r": 12, "t": 28, "b": 44},
        template="plotly_white", font={"size": 11},
        legend={"orientation": "h", "y": -0.22, "x": 0, "font": {"size": 10}},
        hovermode="closest", **{"showlegend": True, **layout},
    )  # fmt: skip
    if time_axis:
        fig.update_xaxes(range=list(axes.time), title_text="seconds since the start of the load",
                         title_standoff=4)  # fmt: skip
    return fig


def shade_faults(fig: Any, faults: Sequence[FaultPeriod], *, labels: bool = True) -> None:
    """Each fault period as a shaded band, labelled at its top left."""
    for i, f in enumerate(faults):
        end = f.end if f.end > f.start else f.start + 0.05  # an instant still shows
        text = f.label + (" (until the end)" if f.open_at_end else "")
        if f.ok is False:
            text += " (failed)"
        label: dict[str, Any] = {}
        if labels:
            label = {"annotation_text": text, "annotation_position": "top left",
                     "annotation_font_size": 10, "annotation_font_color": "#444",
                     "annotation_yshift": -12 * (i % 3)}  # fmt: skip
        fig.add_vrect(x0=f.start, x1=end, fillcolor=FAULT_FILL.get(f.name, FAULT_FILL_OTHER),
                      line_width=0, layer="below", **label)


@draws("throughput")
def throughput_chart(c: CellReport, axes: Axes, pal: Palette) -> Built:
    if not c.throughput:
        return "no operations completed in this cell"
    fig = _figure(axes, yaxis_title="ops/s")
    colors = []
    for i, (w, series) in enumerate(c.throughput.items()):
        col = pal.workload[w]
        colors.append(col)
        name = w + (" (sysbench tps)" if c.throughput_source.get(w) == "sysbench" else "")
        start, end = c.throughput_window.get(w, (0.0, c.load_seconds))
        xs, ys, hover = throughput_points(series, min(end, c.load_seconds), start)
        fig.add_trace(go.Scatter(
            x=xs, y=ys, name=name, mode="lines+markers",
            line={"color": col, "width": 2, "dash": DASHES[i % len(DASHES)]},
            marker={"symbol": SYMBOLS[i % len(SYMBOLS)], "size": 5, "color": col},
            customdata=hover, hovertemplate=f"{w}: %{{customdata}}<extra></extra>",
        ))  # fmt: skip
    fig.update_yaxes(range=[0, axes.throughput], rangemode="tozero")
    shade_faults(fig, c.faults)
    return fig, colors


@draws("latency")
def latency_chart(c: CellReport, axes: Axes, pal: Palette) -> Built:
    if not c.latency:
        return "no successful operation to time in this cell"
    fig = _figure(axes, yaxis_title="latency (ms, log)")
    colors = []
    for w, s in c.latency.items():
        col = pal.workload[w]
        colors.append(col)
        x = [sec + 0.5 for sec in s.seconds]
        sysbench = c.latency_source.get(w, "ops") != "ops"
        for name, dash, width in (*PERCENTILE_LINES, ("max", "", 0.0)):
            ys = getattr(s, name)
            if not ys:
                continue
            label = f"{w} {name}" + (" (sysbench)" if sysbench else "")
            style: dict[str, Any] = (
                {"mode": "markers", "marker": {"symbol": MAX_MARKER, "size": 7, "color": col}}
                if name == "max" else
                {"mode": "lines", "line": {"color": col, "width": width, "dash": dash}})
            fig.add_trace(go.Scatter(
                x=x, y=[v * 1000 for v in ys], name=label, **style,
                customdata=[[format_value(v, "duration"), sec] for v, sec in zip(ys, s.seconds,
                                                                                   strict=True)],
                hovertemplate=f"{label}: %{{customdata[0]}} in second %{{customdata[1]}}"
                              "<extra></extra>",
            ))  # fmt: skip
    if axes.latency:
        vals, texts = log_ticks(10 ** axes.latency[0], 10 ** axes.latency[1])
        fig.update_yaxes(type="log", range=list(axes.latency), tickvals=vals, ticktext=texts)
    else:
        fig.update_yaxes(type="log")
    shade_faults(fig, c.faults)
    return fig, colors


@draws("downtime")
def downtime_chart(c: CellReport, axes: Axes, pal: Palette) -> Built:
    if not c.outages:
        return "no downtime figures in this cell"
    windows = [o for ws in c.outages.values() for o in ws]
    if not windows:
        return "no outage: every workload had a success within 200 ms all along"
    fig = _figure(axes, barmode="overlay")
    short = (axes.time[1] - axes.time[0]) * 0.01
    colors = []
    for kind in ("error", "stall"):
        ws = [o for o in windows if o.kind == kind]
        if not ws:
            continue
        col = OUTAGE_COLORS[kind]
        colors.append(col)
        hover = [
            f"{o.workload}: {('≥ ' if o.open_at_end else '')}{fmt_s(o.duration)} "
            f"from {o.start:.3f} s to {o.end:.3f} s"
            + (" (still down at end)" if o.open_at_end else "")
            + ("<br>" + ", ".join(f"{k}: {v}" for k, v in sorted(o.errors.items()))
               if o.errors else "")
            for o in ws
        ]  # fmt: skip
        fig.add_trace(go.Bar(
            orientation="h", y=[o.workload for o in ws], x=[o.duration for o in ws],
            base=[o.start for o in ws], name="outage after a failure" if kind == "error"
            else "stall (> 200 ms, then ok)", marker={"color": col}, hovertext=hover,
            hoverinfo="text", width=0.6,
        ))  # fmt: skip
        tiny = [o for o in ws if o.duration < short]
        if tiny:  # too short to see as a bar: a mark on the line
            fig.add_trace(go.Scatter(
                x=[o.start + o.duration / 2 for o in tiny], y=[o.workload for o in tiny],
                mode="markers", marker={"symbol": "line-ns", "size": 16,
                                        "line": {"width": 3, "color": col}, "color": col},
                showlegend=False, hovertext=[h for o, h in zip(ws, hover, strict=True)
                                             if o in tiny], hoverinfo="text",
            ))  # fmt: skip
    fig.update_yaxes(categoryorder="array", categoryarray=sorted(c.outages, reverse=True),
                     type="category")  # fmt: skip
    shade_faults(fig, c.faults, labels=False)
    return fig, colors


@draws("errors")
def errors_chart(c: CellReport, axes: Axes, pal: Palette) -> Built:
    if not any(any(sum(row) for row in codes.values()) for codes in c.errors.values()):
        return "no errors: every operation completed ok"
    fig = _figure(axes, barmode="stack", bargap=0.05, yaxis_title="errors per second")
    colors: list[str] = []
    several = len(c.errors) > 1
    for i, (w, codes) in enumerate(c.errors.items()):
        pattern = PATTERNS[i % len(PATTERNS)]
        for code, row in codes.items():
            col = pal.code[code]
            if col not in colors:
                colors.append(col)
            meaning = ERROR_NAMES.get(code)
            name = code + (f" {meaning}" if meaning else "") + (f" ({w})" if several else "")
            fig.add_trace(go.Bar(
                x=[s + 0.5 for s in range(len(row))], y=row, name=name, width=1,
                marker={"color": col, "line": {"width": 0},
                        "pattern": {"shape": pattern, "fgcolor": "#fff", "solidity": 0.25}},
                customdata=list(range(len(row))),
                hovertemplate=f"{name}: %{{y}} in second %{{customdata}}<extra></extra>",
            ))  # fmt: skip
    fig.update_yaxes(range=[0, axes.errors])
    shade_faults(fig, c.faults)
    return fig, colors


@draws("lag")
def lag_chart(c: CellReport, axes: Axes, pal: Palette) -> Built:
    if not c.lag:
        return "no replication lag samples (no replica, or lag is not sampled here)"
    fig = _figure(axes, yaxis_title="lag (s)")
    colors = []
    for i, (node, pts) in enumerate(c.lag.items()):
        col = pal.node[node]
        colors.append(col)
        fig.add_trace(go.Scatter(
            x=[t for t, _ in pts], y=[v for _, v in pts], name=node, mode="lines",
            line={"color": col, "width": max(1.5, 4.0 - 1.0 * i), "dash": DASHES[i % len(DASHES)]},
            connectgaps=False,
            hovertemplate=f"{node}: %{{y:.3f}} s behind at %{{x:.1f}} s<extra></extra>",
        ))  # fmt: skip
        unreadable = [t for t, v in pts if v is None]
        if unreadable:
            fig.add_trace(go.Scatter(
                x=unreadable, y=[0] * len(unreadable), name=f"{node} unreadable",
                mode="markers", marker={"symbol": "x", "size": 6, "color": col},
                hovertemplate=f"{node} could not be read at %{{x:.1f}} s<extra></extra>",
            ))  # fmt: skip
    fig.update_yaxes(range=[0, axes.lag])
    shade_faults(fig, c.faults)
    return fig, colors


@draws("failover")
def failover_chart(c: CellReport, axes: Axes, pal: Palette) -> Built:
    if not c.failovers:
        return "no failover: no promote in this cell"
    phases = [p for f in c.failovers for p in f.phases]
    if not phases:
        return "a promote, but no client operation observed it: phases unknown"
    span = axes.failover or axes.time
    fig = _figure(axes, barmode="overlay", showlegend=False)
    colors: list[str] = []  # of the bars wide enough to see
    rows: list[str] = []
    several = len(c.failovers) > 1
    for f in c.failovers:
        k = 0
        for p in f.phases:
            row = f"{f.title}: {p.row}" if several else p.row
            if row not in rows:
                rows.append(row)
            if p.row == "phases":
                col = PHASE_COLORS[k % len(PHASE_COLORS)]
                k += 1
            elif p.row.endswith("outage"):
                col = ENDPOINT_OUTAGE_COLOR
            else:
                col = LAB_CALL_COLOR
            dur = p.end - p.start
            if dur >= (span[1] - span[0]) * 0.02 and col not in colors:
                colors.append(col)
            text = ("≥ " if p.open_at_end else "") + fmt_s(dur)
            fig.add_trace(go.Bar(
                orientation="h", y=[row], x=[dur], base=[p.start], marker={"color": col},
                text=[text], textposition="auto", insidetextanchor="middle",
                textfont={"size": 10}, width=0.6, name=p.name,
                hovertext=[f"{p.name}: {text} (from {p.start:.3f} s to {p.end:.3f} s)"],
                hoverinfo="text",
            ))  # fmt: skip
        if f.fault_at is not None:
            fig.add_vline(x=f.fault_at, line_dash="dot", line_color="#555",
                          annotation_text=f"failover {f.title}", annotation_font_size=10)
    fig.update_yaxes(categoryorder="array", categoryarray=list(reversed(rows)), type="category",
                     automargin=True)  # fmt: skip
    fig.update_xaxes(range=list(span))
    return fig, colors


@draws("visibility")
def visibility_chart(c: CellReport, axes: Axes, pal: Palette) -> Built:
    if not c.visibility:
        return "no visibility times: no read_your_writes workload in this cell"
    fig = _figure(axes, time_axis=False, yaxis_title="writes visible (%)")
    colors = []
    xs_all: list[float] = []
    for i, v in enumerate(c.visibility):
        col = pal.node[v.node]
        colors.append(col)
        xs, ys, ts = ecdf(v.times, len(v.times) + len(v.unseen))
        xs_all.extend(xs)
        name = v.subject + (f" ± {fmt_s(v.resolution)}" if v.resolution is not None else "")
        if v.unseen:
            name += f", {len(v.unseen)} never seen"
        fig.add_trace(go.Scatter(
            x=xs, y=ys, name=name, mode="lines",
            line={"color": col, "width": max(1.5, 4.0 - 1.0 * i), "shape": "hv",
                  "dash": DASHES[i % len(DASHES)]},
            customdata=[fmt_s(t) for t in ts],
            hovertemplate=f"{v.subject}: %{{y:.1f}}% visible within %{{customdata}}"
                          "<extra></extra>",
        ))  # fmt: skip
    lo, hi = (min(xs_all), max(xs_all)) if xs_all else (ZERO_VISIBLE * 1000, 1000.0)
    vals, texts = log_ticks(lo / 2, hi * 2)
    fig.update_xaxes(type="log", range=[math.log10(lo) - 0.3, math.log10(hi) + 0.3],
                     tickvals=vals, ticktext=texts,
                     title_text="time from the ack (log; 0 drawn at 0.1 ms)", title_standoff=4)
    fig.update_yaxes(range=[0, 102])
    return fig, colors


def log_ticks(lo_ms: float, hi_ms: float) -> tuple[list[float], list[str]]:
    """Ticks of a log axis in milliseconds from ``lo_ms`` to ``hi_ms``, each labelled with its
    unit (``1 ms``, ``2 ms``, ``5 ms``, ``10 ms`` … ``1 s``, ``2 s``): 1-2-5 in every decade
    over at most three and a half decades, the powers of ten alone over more (Plotly's
    ``D2`` labelled them ``5, 2, 1, 5``)."""
    if not (lo_ms > 0 and hi_ms > lo_ms):
        return [], []
    first, last = math.floor(math.log10(lo_ms)), math.ceil(math.log10(hi_ms))
    steps = (1, 2, 5) if math.log10(hi_ms / lo_ms) <= 3.5 else (1,)
    vals = [m * 10.0 ** d for d in range(first, last + 1) for m in steps]
    vals = [v for v in vals if lo_ms <= v <= hi_ms]
    return vals, [tick_text(v) for v in vals]


def tick_text(ms: float) -> str:
    """``0.1 ms``, ``20 ms``, ``500 ms``, ``1 s``, ``20 s``."""
    if ms >= 1000:
        return f"{ms / 1000:g} s"
    return f"{float(f'{ms:.3g}'):g} ms"


def ecdf(times: Sequence[float], total: int, max_points: int = MAX_ECDF_POINTS
         ) -> tuple[list[float], list[float], list[float]]:  # fmt: skip
    """The cumulative curve of sorted ``times`` (seconds) out of ``total`` writes: x in ms
    (0 drawn at ``ZERO_VISIBLE``), y in percent, and the times themselves; at most
    ``max_points`` points, evenly spaced in rank, the last one always kept."""
    n = len(times)
    step = max(1, math.ceil(n / max_points))
    idx = list(range(step - 1, n, step))
    if n and idx[-1] != n - 1:
        idx.append(n - 1)
    ts = [times[i] for i in idx]
    xs = [max(t, ZERO_VISIBLE) * 1000 for t in ts]
    ys = [100.0 * (i + 1) / total for i in idx]
    return xs, ys, ts
