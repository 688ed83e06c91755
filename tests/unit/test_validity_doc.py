"""docs/validity.md is rendered from run summaries, never typed by hand."""

from __future__ import annotations

import importlib.util
from pathlib import Path

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
    assert "| experiments/calibration/outage.exp | `expect downtime(hang) < 2.08s` | " \
        "downtime(hang).max = 2.03 s (3 outage windows) | holds |" in text
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
