"""The parser's tables come from lark's cache, in a directory of the user's own: a damaged
cache file is rebuilt without a word, a directory others may write is not used (the file is a
pickle), and a parser from the cache parses as one built from the grammar."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsl import parser
from dsl.api import parse_text

EXP = """experiment "cached" {
  duration 5s
  topology replication { primary db1  replicas db2 }
  at 1s kill db1
}
"""


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    parser.get_parser.cache_clear()
    parser.fast_path.cache_clear()
    yield tmp_path / "replica-chaos-lab"
    parser.get_parser.cache_clear()
    parser.fast_path.cache_clear()


def test_the_cache_is_in_a_directory_of_the_users_own(fresh: Path) -> None:
    assert parser.cache_file() == str(fresh / "grammar.lark-cache")
    assert fresh.stat().st_mode & 0o777 == 0o700


def test_a_directory_others_may_write_is_not_used(fresh: Path) -> None:
    fresh.mkdir(mode=0o700)
    os.chmod(fresh, 0o777)
    assert parser.cache_file() is None
    assert parse_text(EXP).name == "cached"  # no cache: built from the grammar


def test_a_damaged_cache_is_rebuilt_and_parses_the_same(fresh: Path,
                                                        capfd: pytest.CaptureFixture[str]) -> None:
    built = parse_text(EXP)
    cache = fresh / "grammar.lark-cache"
    assert cache.stat().st_size > 10_000  # written by the first parser
    cache.write_bytes(b"not a pickle\n")
    parser.get_parser.cache_clear()
    parser.fast_path.cache_clear()
    assert parse_text(EXP) == built
    assert cache.stat().st_size > 10_000  # written again
    assert capfd.readouterr().err == ""
    parser.get_parser.cache_clear()
    parser.fast_path.cache_clear()
    assert parse_text(EXP) == built  # from the cache
