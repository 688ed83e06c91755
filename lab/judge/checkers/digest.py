"""A digest of what the checkers returned, to compare two ways of checking a history.

``digests(results)`` digests each checker's ``CheckResult`` (valid, metrics, details) as JSON,
keys sorted and floats with every bit (``repr`` for what JSON does not take), into 16 hex
digits of SHA-256: equal digests, equal results. Two ways of checking the same history (the
fields read while recording or from the objects at check time, columns or the checkers before
them) are compared checker by checker this way: by ``bench/bench_checkers.py`` and by the unit
tests (``tests/unit/columnar_histories.py``, whose golden file holds such digests).
"""

from __future__ import annotations

import hashlib
import json

from lab.judge.checkers.base import CheckResult


def digest(result: CheckResult) -> str:
    """The digest of one checker's (valid, metrics, details) (see the module docstring)."""
    blob = json.dumps([result.valid, result.metrics, result.details], sort_keys=True,
                      default=repr)  # fmt: skip
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def digests(results: dict[str, CheckResult]) -> dict[str, str]:
    """Per checker, the digest of its result: equal digests, equal results."""
    return {name: digest(r) for name, r in results.items()}
