"""Tables that fit the terminal without breaking a figure: ``lab compare`` and the summary
matrix at 80 columns, or piped.

rich wraps a cell at any space and folds a word longer than its column, so ``11,638/s–14,507/s``
became ``11,638/ s–14,50 7/s`` and ``4.3 ms`` became ``4.3`` over ``ms``. Here a cell is cut into
*atoms* — a figure with its unit and its sign (``≥ 4.20 s``, ``± 7.2 ms``, ``(+ 3``) never
splits — the column widths are chosen so that every atom fits (``fit_widths``), and each cell
is wrapped between atoms before rich sees it (``fitted_table``). When even the widest atom of
every column cannot fit side by side, there is no table: the caller prints each row as a block
of ``name  value`` lines (``block_lines``), wrapped between atoms too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

_UNIT = re.compile(r"^(?:ns|µs|us|ms|s|min|h|d|B|bytes|kB|MB|GB|TB|%|×|x|/s)[),;:.]*$")
_SIGN = ("≥", "≤", "±", "+", "~", "<", ">", "=", "(+", "(≥", "(±")


def atoms(text: str) -> list[str]:
    """The pieces a line may break between: words, but a unit stays with its number and a sign
    with what follows it."""
    out: list[str] = []
    for tok in text.split(" "):
        if not tok:
            continue
        if out and (out[-1] in _SIGN or (_UNIT.match(tok) and out[-1][-1:].isdigit())):
            out[-1] += " " + tok
        else:
            out.append(tok)
    return out


def longest_atom(text: str) -> int:
    return max((len(a) for line in text.split("\n") for a in atoms(line)), default=0)


def wrap(text: str, width: int) -> list[str]:
    """Lines of at most ``width`` characters, broken between atoms only (an atom longer than
    ``width`` stays whole on its own line)."""
    lines: list[str] = []
    for para in text.split("\n"):
        cur = ""
        for a in atoms(para):
            if cur and len(cur) + 1 + len(a) > width:
                lines.append(cur)
                cur = a
            else:
                cur = f"{cur} {a}" if cur else a
        lines.append(cur)
    return lines


def _overhead(console: Console, n: int, **table: Any) -> int:
    """The characters a table of ``n`` columns adds to its columns' widths (padding, rules)."""
    t = Table(**table)
    for _ in range(n):
        t.add_column(width=1, no_wrap=True)
    t.add_row(*("x" * n))
    return Measurement.get(console, console.options.update_width(10_000), t).maximum - n


def fit_widths(header: Sequence[str], rows: Sequence[Sequence[str]], room: int) -> list[int] | None:
    """Column widths whose sum is at most ``room`` with every atom whole (None: impossible):
    each column its natural width when they all fit, else its widest atom, then what is left
    where it saves the most lines."""
    cols = list(zip(header, *rows, strict=True))
    natural = [max(len(line) for x in col for line in x.split("\n")) for col in cols]
    least = [max(longest_atom(x) for x in col) for col in cols]
    if sum(natural) <= room:
        return natural
    if sum(least) > room:
        return None
    widths = list(least)
    spare = room - sum(widths)
    while spare > 0:  # the widening that saves most lines per character, until none does
        now = _height(cols, widths)
        best: tuple[float, int, int] | None = None
        for i in range(len(cols)):
            for w in range(widths[i] + 1, min(natural[i], widths[i] + spare) + 1):
                saved = now - _height(cols, widths[:i] + [w] + widths[i + 1:])
                if saved > 0:
                    gain = saved / (w - widths[i])
                    if best is None or gain > best[0]:
                        best = (gain, i, w)
                    break
        if best is None:
            break
        _, i, w = best
        spare -= w - widths[i]
        widths[i] = w
    while spare > 0:  # no one column saves a line alone: the rest to those that want most
        want = [(natural[i] - widths[i], i) for i in range(len(cols)) if widths[i] < natural[i]]
        if not want:
            break
        widths[max(want)[1]] += 1
        spare -= 1
    return widths


def _height(cols: Sequence[Sequence[str]], widths: Sequence[int]) -> int:
    """Lines of a table whose columns are ``cols`` (header first) at these widths."""
    return sum(max(len(wrap(x, w)) for x, w in zip(row, widths, strict=True))
               for row in zip(*cols, strict=True))


def fitted_table(header: Sequence[str], rows: Sequence[Sequence[str]], console: Console,
                 justify: Sequence[str] | None = None, sections: Sequence[int] = (),
                 colors: Mapping[str, str] | None = None, **table: Any) -> Table | None:
    """A rich table of these plain texts (escaped here) that fits
    ``console.width`` with no figure broken, or None when it cannot. ``sections``: row indexes
    a rule goes before; ``colors``: a cell that begins with one of these words (``PASS``) has
    it in that colour."""
    n = len(header)
    room = console.width - _overhead(console, n, **table)
    widths = fit_widths(header, rows, room)
    if widths is None:
        return None
    t = Table(**table)
    for i, (h, w) in enumerate(zip(header, widths, strict=True)):
        t.add_column(escape("\n".join(wrap(h, w))), width=w, no_wrap=True,
                     justify=(justify[i] if justify else "left"))  # type: ignore[arg-type]
    for k, row in enumerate(rows):
        if k in sections:
            t.add_section()
        t.add_row(*(_colored(escape("\n".join(wrap(x, w))), colors)
                    for x, w in zip(row, widths, strict=True)))
    return t


def _colored(text: str, colors: Mapping[str, str] | None) -> str:
    for word, color in (colors or {}).items():
        if text == word or text.startswith(word + " ") or text.startswith(word + "\n"):
            return f"[{color}]{word}[/]{text[len(word):]}"
    return text


def block_lines(title: str, pairs: Sequence[tuple[str, str]], width: int,
                indent: str = "  ") -> list[str]:
    """A row that no table can hold: its title, then ``name: value`` items packed on lines of
    at most ``width``, the next lines indented (an item is never split; two spaces between
    items)."""
    lines: list[str] = []
    cur = title
    for name, value in pairs:
        item = f"{name}: {value}" if name else value
        if len(cur) + 2 + len(item) <= width or not cur.strip():
            cur = f"{cur}  {item}"
            continue
        lines.append(cur)
        cur = indent + item
        if len(cur) > width:  # an item wider than a line: wrapped between its atoms
            *whole, cur = wrap(item, max(width - len(indent) - 2, 1))
            lines.append(indent + whole[0])
            lines += [indent + "  " + x for x in whole[1:]]
            cur = indent + "  " + cur
    lines.append(cur)
    return lines
