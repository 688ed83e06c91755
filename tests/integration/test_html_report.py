"""The HTML report of a real failover run: `lab run` of a tiny experiment (a primary killed, its
replica promoted behind HAProxy; about 8 s of load), then `lab report RUN --html`, opened in
headless Chromium with the network off: every chart rendered (DOM and screenshot)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.browser_check import find_chromium, open_page, problems, read_dom

from .conftest import ROOT, our_processes, require

LAB = [sys.executable, "-m", "lab.cli"]

EXPERIMENT = """experiment "html-report-failover" {
  duration 8s
  topology replication {
    engine mariadb
    primary db1
    replicas db2
    config { innodb_buffer_pool_size = 64M }
  }
  router haproxy {
    writer db1
    readers db2
    check every 500ms
  }
  workload writes: probe { target router.writer  every 10ms }
  workload ryw: read_your_writes { write router.writer  read db2 }
  at 3s kill db1
  at 3500ms promote db2
  expect failover.outage < 5s
}
"""


@pytest.mark.browser
def test_the_report_of_a_real_failover_renders_in_chromium(tmp_path: Path) -> None:
    require("mariadbd", "dbdeployer", "haproxy")
    if find_chromium() is None:
        pytest.skip("chromium is not installed")
    exp = tmp_path / "html-report-failover.exp"
    exp.write_text(EXPERIMENT)
    db = tmp_path / "results.db"
    env = dict(os.environ, LAB_HOME=str(tmp_path / "home"))
    run = subprocess.run([*LAB, "run", str(exp), "--json", "--db", str(db)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=180)  # fmt: skip
    assert run.returncode in (0, 1), run.stderr[-3000:]
    assert not our_processes()
    summary = json.loads(run.stdout)
    rid = summary["run_id"]
    assert summary["cells"][0]["measurements"]["failover"]["count"] == 1

    page = tmp_path / "report.html"
    rep = subprocess.run([*LAB, "report", rid[:6], "--html", str(page), "--db", str(db)],
                         cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout.startswith(f"wrote {page}: run {rid}, 1 cell, ")

    text, img = open_page(page, tmp_path / "report.png")
    dom = read_dom(text)
    assert problems(dom, img) == []
    # a failover run has at least these charts, each drawn
    for section in ("throughput", "latency", "downtime", "errors", "lag", "failover",
                    "visibility"):  # fmt: skip
        assert f"chart-{section}-1" in dom.charts, section
    assert "kill db1" in dom.charts["chart-throughput-1"].text
    assert "router.writer outage" in dom.charts["chart-failover-1"].text
