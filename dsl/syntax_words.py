"""The words of the language as syntax errors say them (``dsl.syntax``): what each terminal is
called, where each keyword belongs (``KEYWORD_HOME``), the units, and the limits of one
report."""

from __future__ import annotations

MAX_SYNTAX_ERRORS = 10
LIST_LIMIT = 8

TERMINAL_WORDS = {
    "NAME": "a name",
    "QUANTITY": "a number with its unit (like 10s)",
    "VERSION": "a version number",
    "PARAM": "a $parameter",
    "TAG": "a tag",
    "KEY": "a setting name",
    "VALUE": "a value",
    "STRING": 'a "quoted string"',
    "COMPARISON": "a comparison (<, <=, ==, !=, >=, >)",
    "_NL": "the end of the line",
    "$END": "the end of the file",
}
_TOPOLOGY_WORDS = (
    "engine",
    "primary",
    "replicas",
    "node",
    "nodes",
    "members",
    "semi_sync",
    "crash_safe",
    "delay",
    "auto_increment_offsets",
)
_WORKLOAD_WORDS = (
    "target",
    "write",
    "read",
    "clients",
    "threads",
    "tables",
    "table_size",
    "rate",
    "every",
    "operation",
    "keys",
    "rows",
    "operations",
    "timeout",
)
_ACTION_WORDS = (
    "kill",
    "pause",
    "resume",
    "stop",
    "start",
    "restart",
    "cold",
    "drop",
    "promote",
    "network",
    "disk",
    "cpu",
    "memory",
    "clock",
    "io",
    "set",
    "convert",
    "wait",
    "execute",
)
_EXPERIMENT_WORDS = (
    "title",
    "description",
    "tags",
    "seed",
    "duration",
    "repeat",
    "leave",
    "topology",
    "router",
    "variant",
    "vary",
    "workload",
    "before",
    "after",
    "at",
    "expect",
    "report",
)
KEYWORD_HOME: dict[str, str] = {
    **{w: "belongs in the topology block" for w in _TOPOLOGY_WORDS},
    **{w: "belongs in a router block" for w in ("writer", "writers", "reader", "readers", "check")},
    **{w: "belongs in a workload block" for w in _WORKLOAD_WORDS},
    **{
        w: "starts an action: at 10s ... or inside before load { } / after w { }"
        for w in _ACTION_WORDS
    },
    **{w: "is a statement of the experiment block" for w in _EXPERIMENT_WORDS},
    "when": "starts a trigger, a statement of the experiment block: "
    "when replication_lag(db2) > 5s kill db1",
}
UNIT_WORDS = frozenset({"s", "ms", "us", "m", "h", "K", "M", "G", "T", "B", "KB", "MB", "GB"})
UNITS_HINT = "us ms s m h (durations), B K M G T (sizes), /s (rates), % (ratios)"
