"""The search calibration of docs/validity.md: a `lab search --json` result rendered as a row
against the interval the file's settings give, and saved summaries read back."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from lab.explore.schedules import Trial
from lab.explore.search import Boundary, Point, summary

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("validity", ROOT / "tools" / "validity.py")
assert _spec and _spec.loader
validity = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(validity)

INFO = {"date": "2026-11-26 10:00 UTC", "host": "h", "cpus": "2", "memory": "23.4 GiB",
        "kernel": "6.1", "commit": "abc1234"}
PROMOTE = validity.SEARCHES[0]
FILE = "experiments/search-promote-delay.exp"


def _point(value: float, fails: bool) -> Point:
    trials = [Trial(f"{value:g}-{i}", Path("x"), "failed" if fails else "passed")
              for i in range(2)]
    return Point(value, fails, 2 if fails else 0, trials)


def _saved(*values: tuple[float, bool]) -> dict[str, Any]:
    """What run_search keeps for a search that judged ``values`` (value, fails) in order,
    built from lab.explore.search.summary as `lab search --json` prints it."""
    points = [_point(v, f) for v, f in values]
    held = [p for p in points if not p.fails]
    failed = [p for p in points if p.fails]
    found = None
    if held and failed:
        holds = min(held, key=lambda p: p.value)
        fails = max(failed, key=lambda p: p.value)
        found = Boundary(holds, fails, points)
    result = {"knob": PROMOTE.knob, "message": None if found else
              "no boundary: the expectation fails at both ends: no flip between them",
              **summary(points, "duration", found)}
    return {"kind": validity.SEARCH, "experiment": "search-promote-delay", "file": FILE,
            "backend": "native", "search": PROMOTE._asdict(),
            "status": "found" if found else "no boundary", "result": result}


MEASURED = ((6.2, True), (9.2, False), (7.7, True), (8.45, False), (8.075, True))


def _row(text: str) -> str:
    rows = [ln for ln in text.splitlines() if ln.startswith(f"| {FILE} |")]
    assert len(rows) == 1, text
    return rows[0]


def test_a_boundary_inside_the_truth_holds() -> None:
    text = validity.render([_saved(*MEASURED)], INFO)
    row = _row(text)
    assert "`26:at` bisected (`--fails 2 --of 3`, resolution 400ms): boundary within 7–9 s (" \
        in row
    assert "MASTER_DELAY 2" in row
    assert row.endswith("| 8.075–8.45 s (10 runs): holds |")
    assert "Every expectation holds." in text


def test_a_boundary_outside_the_truth_does_not_hold() -> None:
    # flipping between 6.2 s and 6.6 s: earlier than a 2 s delay whole-second rounding allows
    text = validity.render([_saved((6.2, True), (9.2, False), (7.7, False), (6.95, False),
                                   (6.575, False))], INFO)
    assert _row(text).endswith("| 6.2–6.575 s (10 runs): **FAILS** |")
    assert "1 do not hold." in text
    # one edge outside is enough: 8.9 s–9.2 s reaches past 9 s
    text = validity.render([_saved((6.2, True), (9.2, False), (8.9, True))], INFO)
    assert _row(text).endswith("| 8.9–9.2 s (6 runs): **FAILS** |")


def test_no_boundary_is_unknown_and_not_held() -> None:
    text = validity.render([_saved((6.2, True), (9.2, True))], INFO)
    assert _row(text).endswith("| no boundary: the expectation fails at both ends: no flip "
                               "between them (4 runs): **unknown** |")
    assert "1 do not hold." in text
    gone = {**_saved(*MEASURED), "status": "error", "message": ["lab.cli: boom"]}
    del gone["result"]
    assert _row(validity.render([gone], INFO)).endswith("| lab.cli: boom **error** |")


def test_a_saved_search_renders_the_same_from_its_file(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    s = _saved(*MEASURED)
    validity.save(s, tmp_path / "native" / f"search-{PROMOTE.name}.json")
    refused = {"kind": validity.SEARCH, "experiment": "search-promote-delay", "file": FILE,
               "backend": "containers", "search": PROMOTE._asdict(),
               "status": validity.UNSUPPORTED, "reasons": ["the engine lacks something"]}
    validity.save(refused, tmp_path / "containers" / f"search-{PROMOTE.name}.json")
    loaded = validity.load(tmp_path)
    assert loaded == {"native": [s], "containers": [refused]}
    text = validity.render(loaded, INFO)
    assert text == validity.render({"native": [s], "containers": [refused]}, INFO)
    assert _row(text).endswith("| 8.075–8.45 s (10 runs): holds | not on containers yet |")
    assert "the engine lacks something" in text
    assert "(from `dsl/backends.py`), or why a search cannot run there:" in text
    out = tmp_path / "v.md"
    monkeypatch.setattr(validity, "_engine", lambda: "podman, not asked")  # no podman here
    assert validity.main(["--from", str(tmp_path), "--out", str(out)]) == 0
    assert "| 8.075–8.45 s (10 runs): holds |" in out.read_text()


def test_the_declared_search_names_the_promote_of_its_file() -> None:
    lines = (ROOT / PROMOTE.file).read_text().splitlines()
    line = int(PROMOTE.knob.split(":")[0])
    assert lines[line - 1].strip().startswith("at ") and "promote db2" in lines[line - 1]
    assert "at 6s kill db1" in (ROOT / PROMOTE.file).read_text()
    assert PROMOTE.truth_low == 7.0 and PROMOTE.truth_high == 9.0
    assert validity.refusals(ROOT / PROMOTE.file, "native") == []


@pytest.mark.parametrize("backend", ["native", "containers"])
def test_the_search_runs_on_the_back_end_of_its_column(backend: str, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The containers column is a search run there (`lab search --backend containers`), never
    the native one again; native runs the file as it is."""
    seen: list[list[str]] = []

    class Done:
        stdout = '{"boundary": null}'
        stderr = ""

    def fake_run(cmd: list[str], **_: Any) -> Done:
        seen.append(cmd)
        return Done()

    monkeypatch.setattr(validity, "refusals", lambda path, b: [])
    monkeypatch.setattr(validity.subprocess, "run", fake_run)
    s = validity.run_search(PROMOTE, tmp_path, backend)
    assert s["backend"] == backend and s["status"] == "no boundary"
    (cmd,) = seen
    assert cmd[cmd.index("search") + 1].endswith(FILE)
    if backend == "native":
        assert "--backend" not in cmd
    else:
        assert cmd[cmd.index("--backend") + 1] == "containers"
