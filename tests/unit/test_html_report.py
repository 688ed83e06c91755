"""The HTML report's page (without a browser: tests/unit/test_html_report_browser.py opens it)
and `lab report`."""

from __future__ import annotations

import json
import math
import re
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from report_fixture import build_run

from lab.cli import main
from lab.report.data import CellReport, LatencySeries, RunReport, load_report
from lab.report.html_report import SECTIONS, WORKLOAD_COLORS, build_page, ecdf, log_ticks
from lab.store.db import Store
from tests.browser_check import decode_png


@pytest.fixture(scope="module")
def run_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    db = tmp_path_factory.mktemp("html") / "results.db"
    return db, build_run(db)


def _charts(page: str) -> list[dict[str, object]]:
    m = re.search(r"<script>var CHARTS = (.*?);</script>", page, re.S)
    assert m
    return json.loads(m.group(1).replace("<\\/", "</"))  # type: ignore[no-any-return]


def test_the_page_is_self_contained(run_db: tuple[Path, str]) -> None:
    db, rid = run_db
    with Store(db) as store:
        page, charts = build_page(load_report(store, rid))
    # plotly.js itself is in the page; nothing is fetched from anywhere
    assert "plotly.js v" in page and "Plotly.newPlot" in page
    assert not re.search(r"<script[^>]+src=", page)
    assert not re.search(r"<link[^>]+href=", page)
    # one chart per section per cell (the expectations are a table): 7 x 2 cells
    sections = [s for s, _, _ in SECTIONS if s != "expectations"]
    assert [c.id for c in charts] == [f"chart-{s}-{i}" for s in sections for i in (1, 2)]
    assert 'data-charts-expected="14"' in page
    assert [c["id"] for c in _charts(page)] == [c.id for c in charts]
    # cells side by side: a grid of two columns, cell a then cell b
    assert "repeat(2, minmax(" in page
    assert page.index("cell 1: a") < page.index("cell 2: b")


def test_the_charts_hold_the_runs_numbers(run_db: tuple[Path, str]) -> None:
    db, rid = run_db
    with Store(db) as store:
        report = load_report(store, rid)
    page, charts = build_page(report)
    figs = {c["id"]: c["fig"] for c in _charts(page)}
    tp = figs["chart-throughput-1"]
    traces = {t["name"]: t for t in tp["data"]}  # type: ignore[index]
    assert traces["writes"]["y"][:6] == [10.0, 10.0, 10.0, 10.0, 0.0, 5.0]
    assert traces["writes"]["line"]["color"] == WORKLOAD_COLORS[report.workloads.index("writes")]
    # the fault periods are shaded and labelled
    shapes = tp["layout"]["shapes"]  # type: ignore[index]
    assert [(s["x0"], s["x1"]) for s in shapes] == [(4.0, 8.6), (4.5, 4.8)]
    labels = [a["text"] for a in tp["layout"]["annotations"]]  # type: ignore[index]
    assert labels == ["kill db1 until start db1", "promote db2"]
    # both cells on the same axes
    assert tp["layout"]["xaxis"]["range"] == figs["chart-throughput-2"]["layout"]["xaxis"]["range"]  # type: ignore[index]
    # failover phases: the bars of cell a and b differ by the one second b took longer
    fo_a = {t["name"]: t["x"][0] for t in figs["chart-failover-1"]["data"]}  # type: ignore[index]
    fo_b = {t["name"]: t["x"][0] for t in figs["chart-failover-2"]["data"]}  # type: ignore[index]
    key = "first write failed → new primary accepted a write, router switched, every writer recovered"  # noqa: E501
    assert fo_a[key] == pytest.approx(1.5) and fo_b[key] == pytest.approx(2.5)
    # the expectations table
    assert "expect failover.outage &lt; 3s" in page
    assert page.count('<tr class="fail">') == 2 and page.count('<tr class="pass">') == 4


def test_the_visibility_curve() -> None:
    # 4 writes seen (one at once), 1 never seen: the curve stops at 80%
    xs, ys, ts = ecdf([0.0, 0.002, 0.002, 0.01], 5)
    assert xs == [0.1, 2.0, 2.0, 10.0] and ys == [20.0, 40.0, 60.0, 80.0]
    assert ts == [0.0, 0.002, 0.002, 0.01]
    # many writes: thinned by rank, the last point kept
    times = [i / 1000 for i in range(10_001)]
    xs, ys, _ = ecdf(times, 10_001, max_points=100)
    assert len(xs) <= 101 and ys[-1] == 100.0 and xs[-1] == 10_000.0
    assert ys == sorted(ys) and xs == sorted(xs)


def test_text_from_the_run_is_escaped() -> None:
    cell = CellReport(1, "<b>x</b>", "passed", "</script><script>alert(1)</script>", 1.0,
                      throughput={"w</script>": [1.0]})  # fmt: skip
    report = RunReport("r1", "<img src=x>", None, "passed", 0, None, None, None, [cell])
    page, _ = build_page(report)
    assert "<img src=x>" not in page and "&lt;img src=x&gt;" in page
    assert "<b>x</b>" not in page
    body = page[page.index("<body"):]
    assert body.count("</script>") == 2  # the data and the page's own script only


