"""Friendly syntax errors.

When the parser rejects a file this module says why, in the words of the language:

1. unbalanced braces are found first, by a scan that knows strings, comments and indentation
   (``missing '}': the topology block opened here is not closed before line 9``);
2. common mistakes are named with lark's ``match_examples`` (``use '==' to compare``,
   ``missing ',' between 'db2' and 'db3'``, ``missing value after '='``...);
3. anything else gets a message built from what the parser expected, with a did-you-mean for
   misspelt keywords.

Then the offending line is blanked out and the file parsed again, so that one run reports
several independent mistakes (at most ``MAX_SYNTAX_ERRORS``).

The words (``dsl.syntax_words``), the brace scan (``dsl.syntax_braces``) and the table of
common mistakes (``dsl.syntax_mistakes``) are modules of their own.
"""

from __future__ import annotations

import difflib
import re
from functools import cache

from lark import Token
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken
from lark.parsers.lalr_parser_state import ParserState

from dsl.errors import LanguageError
from dsl.models import Span
from dsl.parser import get_parser, grammar_keywords
from dsl.syntax_braces import (
    Brace,
    _block_name,
    brace_error,
    scan_braces,
)
from dsl.syntax_mistakes import (
    _WORDS,
    MISTAKES,
    _raise_example,
)
from dsl.syntax_words import (
    KEYWORD_HOME,
    LIST_LIMIT,
    MAX_SYNTAX_ERRORS,
    TERMINAL_WORDS,
    UNIT_WORDS,
    UNITS_HINT,
)

# after 'isolation': the levels, and where snapshot isolation is set
ISOLATION_HINT = ("isolation read uncommitted, read committed, repeatable read or serializable; "
                  "snapshot isolation is a server setting: config { innodb_snapshot_isolation "
                  "= ON }")

# --- describing one parse error -----------------------------------------------------------------


def _terminal_words() -> dict[str, str]:
    words = dict(TERMINAL_WORDS)
    for term in get_parser().terminals:
        if term.pattern.type == "str":
            words.setdefault(term.name, f"'{term.pattern.value}'")
    return words


@cache
def _words() -> dict[str, str]:
    return _terminal_words()


def _keyword_of(name: str) -> str | None:
    """The keyword a terminal stands for (``DURATION`` -> ``duration``), if it is one."""
    desc = _words().get(name, "")
    word = desc.strip("'")
    return word if desc.startswith("'") and word in grammar_keywords() else None


def _expected(exc: UnexpectedInput) -> set[str]:
    """What the parser could take instead: the precise set (``accepts`` replays the parser;
    the table of an LALR state also lists look-aheads merged in from other contexts)."""
    if isinstance(exc, UnexpectedToken) and exc.interactive_parser is not None:
        return set(exc.accepts)
    state = getattr(exc, "state", None)
    if isinstance(state, ParserState):
        return {k for k in state.parse_conf.states[state.position] if k.isupper()}
    return set(getattr(exc, "expected", None) or getattr(exc, "allowed", None) or ())


def _metric_terminals() -> set[str]:
    """The terminals of the metric names (``downtime``, ``lost_writes`` ...)."""
    from dsl.metrics import METRICS

    words = _words()
    return {name for name, desc in words.items() if desc.strip("'") in METRICS}


def _describe(names: set[str], limit: int = LIST_LIMIT) -> str:
    words = _words()
    real = [n for n in names if n not in {"_NL", "$END"}] or list(names)
    if "NAME" in real and "ROUTER" in real:  # an action's target
        real = [n for n in real if n not in {"NAME", "ROUTER"}]
        rest = _describe(set(real), limit) if real else ""
        return "a node (or router.writer)" + (f" or {rest}" if rest else "")
    # keywords and punctuation first (alphabetically), then kinds of values
    shown = sorted((words.get(n, n) for n in real), key=lambda w: (not w.startswith("'"), w))
    if len(shown) > limit:
        shown = shown[:limit] + ["..."]
    if len(shown) == 1:
        return shown[0]
    return ", ".join(shown[:-1]) + " or " + shown[-1]


