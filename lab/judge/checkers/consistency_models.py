"""Which consistency models a set of anomalies rules out, with Elle's tables.

Three relations from Elle's ``elle.consistency-model`` namespace (jepsen-io/elle), restricted to
the anomalies the ``anomalies`` checker reports and the models they reach:

- ``IMPLIED``: anomaly a -> anomalies its presence implies (G0 is also a G1c, a G-single is
  also G-nonadjacent and so G2, a lost update is also G2-item, an incompatible order implies an
  aborted read G1a ...);
- ``PROSCRIBES``: model -> the anomalies it directly forbids (over the weaker models it
  implies);
- ``IMPLIES``: model a -> weaker models b (a history that satisfies a satisfies b).

``impossible_models(anomalies)`` is Elle's ``anomalies->impossible-models``: every anomaly
implied, every model forbidding one of them, and every model stronger than those.
``weakest(models)`` is Elle's ``:not`` of its ``friendly-boundary``: the ruled-out models that
imply no other ruled-out model. Names are Elle's friendly names (``serializable``, not PL-3).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

IMPLIED: dict[str, tuple[str, ...]] = {
    "G0": ("G1c", "G0-process"),
    "G0-process": ("G1c-process", "G0-realtime"),
    "G0-realtime": ("G1c-realtime",),
    "G1a": ("G1",),
    "G1b": ("G1",),
    "G1c": ("G1", "G1c-process"),
    "G1c-process": ("G1c-realtime", "G1-process"),
    "G1c-realtime": ("G1-realtime",),
    "G1": ("G1-process",),
    "G1-process": ("G1-realtime",),
    "G-single": ("G-nonadjacent", "GSIb", "G-single-process"),
    "G-single-process": ("G-nonadjacent-process", "G-single-realtime"),
    "G-single-realtime": ("G-nonadjacent-realtime",),
    "G-nonadjacent": ("G2", "G-nonadjacent-process"),
    "G-nonadjacent-process": ("G2-process", "G-nonadjacent-realtime"),
    "G-nonadjacent-realtime": ("G2-realtime",),
    "G2": ("G2-process",),
    "G2-item": ("G2", "G2-item-process"),
    "G2-item-process": ("G2-process", "G2-item-realtime"),
    "G2-item-realtime": ("G2-realtime",),
    "G2-process": ("G2-realtime",),
    "GSIa": ("GSI",),
    "GSIb": ("GSI",),
    "incompatible-order": ("G1a",),
    "future-read": ("G1c",),
    "dirty-update": ("G1a",),
    "lost-update": ("write-skew", "G2-item"),
    "write-skew": ("G2",),
}

# canonical model names (Adya's PL-n where Elle uses them) -> what each directly forbids
PROSCRIBES: dict[str, tuple[str, ...]] = {
    "causal-cerone": ("internal", "G1a"),
    "PL-CS": ("G1", "G-cursor", "lost-update"),
    "PL-2L": ("G1", "G-monotonic"),
    "PL-MSR": ("G1", "G-MSR"),
    "PL-2+": ("G1", "G-single"),
    "PL-FCV": ("G1", "G-SIb"),
    "parallel-snapshot-isolation": ("internal", "G1a"),
    "PL-3": ("G1", "G2", "predicate-read-miss", "internal"),
    "PL-2": ("G1",),
    "PL-1": ("G0", "duplicate-elements", "cyclic-versions"),
    "prefix": ("internal", "G1a"),
    "PL-SI": ("internal", "G1", "G-SI", "G-nonadjacent"),
    "read-atomic": ("internal", "G1a", "future-read"),
    "PL-2.99": ("G1", "G2-item", "lost-update"),
    "ROLA": ("lost-update",),
    "PL-SS": ("G1", "G1c-realtime", "G2-realtime"),
    "strong-session-PL-1": ("G0-process",),
    "strong-session-PL-2": ("G1c-process",),
    "strong-PL-1": ("G0-realtime",),
    "strong-PL-2": ("G1c-realtime",),
    "strong-session-snapshot-isolation": ("internal", "G1-process", "G-nonadjacent-process"),
    "strong-snapshot-isolation": ("internal", "G1-realtime", "G-nonadjacent-realtime"),
    "strong-session-serializable": ("G1-process", "G2-process"),
    "PL-3U": ("G1", "G-update"),
}

IMPLIES: dict[str, tuple[str, ...]] = {
    "causal-cerone": ("read-atomic",),
    "PL-2+": ("PL-CS", "PL-2L"),
    "PL-CS": ("PL-2",),
    "PL-FCV": ("PL-2+",),
    "PL-2": ("PL-1",),
    "PL-3": ("PL-2.99", "PL-3U", "PL-SI", "view-serializable"),
    "PL-3U": ("PL-FCV",),
    "monotonic-atomic-view": ("PL-2",),
    "PL-2L": ("PL-2",),
    "PL-MSR": ("PL-2",),
    "parallel-snapshot-isolation": ("causal-cerone", "ROLA"),
    "prefix": ("causal-cerone",),
    "read-atomic": ("monotonic-atomic-view",),
    "PL-2.99": ("PL-CS", "monotonic-atomic-view"),
    "ROLA": ("read-atomic",),
    "session-serializable": ("1SR",),
    "PL-SI": ("PL-FCV", "monotonic-atomic-view", "PL-MSR", "parallel-snapshot-isolation",
              "prefix"),
    "PL-SS": ("PL-3", "linearizable", "PL-SI", "strong-snapshot-isolation",
              "strong-session-serializable", "session-serializable"),
    "strong-session-PL-1": ("PL-1",),
    "strong-session-PL-2": ("PL-2", "strong-session-PL-1"),
    "strong-PL-1": ("strong-session-PL-1",),
    "strong-PL-2": ("strong-session-PL-2", "strong-PL-1"),
    "strong-session-serializable": ("PL-3", "strong-session-snapshot-isolation"),
    "strong-session-snapshot-isolation": ("PL-SI", "strong-session-PL-2"),
    "strong-snapshot-isolation": ("strong-session-snapshot-isolation", "strong-PL-2"),
    "linearizable": ("sequential",),
    "sequential": ("causal",),
    "causal": ("writes-follow-reads", "PRAM"),
    "PRAM": ("monotonic-reads", "monotonic-writes", "read-your-writes"),
}

FRIENDLY: dict[str, str] = {
    "PL-2+": "consistent-view",
    "PL-3": "serializable",
    "PL-CS": "cursor-stability",
    "PL-FCV": "forward-consistent-view",
    "PL-MSR": "monotonic-snapshot-read",
    "PL-2L": "monotonic-view",
    "PL-2": "read-committed",
    "PL-1": "read-uncommitted",
    "PL-2.99": "repeatable-read",
    "PL-SI": "snapshot-isolation",
    "PL-SS": "strict-serializable",
    "PL-3U": "update-serializable",
    "strong-session-PL-1": "strong-session-read-uncommitted",
    "strong-session-PL-2": "strong-session-read-committed",
    "strong-PL-1": "strong-read-uncommitted",
    "strong-PL-2": "strong-read-committed",
}


def _closure(start: Iterable[str], edges: Mapping[str, Iterable[str]]) -> set[str]:
    seen: set[str] = set()
    todo = list(start)
    while todo:
        x = todo.pop()
        if x in seen:
            continue
        seen.add(x)
        todo.extend(edges.get(x, ()))
    return seen


def _inverse(edges: Mapping[str, Iterable[str]]) -> dict[str, list[str]]:
    inv: dict[str, list[str]] = {}
    for a, bs in edges.items():
        for b in bs:
            inv.setdefault(b, []).append(a)
    return inv


_FORBIDDEN_BY = _inverse(PROSCRIBES)
_STRONGER = _inverse(IMPLIES)


def implied_anomalies(anomalies: Iterable[str]) -> set[str]:
    """The anomalies and every anomaly they imply."""
    return _closure(anomalies, IMPLIED)


def impossible_models(anomalies: Iterable[str]) -> set[str]:
    """Canonical names of every model the anomalies rule out."""
    direct = {m for a in implied_anomalies(anomalies) for m in _FORBIDDEN_BY.get(a, ())}
    return _closure(direct, _STRONGER)


def weakest(models: set[str]) -> set[str]:
    """The models of the set that imply no other model of the set."""
    return {m for m in models if not (_closure([m], IMPLIES) - {m}) & models}


def friendly(model: str) -> str:
    return FRIENDLY.get(model, model)


def ruled_out(anomalies: Iterable[str]) -> tuple[list[str], list[str]]:
    """(every model ruled out, the weakest of them), friendly names, sorted."""
    models = impossible_models(anomalies)
    return sorted(friendly(m) for m in models), sorted(friendly(m) for m in weakest(models))
