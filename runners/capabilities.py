"""What a back-end can do, declared: each capability is a ``typing.Protocol`` class (as
Jepsen's ``db/Process``, ``db/Pause``: its combined nemesis builds only what the db supports).

A back-end's topology class lists the capabilities it has in ``capabilities`` (a class
attribute: ``runners.topology.NativeTopology``, ``runners.containers.topology.
ContainerTopology``). Each fault family (``fault/``) declares in its ``NEEDS`` what each of its
actions needs (``Need``: a capability and the action in the language's words). ``lab check``
and ``lab run`` refuse a file whose back-end lacks what one of its actions needs
(``dsl.backends.problems``), with ``Need.what`` and the capability's ``MEANS``; ``lab plan``
shows no plan for it.

Two kinds of capability:

- what an action needs (``Process``, ``Pause``, ``Latency``, ``LinkCut``, ``Disk``,
  ``CgroupLimits``, ``Clock``, ``PageCache``, ``IoFaults``, ``UnsyncedLoss``,
  ``GroupRecovery``, ``RouterProcess``): most are markers (the back-end prepares the node at
  deploy: lab-iofs under its data directory, libfaketime, a tmpfs); ``Process`` and ``Pause``
  name the topology's process primitives;
- how a back-end does one of them its own way, with the methods the fault family calls
  (``PeerCuts``: cuts between nodes; ``NamedSources``: replicas reach a primary by name;
  ``ClockInNode``: the offset file in the node's container; ``ContainerLimits``: cpu and
  memory limits through the engine). A family asks ``fault.context.Context.offers(P)``: the
  topology as a ``P`` when its back-end declares ``P``, else None. Nothing is probed.

This module imports nothing heavy: ``dsl.backends`` reads it for ``lab check``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from runners.netcut import PeerCuts

if TYPE_CHECKING:
    from runners.cgroups import CpuUse

Capabilities = frozenset[type]


# --- what an action needs -----------------------------------------------------------------------
class Process(Protocol):
    """``kill``, ``stop``, ``start``, ``restart`` of a node's server."""

    def kill(self, name: str) -> None: ...
    def stop(self, name: str) -> None: ...
    def start(self, name: str, options: dict[str, str] | None = None) -> None: ...
    def restart(self, name: str, options: dict[str, str] | None = None) -> None: ...


class Pause(Protocol):
    """``pause`` / ``resume`` a node's server (SIGSTOP, the engine's freezer)."""

    def pause(self, name: str) -> None: ...
    def resume(self, name: str) -> None: ...


class Latency(Protocol):
    """``network latency`` / ``bandwidth`` on a node's links (toxiproxy)."""


class LinkCut(Protocol):
    """``network partition`` / ``link_down`` (toxiproxy, iptables, or cuts between nodes)."""


class Disk(Protocol):
    """``disk full`` / ``disk free``: the node's data directory (or binary logs) on a tmpfs
    of its own."""


class CgroupLimits(Protocol):
    """``cpu limit`` / ``memory limit``: the node's server in a cgroup."""


class Clock(Protocol):
    """``clock skew``: the node's server under libfaketime."""


class PageCache(Protocol):
    """``drop caches``, ``cold restart``: the node's files evicted from the page cache."""


class IoFaults(Protocol):
    """``io delay`` / ``io fail`` / ``io heal``: lab-iofs under the node's data directory."""


class UnsyncedLoss(Protocol):
    """``kill NODE losing unsynced writes``: lab-iofs puts the files back as of their last
    sync (``iofs``: node -> its mount)."""

    @property
    def iofs(self) -> Mapping[str, object]: ...


class GroupRecovery(Protocol):
    """A Galera cluster none of whose nodes runs, recovered: ``--wsrep-recover``, the most
    advanced node bootstrapped, the others joined (``runners.galera_recovery``)."""


class RouterProcess(Protocol):
    """``kill router`` ...: ProxySQL's own process."""


# every capability an action can need (``fault.NEEDS``)
NEEDED: tuple[type, ...] = (Process, Pause, Latency, LinkCut, Disk, CgroupLimits, Clock,
                            PageCache, IoFaults, UnsyncedLoss, GroupRecovery, RouterProcess)


# --- how a back-end does one its own way ----------------------------------------------------------
class NamedSources(Protocol):
    """Replicas reach a primary by its name on the topology's own network (promote, rejoin)."""

    def source_address(self, name: str) -> tuple[str, int]: ...


class ClockInNode(Protocol):
    """``clock skew``: the offset file in the node's container (``ValueError``: the node does
    not run under libfaketime)."""

    def write_clock_offset(self, name: str, seconds: float) -> str: ...


class NodeLimit(Protocol):
    """A cpu or memory limit in force on one node (``runners.cgroups.NodeGroup`` natively)."""

    pid: int | None
    limit: int | None

    @property
    def path(self) -> Path | str: ...
    def set_cpu(self, share: float) -> int: ...
    def set_memory(self, limit: int) -> Mapping[str, int | None]: ...
    def memory_usage(self) -> int | None: ...
    def oom_kills(self) -> int: ...
    def cpu_use(self) -> CpuUse: ...
    def release(self) -> list[int]: ...


class EngineLimit(NodeLimit, Protocol):
    """A limit on a node's container: it knows whether the container still runs."""

    def alive(self) -> bool: ...


class ContainerLimits(Protocol):
    """``cpu limit`` / ``memory limit`` on the node's container, through the engine's API."""

    def container_limit(self, name: str, controller: str) -> EngineLimit: ...


# --- what the check says -----------------------------------------------------------------------
MEANS: dict[type, str] = {
    Process: "the node's process",
    Pause: "the node's process, paused",
    Latency: "toxiproxy links",
    LinkCut: "cut links",
    Disk: "a tmpfs under the node's data directory",
    CgroupLimits: "a cgroup of the node's server",
    Clock: "libfaketime",
    PageCache: "the page cache of the node's files",
    IoFaults: "lab-iofs under the node's data directory",
    UnsyncedLoss: "lab-iofs under the node's data directory",
    GroupRecovery: "the whole-cluster recovery: --wsrep-recover, bootstrap, joins",
    RouterProcess: "ProxySQL's own process",
    NamedSources: "replicas reach a primary by name",
    ClockInNode: "the offset file in the node's container",
    ContainerLimits: "limits through the engine's API",
    PeerCuts: "iptables cuts between nodes",
}


@dataclass(frozen=True)
class Need:
    """What one action needs: ``capability``, and the action in the words of the refusal
    (``io delay``, ``a kill losing unsynced writes``)."""

    capability: type
    what: str

    def reason(self) -> str:
        """``io delay (lab-iofs under the node's data directory)``."""
        return f"{self.what} ({MEANS[self.capability]})"


__all__ = ["MEANS", "NEEDED", "CgroupLimits", "Clock", "ClockInNode", "EngineLimit",
           "ContainerLimits", "Disk", "GroupRecovery", "IoFaults", "Latency", "LinkCut",
           "NamedSources", "Need", "NodeLimit", "PageCache", "Pause", "PeerCuts", "Process",
           "RouterProcess", "UnsyncedLoss"]
