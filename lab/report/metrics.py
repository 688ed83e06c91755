"""How each checker's figures are shown: one entry per checker (``METRIC_VIEWS``), read by every
presenter — ``lab show RUN --all``'s measurements table (``lab.report.measurements``), the
compact summary's matrix and findings (``lab.report.summary_matrix``), ``lab compare``
(``lab.report.compare``) and the HTML report (``lab.report.html_report``, ``lab.report.data``).
A checker added to ``lab.judge.checkers.ALL_CHECKERS`` gets its entry here, and no presenter
keeps a list of metrics of its own (tests/unit/test_metric_views.py checks both).

What a metric *means* to the language (its statistics, units, subject) is ``dsl.metrics``;
how a number is written is ``lab.figures_format``; this table says where each checker's
figures go and in which order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from lab.report.findings import (
    anomalies_finding,
    bank_finding,
    divergence_finding,
    errant_gtids_finding,
    lost_updates_finding,
    missing_lines,
    split_brain_finding,
)
from lab.report.rows import (
    COLLIDING_INSERTS,
    RYW,
    CellInfo,
    Renderer,
    divergence_rows,
    downtime_rows,
    duplicate_keys_rows,
    errant_gtids_rows,
    errors_rows,
    facts_rows,
    failover_rows,
    latency_rows,
    lost_writes_rows,
    replication_errors_rows,
    replication_lag_rows,
    router_failover_rows,
    semi_sync_rows,
    split_brain_rows,
    stale_reads_rows,
    stalls_rows,
    throughput_rows,
    warmup_rows,
)

Finding = Callable[[dict[str, Any], CellInfo], list[str]]


@dataclass(frozen=True)
class Compared:
    """What ``lab compare`` shows of a checker's figures (in the language's words: the figure
    ``name(subject).stat`` measured by ``lab.judge.expectations.measure``).

    ``scope`` ``workload``: of each workload, in ``rank`` order within it; ``node``: of each of
    the checker's subjects (nodes), after the workloads; ``run``: once, when the checker's
    figures have a non-zero ``count``."""

    scope: Literal["workload", "node", "run"]
    stats: tuple[str, ...]
    rank: int = 0
    last: tuple[str, ...] = ()  # with ``--last N``: the per-second series' statistics
    on_nodes: tuple[str, ...] = ()  # also of the workload's ``w on node`` subjects
    kinds: frozenset[str] | None = None  # only workloads of these kinds (None: any kind)
    guess: str | None = None  # kind unknown: shown when the subject has this figure non-zero
    always: bool = False  # every workload, even one the checker has no figures of


@dataclass(frozen=True)
class Chart:
    """A section of the HTML report drawn from this checker's figures (``lab.report.data``)."""

    position: int
    id: str
    title: str
    hint: str  # how to read it


@dataclass(frozen=True)
class MetricView:
    """How one checker's figures are shown. The order of ``METRIC_VIEWS`` is the order of the
    measurements table (``lab show --all``) and of the findings; the matrix columns, the
    compared figures and the charts carry their own positions."""

    name: str  # the checker (lab.judge.checkers.ALL_CHECKERS), its key in cells[].measurements
    all_rows: Renderer | None = None  # its rows of the measurements table (lab.report.rows)
    # the matrix columns it fills: (position, heading); several checkers may fill one column
    matrix: tuple[tuple[int, str], ...] = ()
    names_workloads: int | None = None  # its subjects name the matrix's workloads (rank)
    names_nodes: Literal["own", "on"] | None = None  # its subjects are nodes / ``w on node``
    finding: Finding | None = None  # lines under the matrix, when there is something to say
    transactions: bool = False  # the finding shows transactions (HTML cell header, pytest)
    compare: Compared | None = None
    chart: Chart | None = None
    last_from_operations: bool = False  # ``… last N`` is measured from the operations


