"""What each back-end can run: ``backend containers`` refuses, in ``lab check``, what it cannot
do yet (never silently running it natively).

``problems(experiment)`` lists (span, message, hint) for an experiment whose ``backend`` is
``containers``: the topologies, engines and routers the container back-end does not run yet
(every action runs there; the few that act on the engine's machine from this one,
``needs_local_engine``, are refused before any container starts when the engine is remote).
``lab run --backend containers`` checks the file again with the back-end it overrides.
"""

from __future__ import annotations

from collections.abc import Sequence

from dsl.models import (
    Action,
    DiskFault,
    DropCaches,
    Experiment,
    IoFault,
    NetworkFault,
    NodeAction,
    NodeGroupAction,
    Span,
)

Problem = tuple[Span, str, str]

CONTAINER_TOPOLOGIES = ("replication", "single", "galera", "primary_primary",
                        "mongodb_replset")
_NATIVE = "run it with `backend native` (the default) until then"

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


def needs_local_engine(a: Action) -> bool:
    """Actions that act on the engine's machine from this one (``backend containers``): the
    page cache (``drop caches``, ``cold restart``) and a tmpfs mounted for the node (``disk
    full``). Everything else goes through the engine's API and works on a remote engine."""
    return isinstance(a, (DropCaches, DiskFault)) or (
        isinstance(a, NodeAction) and a.verb == "cold_restart")


def native_only_action(a: Action, topology: str) -> str | None:
    """What an action needs that only the native back-end has: lab-iofs under a node's data
    directory (``io delay``/``io fail``/``io heal``, a kill losing unsynced writes) and the
    recovery of a Galera cluster whose every node is down (a group kill or start)."""
    if isinstance(a, IoFault):
        return f"io {a.verb} (lab-iofs under the node's data directory)"
    if isinstance(a, NodeAction | NodeGroupAction) and a.lose_unsynced:
        return "a kill losing unsynced writes (lab-iofs under the node's data directory)"
    if isinstance(a, NodeGroupAction) and topology == "galera":
        return (f"{a.verb} of several Galera nodes at once (the whole-cluster recovery: "
                "--wsrep-recover, bootstrap, joins)")
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
    mongo = exp.topology.kind == "mongodb_replset"
    if not mongo and exp.topology.engine.flavor != "mariadb":
        out.append((exp.topology.engine.span or where,
                    "the container back-end runs MariaDB only (the lab's image, or a MariaDB "
                    f"image of yours), not {exp.topology.engine.flavor}",
                    _NATIVE))
    actions = ([t.action for t in exp.timeline] + [t.action for t in exp.triggers]
               + [a for st in exp.steps for a in st.actions])
    for a in actions:
        native_only = native_only_action(a, exp.topology.kind)
        if native_only:
            out.append((a.span, f"{native_only} runs natively only, not on containers yet",
                        _NATIVE))
    if exp.router is not None and exp.router.kind == "haproxy" and exp.router.image:
        out.append((exp.router.image.span, "router haproxy runs in the lab's node image (its "
                    "role checks need socat and the mariadb client beside it): it takes no "
                    "image", "leave the image out"))
    return out
