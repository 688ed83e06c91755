"""The running server is the experiment's engine (``runners.server_identity``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsl.versions import version_matches
from runners.errors import ComponentError
from runners.sandbox import sandbox_binary, unpacked
from runners.server_identity import check, flavor_of, mismatch

DEBIAN = ("10.11.19-MariaDB-0+deb12u1-log", "Debian 12")


def test_flavor_from_version_and_comment() -> None:
    assert flavor_of(*DEBIAN) == "mariadb"
    assert flavor_of("8.0.36", "MySQL Community Server - GPL") == "mysql"
    assert flavor_of("8.0.36-28", "Percona Server (GPL), Release 28") == "percona"


def test_version_matches_by_components() -> None:
    assert version_matches("10.11", DEBIAN[0])
    assert version_matches("10.11.19", DEBIAN[0])
    assert not version_matches("10.1", DEBIAN[0])
    assert not version_matches("11.4", DEBIAN[0])
    assert not version_matches("", DEBIAN[0])


def test_mismatch_names_what_runs() -> None:
    assert mismatch("mariadb", None, *DEBIAN) is None
    assert mismatch("mariadb", "10.11", *DEBIAN) is None
    assert mismatch("mariadb", "11.4", *DEBIAN) == f"runs mariadb {DEBIAN[0]}, not 11.4"
    assert mismatch("mysql", None, *DEBIAN) == f"runs mariadb ({DEBIAN[0]}), not mysql"
    assert mismatch("mysql", "8.0", "8.0.36", "MySQL Community Server - GPL") is None
    why = mismatch("mysql", None, "8.4.2", "MySQL Community Server - GPL")
    assert why is not None and "8.4 removed" in why


class _Node:
    def __init__(self, name: str, version: str, comment: str) -> None:
        self.name, self.row = name, {"v": version, "c": comment}

    def sql(self, statement: str, timeout: float = 5.0) -> list[dict[str, Any]]:
        return [self.row]


def test_check_names_every_wrong_node_and_what_decides() -> None:
    nodes = [_Node("db1", *DEBIAN), _Node("db2", "11.4.3-MariaDB", ""), _Node("db3", *DEBIAN)]
    check("mariadb", None, nodes, "how")
    with pytest.raises(ComponentError) as e:
        check("mariadb", "10.11", nodes, "an image decides")
    msg = str(e.value)
    assert "db2 runs mariadb 11.4.3-MariaDB, not 10.11" in msg
    assert "db1" not in msg and "an image decides" in msg


def _unpack(root: Path, version: str, flavor: str | None) -> None:
    (root / version / "bin").mkdir(parents=True)
    if flavor:
        (root / version / "FLAVOR").write_text(flavor + "\n")


def test_unpacked_versions_by_flavor_and_prefix(tmp_path: Path) -> None:
    """dbdeployer's sandbox-binary: one directory per version, FLAVOR written by unpack."""
    for v, f in (("8.0.36", "mysql"), ("8.0.4", "mysql"), ("8.0.39", "percona"),
                 ("10.6.18", "mariadb"), ("5.7.44", None)):
        _unpack(tmp_path, v, f)
    (tmp_path / "notes").mkdir()
    assert unpacked(tmp_path, "mysql", None) == ["8.0.36", "8.0.4", "5.7.44"]
    assert unpacked(tmp_path, "mysql", "8.0") == ["8.0.36", "8.0.4"]
    assert unpacked(tmp_path, "mysql", "8.0.3") == []  # 8.0.36 does not begin with 8.0.3
    assert unpacked(tmp_path, "percona", "8") == ["8.0.39"]


def test_sandbox_binary_picks_the_newest_match_or_says_what_is_there(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _unpack(tmp_path, "8.0.36", "mysql")
    _unpack(tmp_path, "8.0.39", "percona")
    monkeypatch.setenv("LAB_SANDBOX_BINARY", str(tmp_path))
    assert sandbox_binary("mysql", "8.0") == (tmp_path, "8.0.36")
    assert sandbox_binary("mysql", None) == (tmp_path, "8.0.36")
    with pytest.raises(ComponentError) as e:
        sandbox_binary("mysql", "5.7")
    assert "mysql there: 8.0.36" in str(e.value)


def test_unpacked_never_picks_what_the_lab_refuses_nor_a_mariadb_without_flavor(
        tmp_path: Path) -> None:
    _unpack(tmp_path, "8.4.0", "mysql")  # the lab speaks 8.0's statements
    _unpack(tmp_path, "8.0.36", "mysql")
    _unpack(tmp_path, "10.6.12", None)  # unpacked by hand: MariaDB by its files
    (tmp_path / "10.6.12" / "bin" / "mariadb").write_text("")
    assert unpacked(tmp_path, "mysql", None) == ["8.0.36"]
    assert unpacked(tmp_path, "mysql", "8") == ["8.0.36"]
    assert unpacked(tmp_path, "mariadb", None) == ["10.6.12"]
