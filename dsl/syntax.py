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
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from lark import Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken
from lark.parsers.lalr_parser_state import ParserState

from dsl.errors import LanguageError
from dsl.models import Span
from dsl.parser import get_parser, grammar_keywords

MAX_SYNTAX_ERRORS = 10
LIST_LIMIT = 8

TERMINAL_WORDS = {
    "NAME": "a name",
    "QUANTITY": "a number with its unit (like 10s)",
    "VERSION": "a version number",
    "PARAM": "a $parameter",
    "TAG": "a tag",
    "KEY": "a setting name",
    "VALUE": "a value",
    "STRING": 'a "quoted string"',
    "COMPARISON": "a comparison (<, <=, ==, !=, >=, >)",
    "_NL": "the end of the line",
    "$END": "the end of the file",
}
_TOPOLOGY_WORDS = (
    "engine",
    "primary",
    "replicas",
    "node",
    "nodes",
    "members",
    "semi_sync",
    "crash_safe",
    "delay",
    "auto_increment_offsets",
)
_WORKLOAD_WORDS = (
    "target",
    "write",
    "read",
    "clients",
    "threads",
    "tables",
    "table_size",
    "rate",
    "every",
    "operation",
    "keys",
    "rows",
    "operations",
    "timeout",
)
_ACTION_WORDS = (
    "kill",
    "pause",
    "resume",
    "stop",
    "start",
    "restart",
    "cold",
    "drop",
    "promote",
    "network",
    "disk",
    "cpu",
    "memory",
    "clock",
    "io",
    "set",
    "convert",
    "wait",
    "execute",
)
_EXPERIMENT_WORDS = (
    "title",
    "description",
    "tags",
    "seed",
    "duration",
    "repeat",
    "leave",
    "topology",
    "router",
    "variant",
    "vary",
    "workload",
    "before",
    "after",
    "at",
    "expect",
    "report",
)
KEYWORD_HOME: dict[str, str] = {
    **{w: "belongs in the topology block" for w in _TOPOLOGY_WORDS},
    **{w: "belongs in a router block" for w in ("writer", "writers", "reader", "readers", "check")},
    **{w: "belongs in a workload block" for w in _WORKLOAD_WORDS},
    **{
        w: "starts an action: at 10s ... or inside before load { } / after w { }"
        for w in _ACTION_WORDS
    },
    **{w: "is a statement of the experiment block" for w in _EXPERIMENT_WORDS},
    "when": "starts a trigger, a statement of the experiment block: "
    "when replication_lag(db2) > 5s kill db1",
}
UNIT_WORDS = frozenset({"s", "ms", "us", "m", "h", "K", "M", "G", "T", "B", "KB", "MB", "GB"})
UNITS_HINT = "us ms s m h (durations), B K M G T (sizes), /s (rates), % (ratios)"


# --- braces ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Brace:
    char: str
    line: int  # 1-based
    column: int  # 1-based
    offset: int
    indent: int  # indentation of its line
    head: str  # first word of its line: the block's keyword


def _code_of_line(line: str) -> list[tuple[int, str]]:
    """``(index, char)`` of the characters outside strings and comments."""
    out: list[tuple[int, str]] = []
    in_string = escaped = False
    for i, ch in enumerate(line):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == "#":
            break
        if ch == '"':
            in_string = True
            continue
        out.append((i, ch))
    return out


def scan_braces(text: str) -> list[Brace]:
    braces: list[Brace] = []
    offset = 0
    for number, line in enumerate(text.split("\n"), start=1):
        code = _code_of_line(line)
        indent = len(line) - len(line.lstrip(" \t"))
        words = "".join(ch for _, ch in code).split()
        head = words[0] if words else ""
        for i, ch in code:
            if ch in "{}":
                braces.append(Brace(ch, number, i + 1, offset + i, indent, head))
        offset += len(line) + 1
    return braces


def _block_name(brace: Brace) -> str:
    return brace.head if brace.head and brace.head not in "{}" else "block"


