"""Errors (and warnings) of the language: every one points at a place in a file.

A ``LanguageError`` is a value (path, span, message, hint, severity); ``LanguageErrors`` is
the one exception the language raises for bad input, holding all errors found, sorted by
position. A warning is a ``LanguageError`` with ``severity="warning"``: the file is valid but
probably does not measure what it means to (``dsl.compile_warnings.plan_warnings``); it never
makes a command fail. A note (``severity="note"``) tells something the reader must know, such
as an action that needs root (``dsl.compile_warnings.root_notes``); it never makes a command
fail either.
``format_error`` renders one error the way compilers do::

    experiments/failover.exp:12:5: error: unknown node 'db4' (known: db1, db2, db3)
        at 20s kill db4
                    ^^^
        hint: ...
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from dsl.models import NO_SPAN, Span

Severity = Literal["error", "warning", "note"]

INDENT = "    "


@dataclass(frozen=True, slots=True)
class LanguageError:
    """One problem in an experiment file. Line and column are 1-based; line 0 means the
    error is about the file as a whole (for instance, it cannot be read). A warning has
    ``severity="warning"``."""

    path: str
    span: Span
    message: str
    hint: str | None = None
    severity: Severity = "error"

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.span.line, self.span.column, self.message)

    def location(self) -> str:
        if self.span.line <= 0:
            return self.path
        return f"{self.path}:{self.span.line}:{self.span.column}"


def sorted_errors(errors: Iterable[LanguageError]) -> list[LanguageError]:
    """Sorted by position, without exact duplicates."""
    unique = {(e.path, e.span, e.message, e.hint, e.severity): e for e in errors}
    return sorted(unique.values(), key=LanguageError.sort_key)


class LanguageErrors(Exception):
    """Raised for any bad input: syntax errors, or every semantic error of a file.

    ``source`` (the text of the file, when known) lets ``str()`` show the lines."""

    def __init__(self, errors: Iterable[LanguageError], source: str | None = None) -> None:
        self.errors: list[LanguageError] = sorted_errors(errors)
        self.source = source
        self.rest: str | None = None  # syntax errors: the text without their statements
        super().__init__(self.errors[0].message if self.errors else "language error")

    def __str__(self) -> str:
        sources = {e.path: self.source for e in self.errors if self.source is not None}
        return format_errors(self.errors, sources)


def _caret_line(line: str, span: Span) -> str:
    start = max(span.column - 1, 0)
    if span.end_line == span.line and span.end_column > span.column:
        width = span.end_column - span.column
    else:
        width = len(line) - start
    width = max(1, min(width, max(len(line) - start, 1)))
    # keep tabs so that the caret lines up with the source line as printed
    prefix = "".join("\t" if ch == "\t" else " " for ch in line[:start])
    prefix += " " * (start - len(line[:start]))
    return prefix + "^" * width


def format_error(err: LanguageError, source_text: str | None) -> str:
    """``path:line:col: error: message`` (``warning:`` for a warning), the source line, a
    caret under the culprit, and ``hint: ...`` when there is one. Without a source text (or a
    position) only the first and last lines are printed."""
    out = [f"{err.location()}: {err.severity}: {err.message}"]
    if source_text is not None and err.span.line > 0:
        lines = source_text.splitlines()
        if err.span.line <= len(lines):
            line = lines[err.span.line - 1].rstrip()
            out.append(INDENT + line)
            out.append(INDENT + _caret_line(line, err.span))
    if err.hint:
        out.append(f"{INDENT}hint: {err.hint}")
    return "\n".join(out)


def format_errors(
    errors: Iterable[LanguageError], sources: Mapping[str, str | None] | None = None
) -> str:
    """All errors, one block each, separated by blank lines; ``sources`` maps a path to its
    text (a path missing from it is printed without its source lines)."""
    sources = sources or {}
    return "\n\n".join(format_error(e, sources.get(e.path)) for e in errors)


def file_error(path: str, message: str, hint: str | None = None) -> LanguageError:
    """An error about a file as a whole (it cannot be read, it is empty...)."""
    return LanguageError(path=path, span=NO_SPAN, message=message, hint=hint)
