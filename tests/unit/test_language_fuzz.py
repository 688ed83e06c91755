"""Any text gives either a plan or the language's own errors, never anything else: random
text, text made of the language's own words, and mutations of the valid experiments."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsl.api import format_errors, plan_text
from dsl.errors import LanguageErrors
from dsl.parser import grammar_keywords

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "experiments").glob("*.exp"))]
PIECES = sorted(grammar_keywords()) + [
    "{",
    "}",
    "\n",
    '"x"',
    "#",
    "=",
    "==",
    ",",
    ":",
    "(",
    ")",
    ".",
    "$t",
    "db1",
    "db2",
    "w",
    "10s",
    "5M",
    "1%",
    "200/s",
    "0",
    "-1",
    "1m30s",
    "'",
    "\\",
    "\t",
    "\r\n",
    "é",
    "\x00",
    "router.writer",
    '"',
    "9" * 30,
]
FUZZ = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def plan_or_language_errors(text: str) -> None:
    try:
        plan = plan_text(text, "fuzz.exp")
    except LanguageErrors as exc:
        assert exc.errors, "LanguageErrors without errors"
        for err in exc.errors:
            assert err.message and err.path == "fuzz.exp"
            assert err.span.line >= 0 and err.span.column >= 0
        rendered = format_errors(exc.errors, {"fuzz.exp": text})
        assert "error:" in rendered
    else:
        assert plan.cells


@FUZZ
@given(st.text(max_size=300))
def test_any_text(text: str) -> None:
    plan_or_language_errors(text)


@FUZZ
@given(st.lists(st.sampled_from(PIECES), max_size=60).map(" ".join))
def test_the_languages_own_words_in_any_order(text: str) -> None:
    plan_or_language_errors(text)


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SOURCES))
    for _ in range(draw(st.integers(1, 4))):
        pos = draw(st.integers(0, len(text)))
        end = min(len(text), pos + draw(st.integers(0, 40)))
        op = draw(st.sampled_from(["delete", "insert", "replace_word", "duplicate_line"]))
        if op == "delete":
            text = text[:pos] + text[end:]
        elif op == "insert":
            text = text[:pos] + draw(st.sampled_from(PIECES)) + text[pos:]
        elif op == "replace_word":
            words = re.split(r"(\s+)", text)
            i = draw(st.integers(0, len(words) - 1))
            words[i] = draw(st.sampled_from(PIECES))
            text = "".join(words)
        else:
            lines = text.split("\n")
            i = draw(st.integers(0, len(lines) - 1))
            lines.insert(draw(st.integers(0, len(lines))), lines[i])
            text = "\n".join(lines)
    return text


@FUZZ
@given(mutated())
def test_mutations_of_valid_experiments(text: str) -> None:
    plan_or_language_errors(text)
