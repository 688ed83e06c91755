"""A small replication experiment to hang fault actions on (the fault families' unit tests)."""

from __future__ import annotations

from dsl.api import check_text

HEAD = """experiment "t" {
  duration 30s
  topology replication { primary db1  replicas db2 }
  workload w: unique_writes { target db1  rate 100/s }
"""


def exp(body: str) -> str:
    """The experiment with ``body`` (timeline lines) added."""
    return HEAD + body + "\n}\n"


def errors(text: str) -> list[str]:
    """The messages of ``lab check``'s errors on ``text``."""
    return [e.message for e in check_text(text) if e.severity == "error"]