def test_the_claims_across_cells_are_on_the_page() -> None:
    claim = ("PASS expect throughput(sb) in relaxed >= 1.3 × throughput(sb) in durable: "
             "5,116/s vs 2,592/s, ratio 1.97")
    report = RunReport("r1", "e", None, "passed", 0, None, None, None,
                       [CellReport(1, "relaxed", "passed", None, 1.0)], claims=[claim])
    page, _ = build_page(report)
    assert "Claims across cells" in page and "ratio 1.97" in page and "× throughput" in page


def test_the_transactional_findings_are_on_the_page_with_their_transactions() -> None:
    cell = CellReport(1, "si_off", "passed", None, 1.0, findings=[
        "c: 1 of 2 acknowledged increments lost (counters grew by 1)",
        "  two increments read the same value: process 1 on g1 at 0.1 s read [0, 1]; "
        "process 2 on g2 at 0.2 s read [0, 1]"])
    page, _ = build_page(RunReport("r1", "e", None, "passed", 0, None, None, None, [cell]))
    assert '<pre class="findings">' in page
    assert "process 2 on g2 at 0.2 s read [0, 1]" in page


def test_a_cell_without_data_says_so() -> None:
    report = RunReport("r1", "e", None, "error", 3, "boom", None, None,
                       [CellReport(1, "base", "error", "mariadbd did not start", 0.0)])
    page, charts = build_page(report)
    assert charts == []
    assert "no operations completed in this cell" in page
    assert "no failover: no promote in this cell" in page
    assert "mariadbd did not start" in page and 'data-charts-expected="0"' in page


def test_lab_report_html(run_db: tuple[Path, str], tmp_path: Path,
                         capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    db, rid = run_db
    out = tmp_path / "r.html"
    assert main(["report", rid[:6], "--html", str(out), "--db", str(db)]) == 0
    assert capsys.readouterr().out.startswith(f"wrote {out}: run {rid}, 2 cells, 14 charts")
    assert out.read_text().count('class="chart"') == 14
    # without --html: the text report, as `lab show`
    assert main(["report", rid, "--db", str(db)]) == 0
    assert f"synthetic-failover — run {rid} — failed" in capsys.readouterr().out


def test_lab_report_errors(run_db: tuple[Path, str], tmp_path: Path,
                           capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    db, rid = run_db
    assert main(["report", "nope", "--html", str(tmp_path / "x.html"), "--db", str(db)]) == 2
    assert capsys.readouterr().err.strip() == "Error: no run 'nope' (see `lab runs`)"
    assert main(["report", rid, "--html", str(tmp_path / "no/such/dir.html"),
                 "--db", str(db)]) == 2  # fmt: skip
    assert capsys.readouterr().err.startswith(f"Error: cannot write {tmp_path}/no/such/dir.html")
    with Store(db) as store:
        store.create_run("other", run_id=rid[:3] + "f" * 9)
    assert main(["report", rid[:3], "--html", str(tmp_path / "x.html"), "--db", str(db)]) == 2
    assert "is ambiguous" in capsys.readouterr().err
    bad = tmp_path / "bad.db"
    bad.write_text("not a database")
    assert main(["report", rid, "--html", str(tmp_path / "x.html"), "--db", str(bad)]) == 3
    assert "is unreadable" in capsys.readouterr().err
    assert not (tmp_path / "x.html").exists()


def test_png_decoding(tmp_path: Path) -> None:
    """The screenshot decoder of the browser test: a 2x2 RGBA PNG (red, green / blue, white)
    written by hand with the Sub and Up filters."""
    rows = (b"\x01" + bytes([255, 0, 0, 255]) + bytes([1, 255, 0, 0]) +
            b"\x02" + bytes([1, 0, 255, 0]) + bytes([255, 0, 255, 0]))  # fmt: skip

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + body))
        return struct.pack(">I", len(body)) + kind + body + crc

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 2, 8, 6, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))  # fmt: skip
    img = decode_png(png)
    assert (img.width, img.height) == (2, 2)
    assert [img.pixel(0, 0), img.pixel(1, 0)] == [(255, 0, 0), (0, 255, 0)]
    assert [img.pixel(0, 1), img.pixel(1, 1)] == [(0, 0, 255), (255, 255, 255)]


# --- issue 24: max latency, partial second, log labels, coinciding lines, the run's context ---


def _figs(report: RunReport) -> dict[str, dict[str, Any]]:
    page, _ = build_page(report)
    return {c["id"]: c["fig"] for c in _charts(page)}  # type: ignore[misc]


def _lat_cell() -> CellReport:
    lat = LatencySeries(seconds=[0, 1, 2], p50=[0.001] * 3, p95=[0.001] * 3, p99=[0.001] * 3,
                        max=[0.001, 2.0, 0.001], count=[200] * 3)
    return CellReport(1, "a", "passed", None, 3.0, throughput={"w": [200.0] * 3, "v": [200.0] * 3},
                      latency={"w": lat}, latency_source={"w": "ops"})