def brace_error(text: str, path: str) -> LanguageError | None:
    """An error for unbalanced braces, pointing at the block that is not closed (found by
    indentation when the file is indented) or at the '}' that closes nothing."""
    braces = scan_braces(text)
    if sum(1 if b.char == "{" else -1 for b in braces) == 0:
        return None
    lines = text.split("\n")
    stack: list[tuple[Brace, int | None]] = []  # opener, indentation of its first inner line
    by_line: dict[int, list[Brace]] = {}
    for b in braces:
        by_line.setdefault(b.line, []).append(b)
    for number, line in enumerate(lines, start=1):
        code = "".join(ch for _, ch in _code_of_line(line)).strip()
        if code:
            indent = len(line) - len(line.lstrip(" \t"))
            if stack and stack[-1][1] is None and stack[-1][0].line != number:
                stack[-1] = (stack[-1][0], indent)
            if not code.startswith("}"):
                for opener, inner in reversed(stack):
                    if (opener.line != number and inner is not None and inner <= opener.indent
                            and _inline_block(lines, opener)):
                        # ``workload w: probe { target db1`` and the next line not indented
                        # under it: a one-line block that lost its '}'
                        return LanguageError(
                            path,
                            _brace_span(opener),
                            f"missing '}}': the {_block_name(opener)} block opened here is "
                            f"not closed on its line",
                            f"add '}}' at the end of line {opener.line}",
                        )
                    if opener.line == number or inner is None or inner <= opener.indent:
                        break
                    if indent <= opener.indent:
                        return LanguageError(
                            path,
                            _brace_span(opener),
                            f"missing '}}': the {_block_name(opener)} block opened here is "
                            f"not closed before line {number}",
                            f"add '}}' on its own line before line {number}",
                        )
        for b in by_line.get(number, []):
            if b.char == "{":
                stack.append((b, None))
            elif stack:
                stack.pop()
            else:
                return LanguageError(
                    path,
                    _brace_span(b),
                    "unexpected '}': no block is open here",
                    "remove it, or look for a '}' that closes a block too early",
                )
    if stack:
        opener = stack[-1][0]
        return LanguageError(
            path,
            _brace_span(opener),
            f"missing '}}': the {_block_name(opener)} block opened here is never closed",
            "add '}' at the end of the block",
        )
    return None


def _inline_block(lines: list[str], opener: Brace) -> bool:
    """The block's first content is on the opener's own line (``probe { target db1``)."""
    rest = lines[opener.line - 1][opener.column:]
    return bool("".join(ch for _, ch in _code_of_line(rest)).strip())


def _brace_span(b: Brace) -> Span:
    return Span(line=b.line, column=b.column, end_line=b.line, end_column=b.column + 1)


# --- describing one parse error -----------------------------------------------------------------


@dataclass(frozen=True)
class Mistake:
    """A common mistake, recognised by lark's ``match_examples`` (same parser state)."""

    examples: tuple[str, ...]
    tokens: frozenset[str]  # token types it explains
    message: str  # {tok} stands for the token's text, {prev} for the word before it
    hint: str | None = None
    accept: Callable[[str], bool] | None = None  # a further test on the token's text


def _not_close_to_experiment(word: str) -> bool:
    return not difflib.get_close_matches(word.lower(), ["experiment"], cutoff=0.6)


def _at_top(*statements: str) -> tuple[str, ...]:
    return tuple(f'experiment "x" {{\n  {st}\n}}' for st in statements)


def _in_block(head: str, *statements: str) -> tuple[str, ...]:
    """Each statement as the first item of a one-line block and as a later item of a
    multi-line block: lark compares parser states *and* stack depths, which differ."""
    out: list[str] = []
    for st in statements:
        out.append(f'experiment "x" {{\n  {head} {{ {st} }}\n}}')
        out.append(f'experiment "x" {{\n  {head} {{\n    {st}\n  }}\n}}')
    return tuple(out)


def _in_actions(*actions: str) -> tuple[str, ...]:
    return (
        _at_top(*(f"at 1s {a}" for a in actions))
        + _in_block("before load", *actions)
        + _in_block("after w", *actions)
    )


# The lexer's fallback may type a stray word as any of the overlapping word terminals.
_WORDS = frozenset({"NAME", "QUANTITY", "TAG", "KEY", "VALUE", "VERSION", "PARAM"})
_METRIC_ENDS = ("lost_writes", "downtime(w)", "latency(w).p99", "throughput(w) last 10s")

