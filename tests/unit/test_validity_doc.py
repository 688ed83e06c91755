"""docs/validity.md is rendered from run summaries, never typed by hand."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("validity", ROOT / "tools" / "validity.py")
assert _spec and _spec.loader
validity = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(validity)

INFO = {"date": "2026-11-23 12:00 UTC", "host": "h", "cpus": "2", "memory": "23.4 GiB",
        "kernel": "6.1", "commit": "abc1234"}


def _summary(passed: bool | None) -> dict:  # type: ignore[type-arg]
    return {"file": "experiments/calibration/outage.exp", "cells": [{
        "label": "#1", "error": None,
        "expectations": [{"text": "expect downtime(hang) < 2.08s", "passed": passed,
                          "explanation": "downtime(hang).max = 2.03 s (3 outage windows); "
                                         "expected < 2.08s: holds"}],
        "reports": [{"text": "report x", "display": "87.2%"}]}]}


def test_rows_carry_expected_measured_and_verdict() -> None:
    text = validity.render([_summary(True)], INFO)
    assert "| experiment | expected (truth and tolerance) | native |" in text
    assert "| experiments/calibration/outage.exp | `expect downtime(hang) < 2.08s` | " \
        "downtime(hang).max = 2.03 s (3 outage windows): holds |" in text
    assert "commit: abc1234" in text and "2 CPUs" in text
    assert "Every expectation holds." in text


def test_a_failed_or_unknown_expectation_is_said() -> None:
    assert "**FAILS**" in validity.render([_summary(False)], INFO)
    text = validity.render([_summary(None)], INFO)
    assert "**unknown**" in text and "1 do not hold." in text


def test_a_run_that_could_not_complete_is_a_row() -> None:
    text = validity.render([{"experiment": "x", "cells": [], "message": "mariadbd: boom"}], INFO)
    assert "**error**" in text and "mariadbd: boom" in text


def test_every_listed_experiment_exists() -> None:
    paths = validity.experiments()
    assert all(p.exists() for p in paths)
    assert any("calibration" in str(p) for p in paths)


def _refused(name: str = "experiments/calibration/outage.exp") -> dict:  # type: ignore[type-arg]
    return {"file": name, "status": validity.UNSUPPORTED, "cells": [],
            "reasons": ["`network link_down db1 on clients` does not run on containers yet"]}


def test_a_column_per_backend_side_by_side() -> None:
    text = validity.render({"native": [_summary(True)], "containers": [_summary(False)]}, INFO)
    assert "| experiment | expected (truth and tolerance) | native | containers |" in text
    assert "|---|---|---|---|" in text
    assert "| experiments/calibration/outage.exp | `expect downtime(hang) < 2.08s` | " \
        "downtime(hang).max = 2.03 s (3 outage windows): holds | " \
        "downtime(hang).max = 2.03 s (3 outage windows): **FAILS** |" in text
    assert "- native: 1 experiment(s) run, 1 expectation(s) hold; every expectation holds." \
        in text
    assert "- containers: 1 experiment(s) run, 0 expectation(s) hold; 1 do not hold." in text
    assert "Every expectation holds." not in text.replace("every expectation holds", "")


def test_refused_on_containers_is_said_on_every_row_never_silent() -> None:
    native = _summary(True)
    native["cells"][0]["expectations"].append(
        {"text": "expect downtime(calm) == 0s", "passed": True,
         "explanation": "downtime(calm).max = 0 s; holds"})
    text = validity.render({"native": [native], "containers": [_refused()]}, INFO)
    rows = [ln for ln in text.splitlines() if ln.startswith("| experiments/calibration/outage")]
    assert len(rows) == 3  # two expectations and a report
    assert all(ln.endswith("| not on containers yet |") for ln in rows)
    assert "## Not on containers yet" in text
    assert "- experiments/calibration/outage.exp: `network link_down db1 on clients` does " \
        "not run on containers yet" in text
    assert "- containers: 0 experiment(s) run, 0 expectation(s) hold; every expectation " \
        "holds. 1 not on containers yet." in text
    assert "Every expectation holds." in text  # refused is not failed


def test_one_backend_alone_still_names_what_it_refused() -> None:
    text = validity.render({"containers": [_refused(), _summary(True)]}, INFO)
    assert "| experiment | expected (truth and tolerance) | containers |" in text
    assert "| experiments/calibration/outage.exp | the run | not on containers yet |" not in text
    ok = {"file": "experiments/calibration/split-brain.exp", "cells": [{
        "label": "#1", "error": None, "expectations": [
            {"text": "expect split_brain.count == 1", "passed": True,
             "explanation": "split_brain.count = 1 (1 window; read_only samples and writes)"
                            "; expected == 1: holds"}], "reports": []}]}
    text = validity.render({"containers": [_refused(), ok]}, INFO)
    assert "| experiments/calibration/outage.exp | the run | not on containers yet |" in text
    assert "| experiments/calibration/split-brain.exp | `expect split_brain.count == 1` | " \
        "split_brain.count = 1 (1 window; read_only samples and writes): holds |" in text


def test_a_note_with_a_semicolon_keeps_its_parenthesis() -> None:
    s = {"file": "experiments/calibration/divergence.exp", "cells": [{
        "label": "#1", "error": None, "expectations": [
            {"text": "expect split_brain == 0s", "passed": True,
             "explanation": "split_brain.longest = 0 s (0 windows; writes only); expected == "
                            "0s: holds"}], "reports": []}]}
    text = validity.render([s], INFO)
    assert "| split_brain.longest = 0 s (0 windows; writes only): holds |" in text


def test_an_experiment_a_backend_did_not_run_is_not_run_not_blank() -> None:
    text = validity.render({"native": [_summary(True)], "containers": []}, INFO)
    assert "(3 outage windows): holds | not run |" in text


def test_refusals_come_from_lab_check(monkeypatch: pytest.MonkeyPatch) -> None:
    import dsl.backends
    from dsl.models import Span

    divergence = validity.CALIBRATION / "divergence.exp"
    assert validity.refusals(divergence, "native") == []
    assert validity.refusals(divergence, "containers") == []  # runs there: a column of figures
    monkeypatch.setattr(dsl.backends, "problems",
                        lambda exp: [(Span(line=1, column=1, end_line=1, end_column=2),
                                      "no containers here", "hint")]
                        if exp.backend == "containers" else [])
    assert validity.refusals(divergence, "containers") == ["no containers here"]
    ran = validity.run_one(divergence, Path("/nonexistent"), "containers")  # never runs it
    assert ran["status"] == validity.UNSUPPORTED and ran["reasons"] == ["no containers here"]


def test_saved_summaries_load_per_backend(tmp_path: Path) -> None:
    import json

    (tmp_path / "containers").mkdir()
    (tmp_path / "outage.json").write_text(json.dumps(_summary(True)))
    (tmp_path / "containers" / "outage.json").write_text(json.dumps(_refused()))
    got = validity.load(tmp_path)
    assert set(got) == {"native", "containers"}
    text = validity.render(got, INFO)
    assert "| native | containers |" in text and "not on containers yet" in text


def test_the_templates_off_column_runs_native_with_every_node_initialised_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Templates must never change a result (issue 25): a column runs every calibration on the
    native back-end with LAB_TEMPLATES=off, beside the native column with templates; the
    other columns' runs never get LAB_TEMPLATES=off."""
    seen: list[tuple[list[str], dict[str, str]]] = []

    class Done:
        stdout = '{"cells": []}'
        stderr = ""

    def fake_run(cmd: list[str], env: dict[str, str], **_: object) -> Done:
        seen.append((cmd, env))
        return Done()

    monkeypatch.delenv("LAB_TEMPLATES", raising=False)
    monkeypatch.setattr(validity.subprocess, "run", fake_run)
    outage = validity.CALIBRATION / "outage.exp"
    assert validity.refusals(outage, validity.TEMPLATES_OFF) == []  # native: lab check's own
    for column in ("native", validity.TEMPLATES_OFF, "containers"):
        validity.run_one(outage, tmp_path, column)
    (native, native_env), (off, off_env), (ctr, ctr_env) = seen
    assert "--backend" not in native and "--backend" not in off
    assert ctr[ctr.index("--backend") + 1] == "containers"
    assert off_env["LAB_TEMPLATES"] == "off"
    assert "LAB_TEMPLATES" not in native_env and "LAB_TEMPLATES" not in ctr_env
    text = validity.render({"containers": [_summary(True)], validity.TEMPLATES_OFF:
                            [_summary(False)], "native": [_summary(True)]}, INFO)
    assert "| native | native-templates-off | containers |" in text
    assert "`LAB_TEMPLATES=off`" in text
    assert "- native-templates-off: 1 experiment(s) run, 0 expectation(s) hold; 1 do not " \
        "hold." in text
