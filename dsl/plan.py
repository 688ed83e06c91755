"""The compiled plan: what a run will execute, with every default made explicit.

``dsl.compile.compile_experiment(Experiment) -> Plan``. A plan holds one ``Cell`` per
variant x sweep values x repeat; each cell has its nodes (with roles, server ids, port offsets
and the effective server config, the lab's own settings included) and its workloads with
parameters resolved. Ports in the plan are computed from ``base_port``; the runtime picks a
free base for each run (two runs at once never collide) and recomputes the plan for it
(``dsl.compile.for_base_port``): the runners start what that plan says.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import Field

from dsl.models import (
    NO_SPAN,
    Action,
    Backend,
    ClockSkew,
    Engine,
    Expectation,
    Frozen,
    IoFault,
    NodeAction,
    NodeGroupAction,
    Report,
    Span,
    Step,
    TimedAction,
    Trigger,
    WorkloadKind,
)

DEFAULT_BASE_PORT = 23000
# Seconds between two looks at a ``when`` condition (``lab.run.triggers``): a trigger's resolution.
TRIGGER_POLL = 0.1

NodeRole = Literal["primary", "replica", "single", "galera", "primary_primary", "member"]
TopologyKind = Literal["replication", "single", "galera", "primary_primary", "mongodb_replset"]


Origin = Literal["lab", "default", "lab+file"]


def faketime_nodes(actions: Iterable[Action]) -> list[str]:
    """The nodes a ``clock skew`` action names, in first-use order: their servers run under
    libfaketime from the start (``runners.faketime``; the topology restarts them once up)."""
    out: list[str] = []
    for a in actions:
        if isinstance(a, ClockSkew) and a.verb == "skew" and a.node.name not in out:
            out.append(a.node.name)
    return out


def iofs_nodes(actions: Iterable[Action]) -> list[str]:
    """The nodes an ``io delay`` or ``io fail`` action names, or a ``kill ... losing unsynced
    writes``, in first-use order: their data directories are on lab-iofs, a FUSE filesystem
    (``runners.iofs``; the topology moves them once up)."""
    out: list[str] = []
    actions = list(actions)
    for a in actions:
        if isinstance(a, IoFault) and a.verb != "heal" and a.node.name not in out:
            out.append(a.node.name)
    return out + [n for n in unsynced_nodes(actions) if n not in out]


def unsynced_nodes(actions: Iterable[Action]) -> list[str]:
    """The nodes a ``kill ... losing unsynced writes`` names: lab-iofs keeps what their files
    held at their last sync (``--unsynced``)."""
    out: list[str] = []
    for a in actions:
        if isinstance(a, (NodeAction, NodeGroupAction)) and a.lose_unsynced:
            refs = [a.node] if isinstance(a, NodeAction) else a.nodes
            out += [r.name for r in refs if r.name not in out]
    return out


class PlannedNode(Frozen):
    name: str
    role: NodeRole
    index: int  # 1-based position in the topology
    server_id: int  # 100 * index: dbdeployer's numbering, used by every topology
    port_offset: int  # client port = base + port_offset
    port: int  # with the plan's base port
    replicates_from: list[str] = Field(default_factory=list)
    delay: float | None = None  # MASTER_DELAY seconds
    image: str | None = None  # its container's image (``image``; None: the lab's)
    # The effective server config: exactly what the server is started with, but for the
    # keys dsl.owned.RUNTIME (machine and run) and with paths relative to the node's
    # directory in the run (dsl.owned.NODE_DIR_PATHS).
    config: dict[str, str] = Field(default_factory=dict)
    # Where a value comes from when not from the file: "lab" (the lab's, cannot be changed),
    # "default" (the lab's default, not overridden), "lab+file" (wsrep_provider_options:
    # the file's merged with the lab's). Keys not listed are the file's.
    origins: dict[str, Origin] = Field(default_factory=dict)


class PlannedRouter(Frozen):
    kind: Literal["haproxy", "proxysql"]
    writers: list[str]
    readers: list[str]
    check_interval: float
    writer_port_offset: int
    reader_port_offset: int
    writer_port: int
    reader_port: int
    image: str | None = None  # its container's image (``image``; None: the lab's default)
    # proxysql: its own variables; a value ``$name`` is the cell's sweep value
    # (``dsl.router_settings.resolve``)
    settings: dict[str, str] = Field(default_factory=dict)


class PlannedWorkload(Frozen):
    name: str
    kind: WorkloadKind
    script: str | None = None
    targets: list[str]  # node names, "router.writer", "router.reader"
    reads: list[str] = Field(default_factory=list)
    clients: int = 1
    threads: int | None = None
    tables: int | None = None
    table_size: int | None = None
    rate: float | None = None
    every: float | None = None
    operation: Literal["write", "read"] = "write"
    keys: Literal["sequential", "auto_increment", "random"] = "sequential"
    duration: float | None = None
    rows: int | None = None
    ops: int | None = None
    timeout: float = 1.0
    start_after: str | None = None
    # transactional workloads: the compiler writes every default in (nothing implicit)
    key_count: int | None = None
    txn_length: int | None = None
    read_fraction: float | None = None
    distribution: Literal["uniform", "exponential"] = "uniform"
    isolation: str | None = None  # None: the server's default (tx_isolation)
    for_update: bool = False
    span: Span = NO_SPAN  # the workload's line in the file (warnings point at it)


class Cell(Frozen):
    """One run of the matrix: a variant, one value per sweep, one repeat."""

    index: int
    label: str  # e.g. "a2 threads=4 #2"
    variant: str | None = None
    sweep: dict[str, str] = Field(default_factory=dict)
    repeat: int = 1
    nodes: list[PlannedNode]
    workloads: list[PlannedWorkload]


class Plan(Frozen):
    name: str
    title: str | None = None
    description: str | None = None
    tags: list[str] = Field(default_factory=list)
    seed: int = 0
    duration: float
    source: str | None = None
    topology: TopologyKind
    engine: Engine
    replication_mode: Literal["gtid", "file_position"] | None = None
    semi_sync: bool = False
    crash_safe: bool = False
    auto_increment_offsets: bool | None = None
    router: PlannedRouter | None = None
    base_port: int = DEFAULT_BASE_PORT
    steps: list[Step] = Field(default_factory=list)
    timeline: list[TimedAction] = Field(default_factory=list)
    triggers: list[Trigger] = Field(default_factory=list)
    # seconds between two looks at a trigger's condition: its resolution (``lab.run.triggers``)
    trigger_poll: float = TRIGGER_POLL
    # nodes restarted under libfaketime once the topology is up (``faketime_nodes``; set by
    # ``dsl.compile.for_base_port``)
    faketime_nodes: list[str] = Field(default_factory=list)
    # nodes whose data directory the topology moves onto lab-iofs (FUSE) once it is up
    # (``iofs_nodes``; set by ``dsl.compile.for_base_port``)
    iofs_nodes: list[str] = Field(default_factory=list)
    expectations: list[Expectation] = Field(default_factory=list)
    reports: list[Report] = Field(default_factory=list)
    leave_faults: bool = False
    backend: Backend = "native"  # where the servers run (``runners.topology.Topology.deploy``)
    cells: list[Cell]

    def actions(self) -> list[Action]:
        """Every action in steps, timeline and triggers (``when``), in file order of kind
        (steps first)."""
        out: list[Action] = []
        for step in self.steps:
            out.extend(step.actions)
        out.extend(t.action for t in self.timeline)
        out.extend(t.action for t in self.triggers)
        return out
