"""Keyword hints (dsl/syntax_words.py, issue 24 item 9): a keyword written where it does not belong
says where it belongs, and a typo of it gets a did-you-mean, for every action's first word and
for ``when`` (cpu, memory, clock and io had no hint)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dsl.api import check_text
from dsl.syntax_words import KEYWORD_HOME

GRAMMAR = Path(__file__).resolve().parents[2] / "dsl" / "grammar.lark"
TOP = """experiment "t" {{
  topology replication {{ primary db1  replicas db2, db3 }}
  workload w: probe {{ target db1 }}
  {line}
}}
"""
IN_WORKLOAD = """experiment "t" {{
  topology replication {{ primary db1  replicas db2, db3 }}
  workload w: probe {{
    target db1
    {line}
  }}
}}
"""
STATEMENTS = {
    "cpu": "cpu limit db1 to 50%",
    "memory": "memory limit db1 to 256M",
    "clock": "clock skew db1 by 5s",
    "io": "io delay db1 5ms",
    "when": "when replication_lag(db2) > 5s kill db1",
}
TYPOS = {"cpu": "cpuu", "memory": "memroy", "clock": "clokc", "io": "ioo", "when": "whne"}


def errors(text: str) -> list[tuple[str, str | None]]:
    return [(e.message, e.hint) for e in check_text(text, "t.exp")]


@pytest.mark.parametrize("word", sorted(STATEMENTS))
def test_a_keyword_out_of_place_says_where_it_belongs(word: str) -> None:
    [(message, hint)] = errors(IN_WORKLOAD.format(line=STATEMENTS[word]))
    assert message == f"'{word}' cannot be used here inside 'workload'"
    assert hint is not None
    home = ("starts a trigger, a statement of the experiment block" if word == "when"
            else "starts an action: at 10s")  # fmt: skip
    assert hint.startswith(f"'{word}' {home}")


@pytest.mark.parametrize("word", sorted(STATEMENTS))
def test_an_action_keyword_at_the_top_says_it_needs_a_time(word: str) -> None:
    if word == "when":
        assert errors(TOP.format(line=STATEMENTS[word])) == []  # a statement of its own there
        return
    [(message, hint)] = errors(TOP.format(line=STATEMENTS[word]))
    assert message == f"'{word}' cannot be used here inside 'experiment'"
    assert hint is not None and hint.startswith(f"'{word}' starts an action: at 10s")


@pytest.mark.parametrize("word", sorted(STATEMENTS))
def test_a_typo_of_each_gets_a_did_you_mean(word: str) -> None:
    line = STATEMENTS[word].replace(word, TYPOS[word], 1)
    if word != "when":
        line = "at 10s " + line
    [(message, hint)] = errors(TOP.format(line=line))
    assert TYPOS[word] in message
    assert hint == f"did you mean '{word}'?"


def action_first_words() -> set[str]:
    """The first keyword of every alternative of the grammar's ``_action`` rule."""
    text = GRAMMAR.read_text()
    body = re.search(r"^_action:(.*?)\n\n", text, re.S | re.M)
    assert body is not None
    words = set()
    for rule in re.findall(r"[a-z_]+", body.group(1)):
        m = re.search(rf'^{rule}:\s*"(\w+)"', text, re.M)
        assert m is not None, rule
        words.add(m.group(1))
    return words


def test_every_action_s_first_word_has_a_hint() -> None:
    words = action_first_words()
    assert {"cpu", "memory", "clock", "io", "kill", "network"} <= words
    assert sorted(w for w in words if w not in KEYWORD_HOME) == []


def test_a_parameter_in_a_fault_says_what_sweeps_a_fault() -> None:
    text = TOP.format(line="at 5s network latency db2 $lat").replace(
        "  workload w", "  vary lat in 10, 50\n  workload w")
    found = errors(text)
    (message, hint) = next(e for e in found if "$lat" in e[0] and "cannot be used" in e[0])
    assert message == "'$lat' cannot be used here: a $parameter is for a workload's numbers " \
                      "(threads $n)"
    assert hint is not None and "lab search FILE --knob LINE:size" in hint


def test_a_variant_naming_a_node_says_a_variant_is_for_every_node() -> None:
    [(message, hint)] = errors(TOP.format(line="variant v { config db2 { sync_binlog = 0 } }"))
    assert message == ("a variant sets its values on every node: it cannot name a node "
                       "('config db2')")  # fmt: skip
    assert hint is not None and hint.startswith("set it on db2 alone with config db2 { ... }")
