"""Facts about a cell that the history does not hold, read from the servers: positions before
faults, relay-log sizes, what each node misses before healing and after settling, the
replication threads' state, the authoritative node and the final rows. The checkers read them
from ``CheckContext.facts`` and ``final_state`` (docs/results.md).

``CellFacts`` is filled as the cell goes: ``before_action``/``after_action`` around every
action, ``after_timeline`` before healing, ``settle`` and ``after_settle`` once healed,
``read_final_state`` last. Server knowledge is ``runners.replication``'s.
"""

from __future__ import annotations

import contextlib
import logging
import time
from functools import partial
from pathlib import Path
from typing import Any

from dsl.models import Action, NodeAction, NodeGroupAction, Promote
from dsl.plan import Plan, PlannedWorkload
from fault.process import COMES_UP, GOES_DOWN
from runners import divergence, replication
from runners.errant_gtids import binlog_state, parse_state, read_errant
from runners.errors import ComponentError
from runners.gtid import HEARTBEAT_DOMAIN, behind, parse_gtid
from runners.mysql import wait_until
from runners.tables import final_rows
from runners.topology import Topology
from runners.workloads import SCHEMA, table_ddl

log = logging.getLogger(__name__)

SETTLE_TIMEOUT = 30.0


def relay_log_bytes(datadir: Path) -> int:
    total = 0
    for p in datadir.glob("*relay*"):
        if p.is_file() and not p.name.endswith((".index", ".info")):
            with contextlib.suppress(OSError):
                total += p.stat().st_size
    return total


