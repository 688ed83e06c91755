"""The experiment as written: pydantic models produced by the parser.

Every model is frozen and forbids unknown fields. Models that come from a place in the
source carry its ``span`` so that validation errors can point at it. Numbers with units are
normalised to base units (seconds, bytes, operations per second, ratios for percentages) and
keep their source text for display.

Why one module of more than 600 lines: it is the language's vocabulary, imported as
``dsl.models`` by most of the project, and every model refers to the base ones (``Frozen``,
``Span``, ``NodeRef``) and ``Experiment`` to all of them, resolved by pydantic in this one
namespace; a split needs a base module first (split it when the fault spaces or the actions grow).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Span(Frozen):
    line: int
    column: int
    end_line: int
    end_column: int


NO_SPAN = Span(line=0, column=0, end_line=0, end_column=0)

Backend = Literal["native", "containers"]

UnitKind = Literal["duration", "size", "rate", "bandwidth", "percent", "count"]


class Quantity(Frozen):
    """A number with its unit, normalised: seconds, bytes, per-second, bytes per second
    (bandwidth), ratio (0..1), count."""

    value: float
    kind: UnitKind
    text: str
    span: Span = NO_SPAN


class ParamRef(Frozen):
    """``$name``: a value taken from a ``vary`` sweep."""

    name: str
    span: Span = NO_SPAN


IntOrParam = int | ParamRef


class Engine(Frozen):
    flavor: Literal["mariadb", "mysql", "percona", "psmdb", "mongodb"] = "mariadb"
    version: str | None = None
    span: Span = NO_SPAN


class NodeRef(Frozen):
    name: str
    span: Span = NO_SPAN


class ConfigBlock(Frozen):
    """``config { k = v ... }`` for all nodes (node is None) or ``config db3 { ... }``."""

    node: NodeRef | None = None
    settings: dict[str, str] = Field(default_factory=dict)
    span: Span = NO_SPAN


class ImageSpec(Frozen):
    """``image "REF"`` for every node (node is None) or ``image db2 "REF"``: the container
    image the node runs (``backend containers``); the lab's node image otherwise."""

    node: NodeRef | None = None
    ref: str
    span: Span = NO_SPAN


class DelaySpec(Frozen):
    node: NodeRef
    seconds: float
    span: Span = NO_SPAN


class ReplicationTopology(Frozen):
    kind: Literal["replication"] = "replication"
    engine: Engine = Engine()
    primary: NodeRef
    replicas: list[NodeRef] = Field(default_factory=list)
    mode: Literal["gtid", "file_position"] = "gtid"
    semi_sync: bool = False
    crash_safe: bool = False
    delays: list[DelaySpec] = Field(default_factory=list)
    configs: list[ConfigBlock] = Field(default_factory=list)
    images: list[ImageSpec] = Field(default_factory=list)
    span: Span = NO_SPAN


class SingleTopology(Frozen):
    kind: Literal["single"] = "single"
    engine: Engine = Engine()
    node: NodeRef
    configs: list[ConfigBlock] = Field(default_factory=list)
    images: list[ImageSpec] = Field(default_factory=list)
    span: Span = NO_SPAN


class GaleraTopology(Frozen):
    kind: Literal["galera"] = "galera"
    engine: Engine = Engine()
    nodes: list[NodeRef]
    configs: list[ConfigBlock] = Field(default_factory=list)
    images: list[ImageSpec] = Field(default_factory=list)
    span: Span = NO_SPAN


class PrimaryPrimaryTopology(Frozen):
    """Two primaries replicating from each other (asynchronous, one GTID domain per node)."""

    kind: Literal["primary_primary"] = "primary_primary"
    engine: Engine = Engine()
    nodes: list[NodeRef]
    auto_increment_offsets: bool = True
    configs: list[ConfigBlock] = Field(default_factory=list)
    images: list[ImageSpec] = Field(default_factory=list)
    span: Span = NO_SPAN


class MongoReplSetTopology(Frozen):
    kind: Literal["mongodb_replset"] = "mongodb_replset"
    engine: Engine = Engine(flavor="mongodb")
    members: list[NodeRef]
    configs: list[ConfigBlock] = Field(default_factory=list)
    images: list[ImageSpec] = Field(default_factory=list)
    span: Span = NO_SPAN


