"""The workshop's lessons (docs/workshop/NN-name.md) as data: their commands, in order.

A lesson shows its commands in ```console blocks, one per line after ``$ ``; the other lines of
a block are sample output and are not run. ``RUN`` stands for the id of the lesson's last
``lab run`` (tests substitute it). A command whose documented outcome is another exit status
than 0 says so in a comment at the end of its line, ``# exits N`` (``lab explore`` that finds
the failure it is about: ``# exits 1``); a shell ignores it. The unit tests check the commands
name existing files and parse; tests/integration/test_catalogue.py runs them as written and
wants exactly the status each documents.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKSHOP = ROOT / "docs" / "workshop"
LESSON_NAME = re.compile(r"^\d\d-[a-z0-9-]+\.md$")
RUN = "RUN"  # the placeholder for the last run's id
EXITS = re.compile(r"#\s*exits\s+(\d+)\b")  # the comment of `$ lab ...   # exits 1: why`
FILE_COMMANDS = {"run", "plan", "check", "up", "explore", "search"}  # take .exp files
# lab commands that run experiments on servers like `lab run` (unless --dry-run): the unit
# suite does not run them, tests/integration/test_catalogue.py does
SERVER_COMMANDS = {"run", "explore", "replay", "shrink", "search", "up"}


@dataclass(frozen=True)
class Command:
    lesson: str  # file name of the lesson
    line: int  # line in the lesson
    text: str  # as written after "$ "

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.text, comments=True)

    @property
    def exit(self) -> int:
        """The exit status the lesson documents for the command: ``# exits N`` at the end of
        its line, else 0."""
        m = EXITS.match(comment(self.text))
        return int(m.group(1)) if m else 0

    @property
    def sub(self) -> str:
        argv = self.argv
        return argv[1] if len(argv) > 1 else ""

    @property
    def starts_servers(self) -> bool:
        return self.sub in SERVER_COMMANDS and "--dry-run" not in self.argv

    @property
    def files(self) -> list[str]:
        if self.sub not in FILE_COMMANDS:
            return []
        return [a for a in self.argv[2:] if a.endswith(".exp")]


def comment(text: str) -> str:
    """The shell comment at the end of a command line (from its ``#``), or ''."""
    quote = ""
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or text[i - 1].isspace()):
            return text[i:]
    return ""


def lessons() -> list[Path]:
    return sorted(p for p in WORKSHOP.glob("*.md") if LESSON_NAME.match(p.name))


def commands(path: Path) -> list[Command]:
    out: list[Command] = []
    in_console = False
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            in_console = line.strip() == "```console" if not in_console else False
            continue
        if in_console and line.startswith("$ "):
            out.append(Command(path.name, i, line[2:].strip()))
    return out


@dataclass(frozen=True)
class Part:
    """A slice of a lesson that stands on its own: one ``lab run`` with the commands after it
    up to the next ``lab run`` (they read that run: ``lab show RUN``); the first part also has
    the commands before the first run (``lab check``, ``lab plan``). A lesson without a run is
    one part. ``id``: the lesson's name, and the experiment's when the lesson has more runs."""

    lesson: Path
    commands: tuple[Command, ...]
    id: str

    @property
    def run_files(self) -> list[str]:
        return [f for c in self.commands if c.sub == "run" for f in c.files]


def parts(path: Path) -> list[Part]:
    """A lesson's commands as parts, in order (``Part``)."""
    groups: list[list[Command]] = []
    for c in commands(path):
        if not groups or (c.sub == "run" and any(x.sub == "run" for x in groups[-1])):
            groups.append([])
        groups[-1].append(c)
    runs = sum(c.sub == "run" for c in commands(path))
    out = []
    for g in groups:
        files = [f for c in g if c.sub == "run" for f in c.files]
        name = path.stem if runs <= 1 or not files else f"{path.stem}/{Path(files[0]).stem}"
        out.append(Part(path, tuple(g), name))
    return out


def substitute(cmd: Command, run_id: str | None) -> list[str]:
    """The command's arguments, with RUN replaced by the last run's id."""
    return [run_id if a == RUN and run_id else a for a in cmd.argv]