class CellFacts:
    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.topo: Topology | None = None  # set once the topology is up
        self.facts: dict[str, Any] = {"primary_gtid_last": {}, "relay_log_bytes": {},
                                      "topology": plan.topology}
        self.final_state: dict[str, dict[str, dict[int, Any]]] = {}
        self._started_at_gtid: dict[str, dict[int, int]] = {}
        # nodes whose process runs but cannot answer (left paused): not read, not waited for
        self.unavailable: set[str] = set()

    def running(self) -> dict[str, Any]:
        """The nodes that run and can answer: the ones whose state is read and waited for."""
        topo = self._topo()
        return {n: node for n, node in topo.nodes.items()
                if n not in self.unavailable and node.is_running()}

    def _topo(self) -> Topology:
        assert self.topo is not None
        return self.topo

    def on_primary_position(self, pos: dict[int, int]) -> None:
        """The heartbeat's reading of the primary's binlog position."""
        self.facts["primary_gtid_last"] = pos

    def before_load(self) -> None:
        """Each node's ``gtid_binlog_state`` once the tables are made, before the ``before
        load`` steps: transactions a node had then are not errant (the setup's own)."""
        if self.plan.topology not in ("replication", "primary_primary"):
            return
        base: dict[str, str] = {}
        for name, node in self.running().items():
            with contextlib.suppress(Exception):
                base[name] = replication.read_gtid(node, "gtid_binlog_state", timeout=5)
        self.facts["gtid_baseline"] = base

    # --- around actions ------------------------------------------------------------------------
    def before_action(self, a: Action) -> None:
        """Snapshots some actions need: the primary's GTID position before it goes down, a
        replica's relay-log size before it starts again."""
        topo = self._topo()
        if isinstance(a, Promote):
            # What the new primary lacks of the old one's binlog at the moment it is promoted:
            # with one transaction per write, the acknowledged writes a failover loses
            # (cross-checks lost_writes, which judges the final rows).
            with contextlib.suppress(Exception):
                mine = replication.gtid(topo.nodes[a.node.name], "gtid_current_pos")
                self.facts.setdefault("missing_at_promote", {})[a.node.name] = behind(
                    self.facts.get("primary_gtid_last") or {}, mine)
        if isinstance(a, NodeGroupAction):  # each node as its own kill or start would
            for ref in a.nodes:
                self.before_action(NodeAction(verb=a.verb, node=ref))
            return
        if not isinstance(a, NodeAction) or a.node.name not in topo.nodes:  # `kill router`
            return
        name = a.node.name
        if name == topo.primary and a.verb in GOES_DOWN:
            self.snapshot_primary()
        if name != topo.primary and a.verb in GOES_DOWN:
            # What the replica had applied when it went down: "applied since" counts
            # from here (a replica may start its threads by itself when it starts).
            with contextlib.suppress(Exception):
                self._started_at_gtid[name] = replication.gtid(topo.nodes[name],
                                                               "gtid_slave_pos")
        if a.verb in COMES_UP and name != topo.primary:
            self.facts["relay_log_bytes"].setdefault(name, {})["before"] = relay_log_bytes(
                topo.nodes[name].datadir)

    def after_action(self, a: Action) -> None:
        topo = self._topo()
        if isinstance(a, NodeGroupAction):
            for ref in a.nodes:
                self.after_action(NodeAction(verb=a.verb, node=ref))
            return
        if (isinstance(a, NodeAction) and a.verb in COMES_UP and a.node.name != topo.primary
                and a.node.name in topo.nodes):
            entry = self.facts["relay_log_bytes"].setdefault(a.node.name, {})
            entry["after"] = relay_log_bytes(topo.nodes[a.node.name].datadir)

    def snapshot_primary(self) -> None:
        topo = self._topo()
        assert topo.primary is not None
        with contextlib.suppress(Exception):
            self.facts["primary_gtid_last"] = replication.gtid(topo.nodes[topo.primary],
                                                               "gtid_binlog_pos", timeout=1)

    # --- after the timeline, before healing ---------------------------------------------------
    def missing(self) -> dict[str, int]:
        """Transactions each running node lacks, per topology (runners.replication)."""
        topo = self._topo()
        running = self.running()
        return replication.missing_transactions(
            self.plan.topology, running, topo.primary, self.facts.get("primary_gtid_last") or {})

    def after_timeline(self) -> None:
        """Facts as the timeline left them: missing transactions before healing (a healed
        primary lets replicas catch up and would hide the relay-log lesson), what restarted
        replicas applied since, and the replication threads' state."""
        self.facts["missing_before_heal"] = self.missing()
        topo = self._topo()
        applied: dict[str, str] = {}
        running = self.running()
        for name, node in running.items():
            if name == topo.primary:
                continue
            with contextlib.suppress(Exception):
                pos = replication.read_gtid(node, "gtid_slave_pos")
                mine = parse_gtid(pos)
                applied[name] = pos
                if name in self._started_at_gtid:
                    base = self._started_at_gtid[name]
                    self.facts.setdefault("applied_since_restart", {})[name] = sum(
                        max(0, seq - base.get(dom, 0))
                        for dom, seq in mine.items()
                        if dom != HEARTBEAT_DOMAIN
                    )
        repl_errors: dict[str, dict[str, Any]] = {}
        for name, node in running.items():
            with contextlib.suppress(Exception):
                st = replication.slave_status(node)
                if st:
                    repl_errors[name] = replication.thread_errors(st)
        self.facts["replication_errors"] = repl_errors
        self.facts["replica_gtid"] = applied
        self.facts["primary_gtid"] = {
            str(k): v for k, v in (self.facts.get("primary_gtid_last") or {}).items()}

    # --- settling ---------------------------------------------------------------------------------
    def settle(self, timeout: float = SETTLE_TIMEOUT) -> tuple[bool, str]:
        """Wait until every running node has what the authoritative state has; (settled, why
        not). Two primaries whose SQL thread stopped on an error never settle: said at once."""
        topo = self._topo()
        deadline = time.monotonic() + timeout
        running = self.running()
        if self.plan.topology == "galera":
            try:
                for node in running.values():
                    others = [o for o in running.values() if o is not node]
                    wait_until(partial(replication.synced_in_cluster, node, others), timeout,
                               "synced", node.component)
            except ComponentError as e:
                return False, str(e)
            return True, ""
        if (self.plan.topology == "replication" and topo.primary is not None
                and topo.primary not in running and len(topo.nodes) > 1):
            return self._settle_without_primary(running, timeout)
        if (self.plan.topology == "replication" and self.plan.engine.flavor != "mariadb"
                and topo.primary in running and len(topo.nodes) > 1):
            # MySQL, Percona Server: no MariaDB GTID positions to compare; settled when
            # every running replica applied the primary's binlog (by file and position)
            replicas = {n: node for n, node in running.items() if n != topo.primary}
            behind = replication.wait_caught_up(replicas, running[topo.primary], timeout)
            if behind:
                return False, f"{', '.join(behind)} had not applied the primary's binary " \
                    f"log after {timeout:g}s"
            return True, ""
        if (self.plan.topology == "replication" and topo.primary in running
                and len(running) == 1):
            return True, ""  # the primary alone runs (the others left for good): no one to wait for
        if self.plan.topology in ("replication", "primary_primary") and len(topo.nodes) > 1:
            # settled: every running node has every transaction of the authoritative state
            # (the same GTID arithmetic as missing_transactions)
            io_since: float | None = None  # since when an IO thread is stopped on an error
            while True:
                stopped, io_stopped = replication.stopped_threads(running)  # one read each
                if stopped:
                    return False, "SQL thread stopped on " + ", ".join(stopped)
                if not io_stopped:
                    io_since = None
                elif io_since is None:
                    io_since = time.monotonic()
                elif time.monotonic() - io_since >= 1.0:  # it will not retry: waiting could
                    return False, "IO thread stopped on " + ", ".join(io_stopped)  # only time out
                missing = self.missing()
                if missing and not any(missing.values()):
                    return True, ""
                if time.monotonic() > deadline:
                    if not missing:
                        return False, "the nodes' GTID positions could not be read"
                    return False, f"still missing transactions after {timeout:g}s: " + \
                        ", ".join(f"{n} {m}" for n, m in sorted(missing.items()) if m)
                time.sleep(0.1)
        return True, ""

    def _settle_without_primary(self, running: dict[str, Any], timeout: float
                                ) -> tuple[bool, str]:
        """The primary is down at the end (left down, or never restarted): the replicas can
        only apply what they downloaded. Settled when every running replica has."""
        replicas = {n: node for n, node in running.items() if n != self._topo().primary}
        deadline = time.monotonic() + timeout
        while True:
            behind = []
            for name, node in sorted(replicas.items()):
                try:
                    done = replication.caught_up(node, None)
                except Exception:  # noqa: BLE001 - not readable: not settled
                    done = False
                if not done:
                    behind.append(name)
            if not behind:
                return True, ""
            if time.monotonic() > deadline:
                return False, (f"the primary is down and {', '.join(behind)} had not applied "
                               f"what it downloaded after {timeout:g}s")
            time.sleep(0.1)

    def after_settle(self, settled: bool) -> None:
        """After settling: the definition of missing transactions (docs/results.md), the node
        whose final state is the truth, and, when the writer is down at the end, the surviving
        nodes that hold it instead."""
        self.facts["settled"] = settled
        self.facts["missing_transactions"] = self.missing()
        self.facts["authority"] = self.authority()
        survivors = self.survivors()
        if survivors is not None:
            self.facts["survivors"] = survivors

    def authority(self) -> str | None:
        """The node whose final state is the truth for lost writes: the current writer (the
        primary, or the replica promoted last) when it runs at the end; on Galera a running
        node (they hold one state); None on two primaries (each write is judged where it was
        acknowledged) and when the writer is down (see ``survivors``)."""
        topo = self._topo()
        if self.plan.topology == "primary_primary":
            return None
        running = self.running()
        if topo.primary is not None:
            return topo.primary if topo.primary in running else None
        return next(iter(running), None)

    def survivors(self) -> list[str] | None:
        """When the writer of a replication topology is down at the end (a fault left in
        place): the nodes still running, whose rows are the truth instead (a write is lost
        when none of them has it; none running: lost writes are unknown). None otherwise."""
        topo = self._topo()
        if self.plan.topology != "replication" or topo.primary is None:
            return None
        running = self.running()
        if topo.primary in running:
            return None
        return sorted(running)

    # --- the final rows ------------------------------------------------------------------------
    def read_final_state(self, workloads: list[PlannedWorkload]) -> None:
        """Every workload table's rows on every running node: ``final_state``."""
        topo = self._topo()
        state: dict[str, dict[str, dict[int, Any]]] = {}
        for spec in workloads:
            if not table_ddl(spec):
                continue
            per_node: dict[str, dict[int, Any]] = {}
            for name, node in self.running().items():
                try:
                    per_node[name] = final_rows(node.addr, topo.admin, spec.name, spec.kind)
                except Exception as e:  # noqa: BLE001
                    log.warning("final state of %s on %s: %s", spec.name, name, e)
            state[spec.name] = per_node
        self.final_state = state

    # --- findings: errant GTIDs and divergence ---------------------------------------------
    def read_findings(self, workloads: list[PlannedWorkload]) -> None:
        """After settling: errant GTIDs (``runners.errant_gtids``) and the rows that differ
        between nodes (``runners.divergence``). What cannot be measured says why."""
        try:
            self.read_errant_gtids()
        except Exception as e:  # noqa: BLE001 - the other figures go on
            log.warning("errant GTIDs: %s", e)
            self.facts["errant_gtids_why"] = f"could not be read: {e}"
        try:
            self.read_divergence(workloads)
        except Exception as e:  # noqa: BLE001
            log.warning("divergence: %s", e)
            self.facts["divergence"] = {"error": f"could not be read: {e}", "tables": {}}

    def read_errant_gtids(self) -> None:
        """Per running node but the authority: its binlogged transactions the authority
        lacks. Replication only: primary_primary writes a domain per primary by design and
        Galera nodes share one write-set sequence."""
        if self.plan.topology != "replication":
            self.facts["errant_gtids_why"] = (
                f"errant GTIDs are measured on replication topologies, not {self.plan.topology}")
            return
        authority = self.facts.get("authority")
        running = self.running()
        if authority is None or authority not in running:
            self.facts["errant_gtids_why"] = "the primary is not running at the end"
            return
        truth = binlog_state(running[authority])
        baseline = self.facts.get("gtid_baseline") or {}
        out: dict[str, Any] = {}
        for name, node in sorted(running.items()):
            if name == authority:
                continue
            try:
                out[name] = read_errant(node, truth, parse_state(baseline.get(name, ""))
                                        ).as_json()
            except Exception as e:  # noqa: BLE001 - unknown for that node, not 0
                out[name] = {"count": None, "at_least": None, "error": str(e)[:300]}
        self.facts["errant_gtids"] = out
        self.facts["errant_gtids_authority"] = authority

    def divergence_tables(self, workloads: list[PlannedWorkload]) -> dict[str, list[str]]:
        """workload -> its tables (``schema.table``)."""
        out: dict[str, list[str]] = {}
        for spec in workloads:
            if table_ddl(spec):
                out[spec.name] = [f"{SCHEMA}.w_{spec.name}"]
            elif spec.kind == "sysbench":
                out[spec.name] = [f"sbtest.sbtest{i}" for i in range(1, (spec.tables or 1) + 1)]
        return out

    def read_divergence(self, workloads: list[PlannedWorkload]) -> None:
        """Every table of the workloads, and every other base table of every schema but the
        server's own and the lab's heartbeat, compared on every running node with the
        reference node (``runners.divergence.compare_nodes``)."""
        if self.plan.topology == "mongodb_replset":
            return
        topo = self._topo()
        running = self.running()
        if not running:
            self.facts["divergence"] = {"error": "no node is running", "tables": {}}
            return
        authority = self.facts.get("authority")
        reference = authority if authority in running else sorted(running)[0]
        by_workload = self.divergence_tables(workloads)
        got = divergence.compare_nodes({n: node.addr for n, node in running.items()},
                                       topo.admin, reference,
                                       {t for ts in by_workload.values() for t in ts})
        if not got.reference_read:
            self.facts["divergence"] = {
                "error": f"the reference node {reference} could not be read", "tables": {}}
            return
        self.facts["divergence"] = {"reference": reference, "tables": got.tables,
                                    "workloads": by_workload, "nodes": sorted(running)}