Topology = Annotated[
    ReplicationTopology
    | SingleTopology
    | GaleraTopology
    | PrimaryPrimaryTopology
    | MongoReplSetTopology,
    Field(discriminator="kind"),
]


class Router(Frozen):
    kind: Literal["haproxy", "proxysql"]
    writers: list[NodeRef]
    readers: list[NodeRef] = Field(default_factory=list)
    check_interval: float = 0.5
    image: ImageSpec | None = None  # its container's image (backend containers)
    # proxysql: its own variables (``set mysql-monitor_read_only_interval = 500``); a value
    # ``$name`` is a ``vary name in ...`` sweep's value in each cell
    settings: dict[str, str] = Field(default_factory=dict)
    span: Span = NO_SPAN


class Variant(Frozen):
    name: str
    settings: dict[str, str] = Field(default_factory=dict)
    span: Span = NO_SPAN


class Sweep(Frozen):
    """``vary threads in 1, 4, 16`` (a parameter, used as $threads) or
    ``vary config innodb_io_capacity in 200, 2000`` (a server variable on every node)."""

    name: str
    values: list[str]
    target: Literal["param", "config"] = "param"
    span: Span = NO_SPAN


class Endpoint(Frozen):
    """A workload target: a node name, ``router.writer`` or ``router.reader``."""

    name: str
    span: Span = NO_SPAN


WorkloadKind = Literal[
    "probe", "unique_writes", "read_your_writes", "unique_insert", "connect", "sysbench",
    "list_append", "read_modify_write", "bank",
]
TXN_WORKLOADS = frozenset({"list_append", "read_modify_write", "bank"})
IsolationLevel = Literal["read uncommitted", "read committed", "repeatable read", "serializable"]
KeyDistribution = Literal["uniform", "exponential"]


class Workload(Frozen):
    name: str
    kind: WorkloadKind
    script: str | None = None  # sysbench script, e.g. oltp_insert
    targets: list[Endpoint] = Field(default_factory=list)
    reads: list[Endpoint] = Field(default_factory=list)  # read_your_writes: where to read
    clients: IntOrParam = 1
    threads: IntOrParam | None = None  # sysbench
    tables: IntOrParam | None = None  # sysbench
    table_size: IntOrParam | None = None  # sysbench
    rate: float | None = None  # operations per second, all clients together
    every: float | None = None  # seconds between operations per client (probe)
    operation: Literal["write", "read"] = "write"  # probe
    keys: Literal["sequential", "auto_increment", "random"] = "sequential"  # unique_insert
    duration: float | None = None  # bounded by time
    rows: IntOrParam | None = None  # bounded by a number of rows
    ops: IntOrParam | None = None  # bounded by a number of operations
    timeout: float = 1.0  # per operation: connect and read timeouts
    start_after: str | None = None  # start when this workload has finished
    # transactional workloads (list_append, read_modify_write, bank)
    key_count: IntOrParam | None = None  # keys N: active keys, counters or accounts
    txn_length: IntOrParam | None = None  # list_append: 1..N micro-operations a transaction
    read_fraction: float | None = None  # list_append, bank: the share of reads
    distribution: KeyDistribution = "uniform"  # how keys are drawn
    isolation: IsolationLevel | None = None  # None: the server's default
    for_update: bool = False  # read_modify_write, bank: SELECT ... FOR UPDATE
    start_after_span: Span = NO_SPAN
    script_span: Span = NO_SPAN
    span: Span = NO_SPAN


# --- actions -------------------------------------------------------------------------------

NodeVerb = Literal["kill", "pause", "resume", "stop", "start", "restart", "cold_restart"]


class NodeAction(Frozen):
    action: Literal["node"] = "node"
    verb: NodeVerb
    node: NodeRef
    options: dict[str, str] = Field(default_factory=dict)  # start/restart ... with k = v
    left: bool = False  # ``for good``: never undone, not even when the run ends
    # ``kill NODE losing unsynced writes``: after the kill, lab-iofs throws away every write
    # the server had not synced (``fault.iofs.drop_unsynced``)
    lose_unsynced: bool = False
    span: Span = NO_SPAN


