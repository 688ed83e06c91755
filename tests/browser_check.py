"""Open an HTML report in headless Chromium (Debian's ``chromium``) with the network off, and
check that its charts really rendered: in the DOM after the page's scripts ran, and in a
screenshot (decoded here with zlib: no imaging library needed).

Used by the unit test of the HTML report (a synthetic run) and by the integration test (a real
failover run).
"""

from __future__ import annotations

import html.parser
import json
import os
import shutil
import signal
import struct
import subprocess
import tempfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

WINDOW = (1400, 3000)
MIN_PIXELS = 25  # pixels of each trace colour a drawn chart must show
TOLERANCE = 24  # per channel: anti-aliasing keeps the core of a line within this


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _run_chromium(
    url: str, extra: Sequence[str], timeout: float
) -> subprocess.CompletedProcess[str]:
    exe = find_chromium()
    if exe is None:
        raise RuntimeError("chromium is not installed")
    with tempfile.TemporaryDirectory(prefix="rcl-chromium-") as profile:
        args = [
            exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", f"--user-data-dir={profile}",
            # the network off: every host unresolvable, every request to a dead proxy
            "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--hide-scrollbars", f"--window-size={WINDOW[0]},{WINDOW[1]}",
            "--virtual-time-budget=5000", *extra, url,
        ]  # fmt: skip
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)  # fmt: skip
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the browser we started, and its children
            proc.communicate()
            raise
        return subprocess.CompletedProcess(args, proc.returncode, out, err)


def open_page(page: Path, png: Path, timeout: float = 60) -> tuple[str, Image]:
    """The DOM after the page's scripts ran, and a screenshot of the window, in one run."""
    res = _run_chromium(page.resolve().as_uri(), ["--dump-dom", f"--screenshot={png}"], timeout)
    if res.returncode != 0 or not png.exists():
        raise RuntimeError(f"chromium exited {res.returncode}: {res.stderr[-2000:]}")
    return res.stdout, decode_png(png.read_bytes())


# --- PNG ------------------------------------------------------------------------------------


@dataclass
class Image:
    width: int
    height: int
    rgb: bytearray  # 3 bytes per pixel, row after row

    def pixel(self, x: int, y: int) -> tuple[int, int, int]:
        i = (y * self.width + x) * 3
        return self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]


