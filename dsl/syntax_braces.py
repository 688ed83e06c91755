"""Unbalanced braces, found before the parser by a scan that knows strings, comments and
indentation (``missing '}': the topology block opened here is not closed before line 9``):
the first step of ``dsl.syntax``."""

from __future__ import annotations

from dataclasses import dataclass

from dsl.errors import LanguageError
from dsl.models import Span

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