class NodeGroupAction(Frozen):
    """``kill g1, g2, g3 within 2s [losing unsynced writes]``: each node killed at its own
    moment of the window, spread from the run's seed (``dsl.actions.spread``; ``within 0s`` or
    no window: at once). ``start g1, g2, g3``: the nodes started together; a Galera cluster
    none of whose nodes runs is recovered the way a DBA does it (``runners.galera_recovery``).
    Timeline only (``at ...``)."""

    action: Literal["node_group"] = "node_group"
    verb: Literal["kill", "start"]
    nodes: list[NodeRef]
    within: float = 0.0  # seconds: the window the kills are spread over
    within_span: Span = NO_SPAN
    lose_unsynced: bool = False
    left: bool = False  # ``for good``
    span: Span = NO_SPAN


class DropCaches(Frozen):
    """Whole OS page cache (node None, needs root) or one node's data files."""

    action: Literal["drop_caches"] = "drop_caches"
    node: NodeRef | None = None
    span: Span = NO_SPAN


class Promote(Frozen):
    action: Literal["promote"] = "promote"
    node: NodeRef
    span: Span = NO_SPAN


class ReplicationControl(Frozen):
    action: Literal["replication"] = "replication"
    verb: Literal["stop", "start"]
    node: NodeRef
    threads: Literal["both", "io", "sql"] = "both"
    left: bool = False  # ``for good``
    span: Span = NO_SPAN


LinkKind = Literal["all", "clients", "replication", "group"]


class NetworkFault(Frozen):
    action: Literal["network"] = "network"
    verb: Literal["latency", "bandwidth", "partition", "link_down", "heal"]
    node: NodeRef | None = None  # heal without a node heals everything
    link: LinkKind = "all"
    latency: float | None = None  # seconds
    jitter: float | None = None  # seconds
    bandwidth: float | None = None  # bytes per second
    left: bool = False  # ``for good``
    span: Span = NO_SPAN


class DiskFault(Frozen):
    """``disk full NODE``: fill the filesystem of the node's data directory (a tmpfs the lab
    mounts for it at deploy); ``disk free NODE``: free it again. ``disk full NODE binlog``: the
    filesystem of the node's binary logs instead (a tmpfs of their own, mounted at deploy)."""

    action: Literal["disk"] = "disk"
    verb: Literal["full", "free"]
    node: NodeRef
    target: Literal["datadir", "binlog"] = "datadir"
    left: bool = False  # ``for good``
    span: Span = NO_SPAN


class CpuLimit(Frozen):
    """``cpu limit NODE to 20%``: the node's server gets at most that share of one core (a
    cgroup v1 ``cpu`` quota; more than 100% is more than one core); ``cpu heal NODE`` lifts
    it."""

    action: Literal["cpu"] = "cpu"
    verb: Literal["limit", "heal"]
    node: NodeRef
    share: float | None = None  # of one core: 0.2 = 20 %
    left: bool = False  # ``for good``
    span: Span = NO_SPAN


class MemoryLimit(Frozen):
    """``memory limit NODE to 200M``: the node's server may use that much memory (a cgroup v1
    ``memory`` limit: beyond it the kernel reclaims, then its OOM killer kills the server);
    ``memory heal NODE`` lifts it."""

    action: Literal["memory"] = "memory"
    verb: Literal["limit", "heal"]
    node: NodeRef
    limit: int | None = None  # bytes
    left: bool = False  # ``for good``
    span: Span = NO_SPAN


class ClockSkew(Frozen):
    """``clock skew NODE by +30s``: the node's server sees its clock that far off the host's
    (libfaketime, preloaded when the node starts); ``clock heal NODE`` sets it back to +0."""

    action: Literal["clock"] = "clock"
    verb: Literal["skew", "heal"]
    node: NodeRef
    offset: float = 0.0  # seconds, may be negative
    left: bool = False  # ``for good``
    span: Span = NO_SPAN


IoOps = Literal["all", "reads", "writes", "fsyncs"]


class IoFault(Frozen):
    """``io delay NODE 50ms [on reads|writes|fsyncs]``: each of those operations of the node's
    server on its data directory waits that long; ``io fail NODE [on ...]``: they fail with
    EIO; ``io heal NODE [on ...]``: they work again. The data directory is on ``lab-iofs``, a
    FUSE filesystem the lab mounts for that node at deploy (``runners.iofs``)."""

    action: Literal["io"] = "io"
    verb: Literal["delay", "fail", "heal"]
    node: NodeRef
    ops: IoOps = "all"  # which operations: reads, writes (and fallocate), fsyncs; all three
    delay: float | None = None  # seconds (io delay)
    left: bool = False  # ``for good``
    span: Span = NO_SPAN