def decode_png(data: bytes) -> Image:
    """8-bit RGB or RGBA, not interlaced (what Chromium writes)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat = 8, bytearray()
    width = height = depth = ctype = interlace = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type {ctype}")
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(bytes(idat))
    stride = width * bpp
    prev = bytearray(stride)
    rgb = bytearray(width * height * 3)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        _unfilter(f, line, prev, bpp)
        if bpp == 3:
            rgb[y * width * 3 : (y + 1) * width * 3] = line
        else:
            row = y * width * 3
            rgb[row : row + width * 3 : 3] = line[0::4]
            rgb[row + 1 : row + width * 3 : 3] = line[1::4]
            rgb[row + 2 : row + width * 3 : 3] = line[2::4]
        prev = line
    return Image(width, height, rgb)


def _unfilter(f: int, line: bytearray, prev: bytearray, bpp: int) -> None:
    n = len(line)
    if f == 0:
        return
    if f == 1:
        for i in range(bpp, n):
            line[i] = (line[i] + line[i - bpp]) & 0xFF
    elif f == 2:
        for i in range(n):
            line[i] = (line[i] + prev[i]) & 0xFF
    elif f == 3:
        for i in range(n):
            left = line[i - bpp] if i >= bpp else 0
            line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
    elif f == 4:
        for i in range(n):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            line[i] = (line[i] + pred) & 0xFF
    else:
        raise ValueError(f"unknown PNG filter {f}")


def hex_rgb(color: str) -> tuple[int, int, int]:
    c = color.lstrip("#")
    return int(c[0:2], 16), int(c[2:4], 16), int(c[4:6], 16)


def count_color(img: Image, rect: tuple[int, int, int, int], color: tuple[int, int, int],
                tol: int = TOLERANCE) -> int:  # fmt: skip
    """Pixels within ``tol`` of ``color`` in ``rect`` (x, y, width, height). Each channel of a
    row is mapped to 1 (close) or 0 with ``bytes.translate``; the pixels close in all three
    are the bits of the AND of the three (C speed: a screenshot has millions of pixels)."""
    x0, y0, w, h = rect
    tables = [bytes(1 if abs(v - c) <= tol else 0 for v in range(256)) for c in color]
    lo, hi = max(0, x0), min(img.width, x0 + w)
    n = 0
    for y in range(max(0, y0), min(img.height, y0 + h)):
        row = img.rgb[(y * img.width + lo) * 3 : (y * img.width + hi) * 3]
        r, g, b = (int.from_bytes(bytes(row[k::3]).translate(tables[k])) for k in range(3))
        n += (r & g & b).bit_count()
    return n


# --- the rendered DOM -------------------------------------------------------------------------


@dataclass
class ChartDom:
    id: str
    section: str
    colors: list[str]
    main_svg: int = 0  # <svg class="main-svg"> inside
    traces: int = 0  # Plotly trace groups (<g class="trace ...">) inside
    marks: int = 0  # drawn paths and points inside the traces
    text: str = ""  # the text of the chart (legend, labels)


class _DomReader(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.body: dict[str, str] = {}
        self.charts: dict[str, ChartDom] = {}
        self._stack: list[tuple[str, ChartDom | None, bool]] = []  # tag, chart, a trace group

    def _current(self) -> ChartDom | None:
        for _, c, _ in reversed(self._stack):
            if c is not None:
                return c
        return None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "body":
            self.body = a
        cls = a.get("class", "").split()
        chart: ChartDom | None = None
        if tag == "div" and "chart" in cls and a.get("id"):
            chart = ChartDom(a["id"], a.get("data-section", ""),
                             json.loads(a.get("data-colors") or "[]"))  # fmt: skip
            self.charts[chart.id] = chart
        cur = chart or self._current()
        is_trace = tag == "g" and "trace" in cls
        if cur is not None:
            if tag == "svg" and "main-svg" in cls:
                cur.main_svg += 1
            if is_trace:
                cur.traces += 1
            in_trace = any(t for _, _, t in self._stack)
            if in_trace and tag == "path" and a.get("d", "") not in ("", "M0,0Z"):
                cur.marks += 1
        if tag not in _VOID:
            self._stack.append((tag, chart, is_trace))

    def handle_endtag(self, tag: str) -> None:
        while self._stack:
            t, _, _ = self._stack.pop()
            if t == tag:
                break

    def handle_data(self, data: str) -> None:
        cur = self._current()
        if cur is not None and data.strip():
            cur.text += data.strip() + " "


_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
                   "source", "track", "wbr"})  # fmt: skip


@dataclass
class Rendered:
    expected: int | None
    rendered: int | None
    error: str | None
    charts: dict[str, ChartDom]
    rects: dict[str, tuple[int, int, int, int]]


def read_dom(dom: str) -> Rendered:
    r = _DomReader()
    r.feed(dom)

    def num(k: str) -> int | None:
        v = r.body.get(k)
        return int(v) if v and v.isdigit() else None

    rects = {str(i): (int(x), int(y), int(w), int(h))
             for i, x, y, w, h in json.loads(r.body.get("data-chart-rects") or "[]")}  # fmt: skip
    return Rendered(num("data-charts-expected"), num("data-charts-rendered"),
                    r.body.get("data-charts-error"), r.charts, rects)  # fmt: skip


def problems(rendered: Rendered, img: Image, min_pixels: int = MIN_PIXELS) -> list[str]:
    """What shows that a chart did not render: empty when every chart is drawn, in the DOM
    (Plotly's SVG with traces and marks) and on the screenshot (its trace colours)."""
    out: list[str] = []
    if rendered.error:
        out.append(f"the page's script failed: {rendered.error}")
    if not rendered.expected:
        out.append("the page declares no chart")
    if rendered.rendered != rendered.expected:
        out.append(f"{rendered.rendered} charts rendered of {rendered.expected}")
    if len(rendered.charts) != (rendered.expected or 0):
        out.append(f"{len(rendered.charts)} chart elements, {rendered.expected} expected")
    for cid, ch in rendered.charts.items():
        if ch.main_svg == 0 or ch.traces == 0 or ch.marks == 0:
            out.append(f"{cid}: no Plotly SVG with drawn traces (svg {ch.main_svg}, traces "
                       f"{ch.traces}, marks {ch.marks})")  # fmt: skip
            continue
        rect = rendered.rects.get(cid)
        if rect is None:
            out.append(f"{cid}: no position recorded")
            continue
        if rect[1] + rect[3] > img.height or rect[2] < 100 or rect[3] < 100:
            out.append(f"{cid}: at {rect}, not inside the {img.width}x{img.height} screenshot")
            continue
        if not ch.colors:
            out.append(f"{cid}: no trace colour declared")
        for col in ch.colors:
            n = count_color(img, rect, hex_rgb(col))
            if n < min_pixels:
                out.append(f"{cid}: {n} pixels of its trace colour {col} on the screenshot")
    return out
