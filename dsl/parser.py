"""Text -> ``dsl.models.Experiment``.

The lark LALR parser is built once and cached. Its errors never leave this package: they
become ``LanguageErrors`` with a span (``from None``), with friendly messages for the common
mistakes (``dsl.syntax``). The parse tree is turned into models by ``dsl.build``; a text
that parses takes a faster road to the same models and errors (``dsl.fastparse``: one loop
over the same parser's tables that calls the same ``Builder``), any other the road above.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import cast

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedInput

from dsl.errors import LanguageError, LanguageErrors
from dsl.fastparse import FastPath, failed
from dsl.models import Experiment

GRAMMAR_PATH = Path(__file__).with_name("grammar.lark")


class _OfferNameEverywhere:
    """A no-op post-lexer whose only job is ``always_accept``: the contextual lexer then
    offers NAME in every state, so ``durattion`` (or ``durationx``) is read as one NAME
    that the parser rejects with a did-you-mean, instead of a keyword prefix plus junk."""

    always_accept = ("NAME",)
    identity = True  # ``process`` changes nothing (``dsl.fastparse`` relies on it)

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        return stream


@cache
def get_parser() -> Lark:
    """The parser; its tables come from lark's cache (``cache_file``) when there is one: 30 ms
    instead of 160 ms to build them, in every ``lab`` process."""
    return Lark(
        GRAMMAR_PATH.read_text(encoding="utf-8"),
        parser="lalr",
        lexer="contextual",
        start="file",
        postlex=_OfferNameEverywhere(),
        propagate_positions=True,
        maybe_placeholders=True,
        cache=cache_file() or False,
    )


def cache_file(home: Path | None = None) -> str | None:
    """Where lark keeps the built parser: a directory of the user's own
    (``$XDG_CACHE_HOME/replica-chaos-lab``, else ``~/.cache/replica-chaos-lab``), never a
    shared one such as /tmp, as the file is a pickle; None (no cache) when that directory
    cannot be made or is not the user's alone. lark checks the grammar's and the options'
    hash written in the file and rebuilds on a mismatch or a damaged file."""
    import os
    import stat

    base = Path(os.environ.get("XDG_CACHE_HOME") or (home or Path.home()) / ".cache")
    d = base / "replica-chaos-lab"
    try:
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = d.stat()
    except (OSError, RuntimeError):  # RuntimeError: no home directory
        return None
    if st.st_uid != os.getuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return None
    return str(d / "grammar.lark-cache")


@cache
def grammar_keywords() -> frozenset[str]:
    """Every word the grammar reserves somewhere (``duration``, ``kill``...)."""
    out = set()
    for term in get_parser().terminals:
        pattern = term.pattern
        if pattern.type == "str" and pattern.value.replace("_", "").isalpha():
            out.add(pattern.value)
    return frozenset(out)


def parse_tree(text: str, path: str = "<string>") -> Tree[Token]:
    """The parse tree; raise ``LanguageErrors`` holding the syntax error(s)."""
    try:
        return get_parser().parse(text)
    except UnexpectedInput:
        pass
    from dsl.syntax import syntax_errors_and_rest  # only on the error path

    errors, rest = syntax_errors_and_rest(text, path)
    exc = LanguageErrors(errors, source=text)
    exc.rest = rest  # the text without the statements in error, when it parses
    raise exc from None


def parse_experiment(
    text: str, path: str = "<string>"
) -> tuple[Experiment | None, list[LanguageError]]:
    """Parse and build. Return the experiment (None when it cannot be built) and the
    errors found while building it. Syntax errors raise ``LanguageErrors``."""
    from dsl.build import Builder, build_experiment

    fast = fast_path()
    if fast.supported:
        builder = Builder(text, path)
        experiment = fast.run(text, builder)
        if not failed(experiment):
            return cast(Experiment | None, experiment), builder.errors
    tree = parse_tree(text, path)  # syntax errors (or a rule that raised): the usual road
    return build_experiment(tree, text, path)


@cache
def fast_path() -> FastPath:
    """``dsl.fastparse``: lex, parse and build in one loop over this parser's tables."""
    return FastPath(get_parser())
