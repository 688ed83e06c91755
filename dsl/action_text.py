"""One action of the language, on its own: ``kill db2``, ``network latency db3 200ms``,
``wait until db2 caught_up timeout 30s``, as an action model of an experiment.

``parse_action(text, source, path)`` reads the action the way the experiment's timeline would
(``at 0s <text>`` inside the experiment whose text is ``source``), so it is checked against
that experiment: its nodes, its topology, its links. Bad input raises ``LanguageErrors`` whose
errors point into the action text itself (``<action>:1:6: error: unknown node 'db4' ...``,
with a caret under it); ``format_errors(e.errors, {"<action>": text})`` shows them.
"""

from __future__ import annotations

import dataclasses

from dsl.api import parse_text
from dsl.errors import LanguageError, LanguageErrors, file_error
from dsl.models import Action, Span

ACTION_PATH = "<action>"
_PREFIX = "at 0s "


def _shifted(err: LanguageError, where: str) -> LanguageError:
    """An error on the inserted line, moved onto the action text (line 1)."""
    s = err.span
    n = len(_PREFIX)
    start = max(s.column - n, 1)
    end = max(s.end_column - n, start + 1) if s.end_line == s.line else start + 1
    span = Span(line=1, column=start, end_line=1, end_column=end)
    return dataclasses.replace(err, path=where, span=span)


def parse_action(text: str, source: str, path: str = "<string>",
                 where: str = ACTION_PATH) -> Action:
    """The action ``text`` names, checked against the experiment ``source`` (which must be
    valid: its own errors are raised as they are)."""
    action = text.strip()
    if not action or "\n" in action or "\r" in action:
        raise LanguageErrors([file_error(where, "one action on one line is expected",
                                         "for example: kill db2")], source=text)
    exp = parse_text(source, path)
    end = exp.span  # the experiment's closing brace is its last character
    lines = source.splitlines(keepends=True)
    offset = sum(len(line) for line in lines[: end.end_line - 1]) + end.end_column - 2
    inserted = source[:offset] + "\n" + _PREFIX + action + "\n" + source[offset:]
    line = end.end_line + 1
    try:
        with_action = parse_text(inserted, path)
    except LanguageErrors as e:
        mine = [_shifted(err, where) for err in e.errors if err.span.line == line]
        if not mine:
            mine = [file_error(where, f"not an action here: {err.message}", err.hint)
                    for err in e.errors]
        raise LanguageErrors(mine, source=action) from None
    found = [t.action for t in with_action.timeline if t.span.line == line]
    if not found:
        raise LanguageErrors([file_error(where, "not an action of the timeline",
                                         "for example: kill db2")], source=action)
    return found[0]