class SetGlobal(Frozen):
    action: Literal["set_global"] = "set_global"
    nodes: list[NodeRef] = Field(default_factory=list)  # empty: all nodes
    name: str
    value: str
    span: Span = NO_SPAN


class ConvertStandalone(Frozen):
    action: Literal["convert_standalone"] = "convert_standalone"
    node: NodeRef
    span: Span = NO_SPAN


WaitCondition = Literal["caught_up", "synced", "downloaded", "primary_elected", "up", "down"]


class WaitUntil(Frozen):
    action: Literal["wait"] = "wait"
    node: NodeRef | None = None
    condition: WaitCondition
    timeout: float = 30.0
    span: Span = NO_SPAN


class Sleep(Frozen):
    action: Literal["sleep"] = "sleep"
    seconds: float
    span: Span = NO_SPAN


class RunSql(Frozen):
    action: Literal["sql"] = "sql"
    node: Endpoint
    statement: str
    span: Span = NO_SPAN


Action = Annotated[
    NodeAction
    | NodeGroupAction
    | DropCaches
    | Promote
    | ReplicationControl
    | NetworkFault
    | DiskFault
    | CpuLimit
    | MemoryLimit
    | ClockSkew
    | IoFault
    | SetGlobal
    | ConvertStandalone
    | WaitUntil
    | Sleep
    | RunSql,
    Field(discriminator="action"),
]


class TimedAction(Frozen):
    """``at 10s kill db2``: seconds from the start of the load. ``lasts`` (``for 2s``): the
    fault is undone that long after it started (``dsl.actions.undo``)."""

    at: float
    action: Action
    lasts: float | None = None
    span: Span = NO_SPAN


StateMetric = Literal["replication_lag", "rows"]


class StateCondition(Frozen):
    """``replication_lag(db2) > 5s`` (the lab's lag of that replica, seconds) or
    ``rows(db1) >= 10000`` (rows of the workloads' tables on that node)."""

    metric: StateMetric
    node: NodeRef
    op: Literal["<", "<=", ">", ">=", "==", "!="]
    value: float  # seconds for replication_lag, a count for rows
    text: str  # as written
    span: Span = NO_SPAN


class Trigger(Frozen):
    """``when CONDITION ACTION [for D] [within D]``: the action fires the first time the
    condition holds during the load (polled every ``dsl.plan.TRIGGER_POLL`` seconds); ``within``:
    only if it holds within that long of the load's start, else the run notes that it did not
    happen."""

    condition: StateCondition
    action: Action
    lasts: float | None = None
    within: float | None = None
    span: Span = NO_SPAN


class Step(Frozen):
    """``before load { ... }`` or ``after fill { ... }`` (after a named workload finishes)."""

    when: Literal["before_load", "after"]
    workload: str | None = None
    workload_span: Span = NO_SPAN
    actions: list[Action] = Field(default_factory=list)
    span: Span = NO_SPAN


# --- measurements ----------------------------------------------------------------------------

MetricName = Literal[
    "downtime",
    "stale_reads",
    "duplicate_keys",
    "lost_writes",
    "missing_transactions",
    "replication_lag",
    "throughput",
    "latency",
    "errors",
    "stalls",
    "warmup",
    "relay_log_bytes",
    "failover",
    "replication_errors",
    "split_brain",
    "errant_gtids",
    "divergence",
    "lost_updates",
    "wrong_totals",
    "anomalies",
    "router_failover",
    "semi_sync",
]


class Metric(Frozen):
    """``stale_reads(ryw on db3)``, ``latency(writes).p99``, ``throughput(rw) last 30s``,
    ``errors(ins, 1213)``, ``errors(w, 1047) from 5s to 15s``."""

    name: MetricName
    subject: str | None = None  # a workload or a node
    on: str | None = None  # a node, for per-node figures
    code: int | None = None  # errors(w, 1062)
    stat: str | None = None  # p50, p95, p99, max, total, count, rate, mean, min, after ...
    last: float | None = None  # seconds: the last N (of the workload's run; a node's: the load)
    window: tuple[float, float] | None = None  # ``from 5s to 15s``: seconds since load start
    subject_span: Span = NO_SPAN
    on_span: Span = NO_SPAN
    span: Span = NO_SPAN

    @property
    def windowed(self) -> bool:
        """Only part of the load: ``last N`` or ``from A to B``."""
        return self.last is not None or self.window is not None


