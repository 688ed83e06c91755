"""The faults timeline above the compact summary's matrix (``lab.report.summary_matrix``):
each action of the history in the language's words (``fault_words``, ``fault_text``), when it
began (seconds since the load started), the end-of-run heal, and one line per promote the
clients saw (``failover_lines``), with why a writing workload's downtime around it is not the
failover's outage when the two differ (``outage_vs_downtime``).
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

from lab.figures_format import format_count
from lab.report.cell_fields import _checker, _dict, _num, _subjects
from lab.report.rows import STILL_DOWN, fmt_duration
from lab.report.term_fit import block_lines, fitted_table

TOOK_SHOWN = 0.1  # seconds: an action shorter than this is shown without its duration


NETWORK_VERBS = frozenset({"latency", "bandwidth", "partition", "link_down", "heal"})
WORD_NAMES = {"sleep": "wait", "sql": "execute", "drop_caches": "drop caches",
              "convert_standalone": "convert to standalone"}


def fault_words(name: str, node: str | None) -> str:
    """An action of the history in the language's words (``dsl.actions``'s ``words``):
    ``wait_caught_up`` on db2 -> ``wait until db2 caught_up``, ``sleep`` -> ``wait``,
    ``stop_replication`` -> ``stop replication db2``, ``partition`` -> ``network partition``,
    ``drop_caches`` on db1 -> ``drop caches on db1``."""
    where = f" {node}" if node else ""
    if name.startswith("wait_"):
        return f"wait until{where} {name.removeprefix('wait_')}"
    if name in NETWORK_VERBS:
        return f"network {name}{where}"
    if name in ("drop_caches", "sql") and node:
        return f"{WORD_NAMES[name]} on {node}"
    verb, sep, family = name.partition("_")
    if sep and family in ("replication", "nodes"):  # stop_replication, kill_nodes
        return f"{verb} replication{where}" if family == "replication" else f"{verb}{where}"
    return WORD_NAMES.get(name, name.replace("_", " ")) + where


def fault_at(at: Any) -> str:
    """When an action began, seconds since the load started; an action of a ``before load``
    step began before the load: ``before load`` (not ``−1.0 ms``)."""
    if not _num(at):
        return "?"
    return "before load" if at < 0 else fmt_duration(at)


def fault_text(f: dict[str, Any]) -> str:
    """``kill db2``, ``wait until db2 caught_up (took 10.4 s)``, ``network partition … (failed:
    why)``: the language's words."""
    text = fault_words(str(f.get("name")), f.get("node") if isinstance(f.get("node"), str)
                       else None)
    detail = _dict(f.get("detail"))
    stmt = detail.get("statement")
    if f.get("name") == "set_global" and isinstance(stmt, str):  # which setting, to what
        text += " " + stmt.removeprefix("SET GLOBAL ")
        if isinstance(detail.get("nodes"), list):
            text += " on " + ", ".join(str(n) for n in detail["nodes"])
    if _num(detail.get("affected_rows")):  # what an execute did
        text += f" ({format_count(detail['affected_rows'])} rows changed)"
    elif _num(detail.get("row_count")):
        text += f" ({format_count(detail['row_count'])} rows returned)"
    if isinstance(detail.get("note"), str):  # a Galera recovery's phases: seqno, IST/SST ...
        text += f" ({detail['note']})"
    at, end = f.get("at"), f.get("end")
    if f.get("ok") is False:
        text += f" (failed: {f.get('error') or 'no reason recorded'})"
    elif end is None and f.get("ok") is None:
        text += " (still active at the end)"
    elif _num(at) and _num(end) and float(end) - float(at) >= TOOK_SHOWN:
        text += f" (took {fmt_duration(float(end) - float(at))})"
    return text


def fault_lines(cell: dict[str, Any]) -> list[tuple[str, str]]:
    """``(at, what)`` per fault of the cell, times since the start of the load."""
    out = []
    for f in cell.get("faults") or []:
        if isinstance(f, dict):
            out.append((fault_at(f.get("at")), fault_text(f)))
    heal = heal_line(cell)
    if heal is not None:
        out.append(heal)
    return out


def heal_line(cell: dict[str, Any]) -> tuple[str, str] | None:
    """The end-of-run heal, after the timeline: ``(at, "heal at the end: start m; rejoin m
    as a replica (took 1.20 s)")``; None when nothing was healed."""
    done = [str(h) for h in cell.get("healed") or []]
    if not done:
        return None
    heal = _dict(cell.get("heal"))
    at, end = heal.get("at"), heal.get("end")
    text = "heal at the end: " + "; ".join(done)
    if _num(at) and _num(end) and float(end) - float(at) >= TOOK_SHOWN:
        text += f" (took {fmt_duration(float(end) - float(at))})"
    return (fault_at(at) if _num(at) else "end", text)


