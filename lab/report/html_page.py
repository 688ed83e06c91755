"""The HTML report's fixed parts (``lab.report.html_report``): its style sheet, the script that
draws the charts and reports that they rendered (``data-charts-rendered``, ``data-chart-rects``),
and the page around them; the run's context at its top (``context_block``)."""

from __future__ import annotations

import html
from typing import Any


def context_block(ctx: dict[str, Any]) -> str:
    """What the run ran on, at the top: back-end, topology, engine, router, the versions, and
    each node's effective server config (folded)."""
    e = html.escape
    parts = [f"back-end <b>{e(str(ctx.get('backend') or 'unknown'))}</b>",
             f"topology <b>{e(str(ctx.get('topology') or 'unknown'))}</b>"]
    if ctx.get("engine"):
        parts.append(f"engine <b>{e(str(ctx['engine']))}</b>")
    if ctx.get("router"):
        parts.append(f"router <b>{e(str(ctx['router']))}</b>")
    if ctx.get("replication"):
        parts.append(f"replication {e(str(ctx['replication']))}"
                     + (" semi-sync" if ctx.get("semi_sync") else ""))
    out = ['<div class="context" id="context"><p>' + " · ".join(parts) + "</p>"]
    versions = ctx.get("versions") if isinstance(ctx.get("versions"), dict) else {}
    if versions:
        out.append('<p class="meta">versions: ' + ", ".join(
            f"{e(str(k))} <code>{e(str(v))}</code>" for k, v in versions.items()) + "</p>")
    images = ctx.get("images") if isinstance(ctx.get("images"), dict) else {}
    if images:
        out.append('<p class="meta">images: ' + ", ".join(
            f"{e(str(k))} <code>{e(str(v))}</code>" for k, v in images.items()) + "</p>")
    if not ctx.get("engine"):
        out.append('<p class="meta">this run was stored before the lab recorded what it ran on '
                   "(results database version 6)</p>")
    out.append(config_table(ctx.get("config"), ctx.get("router_settings")))
    return "\n".join(out) + "</div>"


def config_table(config: Any, router: Any) -> str:
    """Each node's effective server config (first cell), one column per node, folded."""
    if not isinstance(config, dict) or not config:
        return ""
    nodes = [n for n in config if isinstance(config[n], dict)]
    keys = list(dict.fromkeys(k for n in nodes for k in config[n]))
    e = html.escape
    rows = "".join(
        f"<tr><td><code>{e(k)}</code></td>"
        + "".join(f"<td>{e(str(config[n].get(k, '–')))}</td>" for n in nodes) + "</tr>"
        for k in keys)  # fmt: skip
    router_rows = ""
    if isinstance(router, dict) and router:
        router_rows = ('<p class="meta">router settings: ' + ", ".join(
            f"<code>{e(str(k))} = {e(str(v))}</code>" for k, v in router.items()) + "</p>")
    return ('<details class="config"><summary>effective server config '
            f"({len(nodes)} node{'s' if len(nodes) != 1 else ''}, {len(keys)} settings)"
            '</summary><table class="expectations"><thead><tr><th>setting</th>'
            + "".join(f"<th>{e(n)}</th>" for n in nodes) + "</tr></thead><tbody>" + rows
            + "</tbody></table>" + router_rows + "</details>")


CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 16px 20px;
       color: #222; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px 0; }
h2.section { grid-column: 1 / -1; font-size: 16px; margin: 18px 0 2px 0; padding-top: 6px;
             border-top: 1px solid #ddd; }
h2.section .hint { display: block; font-size: 12px; font-weight: normal; color: #666;
                   margin-top: 2px; }
h3 { font-size: 15px; margin: 4px 0; }
.meta { color: #555; font-size: 12px; margin: 2px 0; }
.grid { display: grid; gap: 6px 18px; align-items: start; }
.cellhead { border-bottom: 2px solid #444; padding-bottom: 4px; }
.status { padding: 1px 6px; border-radius: 3px; font-size: 12px; color: #fff;
          background: #777; }
.status.passed { background: #2e7d32; } .status.failed { background: #c62828; }
.status.error, .status.abandoned, .status.interrupted { background: #ef6c00; }
.error { color: #b71c1c; font-size: 13px; } .note { color: #8d6e00; font-size: 13px; }
pre.findings { white-space: pre-wrap; font-size: 12px; background: #fafafa; padding: 6px; }
.none { color: #777; font-style: italic; font-size: 13px; margin: 8px 0; }
table.expectations { border-collapse: collapse; width: 100%; font-size: 12px; }
table.expectations th { text-align: left; color: #555; font-weight: normal;
                        border-bottom: 1px solid #ccc; }
table.expectations td { padding: 3px 6px 3px 0; vertical-align: top;
                        border-bottom: 1px solid #eee; }
table.expectations td.verdict { font-weight: bold; white-space: nowrap; }
tr.pass td.verdict { color: #2e7d32; } tr.fail td.verdict { color: #c62828; }
tr.unknown td.verdict { color: #ef6c00; } tr.report td.verdict { color: #555; }
code { font-size: 12px; }
.context p { margin: 2px 0; font-size: 13px; }
details.config { font-size: 12px; margin: 4px 0; }
details.config table { width: auto; }
"""

SCRIPT = """
(function () {
  var config = {displaylogo: false, responsive: true};
  var jobs = CHARTS.map(function (c) {
    return Plotly.newPlot(c.id, c.fig.data, c.fig.layout, config);
  });
  Promise.all(jobs).then(function (divs) {
    var drawn = 0, rects = [];
    divs.forEach(function (gd) {
      if (gd.querySelector('svg.main-svg')) { drawn += 1; }
      var r = gd.getBoundingClientRect();
      rects.push([gd.id, Math.round(r.left + window.scrollX), Math.round(r.top + window.scrollY),
                  Math.round(r.width), Math.round(r.height)]);
    });
    document.body.dataset.chartRects = JSON.stringify(rects);
    document.body.dataset.chartsRendered = String(drawn);
  }).catch(function (e) { document.body.dataset.chartsError = String(e); });
})();
"""

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>{css}</style>
<script>{plotly}</script>
</head>
<body data-charts-expected="{expected}">
{header}
{body}
<script>var CHARTS = {charts};</script>
<script>{script}</script>
</body>
</html>
"""