def _token_text(tok: Token) -> str:
    if tok.type == "_NL":
        return "the end of the line"
    if tok.type == "$END":
        return "the end of the file"
    text = str(tok)
    return text if len(text) <= 40 else text[:37] + "..."


def _previous_word(text: str, line: int, column: int) -> str:
    lines = text.split("\n")
    if not 1 <= line <= len(lines):
        return ""
    before = lines[line - 1][: max(column - 1, 0)].rstrip()
    m = re.search(r"(\S+)$", before)
    return m.group(1) if m else ""


def _end_span(text: str) -> Span:
    lines = text.split("\n")
    return Span(
        line=len(lines),
        column=len(lines[-1]) + 1,
        end_line=len(lines),
        end_column=len(lines[-1]) + 2,
    )


def _token_span(tok: Token, text: str) -> Span:
    if tok.type == "$END" or tok.line is None:
        return _end_span(text)
    line, column = tok.line, tok.column or 1
    if tok.type == "_NL":
        return Span(line=line, column=column, end_line=line, end_column=column + 1)
    end_line = tok.end_line or line
    end_column = tok.end_column or column + 1
    return Span(line=line, column=column, end_line=end_line, end_column=end_column)


def _enclosing_block(text: str, line: int, column: int) -> str | None:
    stack: list[Brace] = []
    for b in scan_braces(text):
        if (b.line, b.column) >= (line, column):
            break
        if b.char == "{":
            stack.append(b)
        elif stack:
            stack.pop()
    return _block_name(stack[-1]) if stack else None


def _special_token(word: str, span: Span, path: str) -> LanguageError | None:
    """Mistakes recognisable from the token's text alone."""
    if word.startswith("'"):
        return LanguageError(
            path, span, "strings use double quotes, not '", 'e.g. description "a replica dies"'
        )
    if re.match(r"-\d", word):
        return LanguageError(path, span, "negative numbers are not allowed here")
    if word and not word[0].isascii():
        return LanguageError(
            path,
            _one_char(span),
            f"unexpected character {word[0]!r}",
            "names use ASCII letters, digits and '_'; put other text in double quotes",
        )
    return None


def _fault_space_mistake(word: str, prev: str, text: str, span: Span,
                         path: str) -> LanguageError | None:
    """What a fault space's ranges, targets and counts look like, where one was mistyped."""
    if word in ("..", "...") or word.startswith(".."):
        return LanguageError(path, span, "a range is written without spaces: low..high",
                             f"e.g. for {prev}..4s" if re.match(r"[\d.]+\w+$", prev)
                             else "e.g. for 1s..4s, 50ms..200ms")
    if _enclosing_block(text, span.line, span.column) != "faults":
        return None
    if word == "," and re.fullmatch(r"[A-Za-z_]\w*", prev):
        return LanguageError(path, span, "a fault of a fault space names one target",
                             f"several nodes, one drawn each time: any of {prev}, ...")
    if word in ("up", "upto", "max", "maximum"):
        return LanguageError(path, span, f"'{word}' is not a count of the language",
                             "N times (exactly), or at most N times (0 to N drawn)")
    return None


def _one_char(span: Span) -> Span:
    return Span(line=span.line, column=span.column, end_line=span.line, end_column=span.column + 1)


def _same_line(prev: str) -> bool:
    """Whether the word before the error ends a statement on the same line (not a brace)."""
    return bool(prev) and prev not in {"{", "}"}


def _misspelt_keyword(word: str, expected: set[str]) -> bool:
    """``word`` is close to (not equal to) a keyword the parser would take here."""
    keywords = [k for k in (_keyword_of(n) for n in expected) if k]
    close = difflib.get_close_matches(word.lower(), keywords, n=1, cutoff=0.75)
    return bool(close) and close[0] != word


SWEEPS_DOC = "docs/language.md, \"Variants, sweeps and repeats\""