def failover_lines(cell: dict[str, Any]) -> list[str]:
    """One line per promote the clients saw (the ``failover`` checker)."""
    out = []
    for rec in _dict(_checker(cell, "failover")).get("failovers") or []:
        if not isinstance(rec, dict):
            continue
        if rec.get("open_at_end") and _num(rec.get("outage_lower_bound")):
            outage = f"≥ {fmt_duration(rec['outage_lower_bound'])} ({STILL_DOWN})"
        else:
            outage = fmt_duration(rec.get("outage"))
        acc = rec.get("new_writer_accepts")
        accepts = f"+{fmt_duration(acc)}" if _num(acc) else "never"
        out.append(f"failover {rec.get('old_primary')} → {rec.get('new_primary')}: writers' "
                   f"outage {outage}; first write accepted by {rec.get('new_primary')}: "
                   f"{accepts} after the fault" + "".join(
                       f"; {why}" for why in outage_vs_downtime(cell, rec)))
    return out


def _span(a: Any, b: Any) -> str:
    """``10.028 s → 10.084 s``: to the millisecond (these spans differ by milliseconds)."""
    return f"{float(a):.3f} s → {float(b):.3f} s"


def outage_vs_downtime(cell: dict[str, Any], rec: dict[str, Any]) -> list[str]:
    """Why a writing workload's downtime around a failover is not the failover's outage, when
    the two differ: both spans, in seconds since the load started. The failover's outage runs
    from the last write acknowledged before the first failure to the first acknowledged write
    *invoked after* that failure, and ends there; ``downtime`` closes a window at the first
    success of any write (one in flight through the outage too) and opens another at the next
    failure, so failures after the failover's end, a hang before the first failure, or an
    in-flight success make them differ (docs/results.md, "failover")."""
    out: list[str] = []
    fault_at = rec.get("fault_at")
    if not _num(fault_at) or rec.get("open_at_end"):
        return out
    down = _subjects(cell, "downtime")
    for w, agg in _dict(rec.get("workloads")).items():
        eps = [e for ep, e in _dict(rec.get("endpoints")).items()
               if isinstance(e, dict) and ep in (agg.get("endpoints") or [])
               and _num(e.get("outage"))]
        if not eps:
            continue
        worst = max(eps, key=lambda e: float(e["outage"]))
        start, end = worst.get("last_ok_at"), worst.get("recovered_at")
        if not _num(start) or not _num(end):
            continue
        wins = [x for x in _dict(down.get(w)).get("windows") or [] if isinstance(x, dict)
                and _num(x.get("start")) and _num(x.get("end"))
                and x["end"] >= start and x["start"] <= end + 1.0]  # this failover's
        if not wins:
            continue
        longest = max(wins, key=lambda x: float(x["end"]) - float(x["start"]))
        length = float(longest["end"]) - float(longest["start"])
        if fmt_duration(length) == fmt_duration(worst["outage"]):
            continue
        n = len(wins)
        out.append(f"downtime({w}) {fmt_duration(length)} "
                   f"({_span(longest['start'], longest['end'])}"
                   + (f", {n} windows here" if n > 1 else "")
                   + f") vs the failover's {_span(start, end)}: a window ends at any write's "
                   "success and reopens at the next failure; the failover's ends at the first "
                   "write invoked after the first failure")
    return out


TIMELINE_HEADING = "faults [dim](seconds since the load started)[/]"


def render_timeline(summary: dict[str, Any], console: Console) -> None:
    """The faults (and promotes) above the matrix: one line per fault for a single cell, one
    line per cell otherwise."""
    cells = [c for c in summary.get("cells", []) if isinstance(c, dict)]
    rows: list[list[str]] = []
    if len(cells) == 1:
        rows = [[at, what] for at, what in fault_lines(cells[0])]
        promotes = failover_lines(cells[0])
    else:
        promotes = []
        for c in cells:
            text = " · ".join(f"{at} {what}" for at, what in fault_lines(c))
            if text or failover_lines(c):
                rows.append([str(c.get("label") or f"cell {c['index']}"),
                             "; ".join([text or "no fault", *failover_lines(c)])])
    if rows:
        console.print(TIMELINE_HEADING)
        justify = ["right" if len(cells) == 1 else "left", "left"]
        t = fitted_table(["", ""], rows, console, justify, box=None, show_header=False,
                         padding=(0, 1), pad_edge=False)
        if t is not None:
            console.print(t)
        else:
            for at, what in rows:
                for line in block_lines(at, [("", what)], console.width, indent="    "):
                    console.print(escape(line), soft_wrap=True)
    for line in promotes:
        console.print(escape(line))
