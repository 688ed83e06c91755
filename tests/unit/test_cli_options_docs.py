"""Every option of every `lab` command is documented, in the README or docs/ (issue 24 item 9:
`lab run --keep` and `lab up --cell` were not)."""

from __future__ import annotations

import argparse
from pathlib import Path

from lab.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]


def _options() -> list[tuple[str, str]]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sorted((name, opt) for name, p in sub.choices.items() for a in p._actions
                  for opt in a.option_strings if opt.startswith("--") and opt != "--help")


def test_every_option_of_every_command_is_documented() -> None:
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    text = "\n".join(p.read_text(encoding="utf-8") for p in docs)
    options = _options()
    assert ("run", "--keep") in options
    assert [f"lab {c} {o}" for c, o in options if o not in text] == []