Comparison = Literal["<", "<=", ">", ">=", "==", "!="]


class Expectation(Frozen):
    """``expect M < 2s``, ``expect M between 1s and 2s``, either with ``in VARIANT`` (judged
    only in that variant's cells), or a claim across cells: ``expect M in V1 >= 1.3 * M2 in
    V2`` (``other`` is set; judged once every cell has run)."""

    metric: Metric
    op: Comparison | Literal["between"]
    value: Quantity  # the bound; the low end for ``between``; the factor for a claim
    high: Quantity | None = None  # ``between``: the high end
    variant: str | None = None  # ``in VARIANT``: the left side's variant
    variant_span: Span = NO_SPAN
    other: Metric | None = None  # a claim across cells: the right side's metric ...
    other_variant: str | None = None  # ... in this variant's cells
    other_variant_span: Span = NO_SPAN
    text: str  # the expect line as written
    span: Span = NO_SPAN

    @property
    def across_cells(self) -> bool:
        return self.other is not None


class Report(Frozen):
    metric: Metric
    text: str
    span: Span = NO_SPAN


# --- fault spaces (lab explore; dsl/space.py) --------------------------------------------

SpaceVerb = Literal["kill", "pause", "stop", "stop replication", "network partition",
                    "network link_down", "network latency"]


class SpaceTarget(Frozen):
    """Which node a drawn fault hits: ``any replica [but N, ...]``, ``any node [but ...]``,
    ``any of N, ...``, ``the writer`` (the node that takes writes when the load starts) or
    one named node."""

    kind: Literal["any_replica", "any_node", "any_of", "writer", "node"]
    nodes: list[NodeRef] = Field(default_factory=list)  # any_of, node: these; any_*: but these
    span: Span = NO_SPAN


class SpaceRange(Frozen):
    """``1s..5s`` (``low`` == ``high`` for a single value), normalised, as written."""

    low: float
    high: float
    text: str
    span: Span = NO_SPAN


class SpaceFault(Frozen):
    """``kill any replica for 1s..5s at most 2 times``: one kind of fault of a fault space."""

    verb: SpaceVerb
    target: SpaceTarget
    size: SpaceRange | None = None  # network latency: the delay
    link: LinkKind = "all"
    lasts: SpaceRange
    times: int = 1
    at_most: bool = False  # ``at most N times`` (0..N drawn); ``N times`` or none: exactly
    span: Span = NO_SPAN


class FaultSpace(Frozen):
    """``faults { between 5s and 25s  ... }``: the faults that may happen; ``lab explore``
    draws concrete timelines from it (``dsl.space.draw``). ``window``: when they may start
    (default: the whole load)."""

    window: SpaceRange | None = None
    faults: list[SpaceFault] = Field(default_factory=list)
    span: Span = NO_SPAN


class Experiment(Frozen):
    name: str
    title: str | None = None
    description: str | None = None
    tags: list[str] = Field(default_factory=list)
    seed: int = 0
    duration: float = 30.0
    topology: Topology
    router: Router | None = None
    configs: list[ConfigBlock] = Field(default_factory=list)  # experiment-level base config
    variants: list[Variant] = Field(default_factory=list)
    sweeps: list[Sweep] = Field(default_factory=list)
    repeat: int = 1
    workloads: list[Workload] = Field(default_factory=list)
    steps: list[Step] = Field(default_factory=list)
    timeline: list[TimedAction] = Field(default_factory=list)
    triggers: list[Trigger] = Field(default_factory=list)  # ``when CONDITION ACTION``
    expectations: list[Expectation] = Field(default_factory=list)
    reports: list[Report] = Field(default_factory=list)
    faults: FaultSpace | None = None  # ``faults { ... }``: a fault space (lab explore)
    leave_faults: bool = False  # ``leave faults``: do not heal at the end
    backend: Backend = "native"  # ``backend containers``: the servers run in containers
    backend_span: Span = NO_SPAN
    source: str | None = None  # path of the file
    span: Span = NO_SPAN
