"""What each back-end can run: ``backend containers`` refuses, in ``lab check``, what it cannot
do yet (never silently running it natively).

``problems(experiment)`` lists (span, message, hint) for an experiment whose ``backend`` is
``containers``: the topologies, routers and actions the container back-end does not implement
yet. ``lab run --backend containers`` checks the file again with the back-end it overrides.
"""

from __future__ import annotations

from collections.abc import Sequence

from dsl.models import (
    Action,
    ClockSkew,
    DiskFault,
    DropCaches,
    Experiment,
    NetworkFault,
    NodeAction,
    Span,
)

Problem = tuple[Span, str, str]

CONTAINER_TOPOLOGIES = ("replication", "single", "galera", "primary_primary")
_NATIVE = "run it with `backend native` (the default) until then"

# actions the container back-end cannot carry out yet, with why
_NOT_YET: tuple[tuple[type, str], ...] = (
    (DropCaches, "the page cache belongs to the engine's machine (not implemented yet)"),
    (DiskFault, "a full disk needs a tmpfs under the node's data directory (not implemented "
                "yet on containers)"),
    (ClockSkew, "clock skew preloads libfaketime into a server on this machine (not "
                "implemented yet on containers)"),
)


def uses_links(actions: Sequence[Action], backend: str) -> bool:
    """Whether a run puts toxiproxy links on the clients' and replicas' paths. Natively, with
    any network fault (every one but a Galera group cut goes through them). On containers only
    with latency or bandwidth, or a fault on the clients link: partitions between nodes are
    iptables cuts inside the node there (``runners.netcut``), which need no proxy."""
    faults = [a for a in actions if isinstance(a, NetworkFault)]
    if backend != "containers":
        return bool(faults)
    return any(a.verb in ("latency", "bandwidth") or (a.link == "clients" and a.verb != "heal")
               for a in faults)


def _action_problem(a: Action, exp: Experiment) -> str | None:
    if isinstance(a, NodeAction) and a.verb == "cold_restart":
        return "cold restart evicts the node's files from this machine's page cache (not " \
               "implemented yet on containers)"
    for kind, why in _NOT_YET:
        if isinstance(a, kind):
            return why
    return None


def problems(exp: Experiment) -> list[Problem]:
    """What ``backend containers`` cannot run in this experiment (empty for native)."""
    if exp.backend != "containers":
        return []
    out: list[Problem] = []
    where = exp.backend_span if exp.backend_span.line else exp.topology.span
    if exp.topology.kind not in CONTAINER_TOPOLOGIES:
        out.append((exp.topology.span,
                    f"the {exp.topology.kind} topology does not run on containers yet "
                    f"(they run: {', '.join(CONTAINER_TOPOLOGIES)})", _NATIVE))
    if exp.topology.engine.flavor != "mariadb":
        out.append((exp.topology.engine.span or where,
                    f"the container image holds MariaDB only, not {exp.topology.engine.flavor}",
                    _NATIVE))
    if exp.router is not None and exp.router.kind != "haproxy":
        out.append((exp.router.span, f"router {exp.router.kind} does not run on containers "
                    "yet (haproxy does)", _NATIVE))
    actions: list[Action] = [t.action for t in exp.timeline]
    actions += [t.action for t in exp.triggers]
    for step in exp.steps:
        actions += list(step.actions)
    for a in actions:
        why = _action_problem(a, exp)
        if why is not None:
            from dsl.actions import describe

            out.append((a.span, f"`{describe(a)}` does not run on containers yet: {why}",
                        _NATIVE))
    return out
