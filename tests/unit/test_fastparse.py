"""``dsl.fastparse`` (lex, parse and build in one loop) against the usual road (lark's parse
tree, then the Builder's transform): the same models and the same errors, span for span, on
every experiment of the repository and on broken variants of them (a line dropped, repeated,
a word replaced by a bad quantity); syntax errors leave the fast road."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from dsl.build import Builder, build_experiment
from dsl.errors import LanguageErrors
from dsl.fastparse import failed
from dsl.parser import fast_path, parse_experiment, parse_tree

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from bench_parse import generate  # noqa: E402


def _texts() -> list[tuple[str, str]]:
    files = sorted(p for p in (ROOT / "experiments").rglob("*.exp"))
    texts = [(p.name, p.read_text(encoding="utf-8")) for p in files]
    texts.append(("bench-500", generate(500)))
    rnd = random.Random(25)
    out = list(texts)
    for name, text in texts:
        lines = text.split("\n")
        for _ in range(2):
            i = rnd.randrange(len(lines))
            out.append((f"{name}-drop{i}", "\n".join(lines[:i] + lines[i + 1:])))
            out.append((f"{name}-twice{i}", "\n".join(lines[:i] + [lines[i]] + lines[i:])))
            words = lines[i].split(" ")
            k = rnd.randrange(len(words))
            words[k] = "1x"
            broken = lines[:i] + [" ".join(words)] + lines[i + 1:]
            out.append((f"{name}-word{i}", "\n".join(broken)))
    return out


def test_the_fast_road_is_taken() -> None:
    assert fast_path().supported


@pytest.mark.parametrize("name,text", _texts(), ids=lambda v: v if len(v) < 60 else "")
def test_same_models_and_errors_as_the_tree_transform(name: str, text: str) -> None:
    builder = Builder(text, name)
    fast = fast_path().run(text, builder)
    try:
        tree = parse_tree(text, name)
    except LanguageErrors:
        assert failed(fast), "the fast road accepted a text lark rejects"
        with pytest.raises(LanguageErrors):
            parse_experiment(text, name)
        return
    try:
        experiment, errors = build_experiment(tree, text, name)
    except Exception as exc:  # a rule that raises: the fast road gives the text back
        assert failed(fast)
        with pytest.raises(type(exc)):
            parse_experiment(text, name)
        return
    assert not failed(fast)
    assert fast == experiment
    assert repr(fast) == repr(experiment)
    assert builder.errors == errors
    assert parse_experiment(text, name) == (experiment, errors)


def test_blanks_are_folded_only_where_no_terminal_may_start_with_one() -> None:
    import re._parser as sre_parse

    from dsl.fastparse import _BLANK_CHARS, _may_start_with, _Unsupported

    def may(pattern: str) -> bool:
        return _may_start_with(sre_parse.parse(pattern), _BLANK_CHARS)[0]

    for pattern in ('[^\\s{}"#,=]+', "[A-Za-z_][A-Za-z0-9_]*", "(\r?\n[\t \x0c]*)+", "x?y?z",
                    "(?:<=|>=)", "#[^\n]*", "\\d+ s"):
        assert not may(pattern), pattern
    for pattern in (" x", "x? ?y", "(?:a|\\s)", "[A-Z]*\t", "x? ", ".", "[^x]", "\\S?\\s",
                    "[\x00-\x20]"):
        assert may(pattern), pattern
    with pytest.raises(_Unsupported):
        may("(?=a)b")
    fast = fast_path()
    text = generate(500)
    assert not failed(fast.run(text, Builder(text, "bench")))
    assert fast.scans and all(scan[0] is not None for scan in fast.scans.values())
