"""The HTML report of a failover run opened in a real browser: headless Chromium, network off.

The page's own script says how many charts hold Plotly's SVG once drawn and where they are;
the DOM after the scripts ran must show every chart with drawn traces, and the screenshot must
show each chart's trace colours inside its box. A page whose charts did not draw fails (the
control below proves it). No servers: it runs with the unit tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from report_fixture import build_run

from lab.report import html_report
from lab.report.data import load_report
from lab.store.db import Store
from tests.browser_check import find_chromium, open_page, problems, read_dom

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(find_chromium() is None, reason="chromium is not installed"),
]


def test_the_failover_report_renders_its_charts_in_chromium(tmp_path: Path) -> None:
    db = tmp_path / "results.db"
    rid = build_run(db)
    with Store(db) as store:
        charts = html_report.write_html(load_report(store, rid), tmp_path / "report.html")
    assert len(charts) == 14  # 7 charts x 2 cells

    text, img = open_page(tmp_path / "report.html", tmp_path / "report.png")
    dom = read_dom(text)
    assert problems(dom, img) == []
    assert dom.expected == dom.rendered == 14
    assert set(dom.charts) == {c.id for c in charts}
    # what Plotly drew says what the run holds: labels, legends, durations
    tp = dom.charts["chart-throughput-1"]
    assert "kill db1 until start db1" in tp.text and "promote db2" in tp.text
    assert "writes" in tp.text and "ryw" in tp.text
    assert "1.50 s" in dom.charts["chart-failover-1"].text
    assert "2.50 s" in dom.charts["chart-failover-2"].text
    assert "2013 lost connection during query" in dom.charts["chart-errors-1"].text
    assert "db3 unreadable" in dom.charts["chart-lag-2"].text


def test_a_page_whose_charts_did_not_draw_fails_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a stand-in for plotly.js that leaves an SVG with an empty grey trace in each chart: the
    # DOM looks drawn, the screenshot shows none of the trace colours
    fake = """window.Plotly = {newPlot: function (id) {
      var gd = document.getElementById(id);
      gd.innerHTML = '<svg class="main-svg" width="600" height="280"><g class="trace">' +
        '<path d="M10,10L500,200" stroke="#aaaaaa" stroke-width="2"></path></g></svg>';
      return Promise.resolve(gd);
    }};"""
    monkeypatch.setattr(html_report, "get_plotlyjs", lambda: fake)
    db = tmp_path / "results.db"
    rid = build_run(db)
    with Store(db) as store:
        html_report.write_html(load_report(store, rid), tmp_path / "fake.html")
    text, img = open_page(tmp_path / "fake.html", tmp_path / "fake.png")
    dom = read_dom(text)
    assert dom.rendered == dom.expected == 14  # the page claims its charts...
    found = problems(dom, img)
    # ...but none of them shows its trace colours
    assert len({p.split(":")[0] for p in found}) == 14, found
    assert all("pixels of its trace colour" in p for p in found)
