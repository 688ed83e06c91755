"""Each lesson's ``lab search`` names a knob its file has: a ``LINE:at`` knob is fragile (a
comment line more in the file's header moves the statement; ae37e12 did, and lesson 29's search
exited 2 on real servers only), so it is checked here without servers, with both ends."""

from __future__ import annotations

import pytest

from dsl.api import check_text, load_experiment
from lab.explore.search import knob_text
from tests.lessons import ROOT, Command, commands, lessons

SEARCHES = [c for p in lessons() for c in commands(p) if c.sub == "search"]


@pytest.mark.parametrize("cmd", SEARCHES, ids=[f"{c.lesson}:{c.line}" for c in SEARCHES])
def test_a_lessons_search_names_a_knob_of_its_file(cmd: Command) -> None:
    argv = cmd.argv
    path = ROOT / cmd.files[0]
    knob = argv[argv.index("--knob") + 1]
    text = path.read_text(encoding="utf-8")
    exp = load_experiment(path)
    for end in (argv[argv.index("--from") + 1], argv[argv.index("--to") + 1]):
        moved = knob_text(text, exp, knob, end)  # raises KnobError for a knob the file lacks
        assert moved != text and check_text(moved, str(path)) == [], (knob, end)
