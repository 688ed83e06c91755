"""What each back-end can run: ``lab check`` (and ``lab run``, ``lab plan``) refuses on a
back-end what it cannot do yet (never silently running it elsewhere).

One source of truth: each back-end's topology class declares its capabilities
(``capabilities``: ``runners.capabilities``' Protocol classes: ``capabilities(backend)``)
and each fault family declares what its actions need (``fault.NEEDS``). ``problems(experiment)``
lists (span, message, hint) for what the experiment's back-end lacks, the first need of each
action it lacks: ``kill of several Galera nodes at once (the whole-cluster recovery: ...) runs
natively only, not on containers yet``; and, on ``containers``, the topologies, engines and
routers it does not run yet (the few actions that act on the engine's machine from this one,
``needs_local_engine``, are refused before any container starts when the engine is remote).
``lab run --backend containers`` checks the file again with the back-end it overrides.

The native back-end declares every capability an action can need (a unit test holds it to
that), so a native file is not compared: the comparison imports the fault families and the
back-ends (about 0.15 s), which ``lab check`` of a native file does without.
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
    page cache (``drop caches``, ``cold restart``), a tmpfs mounted for the node (``disk
    full``) and lab-iofs mounted for it (``io delay``, ``io fail``, a kill ``losing unsynced
    writes``). Everything else goes through the engine's API and works on a remote engine."""
    return isinstance(a, (DropCaches, DiskFault, IoFault)) or (
        isinstance(a, NodeAction) and a.verb == "cold_restart") or (
        isinstance(a, (NodeAction, NodeGroupAction)) and a.lose_unsynced)


def capabilities(backend: str) -> frozenset[type]:
    """What ``backend`` can do: its topology class's ``capabilities`` (imported when asked:
    the back-ends import this module)."""
    if backend == "containers":
        from runners.containers.topology import ContainerTopology

        return ContainerTopology.capabilities
    from runners.topology import NativeTopology

    return NativeTopology.capabilities


def lacking(a: Action, topology: str, backend: str) -> str | None:
    """Why ``backend`` cannot run ``a`` (the first of its needs the back-end lacks, said as
    ``lab check`` says it), or None."""
    from fault import needs

    have = capabilities(backend)
    for need in needs(a, topology):
        if need.capability in have:
            continue
        if backend != "native" and need.capability in capabilities("native"):
            return f"{need.reason()} runs natively only, not on {backend} yet"
        return f"{need.reason()} runs on no back-end of the lab yet"
    return None


def problems(exp: Experiment) -> list[Problem]:
    """What the experiment's back-end cannot run in it (empty for native: see above)."""
    if exp.backend == "native":
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
        why = lacking(a, exp.topology.kind, exp.backend)
        if why:
            out.append((a.span, why, _NATIVE))
    if exp.router is not None and exp.router.kind == "haproxy" and exp.router.image:
        out.append((exp.router.image.span, "router haproxy runs in the lab's node image (its "
                    "role checks need socat and the mariadb client beside it): it takes no "
                    "image", "leave the image out"))
    return out