METRIC_VIEWS: tuple[MetricView, ...] = (
    MetricView(
        "downtime", downtime_rows, matrix=((0, "downtime"),), names_workloads=3,
        names_nodes="on", compare=Compared("workload", ("max", "total"), rank=0),
        chart=Chart(2, "downtime", "Downtime windows",
                    "Stretches with no successful completion, per workload: red after a "
                    "failure, orange a stall (an operation slower than 200 ms); ≥ still down "
                    "at the end."),
    ),
    MetricView(
        "failover", failover_rows, compare=Compared("run", ("outage",)),
        chart=Chart(5, "failover", "Failover phases",
                    "From the fault to the clients' recovery, as the clients saw it; each "
                    "endpoint's outage; the lab's own promote call for reference."),
    ),
    MetricView("router_failover", router_failover_rows),
    MetricView(
        "stale_reads", stale_reads_rows,
        matrix=((1, "stale reads"), (2, "visible p50 / p99")), names_workloads=5,
        names_nodes="on",
        compare=Compared("workload", ("ratio", "p50", "p99"), rank=1, on_nodes=("ratio", "p99"),
                         kinds=frozenset({RYW}), guess="eligible_reads"),
        chart=Chart(6, "visibility", "Visibility: ack → visible",
                    "Share of acknowledged writes visible on each node within a time "
                    "(cumulative); a curve that stops below 100% has writes never seen there."),
    ),
    MetricView(
        "duplicate_keys", duplicate_keys_rows,
        compare=Compared("workload", ("count",), rank=3, kinds=COLLIDING_INSERTS),
    ),
    MetricView(
        "lost_writes", lost_writes_rows, matrix=((3, "lost writes"),), names_workloads=4,
        names_nodes="on", compare=Compared("workload", ("count",), rank=2),
    ),
    MetricView("lost_appends", matrix=((3, "lost writes"),)),  # a list_append workload's
    MetricView(
        "replication_lag", replication_lag_rows, matrix=((5, "lag max"),), names_nodes="own",
        compare=Compared("node", ("max", "mean"), last=("mean", "max")),
        chart=Chart(4, "lag", "Replication lag per replica",
                    "Seconds behind the primary read from the heartbeat; x: the replica could "
                    "not be read."),
    ),
    MetricView("replication_errors", replication_errors_rows, matrix=((5, "lag max"),),
               names_nodes="own"),
    MetricView("semi_sync", semi_sync_rows, names_nodes="own"),
    MetricView("split_brain", split_brain_rows, finding=split_brain_finding),
    MetricView("errant_gtids", errant_gtids_rows, finding=errant_gtids_finding),
    MetricView("divergence", divergence_rows, finding=divergence_finding),
    MetricView(
        "throughput", throughput_rows, matrix=((6, "throughput"),), names_workloads=0,
        names_nodes="on",
        compare=Compared("workload", ("mean",), rank=5, last=("mean",), always=True),
        chart=Chart(0, "throughput", "Throughput per second",
                    "ok operations completed in each second, per workload (own dash and "
                    "marker); a second covered in part as a rate over that part; shaded: fault "
                    "periods."),
    ),
    MetricView("stalls", stalls_rows, last_from_operations=True),
    MetricView("warmup", warmup_rows),
    MetricView(
        "latency", latency_rows, matrix=((7, "latency p50 / p99"),), names_workloads=1,
        names_nodes="on",
        compare=Compared("workload", ("p50", "p99"), rank=6, last=("p50", "p99"), always=True),
        chart=Chart(1, "latency", "Latency percentiles per second",
                    "p50 (wide), p95 (dashed), p99 (thin, dotted) per second; ▲ the slowest "
                    "operation of the second (a stall p99 hides); log scale."),
        last_from_operations=True,
    ),
    MetricView(
        "errors", errors_rows, matrix=((4, "errors"),), names_workloads=2, names_nodes="on",
        compare=Compared("workload", ("count", "ratio"), rank=4, always=True),
        chart=Chart(3, "errors", "Errors by code per second",
                    "Operations that did not complete ok, by error code, stacked, per second."),
        last_from_operations=True,
    ),
    MetricView("anomalies", finding=anomalies_finding, transactions=True),
    MetricView("lost_updates", finding=lost_updates_finding, transactions=True),
    MetricView("bank", finding=bank_finding, transactions=True),
    MetricView("facts", facts_rows, names_nodes="own", finding=missing_lines),
)

VIEWS: dict[str, MetricView] = {v.name: v for v in METRIC_VIEWS}


def matrix_columns() -> tuple[str, ...]:
    """The matrix's column headings, in their positions."""
    placed = {pos: heading for v in METRIC_VIEWS for pos, heading in v.matrix}
    return tuple(placed[p] for p in sorted(placed))


def workload_sources() -> tuple[str, ...]:
    """The checkers whose subjects name the workloads of a cell, first to last."""
    named = [v for v in METRIC_VIEWS if v.names_workloads is not None]
    return tuple(v.name for v in sorted(named, key=lambda v: v.names_workloads or 0))


def node_sources(how: Literal["own", "on"]) -> tuple[str, ...]:
    """The checkers whose subjects are nodes (``own``) or name them as ``w on node`` (``on``)."""
    return tuple(v.name for v in METRIC_VIEWS if v.names_nodes == how)


def compared(scope: Literal["workload", "node", "run"]) -> list[tuple[str, Compared]]:
    """``(checker, what lab compare shows of it)`` of one scope, in their order."""
    out = [(v.name, v.compare) for v in METRIC_VIEWS
           if v.compare is not None and v.compare.scope == scope]
    return sorted(out, key=lambda nc: nc[1].rank)


def charts() -> list[tuple[str, Chart]]:
    """``(checker, chart)`` of the HTML report, in their order."""
    out = [(v.name, v.chart) for v in METRIC_VIEWS if v.chart is not None]
    return sorted(out, key=lambda nc: nc[1].position)


def findings(cell: dict[str, Any], info: CellInfo, *, transactions: bool = False) -> list[str]:
    """The findings of a cell, checker by checker; ``transactions``: only those that show
    transactions."""
    return [line for v in METRIC_VIEWS
            if v.finding is not None and (v.transactions or not transactions)
            for line in v.finding(cell, info)]


def last_from_operations(name: str) -> bool:
    view = VIEWS.get(name)
    return view is not None and view.last_from_operations