def _beyond_the_language(tok: Token, text: str, path: str, span: Span, prev: str
                         ) -> LanguageError | None:
    """What new users write and the language does not have, said in its words: a
    ``$parameter`` outside a workload (a fault's size swept with ``vary``) and a variant that
    names a node."""
    if tok.type == "PARAM" and _enclosing_block(text, span.line, span.column) == "router":
        return LanguageError(
            path, span,
            f"'{tok}' cannot be used here: the router's settings are fixed in a file (a "
            "$parameter is for a workload's numbers: threads $n)",
            "with ProxySQL a sweep can set its own variables: set "
            f"mysql-monitor_read_only_interval = {tok} (vary {str(tok)[1:]} in 500, 1000); "
            f"else one file per value, compared with lab compare ({SWEEPS_DOC})",
        )  # fmt: skip
    if tok.type == "PARAM":
        return LanguageError(
            path, span,
            f"'{tok}' cannot be used here: a $parameter is for a workload's numbers "
            "(threads $n)",
            "a fault's size and time are fixed; to try several: lab search FILE --knob "
            f"LINE:size (or LINE:for, LINE:at), a fault space's range, or one file each "
            f"({SWEEPS_DOC})",
        )  # fmt: skip
    if (prev == "config" and str(tok) == "{"
            and _enclosing_block(text, span.line, span.column) == "variant"):
        return LanguageError(
            path, span,
            "a variant's settings go straight in its braces, without config { }",
            f"e.g. variant relaxed {{ sync_binlog = 0 }} ({SWEEPS_DOC})",
        )  # fmt: skip
    if prev == "config" and _enclosing_block(text, span.line, span.column) == "variant":
        return LanguageError(
            path, span,
            f"a variant sets its values on every node: it cannot name a node ('config {tok}')",
            f"set it on {tok} alone with config {tok} {{ ... }} (the same in every cell), or "
            f"write one file per choice and compare the runs with lab compare ({SWEEPS_DOC})",
        )  # fmt: skip
    return None


def describe_token_error(exc: UnexpectedToken, text: str, path: str) -> LanguageError:
    tok = exc.token
    span = _token_span(tok, text)
    prev = _previous_word(text, span.line, span.column)
    shown = _token_text(tok)
    beyond = _beyond_the_language(tok, text, path, span, prev)
    if beyond is not None:
        return beyond
    # use_accepts=False: with lark 1.3.1, use_accepts=True crashes in a debug log line
    # ("%d" applied to a ParserState) whenever two accept sets differ. Several mistakes share
    # a parser state (after a metric: '=' or a missing comparison), so a match on the token's
    # type is preferred, and the token types checked below keep a same-state match honest.
    label = exc.match_examples(
        _raise_example,
        {k: m.examples for k, m in MISTAKES.items()},
        token_type_match_fallback=True,
        use_accepts=False,
    )
    if label == "missing_comma" and _misspelt_keyword(str(tok), _expected(exc)):
        label = None  # `target db1  evrey 10ms`: a misspelt statement, not a missing ','
    if label is not None:
        mistake = MISTAKES[label]
        if tok.type in mistake.tokens and (mistake.accept is None or mistake.accept(str(tok))):

            def fill(template: str) -> str:
                return template.replace("{tok}", shown).replace("{prev}", prev)

            hint = fill(mistake.hint) if mistake.hint else None
            return LanguageError(path, span, fill(mistake.message), hint)
    return _generic(exc, text, path, span, prev, shown)


