"""One per-metric presentation table (``lab.report.metrics.METRIC_VIEWS``, issue 24 item 2):
every checker has its entry, every presenter reads the table, and no presenter keeps a list of
metrics of its own (a tuple, list, set or dict of two or more checker names)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from lab.judge.checkers import ALL_CHECKERS
from lab.report import html_report, measurements, metrics, summary_matrix
from lab.report.metrics import METRIC_VIEWS, VIEWS

ROOT = Path(__file__).resolve().parents[2]
# every module that shows figures; the table itself is lab/report/metrics.py
PRESENTERS = sorted({*(ROOT / "lab" / "report").glob("*.py"), ROOT / "lab" / "figures_format.py",
                     ROOT / "lab" / "pytest" / "cell_failure.py", ROOT / "lab" / "run" / "live.py"}
                    - {ROOT / "lab" / "report" / "metrics.py"})


def test_every_checker_has_one_entry_and_every_entry_a_checker() -> None:
    names = [v.name for v in METRIC_VIEWS]
    assert len(names) == len(set(names)), "a checker has two entries"
    assert sorted(set(ALL_CHECKERS) - set(names)) == [], "checkers with no entry in METRIC_VIEWS"
    assert sorted(set(names) - set(ALL_CHECKERS)) == [], "entries that name no checker"


def _listed(node: ast.AST) -> list[str]:
    """The checker names a literal collection holds (its keys, for a dict)."""
    if isinstance(node, ast.Dict):
        items: list[ast.expr | None] = list(node.keys)
    elif isinstance(node, ast.Tuple | ast.List | ast.Set):
        items = list(node.elts)
    else:
        return []
    return [x.value for x in items if isinstance(x, ast.Constant) and x.value in ALL_CHECKERS]


def test_no_presenter_lists_metrics_of_its_own() -> None:
    assert len(PRESENTERS) >= 12 and all(p.exists() for p in PRESENTERS)
    found = []
    for path in PRESENTERS:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = _listed(node)
            if len(names) >= 2:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {names}")
    assert found == [], "lists of metrics outside lab.report.metrics:\n" + "\n".join(found)


def test_the_scan_finds_a_list_of_metrics() -> None:
    """The check above would see one: a tuple of checker names, a dict keyed by them."""
    code = 'A = ("downtime", "latency")\nB = {"errors": 1, "stalls": 2}\nC = ("latency", "x")'
    found = [_listed(n) for n in ast.walk(ast.parse(code))]
    assert [f for f in found if len(f) >= 2] == [["downtime", "latency"], ["errors", "stalls"]]


def test_the_presenters_take_their_columns_sections_and_charts_from_the_table() -> None:
    assert not hasattr(measurements, "RENDERERS")
    assert summary_matrix.COLUMNS == metrics.matrix_columns()
    assert summary_matrix.COLUMNS == ("downtime", "stale reads", "visible p50 / p99",
                                      "lost writes", "errors", "lag max", "throughput",
                                      "latency p50 / p99")
    chart_ids = [c.id for _, c in metrics.charts()]
    assert [s[0] for s in html_report.SECTIONS] == ["expectations", *chart_ids]
    assert set(html_report.BUILDERS) == set(chart_ids)
    # a column position or chart position is used once
    positions = {}
    for v in METRIC_VIEWS:
        for pos, heading in v.matrix:
            assert positions.setdefault(pos, heading) == heading, v.name
    assert len({c.position for _, c in metrics.charts()}) == len(chart_ids)


def _summary() -> dict[str, Any]:
    """A cell with figures of several checkers, as the stored summary holds them."""
    meas = {
        "downtime": {"subjects": {"w": {"longest": 1.5, "total": 2.0, "count": 2}}},
        "errors": {"subjects": {"w": {"total": 3, "ratio": 0.01, "ops": 300}}},
        "throughput": {"subjects": {"w": {"mean": 30.0}}},
        "latency": {"subjects": {"w": {"p50": 0.002, "p99": 0.02, "max": 0.1}}},
        "split_brain": {"count": 1, "longest": 0.4, "total": 0.4, "writes": 3,
                        "resolution": 0.2},
        "divergence": {"reference": "db1", "subjects": {"lab.t": {"rows": 2, "missing": 2,
                                                                  "extra": 0, "different": 0}}},
    }
    return {"experiment": "e", "run_id": "r", "status": "passed",
            "cells": [{"index": 0, "label": "#1", "measurements": meas}]}


def test_show_all_rows_follow_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """The measurements table is in the table's order: reversed, its rows come reversed."""
    s = _summary()
    first = [name.split("(")[0].split(".")[0] for name, _ in measurements.measurement_rows(s)]
    groups = list(dict.fromkeys(first))
    assert groups == [v.name for v in METRIC_VIEWS if v.name in groups]
    monkeypatch.setattr(measurements, "METRIC_VIEWS", tuple(reversed(METRIC_VIEWS)))
    again = [name.split("(")[0].split(".")[0] for name, _ in measurements.measurement_rows(s)]
    assert list(dict.fromkeys(again)) == list(reversed(groups))


def test_findings_follow_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    cell = _summary()["cells"][0]
    lines = summary_matrix.findings_lines(cell)
    assert [x.split(":")[0] for x in lines] == ["split brain", "rows that differ from db1"]
    monkeypatch.setattr(metrics, "METRIC_VIEWS", tuple(reversed(METRIC_VIEWS)))
    assert summary_matrix.findings_lines(cell) == list(reversed(lines))


def test_the_matrix_fills_only_the_table_s_columns() -> None:
    m = summary_matrix.build_matrix(_summary())
    used = {col for r in m.rows for col in r.values}
    assert used <= set(summary_matrix.COLUMNS)
    assert m.columns == ["downtime", "lost writes", "errors", "throughput", "latency p50 / p99"]


def test_compare_shows_what_the_table_says() -> None:
    from lab.report.compare import headline_metrics, load_cell

    s = _summary()
    data = load_cell(None, s, s["cells"][0])
    got = [(m.name, m.subject, m.stat) for m in headline_metrics(data)]
    assert got == [("downtime", "w", "max"), ("downtime", "w", "total"),
                   ("errors", "w", "count"), ("errors", "w", "ratio"),
                   ("throughput", "w", "mean"), ("latency", "w", "p50"), ("latency", "w", "p99")]
    assert VIEWS["latency"].last_from_operations and not VIEWS["throughput"].last_from_operations
