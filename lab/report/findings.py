"""The findings under the compact summary's matrix (``lab.report.summary_matrix``), one function
a checker: what DBAs check by hand, when there is something to say — a split brain, errant
GTIDs, rows that differ between nodes, missing transactions — and the transactional ones with
the transactions of their smallest example (anomalies, lost updates, wrong bank totals; the
HTML report's cell header and a failed pytest cell show those too). ``lab.report.metrics`` says
which checker has one and in which order they come; ``lab show RUN --all`` has every figure.
"""

from __future__ import annotations

from typing import Any

from lab.figures_format import format_count
from lab.report.cell_fields import _checker, _dict, _num, _subjects
from lab.report.rows import CellInfo, fmt_count, fmt_duration, heal_changed, missing_before_heal


def split_brain_finding(cell: dict[str, Any], info: CellInfo) -> list[str]:
    """``split brain: 2.00 s ± 200 ms (1 window, 170 acknowledged writes inside)``."""
    sb = _dict(_checker(cell, "split_brain"))
    n = sb.get("count")
    if not (_num(n) and n > 0):
        return []
    bound = "≥ " if sb.get("lower_bound") else ""
    res = " ± 200 ms" if sb.get("resolution") else " (from the writes alone)"
    return [f"split brain: {bound}{fmt_duration(sb.get('longest'))}{res} "
            f"({format_count(n)} window{'s' if n != 1 else ''}, "
            f"{format_count(sb.get('writes') or 0)} acknowledged writes inside)"]


def errant_gtids_finding(cell: dict[str, Any], info: CellInfo) -> list[str]:
    """``errant GTIDs (not on db1): db2 150, db3 ≥ 2 (binlogs unread)``."""
    errant = []
    for node, figs in _subjects(cell, "errant_gtids").items():
        c = figs.get("count")
        if _num(c) and c > 0:
            errant.append(f"{node} {format_count(c)}")
        elif c is None and figs.get("at_least"):
            errant.append(f"{node} ≥ {format_count(figs.get('at_least'))} (binlogs unread)")
    if not errant:
        return []
    authority = _dict(_checker(cell, "errant_gtids")).get("authority")
    return [f"errant GTIDs (not on {authority}): " + ", ".join(errant)]


def divergence_finding(cell: dict[str, Any], info: CellInfo) -> list[str]:
    """``rows that differ from db1: lab.w_rogue 150 rows``."""
    dv = _dict(_checker(cell, "divergence"))
    differ = [f"{t} {format_count(f.get('rows'))} rows"
              for t, f in _subjects(cell, "divergence").items()
              if "." in t and " on " not in t and _num(f.get("rows")) and f["rows"] > 0]
    if not differ:
        return []
    return [f"rows that differ from {dv.get('reference')}: " + ", ".join(differ)]


ANOMALY_WORDS = {"g0": "G0", "g1a": "G1a", "g1b": "G1b", "g1c": "G1c", "g_single": "G-single",
                 "g2_item": "G2-item", "lost_update": "lost update", "internal": "internal",
                 "future_read": "future read", "duplicate": "duplicate",
                 "garbage": "garbage", "incompatible_order": "incompatible order",
                 "stale_read": "stale read"}


def _txn_text(t: dict[str, Any]) -> str:
    when = t.get("time") if _num(t.get("time")) else t.get("start")
    at = f" at {when:.3f} s" if _num(when) else ""
    return (f"{t.get('name', 'T')} ({t.get('outcome') or t.get('type')}, process "
            f"{t.get('process')} on {t.get('node') or '?'}{at}): {t.get('ops', t.get('value'))}")


def anomalies_finding(cell: dict[str, Any], info: CellInfo) -> list[str]:
    """Transactional anomalies of each list_append workload, by kind, each with the
    transactions of its smallest example."""
    out: list[str] = []
    for w, figs in _subjects(cell, "anomalies").items():
        n = figs.get("count")
        if not _num(n) or n <= 0:
            continue
        kinds = [f"{ANOMALY_WORDS[k]} {format_count(figs[k])}" for k in ANOMALY_WORDS
                 if _num(figs.get(k)) and figs[k] > 0]
        nots = ", ".join(figs.get("weakest_not") or figs.get("not_models") or [])
        out.append(f"{w}: {format_count(n)} anomalies in {format_count(figs.get('transactions'))}"
                   f" committed transactions ({', '.join(kinds)}); not {nots or '?'}")
        examples = figs.get("examples") if isinstance(figs.get("examples"), dict) else {}
        for k in ANOMALY_WORDS:
            ex = (examples or {}).get(k) or []
            if ex and isinstance(ex[0], dict):
                out.append(f"  {ANOMALY_WORDS[k]}: {ex[0].get('explanation', '')}")
                out.extend(f"    {_txn_text(t)}" for t in ex[0].get("txns") or []
                           if isinstance(t, dict))
    return out


def lost_updates_finding(cell: dict[str, Any], info: CellInfo) -> list[str]:
    """Acknowledged increments the counters do not show, with two that read the same value."""
    out: list[str] = []
    for w, figs in _subjects(cell, "lost_updates").items():
        lo, n = figs.get("at_least"), figs.get("count")
        if not _num(lo) or lo <= 0:
            continue
        amount = format_count(n) if _num(n) else f"≥ {format_count(lo)}"
        out.append(f"{w}: {amount} of {format_count(figs.get('acknowledged'))} acknowledged "
                   f"increments lost (counters grew by {format_count(figs.get('growth'))})")
        for pair in (figs.get("examples") or [])[:1]:
            out.append("  two increments read the same value: " + "; ".join(
                f"process {t.get('process')} on {t.get('node') or '?'} at "
                f"{t.get('start')} s read {t.get('value')}" for t in pair))
    return out


def bank_finding(cell: dict[str, Any], info: CellInfo) -> list[str]:
    """Reads of every balance whose total was wrong, with the first such read."""
    out: list[str] = []
    for w, figs in _subjects(cell, "bank").items():
        n = figs.get("count")
        if not _num(n) or (n <= 0 and not figs.get("created") and not figs.get("negative")):
            continue
        out.append(f"{w}: {format_count(n)} of {format_count(figs.get('reads'))} reads saw a "
                   f"total other than {format_count(figs.get('expected_total'))}; final total "
                   f"{format_count(figs.get('final_total'))}")
        for ex in (figs.get("examples") or [])[:1]:
            out.append(f"  process {ex.get('process')} on {ex.get('node') or '?'} at "
                       f"{ex.get('start')} s read {ex.get('value')} "
                       f"(total {ex.get('total')})")
    return out


def missing_lines(cell: dict[str, Any], info: CellInfo) -> list[str]:
    """Missing transactions when a node lacked any, before the heal or after settling, with
    both figures: the heal at the end may have changed the answer (a primary restarted lets a
    replica catch up), and an expectation may be on either (``missing_transactions(n)`` or
    ``.before_heal``). Not on Galera (no replica behind a primary)."""
    if info.topology == "galera":
        return []
    pairs = missing_before_heal(_dict(_checker(cell, "facts")))
    parts = []
    for node, (before, settled) in pairs.items():
        if not any(_num(v) and v > 0 for v in (before, settled)):
            continue
        text = f"{node} {fmt_count(before)} before the heal, {fmt_count(settled)} settled"
        if heal_changed(before, settled):
            text += " (the heal changed it)"
        parts.append(text)
    return ["missing transactions: " + "; ".join(parts)] if parts else []