def _generic(
    exc: UnexpectedToken, text: str, path: str, span: Span, prev: str, shown: str
) -> LanguageError:
    tok = exc.token
    expected = _expected(exc)
    keywords = sorted(k for k in (_keyword_of(n) for n in expected) if k)
    after = f" after '{prev}'" if prev else ""
    word = str(tok)
    special = _special_token(word, span, path)
    if special is not None:
        return special
    space = _fault_space_mistake(word, prev, text, span, path)
    if space is not None:
        return space
    if prev == "isolation" and tok.type not in {"_NL", "$END", "RBRACE"}:
        return LanguageError(path, span, f"unknown isolation level '{shown}'", ISOLATION_HINT)
    if tok.type in _WORDS and word in UNIT_WORDS and re.fullmatch(r"[\d.]+", prev):
        return LanguageError(
            path, span, "a unit is written right after its number", f"write {prev}{word}"
        )
    if tok.type in _WORDS and re.fullmatch(r"[A-Za-z]+", word) and re.fullmatch(r"[\d.]+", prev):
        return LanguageError(
            path,
            span,
            f"'{word}' is not a unit; a unit is written right after its number",
            f"units: {UNITS_HINT} (e.g. {prev}s)",
        )
    metrics = _metric_terminals()
    if tok.type in _WORDS and expected & metrics and expected <= metrics | {"_NL", "RBRACE"}:
        names = sorted(_words()[n].strip("'") for n in expected & metrics)
        close = difflib.get_close_matches(word, names, n=1, cutoff=0.6)
        return LanguageError(
            path,
            span,
            f"unknown metric '{word}' (known: {', '.join(names)})",
            f"did you mean '{close[0]}'?" if close else None,
        )
    if tok.type in _WORDS and re.fullmatch(r"[A-Za-z_]\w*", word) and keywords:
        statement_position = "RBRACE" in expected or "_NL" in expected
        close = difflib.get_close_matches(word.lower(), keywords, n=1, cutoff=0.6)
        block = _enclosing_block(text, span.line, span.column)
        inside = f" inside '{block}'" if block else ""
        expected_hint = f"expected {_describe(expected, limit=40)}"
        if close and close[0] != word:
            if statement_position:
                message = f"unknown keyword '{word}'"
            elif "KILL" in expected:  # where an action starts
                message = f"unknown action '{word}'"
            else:
                message = f"expected {_describe(expected)}{after}, not '{word}'"
            return LanguageError(path, span, message, f"did you mean '{close[0]}'?")
        if {"PROBE", "SYSBENCH"} <= expected:  # where a workload's kind is written
            hint = ("a probe reads with: probe { target db1  operation read }"
                    if word in ("read", "reads", "reader") else expected_hint)
            return LanguageError(path, span, f"unknown workload kind '{word}'", hint)
        if word in grammar_keywords():
            home = KEYWORD_HOME.get(word)
            hint = f"'{word}' {home}; {expected_hint}" if home else expected_hint
            return LanguageError(path, span, f"'{word}' cannot be used here{inside}", hint)
        if statement_position and not _same_line(prev):
            return LanguageError(path, span, f"unknown keyword '{word}'{inside}", expected_hint)
        if "KILL" in expected and not statement_position:
            return LanguageError(path, span, f"unknown action '{word}'", expected_hint)
    if (
        ("RBRACE" in expected or "_NL" in expected)
        and tok.type not in {"_NL", "$END", "RBRACE"}
        and _same_line(prev)
    ):
        return LanguageError(
            path,
            span,
            f"unexpected '{shown}'{after}",
            "one statement per line; a statement ends at the end of its line",
        )
    if tok.type == "_NL":
        return LanguageError(
            path,
            span,
            f"missing {_describe(expected)}{after}",
            "a statement ends at the end of its line",
        )
    if tok.type == "$END":
        if not re.sub(r"#[^\n]*", "", text).strip():
            return LanguageError(
                path,
                Span(line=1, column=1, end_line=1, end_column=1),
                "the file has no experiment",
                'an experiment file starts with: experiment "name" {',
            )
        return LanguageError(
            path, span, "unexpected end of file", f"expected {_describe(expected)}"
        )
    if tok.type == "RBRACE":
        return LanguageError(path, span, f"missing {_describe(expected)} before '}}'")
    return LanguageError(path, span, f"expected {_describe(expected)}{after}, not '{shown}'")


def describe_char_error(exc: UnexpectedCharacters, text: str, path: str) -> LanguageError:
    line, column = exc.line, exc.column
    span = Span(line=line, column=column, end_line=line, end_column=column + 1)
    ch = exc.char
    if ch == '"':
        return LanguageError(path, span, "unterminated string", 'close it with " on the same line')
    if ch == "'":
        return LanguageError(
            path, span, "strings use double quotes, not '", 'e.g. description "a replica dies"'
        )
    pos = exc.pos_in_stream or 0
    if ch == "-" and text[pos + 1 : pos + 2].isdigit():
        return LanguageError(path, span, "negative numbers are not allowed here")
    if ch == "$":
        return LanguageError(path, span, "'$' starts a parameter name: $threads")
    if not ch.isascii() and ch.isalpha():
        return LanguageError(
            path,
            span,
            f"unexpected character {ch!r}",
            "names use ASCII letters, digits and '_'; put other text in double quotes",
        )
    allowed = {n for n in (exc.allowed or ()) if n != "NAME"} or set(exc.allowed or ())
    hint = f"expected {_describe(allowed)}" if allowed else None
    return LanguageError(path, span, f"unexpected character {ch!r}", hint)


