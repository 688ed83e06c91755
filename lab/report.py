"""The end-of-run report: measurements and expectations, side by side for every cell."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

KEY_FIGURES: dict[str, list[str]] = {
    "downtime": ["longest", "total", "count"],
    "stale_reads": ["count", "rate"],
    "duplicate_keys": ["count"],
    "lost_writes": ["count"],
    "latency": ["p50", "p99", "max"],
    "throughput": ["mean"],
    "errors": ["total"],
    "replication_lag": ["max", "p99"],
    "stalls": ["count", "longest"],
    "facts": ["missing_transactions", "applied_since_restart"],
}


# Per-node rows ("ryw on db2") only where the node is the point of the figure.
PER_NODE = {"downtime", "stale_reads", "errors", "lost_writes", "duplicate_keys"}
SECONDS = {("downtime", "longest"), ("downtime", "total"), ("stalls", "longest"),
           ("replication_lag", "max"), ("replication_lag", "p99")}


def _fmt_figure(checker: str, key: str, v: Any) -> str:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if checker == "latency":
            return f"{v * 1000:.3g} ms"
        if (checker, key) in SECONDS:
            return f"{v:.3g} s"
        if checker == "stale_reads" and key == "rate":
            return f"{v:.1%}"
        if checker == "throughput":
            return f"{v:,.1f}/s"
    return _fmt(v)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def render_summary(summary: dict[str, Any], console: Console) -> None:
    cells = summary.get("cells", [])
    exp = Table(title=f"{summary['experiment']} — run {summary['run_id']} — {summary['status']}")
    exp.add_column("expect")
    for c in cells:
        exp.add_column(c.get("label") or f"cell {c['index']}", overflow="fold")
    texts: list[str] = []
    for c in cells:
        for e in c.get("expectations", []):
            if e["text"] not in texts:
                texts.append(e["text"])
    for t in texts:
        row = [t]
        for c in cells:
            e = next((x for x in c.get("expectations", []) if x["text"] == t), None)
            if e is None:
                row.append("-")
                continue
            mark = {True: "[green]PASS[/]", False: "[red]FAIL[/]", None: "[yellow]UNKNOWN[/]"}[
                e.get("passed")
            ]
            measured = e.get("measured")
            row.append(
                f"{mark} {_fmt(measured) if measured is not None else ''} "
                f"{e.get('explanation', '')}".strip()
            )
        exp.add_row(*row)
    if texts:
        console.print(exp)
    rep_texts: list[str] = []
    for c in cells:
        for r in c.get("reports") or []:
            if r["text"] not in rep_texts:
                rep_texts.append(r["text"])
    if rep_texts:
        rep = Table(title="reports")
        rep.add_column("report")
        for c in cells:
            rep.add_column(c.get("label") or f"cell {c['index']}", overflow="fold")
        for t in rep_texts:
            row = [t]
            for c in cells:
                r = next((x for x in c.get("reports") or [] if x["text"] == t), None)
                row.append(f"{r['metric']} = {r['display']}" if r else "-")
            rep.add_row(*row)
        console.print(rep)
    meas = Table(title="measurements")
    meas.add_column("figure")
    for c in cells:
        meas.add_column(c.get("label") or f"cell {c['index']}", overflow="fold")
    rows: dict[str, list[str]] = {}
    for ci, c in enumerate(cells):
        for checker, metrics in (c.get("measurements") or {}).items():
            subjects = metrics.get("subjects") if isinstance(metrics, dict) else None
            if not isinstance(subjects, dict):
                continue
            for subject, figs in subjects.items():
                if not isinstance(figs, dict):
                    continue
                if " on " in subject and checker not in PER_NODE:
                    continue
                for key in KEY_FIGURES.get(checker, []):
                    if key in figs and not isinstance(figs[key], (dict, list)):
                        name = f"{checker}({subject}).{key}"
                        rows.setdefault(name, ["-"] * len(cells))[ci] = _fmt_figure(
                            checker, key, figs[key])
    for name, vals in rows.items():
        meas.add_row(name, *vals)
    if rows:
        console.print(meas)
    for c in cells:
        if c.get("error"):
            console.print(f"[red]cell {c['index']} ({c.get('label')}): {c['error']}[/]")
