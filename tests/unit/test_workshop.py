"""The workshop (docs/workshop/): every catalogue experiment opens with its four-part header and
has a lesson; every lesson has its parts and its commands name files that exist and parse as
`lab` command lines; the commands that start no servers work (here on a stored run;
tests/integration/test_catalogue.py runs every command as written on real servers)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lab.cli import build_parser, main
from lab.store.db import Store
from tests.lessons import ROOT, RUN, WORKSHOP, Command, commands, lessons, substitute
from tests.unit.test_report_format import canned_summary

CATALOGUE = sorted((ROOT / "experiments").glob("*.exp"))  # calibration/ is not a lesson
LESSONS = lessons()
COMMANDS = [c for p in LESSONS for c in commands(p)]
HEADER = ("Shows", "Predict", "Expect", "Takes")
SECTIONS = ("## The question", "## Predict", "## Run it", "## Reading the result",
            "## What happened", "## Timing")


def header(path: Path) -> dict[str, str]:
    """The comment block before `experiment`: each part's text, continuation lines joined."""
    parts: dict[str, str] = {}
    current = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("experiment"):
            break
        m = re.match(r"# (Shows|Predict|Expect|Takes):\s*(.*)", line)
        if m:
            current = m.group(1)
            parts[current] = m.group(2)
        elif current and line.startswith("#  "):
            parts[current] += " " + line[1:].strip()
        elif line.strip():
            current = None
    return parts


def test_the_workshop_is_found() -> None:
    assert "quickstart.exp" in {p.name for p in CATALOGUE}
    assert LESSONS and LESSONS[0].name == "01-quickstart.md"
    assert any(c.sub == "run" for c in COMMANDS) and any(c.sub != "run" for c in COMMANDS)


@pytest.mark.parametrize("path", CATALOGUE, ids=[p.name for p in CATALOGUE])
def test_every_catalogue_experiment_opens_with_its_header(path: Path) -> None:
    parts = header(path)
    assert list(parts) == list(HEADER), f"{path.name}: header parts {list(parts)}"
    for name, text in parts.items():
        assert len(text) > 20, f"{path.name}: '# {name}:' says too little"
    assert re.search(r"\d+ (s|min)\b", parts["Takes"]) or "not exercised here" in parts["Takes"]


def test_every_catalogue_experiment_has_a_lesson() -> None:
    taught = {Path(f).name for c in COMMANDS if c.sub == "run" for f in c.files
              if Path(f).parent.name == "experiments"}
    missing = sorted(p.name for p in CATALOGUE if p.name not in taught)
    assert not missing, f"no lesson runs: {missing}"


@pytest.mark.parametrize("path", LESSONS, ids=[p.name for p in LESSONS])
def test_every_lesson_has_its_parts(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    at = [text.find(s) for s in SECTIONS]
    assert all(i >= 0 for i in at), [s for s, i in zip(SECTIONS, at, strict=True) if i < 0]
    assert at == sorted(at), "sections out of order"
    assert commands(path), "a lesson has commands to type"
    timing = text[text.find("## Timing"):]
    assert re.search(r"\d+ (s|min)\b", timing), "the timing says how long it takes"


def test_the_index_links_every_lesson_and_the_instructor_page() -> None:
    index = (WORKSHOP / "README.md").read_text(encoding="utf-8")
    for p in LESSONS:
        assert f"]({p.name})" in index, p.name
    assert "](instructor.md)" in index
    instructor = (WORKSHOP / "instructor.md").read_text(encoding="utf-8")
    assert "make demo" in instructor and "2-core" in instructor


@pytest.mark.parametrize("cmd", COMMANDS, ids=[f"{c.lesson}:{c.line}" for c in COMMANDS])
def test_every_lesson_command_names_files_that_exist_and_parses(cmd: Command) -> None:
    assert cmd.argv[0] == "lab", "lesson commands are lab commands"
    for f in cmd.files:
        assert (ROOT / f).is_file(), f"{cmd.lesson}:{cmd.line}: no such file {f}"
    args = build_parser().parse_args(substitute(cmd, "0123abcd")[1:])
    assert args.command == cmd.sub


def test_run_stands_for_a_run_the_lesson_made_before() -> None:
    for path in LESSONS:
        seen_run = False
        for c in commands(path):
            if RUN in c.argv:
                assert seen_run, f"{c.lesson}:{c.line}: RUN before any `lab run`"
            seen_run = seen_run or c.sub == "run"


# `lab run`, and lab explore/replay/shrink/search without --dry-run, start servers: the
# integration suite runs them (tests/integration/test_catalogue.py)
OTHER = [c for c in COMMANDS if not c.starts_servers]


@pytest.mark.parametrize("cmd", OTHER, ids=[f"{c.lesson}:{c.line}" for c in OTHER])
def test_the_commands_other_than_run_work(cmd: Command, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """On a stored run (the report's canned summary) instead of the lesson's real one."""
    monkeypatch.setenv("LAB_HOME", str(tmp_path))
    monkeypatch.chdir(ROOT)
    store = Store(tmp_path / "results.db")
    run_id = store.create_run("quickstart", "experiments/quickstart.exp")
    store.finish_run(run_id, "passed", 0, summary=dict(canned_summary(), run_id=run_id))
    store.conn.close()
    assert main(substitute(cmd, run_id)[1:]) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.strip()


@pytest.mark.parametrize("lesson", LESSONS, ids=[p.stem for p in LESSONS])
def test_a_lesson_s_parts_hold_its_commands_once_each_with_the_run_they_read(
        lesson: Path) -> None:
    """The integration suite runs a lesson part by part (tests/lessons.py ``Part``), each part
    in a home of its own: together the parts are the lesson's commands, in order; a part has
    at most one ``lab run``, and a command that reads a run (``RUN``, ``lab show``) is in the
    part of the run before it; the ids are distinct."""
    from tests.lessons import parts

    ps = parts(lesson)
    assert [c for p in ps for c in p.commands] == commands(lesson)
    assert len({p.id for p in ps}) == len(ps)
    for p in ps:
        runs = [i for i, c in enumerate(p.commands) if c.sub == "run"]
        assert len(runs) <= 1, p.id
        readers = [i for i, c in enumerate(p.commands) if RUN in c.argv or c.sub == "show"]
        assert all(runs and i > runs[0] for i in readers), (p.id, readers, runs)
