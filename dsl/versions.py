"""Server versions as the language and the runners compare them: ``8.0.36`` -> (8, 0, 36); a
version given in a file matches a server's by its leading components (``10.11`` matches
``10.11.19-MariaDB``, ``10.1`` does not). MySQL and Percona Server from 8.4 on are not spoken:
the lab's replication statements are 8.0's (``SHOW SLAVE STATUS``, ``CHANGE MASTER TO``)."""

from __future__ import annotations

import re

MYSQL_NEWEST_SPOKEN = (8, 4)  # MySQL / Percona Server from here on: refused


def version_numbers(version: str) -> tuple[int, ...]:
    """The leading numbers of a version: ``10.11.19-MariaDB`` -> (10, 11, 19); () for none."""
    m = re.match(r"\d+(?:\.\d+)*", version.strip())
    return tuple(int(x) for x in m.group(0).split(".")) if m else ()


def version_matches(wanted: str, running: str) -> bool:
    """``wanted`` (``10.11``, ``8.0.36``) is a prefix, component by component, of
    ``running``."""
    want = version_numbers(wanted)
    return bool(want) and version_numbers(running)[:len(want)] == want


def mysql_unspoken(version: str | None) -> bool:
    """A MySQL / Percona Server version the lab does not speak (8.4 and later)."""
    return version_numbers(version or "")[:2] >= MYSQL_NEWEST_SPOKEN
