"""The figures of a list of split-brain windows, the same whether they came from ``read_only``
samples (``split_brain``) or from Galera's primary components (``galera_split_brain``): each
window is a dict with ``seconds`` and ``open`` (still open when the samples end)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_WINDOWS = 100  # windows listed in the metrics (all are counted)


def window_metrics(windows: list[dict[str, Any]], *, writes: int,
                   by_workload: Mapping[str, int], lower_bound: bool, evidence: str,
                   resolution: float, topology: Any, subjects: dict[str, Any]
                   ) -> dict[str, Any]:
    """count, longest, total, the windows (at most ``MAX_WINDOWS``), and whether the longest
    is only a lower bound (``lower_bound``, or the longest window was still open)."""
    lengths = [w["seconds"] for w in windows]
    longest = max(lengths) if lengths else 0.0
    longest_open = any(w["open"] for w in windows if w["seconds"] == longest)
    return {
        "count": len(windows),
        "longest": longest,
        "total": sum(lengths),
        "writes": writes,
        "writes_by_workload": dict(sorted(by_workload.items())),
        "windows": windows[:MAX_WINDOWS],
        "windows_truncated": len(windows) > MAX_WINDOWS,
        "lower_bound": lower_bound or longest_open,
        "evidence": evidence,
        "resolution": resolution,
        "topology": topology,
        "subjects": subjects,
    }
