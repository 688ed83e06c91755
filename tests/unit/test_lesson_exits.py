"""The exit status a lesson documents for each of its commands (``# exits N`` at the end of
its line, else 0: tests/lessons.py), which tests/integration/test_catalogue.py wants exactly:
lesson 28's exploration finds the failure it is about, so it must exit 1, not 0."""

from __future__ import annotations

from lab.cli import build_parser
from lab.exits import EXIT_EXPECTATION, EXIT_OK
from tests.lessons import WORKSHOP, Command, commands, lessons


def test_a_comment_at_the_end_of_the_line_documents_the_exit_status() -> None:
    c = Command("x.md", 3, "lab explore f.exp --runs 2 --seed 51    # exits 1: schedule 2 fails")
    assert c.exit == 1
    assert c.argv == ["lab", "explore", "f.exp", "--runs", "2", "--seed", "51"]
    assert c.files == ["f.exp"]
    assert Command("x.md", 3, "lab run f.exp").exit == 0
    assert Command("x.md", 3, "lab run f.exp   # the baseline").exit == 0
    assert Command("x.md", 3, "lab run f.exp   # see lesson 3: it exits 1").exit == 0
    assert Command("x.md", 3, "lab run f.exp#exits 1").exit == 0  # not a comment to a shell
    assert Command("x.md", 3, 'lab search f.exp --expect "x # exits 1" --knob 3:at').exit == 0


def test_lesson_28_documents_that_its_exploration_fails() -> None:
    got = [(c.sub, "--dry-run" in c.argv, c.exit)
           for c in commands(WORKSHOP / "28-explore-shrink.md")]
    assert got == [("check", False, EXIT_OK), ("explore", True, EXIT_OK), ("run", False, EXIT_OK),
                   ("explore", False, EXIT_EXPECTATION)]
    text = (WORKSHOP / "28-explore-shrink.md").read_text(encoding="utf-8")
    assert "exits 1 because one of them failed" in text  # the prose says it too


def test_a_lesson_documents_exit_0_or_1_only() -> None:
    """2 (usage, language) and 3 (a run could not complete) are never a lesson's outcome; and
    every command with its comment still parses."""
    for path in lessons():
        for c in commands(path):
            assert c.exit in (EXIT_OK, EXIT_EXPECTATION), f"{c.lesson}:{c.line}: {c.text}"
            assert build_parser().parse_args(
                ["0123abcd" if a == "RUN" else a for a in c.argv[1:]]).command == c.sub
