"""The server an experiment asked for is the one that runs: ``engine mariadb 11.4`` never
silently becomes Debian's 10.11, nor ``engine mysql`` a MariaDB.

Every back-end starts its servers its own way (dbdeployer from a sandbox binary, the lab's own
``mariadbd`` for Galera and two primaries, a container image of the lab's or the user's), so
the one check that holds for all of them asks the running servers: ``SELECT @@version,
@@version_comment`` on each node once the topology is up, before any load, compared with the
file's ``engine FLAVOR [VERSION]``. A version matches by its leading components (``10.11``
matches ``10.11.19-MariaDB-0+deb12u1``; ``10.1`` does not).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dsl.versions import mysql_unspoken, version_matches
from runners.errors import ComponentError

SQL = "SELECT @@version AS v, @@version_comment AS c"


def flavor_of(version: str, comment: str) -> str:
    """``mariadb``, ``percona`` or ``mysql`` from a server's ``@@version`` and
    ``@@version_comment``."""
    if "mariadb" in version.lower():
        return "mariadb"
    if "percona" in comment.lower() or "percona" in version.lower():
        return "percona"
    return "mysql"


def mismatch(flavor: str, version: str | None, running: str, comment: str) -> str | None:
    """Why a server that reports ``running``/``comment`` is not ``engine flavor version``
    (None: it is)."""
    found = flavor_of(running, comment)
    if found != flavor:
        return f"runs {found} ({running}), not {flavor}"
    if version and not version_matches(version, running):
        return f"runs {flavor} {running}, not {version}"
    if flavor != "mariadb" and mysql_unspoken(running):
        return (f"runs {flavor} {running}: the lab speaks MySQL 8.0's replication statements "
                "(SHOW SLAVE STATUS, CHANGE MASTER TO), which 8.4 removed")
    return None


def check(flavor: str, version: str | None, nodes: Iterable[Any], how: str) -> None:
    """Raise ``ComponentError("engine", ...)`` naming every node that is not the experiment's
    engine. ``nodes``: running servers with ``name`` and ``sql``; ``how``: what decides the
    server on this back-end, for the hint."""
    wrong: list[str] = []
    for node in nodes:
        row = node.sql(SQL, timeout=10)[0]
        why = mismatch(flavor, version, str(row["v"]), str(row["c"] or ""))
        if why:
            wrong.append(f"{node.name} {why}")
    if wrong:
        asked = flavor + (f" {version}" if version else "")
        raise ComponentError("engine", f"the experiment asks for engine {asked}, but "
                             + "; ".join(wrong) + f" ({how})")
