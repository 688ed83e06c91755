"""ProxySQL's own variables in a ``router proxysql`` block (``set NAME = VALUE``): which
names and values an experiment may set. One place, read by the language (``dsl.build``) and by
the runner (``runners.proxysql``), which writes them into ProxySQL's ``global_variables``."""

from __future__ import annotations

import re

# MySQL-module variables only (mysql-monitor_read_only_interval, mysql-shun_on_failures, ...);
# the lab's listeners, threads and monitor user are not the experiment's to set.
NAME = re.compile(r"^mysql-[a-z0-9_]{1,64}$")
VALUE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")  # goes into an SQL literal: keep it boring
PARAM = re.compile(r"^\$[A-Za-z_][A-Za-z0-9_]*$")  # a sweep's value: `vary interval in ...`
UNIT = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|us|MB|M|KB|K|GB|G)")  # a unit ProxySQL won't read
RESERVED = frozenset({"mysql-interfaces", "mysql-threads", "mysql-monitor_username",
                      "mysql-monitor_password"})


def name_problem(name: str) -> str | None:
    """Why ``name`` may not be set from an experiment, or None."""
    if not NAME.match(name):
        return (f"'{name}' is not a ProxySQL MySQL variable (they are named mysql-..., "
                "e.g. mysql-monitor_read_only_interval)")
    if name in RESERVED:
        return f"{name} is the lab's own (listeners, threads, the monitor user)"
    return None


def value_problem(name: str, value: str, params: bool = True) -> str | None:
    """Why ``value`` may not be given to ``name``, or None. ``params``: a ``$name`` (resolved
    per cell) is allowed."""
    if params and PARAM.match(value):
        return None
    if not VALUE.match(value):
        return f"{name} = {value!r}: only letters, digits, '_', '.' and '-' are allowed"
    unit = UNIT.fullmatch(value)
    if unit:
        return (f"{name} = {value}: ProxySQL takes a plain number in the variable's own unit "
                f"(milliseconds for its intervals and timeouts): write {unit.group(1)}, or the "
                "value in that unit")
    return None


def runtime_problems(asked: dict[str, str], runtime: dict[str, str]) -> list[str]:
    """What ProxySQL did not take of the experiment's ``set`` lines, read back from its
    ``runtime_global_variables`` (``runtime``: name -> value): a name it does not have (a typo
    updates nothing) or a value it kept otherwise (it refuses a value it cannot parse and keeps
    the one it had)."""
    out = []
    for name, value in asked.items():
        if name not in runtime:
            out.append(f"ProxySQL has no variable {name} (set in the router block): misspelt? "
                       "its names: SELECT variable_name FROM global_variables on the admin port")
        elif not _same_value(value, runtime[name]):
            out.append(f"ProxySQL kept {name} = {runtime[name]} where the file set {value}: it "
                       "refused the value (see its log)")
    return out


_TRUE, _FALSE = {"1", "true", "on", "yes"}, {"0", "false", "off", "no"}


def _same_value(asked: str, kept: str) -> bool:
    a, k = asked.strip().lower(), kept.strip().lower()
    if a == k or (a in _TRUE and k in _TRUE) or (a in _FALSE and k in _FALSE):
        return True
    try:
        return float(a) == float(k)
    except ValueError:
        return False


def resolve(settings: dict[str, str], sweep: dict[str, str]) -> dict[str, str]:
    """The settings of one cell: each ``$name`` replaced by that cell's sweep value."""
    out: dict[str, str] = {}
    for k, v in settings.items():
        if PARAM.match(v):
            v = sweep[v[1:]]
        out[k] = v
    return out
