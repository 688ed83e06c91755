"""The safety of what an experiment writes into files and statements: names, config keys and
values (they are written into my.cnf files and must never reach a shell; settings the lab owns
are refused or confined, see ``dsl.owned``). ``setting_problems`` is used by validation and by
the builder, which knows the exact tokens."""

from __future__ import annotations

import re
from typing import Literal

from dsl.owned import PROVIDER_KEY, normal_key, owned_problem

# --- safety of names, keys and values ---------------------------------------------------------

SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}")
SAFE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
SQL_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SAFE_VALUE_CHARS = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _.,:/+@%=*~^-"
)
MAX_KEY = 128
MAX_VALUE = 1024
VALUE_CHARS_HINT = "allowed: letters, digits, spaces and _ . , : / + @ % = * ~ ^ -"

Where = Literal["key", "value"]
Problem = tuple[Where, str, str | None]


def is_safe_name(name: str) -> bool:
    """Experiment names end up in paths: letters, digits, ``.``, ``-``, ``_``."""
    return SAFE_NAME.fullmatch(name) is not None


def _value_problem(value: str, key: str = "") -> tuple[str, str | None] | None:
    if len(value) > MAX_VALUE:
        return f"the value is longer than {MAX_VALUE} characters", None
    if "\n" in value or "\r" in value:
        return "a value cannot span lines", "values are written on one line of my.cnf"
    # Galera's options are separated by ';', which starts a comment only at the start of a line
    allowed = SAFE_VALUE_CHARS | {";"} if normal_key(key) == PROVIDER_KEY else SAFE_VALUE_CHARS
    bad = next((ch for ch in value if ch not in allowed), None)
    if bad is None:
        if value != value.strip():
            return "a value cannot start or end with a space", None
        return None
    shown = repr(bad)
    if bad in "\"'`\\":
        return (
            f"the value contains {shown}: quotes and backslashes are not allowed",
            "values are written into my.cnf as they are and must never reach a shell; "
            + VALUE_CHARS_HINT,
        )
    if bad in "#;":
        return (f"the value contains {shown}, which starts a comment in my.cnf", VALUE_CHARS_HINT)
    return f"the value contains {shown}, which is not allowed", VALUE_CHARS_HINT


def setting_problems(key: str, value: str, context: str) -> list[Problem]:
    """What is wrong with ``key = value`` in a ``config`` block, a variant, ``start ... with``
    options, ``set global`` or ``vary config``; an empty list when it is safe."""
    problems: list[Problem] = []
    pattern = SQL_VARIABLE if context == "set global" else SAFE_KEY
    if len(key) > MAX_KEY:
        problems.append(("key", f"the setting name is longer than {MAX_KEY} characters", None))
    elif pattern.fullmatch(key) is None:
        allowed = (
            "letters, digits and '_'"
            if context == "set global"
            else "letters, digits, '_', '.' and '-'"
        )
        problems.append(
            (
                "key",
                f"'{key}' is not a valid setting name",
                f"a setting name starts with a letter or '_' and has {allowed}",
            )
        )
    value_problem = _value_problem(value, key)
    if value_problem:
        problems.append(("value", *value_problem))
    elif not problems:
        owned = owned_problem(key, value, context)
        if owned is not None:
            where, message, hint = owned
            problems.append(("key" if where == "key" else "value", message, hint))
    return problems
