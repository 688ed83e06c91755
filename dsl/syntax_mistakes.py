"""Common mistakes, named with lark's ``match_examples`` (``use '==' to compare``, ``missing
',' between 'db2' and 'db3'``...): ``MISTAKES``, each with the examples that put the parser in
the same state; the second step of ``dsl.syntax``."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from lark import Token, Tree
from lark.exceptions import UnexpectedInput

from dsl.parser import get_parser

# --- common mistakes -----------------------------------------------------------------


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