def describe_error(exc: UnexpectedInput, text: str, path: str) -> LanguageError:
    if isinstance(exc, UnexpectedToken):
        return describe_token_error(exc, text, path)
    if isinstance(exc, UnexpectedCharacters):
        return describe_char_error(exc, text, path)
    line = getattr(exc, "line", 1) or 1
    column = getattr(exc, "column", 1) or 1
    return LanguageError(
        path, Span(line=line, column=column, end_line=line, end_column=column + 1), "syntax error"
    )


# --- several errors per file -------------------------------------------------------------------


def _blank(text: str, start: int, end: int) -> str:
    """``text`` with ``[start, end)`` replaced by spaces (newlines kept: positions hold)."""
    middle = "".join(ch if ch == "\n" else " " for ch in text[start:end])
    return text[:start] + middle + text[end:]


def _without_line(text: str, line: int) -> str | None:
    """The text with the statement on ``line`` blanked out (a block it opens goes with it),
    or None when that is not possible."""
    lines = text.split("\n")
    if not 1 <= line <= len(lines):
        return None
    start = sum(len(x) + 1 for x in lines[: line - 1])
    end = start + len(lines[line - 1])
    braces = [b for b in scan_braces(text) if b.line == line]
    depth = sum(1 if b.char == "{" else -1 for b in braces)
    if depth == 0:
        return _blank(text, start, end)
    if depth < 0:  # the line closes blocks: keep its braces, blank the rest
        keep = {b.offset for b in braces}
        kept = "".join(ch if start + i in keep else " " for i, ch in enumerate(text[start:end]))
        return text[:start] + kept + text[end:]
    level = 0  # the line opens a block: blank up to the brace that closes it
    for b in scan_braces(text):
        if b.offset < start:
            continue
        level += 1 if b.char == "{" else -1
        if level == 0:
            return _blank(text, start, b.offset + 1)
    return None


def syntax_errors(text: str, path: str) -> list[LanguageError]:
    """The syntax errors of a text that does not parse (at least one)."""
    return syntax_errors_and_rest(text, path)[0]


def syntax_errors_and_rest(text: str, path: str) -> tuple[list[LanguageError], str | None]:
    """The syntax errors of a text that does not parse (at least one), and the text with the
    statements that had them blanked out when that parses (None when it does not: braces
    unbalanced, or more errors than are reported), for the rest of the file to be checked."""
    balance = sum(1 if b.char == "{" else -1 for b in scan_braces(text))
    if balance > 0:  # a block is not closed: say which one
        unclosed = brace_error(text, path)
        if unclosed is not None:
            return [unclosed], None
    parser = get_parser()
    errors: list[LanguageError] = []
    current = text
    rest: str | None = None
    while len(errors) < MAX_SYNTAX_ERRORS:
        try:
            parser.parse(current)
            rest = current if errors and balance == 0 else None
            break
        except UnexpectedInput as exc:
            at_end = isinstance(exc, UnexpectedToken) and exc.token.type == "$END"
            if errors and at_end:
                break  # after blanking a line, an early end of file is our own doing
            err = describe_error(exc, current, path)
            if errors and (err.span.line, err.span.column) <= (
                errors[-1].span.line,
                errors[-1].span.column,
            ):
                break
            errors.append(err)
            if balance != 0 or at_end:
                break  # with unbalanced braces, what follows the first error is noise
            nxt = _without_line(current, err.span.line)
            if nxt is None or nxt == current:
                break
            current = nxt
    if not errors:  # pragma: no cover - the caller saw this text fail
        errors.append(LanguageError(path, _end_span(text), "syntax error"))
    return errors, rest
