"""Generate docs/validity.md: run every calibration experiment on real servers, on each
back-end, and write, for each expectation, the physical truth it states (value and tolerance),
what was measured on each back-end and the verdict. Nothing in the table is typed by hand.

    make validity                                   # = .venv/bin/python tools/validity.py
    python tools/validity.py --backend containers --save DIR --out /tmp/v.md   # one back-end
    python tools/validity.py --from DIR             # render saved summaries, run nothing

Each back-end is a column, and so is the native back-end without templates
(``native-templates-off``: ``LAB_TEMPLATES=off``, every node initialised again), so the page
shows that templates change no result. A calibration runs on the container back-end when
``lab check`` accepts it there (``dsl/backends.py`` decides); the others are shown as "not on
containers yet", with the reason, never skipped silently nor run natively in their place.

Searches (``SEARCHES``) are calibrations too: ``lab search FILE --knob ... --json`` bisects
one knob of a file whose threshold is known from its settings, and the row says the truth (the
interval the boundary must lie in, and why), the boundary found (low–high, with the number of
runs) and the verdict: it holds when the boundary found lies inside the truth interval,
**unknown** when the search found no boundary (counted with those that do not hold). On each
back-end (``lab search --backend``) where ``lab check`` accepts the file, as the runs.

``--save DIR`` keeps each run's ``lab run --json`` summary as ``DIR/<back-end>/<name>.json``
and each search's as ``DIR/<back-end>/search-<name>.json``; ``--from DIR`` renders from those
(a flat ``DIR/*.json`` is read as native), so the back-ends can be run at different times and
the table rendered once.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
CALIBRATION = ROOT / "experiments" / "calibration"
OUT = ROOT / "docs" / "validity.md"
BACKENDS = ("native", "containers")
# A column is a back-end and the environment its runs get. ``native-templates-off`` is the
# native back-end with every node initialised again (``LAB_TEMPLATES=off``, runners/templates.py):
# templates must never change a result (issue 25), so the same expectations hold in both
# native columns. It runs the experiments, not the searches (a search is a dozen runs of one
# file: the experiments already compare the two).
TEMPLATES_OFF = "native-templates-off"
COLUMNS: dict[str, tuple[str, dict[str, str]]] = {
    "native": ("native", {}),
    TEMPLATES_OFF: ("native", {"LAB_TEMPLATES": "off"}),
    "containers": ("containers", {}),
}
# catalogue experiments whose expectations are also a truth of known size
CATALOGUE_TRUTHS = ("relay-log-recovery.exp",
                    "primary-primary-collisions.exp", "primary-primary-offsets.exp",
                    "semi-sync-failover.exp")
UNSUPPORTED = "unsupported"  # a summary's status: lab check refuses it on that back-end
SEARCH = "search"  # a summary's kind: a lab search, not a lab run


class Search(NamedTuple):
    """One ``lab search`` whose boundary is known from the file's settings: it must lie
    between ``truth_low`` and ``truth_high`` (in the knob's unit, seconds for a time). A named
    tuple, not a dataclass: the tests load this script by path, outside ``sys.modules``."""

    name: str
    file: str  # relative to the repository
    knob: str
    low: str
    high: str
    resolution: str
    fails: int
    of: int
    truth_low: float
    truth_high: float
    unit: str
    reason: str

    def command(self) -> str:
        return (f"lab search --knob {self.knob} --from {self.low} --to {self.high} "
                f"--resolution {self.resolution} --fails {self.fails} --of {self.of}")


SEARCHES = (
    Search("promote-delay", "experiments/search-promote-delay.exp", knob="26:at",
           low="6.2s", high="9.2s", resolution="400ms", fails=2, of=3,
           truth_low=7.0, truth_high=9.0, unit="s",
           reason="db1 killed at 6 s; db2's MASTER_DELAY 2 counts whole seconds, so the last "
                  "acknowledged write is applied 1 s to 3 s after the kill: a promote before "
                  "7 s always loses writes, one after 9 s never does; workshop lesson 29"),
)


def experiments() -> list[Path]:
    return sorted(CALIBRATION.glob("*.exp")) + [
        ROOT / "experiments" / name for name in CATALOGUE_TRUTHS]


def _git_commit() -> str:
    try:
        h = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                           capture_output=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=ROOT, text=True, capture_output=True).stdout.strip()
        return h + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _engine() -> str:
    """The container engine and node image, as `lab doctor` says them."""
    try:
        from runners.containers.status import survey

        s = survey()
        return f"{s.engine}, image {s.image.tag}"
    except Exception as e:  # noqa: BLE001 - the table is still worth writing
        return f"unknown ({str(e)[:80]})"


def machine(backends: Sequence[str] = ("native",)) -> dict[str, str]:
    mem = ""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    info = {"host": platform.node(), "cpus": str(os.cpu_count()), "memory": mem,
            "kernel": platform.release(), "commit": _git_commit(),
            "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")}
    if any(COLUMNS.get(b, (b, {}))[0] == "containers" for b in backends):
        info["engine"] = _engine()
    return info


def label(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def refusals(path: Path, backend: str) -> list[str]:
    """Why ``lab check`` refuses ``path`` on ``backend`` (a back-end or a column; empty: it
    runs there)."""
    backend = COLUMNS.get(backend, (backend, {}))[0]
    if backend == "native":
        return []
    from dsl.api import backend_errors

    return [e.message for e in backend_errors(path, backend)]


def _lab_backend(column: str) -> tuple[list[str], dict[str, str]]:
    """The ``--backend`` arguments and the environment of a column's runs."""
    backend, extra = COLUMNS.get(column, (column, {}))
    env = dict(os.environ, **extra)
    return ([] if backend == "native" else ["--backend", backend]), env


def run_one(path: Path, home: Path, backend: str = "native") -> dict[str, Any]:
    """``lab run --json`` of ``path`` in the column ``backend``, as a summary."""
    why = refusals(path, backend)
    if why:
        return {"experiment": path.stem, "file": label(path), "backend": backend,
                "status": UNSUPPORTED, "cells": [], "reasons": why}
    args, env = _lab_backend(backend)
    env["LAB_HOME"] = str(home)
    cmd = [sys.executable, "-m", "lab.cli", "run", str(path), "--json", *args]
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    if not out.stdout.strip():
        return {"experiment": path.stem, "file": label(path), "backend": backend,
                "status": "error", "cells": [],
                "message": out.stderr.strip().splitlines()[-1:] or ["no output"]}
    summary: dict[str, Any] = json.loads(out.stdout)
    summary["file"] = label(path)
    summary["backend"] = backend
    return summary


def run_search(search: Search, home: Path, backend: str = "native") -> dict[str, Any]:
    """``lab search ... --json`` of ``search`` on ``backend``, as a summary ``render`` reads
    (``kind`` ``search``, the declared search, and the command's JSON as ``result``)."""
    path = ROOT / search.file
    base = {"kind": SEARCH, "experiment": f"search-{search.name}", "file": label(path),
            "backend": backend, "search": search._asdict()}
    why = refusals(path, backend)
    if why:
        return {**base, "status": UNSUPPORTED, "reasons": why}
    args, env = _lab_backend(backend)
    env["LAB_HOME"] = str(home)
    cmd = [sys.executable, "-m", "lab.cli", "search", str(path), "--knob", search.knob,
           "--from", search.low, "--to", search.high, "--resolution", search.resolution,
           "--fails", str(search.fails), "--of", str(search.of), "--json", *args]
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    try:
        result = json.loads(out.stdout)
    except json.JSONDecodeError:
        return {**base, "status": "error",
                "message": out.stderr.strip().splitlines()[-1:] or ["no output"]}
    return {**base, "status": "found" if result.get("boundary") else "no boundary",
            "result": result}


def _num(v: float, unit: str) -> str:
    return f"{round(v, 3):g} {unit}".rstrip()


def search_row(s: Mapping[str, Any]) -> tuple[tuple[str, str], str, bool]:
    """A search summary as ((file, expected), measured: verdict, held)."""
    d = s["search"]
    unit = str(d.get("unit", ""))
    expected = (f"`{d['knob']}` bisected (`--fails {d['fails']} --of {d['of']}`, resolution "
                f"{d['resolution']}): boundary within {_num(d['truth_low'], '')}–"
                f"{_num(d['truth_high'], unit)} ({_cell(d['reason'])})")
    key = (_name(s), expected)
    result = s.get("result")
    if not result:
        return key, f"{_cell(s.get('message'))} **error**", False
    runs = result.get("runs", 0)
    b = result.get("boundary")
    if not b:
        why = result.get("message") or "no boundary"
        return key, f"{_cell(why)} ({runs} runs): **unknown**", False
    inside = d["truth_low"] <= b["low"] and b["high"] <= d["truth_high"]
    measured = f"{_num(b['low'], '')}–{_num(b['high'], unit)} ({runs} runs)"
    return key, f"{measured}: {'holds' if inside else '**FAILS**'}", inside


def _cell(v: Any) -> str:
    if isinstance(v, list):
        v = "; ".join(str(x) for x in v)
    return str(v).replace("|", "\\|").replace("\n", " ")


def _rows(s: Mapping[str, Any]) -> list[tuple[tuple[str, str], str, bool | None]]:
    """One summary as ((experiment label, expected), cell text, passed) rows; ``passed`` is
    None for an observed report (no truth), False for an error."""
    name = s.get("file") or s.get("experiment", "?")
    if s.get("kind") == SEARCH:
        return [search_row(s)]
    if not s.get("cells"):
        return [((name, "the run"), f"{_cell(s.get('message'))} **error**", False)]
    out: list[tuple[tuple[str, str], str, bool | None]] = []
    for c in s["cells"]:
        lab_ = name if len(s["cells"]) == 1 else f"{name} [{c.get('label')}]"
        if c.get("error"):
            out.append(((lab_, "the run"), f"{_cell(c['error'])} **error**", False))
        for e in c.get("expectations", []):
            verdict = {True: "holds", False: "**FAILS**", None: "**unknown**"}[e["passed"]]
            # the figure with its note, up to "; expected …" (a note has ";" inside its
            # parenthesis: cutting at the first one left "(0 windows" unclosed)
            measured = _cell(str(e.get("explanation", "")).split("; expected ")[0])
            out.append(((lab_, f"`{_cell(e['text'])}`"), f"{measured}: {verdict}",
                        e["passed"] is True))
        for r in c.get("reports", []):
            out.append(((lab_, f"`{_cell(r['text'])}` (observed, no truth)"),
                        _cell(r["display"]), None))
    return out


def _name(s: Mapping[str, Any]) -> str:
    return str(s.get("file") or s.get("experiment", "?"))


def render(results: Mapping[str, Sequence[Mapping[str, Any]]] | Sequence[Mapping[str, Any]],
           info: Mapping[str, str]) -> str:
    """The page: one column per back-end of ``results`` (back-end -> its summaries; a plain
    list is the native back-end's). An experiment a back-end refused (status
    ``unsupported``) is "not on <back-end> yet" in that column, on every row of it."""
    by_backend: dict[str, list[Mapping[str, Any]]] = (
        {"native": list(results)} if not isinstance(results, Mapping)
        else {b: list(v) for b, v in results.items()})
    backends = [b for b in COLUMNS if b in by_backend] + \
        [b for b in by_backend if b not in COLUMNS]
    # every experiment, in the order first seen; its rows, in the order first seen
    order: list[str] = []
    for b in backends:
        for s in by_backend[b]:
            if _name(s) not in order:
                order.append(_name(s))
    cells: dict[str, dict[tuple[str, str], str]] = {b: {} for b in backends}
    refused: dict[str, dict[str, list[str]]] = {b: {} for b in backends}
    rows_of: dict[str, list[tuple[str, str]]] = {n: [] for n in order}
    failed = {b: 0 for b in backends}
    held = {b: 0 for b in backends}
    for b in backends:
        for s in by_backend[b]:
            if s.get("status") == UNSUPPORTED:
                refused[b][_name(s)] = [str(r) for r in s.get("reasons", [])]
                continue
            for key, text, passed in _rows(s):
                if key not in rows_of[_name(s)]:
                    rows_of[_name(s)].append(key)
                cells[b][key] = text
                if passed is False:
                    failed[b] += 1
                elif passed is True:
                    held[b] += 1
    lines = [
        "# Validity of the lab's measurements",
        "",
        "Generated by `make validity` (`tools/validity.py`); do not edit by hand. Each row is an",
        "expectation of a calibration experiment in `experiments/calibration/` (and of the",
        "catalogue experiments whose outcome is known exactly: relay-log recovery 5000/0, two",
        "primaries with and without offsets, a semi-synchronous failover): a fault of known size,",
        "and the figure the lab must report for it within a stated tolerance (the experiment's",
        "header comment says where each tolerance comes from). A `lab search` row bisects one",
        "knob of a file whose threshold is known from its settings: the boundary found must lie",
        "within the interval the settings give.",
        "",
        "Each back-end is a column: the same file, run unchanged (`lab run --backend ...`). An",
        "experiment `lab check` refuses on a back-end is \"not on <back-end> yet\" there, with the",
        "reason below the table; it is never run natively in its place.",
        *([f"The column `{TEMPLATES_OFF}` is the native back-end with `LAB_TEMPLATES=off`:",
           "every node's data directory initialised again instead of copied from the lab's",
           "cache of initialised ones. Templates must never change a result, so every",
           "expectation holds in both native columns (the searches run in the other columns",
           "only: \"not run\" there)."] if TEMPLATES_OFF in backends else []),
        "",
        f"- date: {info['date']}",
        f"- machine: {info['host']}, {info['cpus']} CPUs, {info['memory']}, "
        f"Linux {info['kernel']}",
        f"- commit: {info['commit']}",
        f"- back-ends: {', '.join(backends)}",
    ]
    if info.get("engine") and "containers" in backends:
        lines.append(f"- container engine: {info['engine']}")
    lines += [
        "",
        "| experiment | expected (truth and tolerance) | "
        + " | ".join(backends) + " |",
        "|---|---|" + "---|" * len(backends),
    ]
    for name in order:
        keys = rows_of[name] or [(name, "the run")]
        for key in keys:
            shown = []
            for b in backends:
                if name in refused[b]:
                    shown.append(f"not on {b} yet")
                elif not any(_name(s) == name for s in by_backend[b]):
                    shown.append("not run")
                else:
                    shown.append(cells[b].get(key, "—"))
            lines.append(f"| {_cell(key[0])} | {key[1]} | " + " | ".join(shown) + " |")
    lines.append("")
    for b in backends:
        ran = len({_name(s) for s in by_backend[b]}) - len(refused[b])
        verdict = ("every expectation holds" if not failed[b]
                   else f"{failed[b]} do not hold")
        lines.append(f"- {b}: {ran} experiment(s) run, {held[b]} expectation(s) hold; "
                     f"{verdict}." + (f" {len(refused[b])} not on {b} yet." if refused[b]
                                      else ""))
    if not any(failed.values()):
        lines += ["", "Every expectation holds."]
    else:
        lines += ["", f"{sum(failed.values())} do not hold."]
    for b in backends:
        if refused[b]:
            lines += ["", f"## Not on {b} yet", "",
                      f"What `lab check --backend {b}` says of each (from `dsl/backends.py`)"
                      + (", or why a search cannot run there:"
                         if any(s.get("kind") == SEARCH and s.get("status") == UNSUPPORTED
                                for s in by_backend[b]) else ":"),
                      ""]
            for name, why in refused[b].items():
                lines.append(f"- {name}: " + "; ".join(_cell(w) for w in why))
    lines.append("")
    return "\n".join(lines)


def load(src: Path) -> dict[str, list[dict[str, Any]]]:
    """Saved summaries: ``src/<back-end>/*.json``, or a flat ``src/*.json`` (native)."""
    out: dict[str, list[dict[str, Any]]] = {}
    flat = sorted(src.glob("*.json"))
    if flat:
        out["native"] = [json.loads(p.read_text()) for p in flat]
    for d in sorted(p for p in src.iterdir() if p.is_dir()):
        got = [json.loads(p.read_text()) for p in sorted(d.glob("*.json"))]
        if got:
            out[d.name] = got
    return out


def save(summary: Mapping[str, Any], dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(summary, indent=1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--from", dest="src", help="render saved summaries (DIR/<back-end>/*.json)")
    ap.add_argument("--save", help="keep each summary as DIR/<back-end>/<experiment>.json")
    ap.add_argument("--backend", choices=(*COLUMNS, "all"), default="all",
                    help="run one column only (a back-end, or native-templates-off; default: "
                         "every column)")
    ap.add_argument("--only", help="comma-separated experiment names (e.g. outage,split-brain,"
                                   "search-promote-delay)")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)
    backends = list(COLUMNS) if args.backend == "all" else [args.backend]
    if args.src:
        results = load(Path(args.src))
    else:
        paths = experiments()
        searches = list(SEARCHES)
        if args.only:
            wanted = {n.strip().removesuffix(".exp") for n in args.only.split(",")}
            paths = [p for p in paths if p.stem in wanted]
            searches = [x for x in searches if f"search-{x.name}" in wanted]
        results = {}
        with tempfile.TemporaryDirectory(prefix="lab-validity-") as home:
            for backend in backends:
                results[backend] = []
                for path in paths:
                    print(f"== {backend}: {label(path)}", file=sys.stderr, flush=True)
                    s = run_one(path, Path(home), backend)
                    if s.get("status") == UNSUPPORTED:
                        print(f"   not on {backend} yet: {s['reasons'][0]}", file=sys.stderr)
                    results[backend].append(s)
                    if args.save:
                        save(s, Path(args.save) / backend / f"{path.stem}.json")
                for search in searches if backend != TEMPLATES_OFF else []:
                    print(f"== {backend}: {search.command()} {search.file}", file=sys.stderr,
                          flush=True)
                    s = run_search(search, Path(home), backend)
                    if s.get("status") == UNSUPPORTED:
                        print(f"   not on {backend} yet: {s['reasons'][0]}", file=sys.stderr)
                    results[backend].append(s)
                    if args.save:
                        save(s, Path(args.save) / backend / f"search-{search.name}.json")
    text = render(results, machine(list(results)))
    Path(args.out).write_text(text)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0 if "\nEvery expectation holds." in text else 1


if __name__ == "__main__":
    sys.exit(main())