MISTAKES: dict[str, Mistake] = {
    "equals_in_expect": Mistake(
        _at_top(*(f"expect {m} = 0" for m in _METRIC_ENDS)),
        frozenset({"EQUAL"}),
        "use '==' to compare; a single '=' sets a value",
        "expect ... == 0  (or <, <=, >, >=, !=)",
    ),
    "missing_comparison": Mistake(
        _at_top(*(f"expect {m} 0" for m in _METRIC_ENDS)),
        _WORDS,
        "missing comparison before '{tok}'",
        "expect ... < {tok}  (or <=, ==, !=, >=, >)",
        accept=lambda word: word[:1].isdigit(),
    ),
    "comma_in_value": Mistake(
        _in_block("config", "a = b,c")
        + _in_block("variant v", "a = b,c")
        + _in_block("config db1", "a = b,c")
        + _in_block("topology single", "config { a = b,c }"),
        frozenset({"COMMA"}),
        "a value that contains commas must be in double quotes",
        'e.g. sql_mode = "STRICT_TRANS_TABLES,NO_ZERO_DATE"',
    ),
    "missing_value": Mistake(
        _in_block("config", "a =")
        + _in_block("variant v", "a =")
        + _in_block("config db1", "a =")
        + _in_block("topology single", "config {\n a =\n}")
        + _in_actions("start a with b =", "set global b ="),
        frozenset({"_NL", "RBRACE", "$END"}),
        "missing value after '='",
        "write name = value; put a value with spaces in double quotes",
    ),
    "missing_colon": Mistake(
        _at_top("workload w probe {\n}"),
        _WORDS,
        "missing ':' between the workload's name and its kind",
        "workload {prev}: {tok} { ... }",
    ),
    "missing_comma": Mistake(
        _in_block("topology replication", "replicas a b", "replicas a, b c")
        + _in_block("topology galera", "nodes a b")
        + _in_block("router haproxy", "readers a b", "writers a b")
        + _in_block("workload w: probe", "target a b", "target a, b c")
        + _in_block("workload w: read_your_writes", "read a b")
        + _in_actions("set global a = 1 on b c"),
        _WORDS,
        "missing ',' between '{prev}' and '{tok}'",
        "separate names with commas: {prev}, {tok}",
    ),
    "no_experiment": Mistake(
        ("topology single { node a }",),
        _WORDS,
        'a file starts with the experiment\'s name: experiment "name" {',
        'wrap the file in: experiment "my-experiment" { ... }',
        accept=_not_close_to_experiment,
    ),
    "experiment_name": Mistake(
        ("experiment {\n}", "experiment\n"),
        frozenset({"LBRACE", "_NL"}),
        "the experiment needs a name",
        'experiment "replica-kill" {',
    ),
    "after_experiment": Mistake(
        (
            'experiment "x" {\n}\nexperiment "y" {\n}',
            'experiment "x" {\n}\n}',
            'experiment "x" {\n}\nduration 1s',
            'experiment "x" {\n}\n}\n',
        ),
        _WORDS | {"LBRACE", "RBRACE", "STRING", "EXPERIMENT"},
        "unexpected '{tok}' after the end of the experiment",
        "a file holds one experiment; look for a '}' that closes it too early",
    ),
    "missing_action": Mistake(
        _at_top("at 10s"),
        frozenset({"_NL", "RBRACE"}),
        "missing action after 'at {prev}'",
        "e.g. at {prev} kill db2 (actions: kill, pause, resume, stop, start, restart, cold "
        "restart, drop caches, promote, network, disk, set global, convert, wait, execute)",
    ),
    "at_without_time": Mistake(
        _at_top("at kill a"),
        _WORDS,
        "'at' needs a time before the action",
        "at 10s {tok} ...",
    ),
}


@cache
def _example_errors() -> dict[str, UnexpectedInput]:
    """Each example's error, computed once: ``match_examples`` re-raises them."""
    parser = get_parser()
    out: dict[str, UnexpectedInput] = {}
    for mistake in MISTAKES.values():
        for example in mistake.examples:
            try:
                parser.parse(example)
            except UnexpectedInput as exc:
                out[example] = exc
    return out


def _raise_example(example: str) -> Tree[Token]:
    """A ``parse_fn`` for ``match_examples`` that replays each example's cached error."""
    exc = _example_errors().get(example)
    if exc is not None:
        raise exc
    return Tree("file", [])


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
    if tok.type == "PARAM":
        return LanguageError(
            path, span,
            f"'{tok}' cannot be used here: a $parameter is for a workload's numbers "
            "(threads $n)",
            "a fault's size and time are fixed; to try several: lab search FILE --knob "
            f"LINE:size (or LINE:for, LINE:at), a fault space's range, or one file each "
            f"({SWEEPS_DOC})",
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
