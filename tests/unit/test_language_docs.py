"""docs/language.md is tested: every ``exp`` block is a valid experiment, every
``exp-invalid`` block prints exactly the ``text`` block after it, and every keyword of the
grammar is documented."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dsl.api import check_text, format_errors, plan_text
from dsl.metrics import METRICS
from dsl.parser import grammar_keywords
from dsl.validate_base import SYSBENCH_SCRIPTS

DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "language.md"
DOC = DOC_PATH.read_text(encoding="utf-8")
BLOCKS: list[tuple[str, str]] = re.findall(r"```([\w-]*)\n(.*?)```", DOC, re.S)
VALID = [body for lang, body in BLOCKS if lang == "exp"]
INVALID = [
    (body, BLOCKS[i + 1][1]) for i, (lang, body) in enumerate(BLOCKS) if lang == "exp-invalid"
]
CODE_SPANS = " ".join(re.findall(r"`([^`\n]+)`", DOC))


def _name(body: str) -> str:
    m = re.search(r'experiment "([^"]+)"', body)
    return m.group(1) if m else body[:20]


def test_the_doc_blocks_are_known_kinds() -> None:
    """Every block is checked below (and the parametrized checks are not vacuous)."""
    assert VALID and INVALID
    assert {lang for lang, _ in BLOCKS} <= {"exp", "exp-invalid", "text"}


@pytest.mark.parametrize("body", VALID, ids=[_name(b) for b in VALID])
def test_every_example_is_a_valid_experiment(body: str) -> None:
    errors = check_text(body, "example.exp")
    assert errors == [], format_errors(errors, {"example.exp": body})
    assert plan_text(body, "example.exp").cells


@pytest.mark.parametrize("body,output", INVALID, ids=[_name(b) for b, _ in INVALID])
def test_every_invalid_example_prints_what_the_doc_says(body: str, output: str) -> None:
    errors = check_text(body, "example.exp")
    assert errors
    assert format_errors(errors, {"example.exp": body}) == output.rstrip("\n")


@pytest.mark.parametrize("keyword", sorted(grammar_keywords()))
def test_every_grammar_keyword_is_documented(keyword: str) -> None:
    assert re.search(rf"\b{re.escape(keyword)}\b", CODE_SPANS), (
        f"'{keyword}' is a keyword of dsl/grammar.lark but docs/language.md never shows it "
        "in `code`"
    )


@pytest.mark.parametrize("metric", sorted(METRICS))
def test_every_metric_and_statistic_is_documented(metric: str) -> None:
    row = next((line for line in DOC.splitlines() if line.startswith(f"| `{metric}`")), None)
    assert row is not None, f"no row for {metric} in the metrics table"
    for stat in METRICS[metric].stats:
        if stat.startswith("behind_") and stat not in {"behind_p50", "behind_mean"}:
            continue  # documented as a range: behind_p50 ... behind_mean
        assert f"`{stat}`" in row, f"{metric}.{stat} is not in its row"


def test_every_sysbench_script_is_documented() -> None:
    for script in SYSBENCH_SCRIPTS:
        assert f"`{script}`" in DOC


def test_exit_statuses_of_lab_check_are_documented() -> None:
    assert re.search(r"\|\s*0\s*\|\s*every file is a valid experiment", DOC)
    assert re.search(r"\|\s*2\s*\|\s*at least one error", DOC)
