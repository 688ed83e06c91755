"""Where the results database lives (issue 24, item 7): a read-only location says so in one
line (exit 3, no traceback) and can still be read; a mistyped ``--db`` never creates a
directory; commands that only read create nothing; a create that fails leaves no file.

Without database servers: `lab run` is stopped before it checks components (``no_servers``)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lab.cli import main
from lab.store.db import Store
from lab.store.errors import StoreMissing, StoreUnavailable

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = str(ROOT / "experiments" / "quickstart.exp")


pytestmark = pytest.mark.usefixtures("lab_dirs")  # tests/unit/conftest.py


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("Error:")]


def tree(d: Path) -> list[str]:
    return sorted(str(p.relative_to(d)) for p in d.rglob("*"))


# --- a read-only location ----------------------------------------------------------------------


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory holding a results database with one run, then made read-only: a tmpfs
    remounted read-only when root (root writes through permissions), else chmod 555."""
    d = tmp_path / "ro"
    d.mkdir()
    mounted = False
    if os.geteuid() == 0:
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(d)],
                           capture_output=True, text=True)  # fmt: skip
        if r.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
        mounted = True
    with Store(d / "results.db") as s:
        s.create_run("quickstart", owner=(os.getpid(), None))
    if mounted:
        subprocess.run(["mount", "-o", "remount,ro", str(d)], check=True)
    else:
        (d / "results.db").chmod(0o444)
        d.chmod(0o555)
    yield d
    if mounted:
        if subprocess.run(["umount", str(d)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(d)], capture_output=True)
    else:
        d.chmod(0o755)


def test_read_only_location_says_so_in_one_line_exit_3(
    read_only_dir: Path, capsys: pytest.CaptureFixture[str], no_servers: list[str]
) -> None:
    db = read_only_dir / "results.db"
    for target in (db, read_only_dir / "new.db"):
        assert main(["run", QUICKSTART, "--db", str(target)]) == 3
        err = capsys.readouterr().err
        (line,) = error_lines(err)
        assert line.startswith(f"Error: results database {target} cannot be written: ")
        assert "read-only" in line
        assert "Traceback" not in err
    assert no_servers == []
    assert tree(read_only_dir) == ["results.db"]  # nothing created there


def test_read_only_location_can_still_be_read(
    read_only_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = read_only_dir / "results.db"
    assert main(["runs", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "quickstart" in out
    [run] = Store(db, write=False).list_runs()
    assert main(["show", str(run["id"]), "--db", str(db), "--json"]) == 0
    assert f'"run_id": "{run["id"]}"' in capsys.readouterr().out
    assert tree(read_only_dir) == ["results.db"]


def test_read_only_store_is_said_by_the_library(read_only_dir: Path) -> None:
    with pytest.raises(StoreUnavailable, match="cannot be written: .*read-only"):
        Store(read_only_dir / "results.db")
    assert Store(read_only_dir / "results.db", write=False).read_only


# --- a mistyped --db ---------------------------------------------------------------------------


def test_mistyped_db_never_creates_a_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_servers: list[str]
) -> None:
    typo = tmp_path / "resluts" / "sub" / "results.db"
    for argv, code in ((["run", QUICKSTART], 3), (["runs"], 2), (["show", "abc"], 2),
                       (["compare", "a", "b"], 2), (["report", "abc"], 2)):  # fmt: skip
        assert main([*argv, "--db", str(typo)]) == code, argv
        err = capsys.readouterr().err
        (line,) = error_lines(err)
        assert str(typo) in line
        assert "Traceback" not in err
    assert not (tmp_path / "resluts").exists()
    assert no_servers == []


def test_run_names_the_missing_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_servers: list[str]
) -> None:
    typo = tmp_path / "resluts" / "results.db"
    assert main(["run", QUICKSTART, "--db", str(typo)]) == 3
    (line,) = error_lines(capsys.readouterr().err)
    assert line == (f"Error: results database {typo} cannot be created: directory "
                    f"{typo.parent} does not exist (the lab creates the database file, never "
                    "its directory: is the path mistyped?)")  # fmt: skip


def test_read_commands_with_a_missing_database_create_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "nope.db"
    for argv in (["runs"], ["show", "abc"], ["compare", "a", "b"], ["report", "abc"]):
        assert main([*argv, "--db", str(db)]) == 2, argv
        (line,) = error_lines(capsys.readouterr().err)
        assert line.startswith(f"Error: no results database at {db} ")
    assert not db.exists()
    with pytest.raises(StoreMissing):
        Store(db, write=False)
    assert not db.exists()


def test_lab_runs_before_any_run_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                         ) -> None:  # fmt: skip
    assert main(["runs"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"no runs yet: no results database at {tmp_path / 'home'}")
    assert not (tmp_path / "home").exists()


def test_the_default_location_is_still_created_when_a_command_writes(tmp_path: Path) -> None:
    Store().close()  # $LAB_HOME/results.db: the first `lab run` of a machine
    assert (tmp_path / "home" / "results.db").is_file()


# --- a failed create -----------------------------------------------------------------------


def test_a_failed_create_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str],
                                        no_servers: list[str]) -> None:  # fmt: skip
    def full(db: Any) -> list[int]:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr("lab.store.db.migrate", full)
    db = tmp_path / "results.db"
    with pytest.raises(StoreUnavailable, match="cannot be written: database or disk is full"):
        Store(db)
    assert main(["run", QUICKSTART, "--db", str(db)]) == 3
    assert len(error_lines(capsys.readouterr().err)) == 1
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("results.db")] == []


def test_a_failed_open_of_an_existing_database_keeps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "results.db"
    Store(db).close()

    def full(d: Any) -> list[int]:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr("lab.store.db.migrate", full)
    with pytest.raises(StoreUnavailable):
        Store(db)
    assert db.is_file()


def test_a_full_disk_leaves_no_empty_file(tmp_path: Path) -> None:
    """A real full file system (a 1 MB tmpfs filled up), through the command line."""
    if os.geteuid() != 0:
        pytest.skip("a small tmpfs needs root; test_a_failed_create_leaves_no_file simulates it")
    d = tmp_path / "fs"
    d.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(d)],
                      capture_output=True).returncode != 0:  # fmt: skip
        pytest.skip("cannot mount a tmpfs here")
    try:
        with open(d / "filler", "wb") as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError:
                pass
        r = subprocess.run([sys.executable, "-m", "lab.cli", "runs", "--db", str(d / "r.db")],
                           capture_output=True, text=True, cwd=ROOT)  # fmt: skip
        assert r.returncode == 2  # reading creates nothing
        with pytest.raises(StoreUnavailable, match="cannot be written"):
            Store(d / "r.db")
        assert sorted(p.name for p in d.iterdir()) == ["filler"]
    finally:
        if subprocess.run(["umount", str(d)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(d)], capture_output=True)