def test_the_latency_chart_shows_each_seconds_slowest_operation() -> None:
    figs = _figs(RunReport("r1", "e", None, "passed", 0, None, None, None, [_lat_cell()]))
    traces = {t["name"]: t for t in figs["chart-latency-1"]["data"]}
    assert traces["w max"]["y"] == [1.0, 2000.0, 1.0]  # ms: the 2 s stall p99 hides
    assert traces["w max"]["mode"] == "markers"
    assert traces["w p99"]["y"] == [1.0, 1.0, 1.0]
    # the shared axis reaches the stall (log10 of ms)
    assert figs["chart-latency-1"]["layout"]["yaxis"]["range"][1] > math.log10(2000)


def test_log_axes_are_labelled_with_their_units() -> None:
    vals, texts = log_ticks(0.8, 2500)
    assert texts == ["1 ms", "2 ms", "5 ms", "10 ms", "20 ms", "50 ms", "100 ms", "200 ms",
                     "500 ms", "1 s", "2 s"]  # never a bare "5, 2, 1, 5"
    assert vals[0] == 1.0 and vals[-1] == 2000.0
    _, wide = log_ticks(0.01, 50_000)  # over many decades: the powers of ten only
    assert wide == ["0.01 ms", "0.1 ms", "1 ms", "10 ms", "100 ms", "1 s", "10 s"]
    figs = _figs(RunReport("r1", "e", None, "passed", 0, None, None, None, [_lat_cell()]))
    yaxis = figs["chart-latency-1"]["layout"]["yaxis"]
    assert "dtick" not in yaxis and "1 ms" in yaxis["ticktext"] and "1 s" in yaxis["ticktext"]


def test_lines_that_coincide_stay_distinguishable() -> None:
    """Two workloads with the same throughput, percentiles that are equal: each line has its
    own dash and marker, the percentiles are drawn wide to narrow."""
    figs = _figs(RunReport("r1", "e", None, "passed", 0, None, None, None, [_lat_cell()]))
    tp = figs["chart-throughput-1"]["data"]
    assert tp[0]["y"] == tp[1]["y"]
    styles = {(t["line"]["dash"], t["marker"]["symbol"]) for t in tp}
    assert len(styles) == 2
    lat = {t["name"]: t for t in figs["chart-latency-1"]["data"]}
    widths = [lat[f"w {p}"]["line"]["width"] for p in ("p50", "p95", "p99")]
    assert widths == sorted(widths, reverse=True) and len(set(widths)) == 3
    assert len({lat[f"w {p}"]["line"]["dash"] for p in ("p50", "p95", "p99")}) == 3


def test_the_last_partial_second_is_not_drawn_as_a_fall() -> None:
    cell = CellReport(1, "a", "passed", None, 10.4, throughput={"w": [100.0] * 10 + [40.0]})
    figs = _figs(RunReport("r1", "e", None, "passed", 0, None, None, None, [cell]))
    (trace,) = figs["chart-throughput-1"]["data"]
    assert trace["y"][-1] == pytest.approx(100.0) and trace["x"][-1] == pytest.approx(10.2)


def test_the_runs_context_is_at_the_top() -> None:
    ctx = {"backend": "containers", "topology": "galera", "engine": "mariadb 10.11",
           "router": "proxysql", "versions": {"lab": "0.1.0", "mariadbd": "10.11.19"},
           "images": {"g1": "rcl-node (the lab's node image)"},
           "config": {"g1": {"wsrep_on": "ON", "innodb_buffer_pool_size": "64M"},
                      "g2": {"wsrep_on": "ON"}},
           "router_settings": {"mysql-monitor_ping_interval": "200"}}
    report = RunReport("r1", "e", None, "passed", 0, None, None, None,
                       [CellReport(1, "a", "passed", None, 1.0)], context=ctx)
    page, _ = build_page(report)
    top = page[page.index("<body"):page.index('class="cellhead"')]
    for text in ("back-end <b>containers</b>", "topology <b>galera</b>",
                 "engine <b>mariadb 10.11</b>", "router <b>proxysql</b>",
                 "mariadbd <code>10.11.19</code>", "effective server config (2 nodes, 2 settings)",
                 "<code>innodb_buffer_pool_size</code></td><td>64M</td><td>–</td>",
                 "mysql-monitor_ping_interval = 200"):
        assert text in top, text
    old = RunReport("r1", "e", None, "passed", 0, None, None, None,
                    [CellReport(1, "a", "passed", None, 1.0)], context={"topology": "replication"})
    page, _ = build_page(old)
    assert "back-end <b>unknown</b>" in page and "stored before the lab recorded" in page


def test_lab_report_shows_the_context_stored_with_the_run(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    with Store(db) as store:
        rid = store.create_run("e", "e.exp", context={"backend": "native",
                                                       "topology": "replication",
                                                       "engine": "mariadb"})
        store.create_cell(rid, 1, "a")
        store.finish_cell(rid, 1, "passed", load_start_ns=0, load_end_ns=10**9)
        store.finish_run(rid, "passed", 0)
        report = load_report(store, rid)
    assert report.context["backend"] == "native"
    assert "back-end <b>native</b>" in build_page(report)[0]
