"""What each back-end can run: ``backend containers`` refuses, in ``lab check``, what it cannot
do yet (never silently running it natively).

``problems(experiment)`` lists (span, message, hint) for an experiment whose ``backend`` is
``containers``: the topologies, routers and actions the container back-end does not implement
yet. ``lab run --backend containers`` checks the file again with the back-end it overrides.
"""

from __future__ import annotations

from dsl.models import (
    Action,
    ClockSkew,
    CpuLimit,
    DiskFault,
    DropCaches,
    Experiment,
    MemoryLimit,
    NetworkFault,
    NodeAction,
    Span,
)

Problem = tuple[Span, str, str]

CONTAINER_TOPOLOGIES = ("replication", "single", "galera")
_NATIVE = "run it with `backend native` (the default) until then"

# actions the container back-end cannot carry out yet, with why
_NOT_YET: tuple[tuple[type, str], ...] = (
    (DropCaches, "the page cache belongs to the engine's machine (not implemented yet)"),
    (DiskFault, "a full disk needs a tmpfs under the node's data directory (not implemented "
                "yet on containers)"),
    (CpuLimit, "cpu limits go through this machine's cgroups, not the engine's (not "
               "implemented yet on containers)"),
    (MemoryLimit, "memory limits go through this machine's cgroups, not the engine's (not "
                  "implemented yet on containers)"),
    (ClockSkew, "clock skew preloads libfaketime into a server on this machine (not "
                "implemented yet on containers)"),
)


def _action_problem(a: Action, exp: Experiment) -> str | None:
    if isinstance(a, NetworkFault):
        if a.verb in ("latency", "bandwidth"):
            return ("on containers network faults are cuts between nodes (iptables inside the "
                    "node): partition, link_down and heal; latency and bandwidth need tc netem, "
                    "not implemented")
        if a.link == "clients" and exp.router is None and a.verb != "heal":
            return ("on containers the clients link is the router's (clients on this machine "
                    "reach a node through its published port, as the lab's own observers do, "
                    "and are not cut): there is no router")
        return None
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
