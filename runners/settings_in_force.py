"""A value the file gave a server is the value the server runs: read back, never assumed.

A MySQL-family server adjusts a number it cannot take to the nearest one it can and tells no
client: ``max_connections = 5`` runs as 10, ``innodb_io_capacity = 50`` as 100 (MariaDB's log
only: "option 'max_connections': unsigned value 5 adjusted to 10"); ``SET GLOBAL
innodb_flush_log_at_trx_commit = 7`` answers with a warning and sets 3. A sweep over such
values would measure the same server twice and call the cells different.

So every numeric or on/off setting a node's effective config has from the file
(``PlannedNode.origins`` names the lab's) is read back with ``SELECT @@GLOBAL.name`` once the
topology is up (``check``), and ``set global`` reads back what it set (``fault.sql``); a value
that differs stops the run naming the node, the setting, what the file asked and what the
server runs. Words (``binlog_format = row``, ``sql_mode``) are not compared: servers spell them
their own way (``utf8`` is ``utf8mb3``, ``TRADITIONAL`` a list of modes). A setting that is an
option and not a variable (``log_bin``'s name, ``plugin_load_add``) has nothing to read back.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import MySQLdb

from runners.errors import ComponentError

UNKNOWN_VARIABLE = 1193
SIZE = re.compile(r"^(\d+)([KMGTPE])?$", re.IGNORECASE)
NUMBER = re.compile(r"^-?\d+(\.\d+)?$")
FACTORS = {c: 1024 ** (i + 1) for i, c in enumerate("KMGTPE")}
TRUE_WORDS = {"ON", "TRUE", "YES"}
FALSE_WORDS = {"OFF", "FALSE", "NO"}
VARIABLE = re.compile(r"^[a-z_][a-z0-9_]*$")


def comparable(value: Any) -> float | None:
    """A value as a number for comparing (``64M`` -> 67108864, ``ON`` -> 1, ``0.25``), or
    None for a value that is not compared (a word, a list)."""
    text = str(value).strip()
    m = SIZE.match(text)
    if m:
        return float(int(m.group(1)) * FACTORS.get((m.group(2) or "").upper(), 1))
    if NUMBER.match(text):
        return float(text)
    if text.upper() in TRUE_WORDS:
        return 1.0
    if text.upper() in FALSE_WORDS:
        return 0.0
    return None


def variable(key: str) -> str | None:
    """The system variable a config key names (``loose-innodb-io-capacity`` ->
    ``innodb_io_capacity``), or None for what is no variable name (a MongoDB path). An option
    that is not a variable (``skip-log-bin``: no ``skip_log_bin``) is found out when read."""
    k = key.lower()
    if k.startswith(("loose-", "loose_")):
        k = k[len("loose-"):]
    k = k.replace("-", "_")
    return k if VARIABLE.match(k) else None


def differs(asked: str, running: Any) -> bool:
    """The server runs another value than the one asked (both numbers; floats to 6 places,
    as the server shows them)."""
    a, r = comparable(asked), comparable(running)
    return a is not None and r is not None and abs(a - r) > 1e-6 * max(1.0, abs(a))


def read(node: Any, name: str) -> Any:
    """``@@GLOBAL.name`` on a node; ``KeyError`` when the server has no such variable."""
    try:
        return node.scalar(f"SELECT @@GLOBAL.`{name}`", timeout=10)
    except MySQLdb.OperationalError as e:
        if e.args and e.args[0] == UNKNOWN_VARIABLE:
            raise KeyError(name) from None
        raise


def server_says(log: Path | None, name: str) -> str:
    """The server's own line about adjusting the option, from its error log ('' if none)."""
    if log is None:
        return ""
    spelled = (name, name.replace("_", "-"))
    try:
        lines = Path(log).read_text(errors="replace").splitlines()
    except OSError:
        return ""
    for line in reversed(lines):
        if "adjusted to" in line and any(f"'{s}'" in line for s in spelled):
            return line.split("] ", 1)[-1].strip()
        if "Changed limits" in line and any(f"{s}:" in line for s in spelled):
            return line.split("] ", 1)[-1].strip()  # lowered to fit the open-files limit
    return ""


def file_settings(config: Mapping[str, str], origins: Mapping[str, str]) -> dict[str, str]:
    """The settings of a node's effective config that are the file's, by variable name."""
    out: dict[str, str] = {}
    for key, value in config.items():
        name = variable(key)
        if name is not None and key not in origins and comparable(value) is not None:
            out[name] = value
    return out


def changed(node: Any, settings: Mapping[str, str]) -> list[str]:
    """``"db1: max_connections = 5 runs as 10 (the server's log: ...)"`` for each setting
    (by variable name) the running node has another value of."""
    out: list[str] = []
    for name, asked in settings.items():
        try:
            running = read(node, name)
        except KeyError:
            continue
        if differs(asked, running):
            said = server_says(getattr(node, "error_log", None), name)
            out.append(f"{node.name}: {name} = {asked} runs as {running}"
                       + (f" (the server's log: {said})" if said else ""))
    return out


def check(nodes: Iterable[Any], planned: Mapping[str, Any]) -> None:
    """Raise ``ComponentError("config", ...)`` naming every file setting a node runs with
    another value. ``nodes``: running servers (``name``, ``scalar``, ``error_log``);
    ``planned``: their ``PlannedNode`` by name."""
    wrong: list[str] = []
    for node in nodes:
        p = planned.get(node.name)
        if p is not None:
            wrong += changed(node, file_settings(p.config, p.origins))
    if wrong:
        raise ComponentError(
            "config", "the server changed settings the experiment gave it, so the run would "
            "not measure what the file says: " + "; ".join(wrong)
            + ". Use a value the server takes (its limits are in its documentation).")
