"""A compiled plan's cell made real: nodes, replication wiring, links, router.

``Topology`` is what the engine, the load and the faults need of a running topology (its
nodes and endpoints, the writer and the replicas, the process primitives kill, pause, stop,
start, restart, teardown); ``NativeTopology`` implements it with processes on this machine.
A second back-end (containers) is one more implementation, chosen in ``Topology.deploy``.

``Topology.deploy(plan, cell, run)`` returns a running topology or raises ``ComponentError``
after tearing down whatever it had started. ``teardown()`` always stops everything recorded.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, ClassVar, Protocol

from dsl import router_settings
from dsl.actions import describe
from dsl.backends import uses_links
from dsl.compile_warnings import root_needs
from dsl.models import NetworkFault, Promote
from dsl.owned import normal_key
from dsl.plan import Cell, Plan, PlannedNode, iofs_nodes, unsynced_nodes
from runners import cgroups, components, faketime, iofs, replication
from runners.bare import GaleraCluster, PrimaryPair
from runners.capabilities import (
    Capabilities,
    CgroupLimits,
    Clock,
    Disk,
    GroupRecovery,
    IoFaults,
    Latency,
    LinkCut,
    PageCache,
    Pause,
    Process,
    RouterProcess,
    UnsyncedLoss,
)
from runners.disk import (
    any_disk_nodes,
    binlog_nodes,
    disk_nodes,
    move_binlogs_onto_tmpfs,
    move_onto_tmpfs,
)
from runners.errors import ComponentError
from runners.haproxy import Backend, HAProxy
from runners.iofs import IoFs
from runners.mysql import Address, Credentials, execute_all, wait_until
from runners.node import Node, SandboxNode
from runners.node_primitives import NodePrimitives, deploy_cell, password
from runners.proxysql import ProxySQL
from runners.router import Router
from runners.runtime import Run
from runners.sandbox import SandboxRequest, check_identity, split_config
from runners.sandbox import deploy as deploy_sandbox
from runners.toxiproxy import Toxiproxy

log = logging.getLogger(__name__)

def needed_components(plan: Plan) -> list[str]:
    if plan.backend == "containers":
        from runners.containers.engine import configured_host

        # the servers are in the image; the engine is the user's or a private podman
        return [] if configured_host() else ["podman", "runc", "mmdebstrap"]
    kind = plan.topology
    need = []
    if kind == "mongodb_replset":
        need.append("mongod")
    else:
        need.append("mariadbd")
    if kind in ("replication", "single"):
        need.append("dbdeployer")
    if kind == "galera":
        need += ["galera", "rsync"]
    if plan.router is not None:
        need.append(plan.router.kind)
    if uses_links(plan.actions(), "native"):
        need.append("toxiproxy")
    if faketime.skew_nodes(plan.actions()):
        need.append("faketime")
    if iofs_nodes(plan.actions()):
        need.append(iofs.BINARY)
    for cell in plan.cells:
        if any(w.kind == "sysbench" for w in cell.workloads):
            need.append("sysbench")
            break
    return need


def check_privileges(plan: Plan, is_root: bool | None = None) -> None:
    """Stop before starting anything when an action needs root and the lab is not root
    (``dsl.actions``'s needs_root: the reason ``lab check`` notes)."""
    if is_root is None:
        is_root = os.geteuid() == 0
    if is_root:
        return
    for action, reason in root_needs(plan):
        raise components.NeedsRoot(f"line {action.span.line}: `{describe(action)}`", reason)


def check_network_groups(plan: Plan, root: Path = cgroups.CGROUP_ROOT) -> None:
    """Stop before starting anything when a Galera group partition cannot be made whole: its
    iptables rule recognises the connections a node opened itself by the server's cgroup v2
    group (``runners.cgroups``), so the machine needs a cgroup v2 hierarchy (under
    ``root``)."""
    if plan.topology != "galera" or os.geteuid() != 0:
        return  # not root: check_privileges has refused it already
    if cgroups.unified_dir(root) is not None:
        return
    for action, _ in root_needs(plan):
        if isinstance(action, NetworkFault):
            raise components.NeedsCgroupV2(
                f"line {action.span.line}: `{describe(action)}`",
                "the partition recognises the connections the node opened itself by its "
                f"server's cgroup v2 group; mount one at {root / cgroups.UNIFIED} (hybrid) or "
                "boot with cgroup v2, or leave the partition out")


def check_components(plan: Plan) -> None:
    """Stop before starting anything when a component is missing (one line, how to get it)
    or an action needs root that the lab does not have."""
    check_privileges(plan)
    check_network_groups(plan)
    for name in needed_components(plan):
        components.require(name)


class Topology(Protocol):
    capabilities: ClassVar[Capabilities]  # what its back-end can do (``runners.capabilities``)
    plan: Plan
    run: Run
    admin: Credentials  # the lab's own user (every privilege)
    app: Credentials  # the workloads' user
    repl: Credentials  # the replication user
    nodes: dict[str, Node]
    primary: str | None  # the current writer of a replication topology; changes on promote
    router: Router | None
    toxi: Toxiproxy | None  # the network links, when the experiment has network faults
    timings: dict[str, float]

    @classmethod
    def deploy(cls, plan: Plan, cell: Cell, run: Run) -> Topology:
        """The cell's topology, running: processes on this machine (``backend native``) or
        containers on a container engine (``backend containers``)."""
        return deploy(plan, cell, run)

    def writer(self) -> str | None:
        """The node that takes the writes (the primary; None with several writers)."""

    def replicas(self) -> list[str]:
        """The nodes that replicate from the writer."""

    def address(self, endpoint: str) -> Address:
        """Where a client connects: a node or ``router.writer`` / ``router.reader``."""

    def node_by_server_id(self, server_id: int) -> str | None: ...
    def endpoints(self) -> dict[str, str]: ...
    def connect_hint(self, endpoint: str) -> str: ...
    def kill(self, name: str) -> None: ...
    def pause(self, name: str) -> None: ...
    def resume(self, name: str) -> None: ...
    def stop(self, name: str) -> None: ...
    def start(self, name: str, options: dict[str, str] | None = None) -> None: ...
    def restart(self, name: str, options: dict[str, str] | None = None) -> None: ...
    def teardown(self) -> float: ...


def deploy(plan: Plan, cell: Cell, run: Run) -> Topology:
    """The cell's topology on the plan's back-end."""
    if plan.backend == "containers":
        from runners.containers.topology import ContainerTopology

        return ContainerTopology.deploy(plan, cell, run)
    return NativeTopology.deploy(plan, cell, run)


@dataclass
class NativeTopology(NodePrimitives):
    """Servers as processes of this machine: dbdeployer sandboxes, bare mariadbd (Galera,
    two primaries), mongod; HAProxy or ProxySQL; toxiproxy links."""

    capabilities: ClassVar[Capabilities] = frozenset({
        Process, Pause, Latency, LinkCut, Disk, CgroupLimits, Clock, PageCache, IoFaults,
        UnsyncedLoss, GroupRecovery, RouterProcess})
    run: Run
    plan: Plan
    cell: Cell
    admin: Credentials
    app: Credentials
    repl: Credentials
    nodes: dict[str, Node] = field(default_factory=dict)
    planned: dict[str, PlannedNode] = field(default_factory=dict)
    router: Router | None = None
    monitor: Credentials = field(default_factory=lambda: Credentials("lab_monitor", password()))
    toxi: Toxiproxy | None = None
    primary: str | None = None  # current primary (replication); changes on promote
    timings: dict[str, float] = field(default_factory=dict)
    tmpfs: dict[str, int] = field(default_factory=dict)  # node -> size of its data dir's tmpfs
    iofs: dict[str, IoFs] = field(default_factory=dict)  # node -> its data dir's lab-iofs

    # --- building ------------------------------------------------------------------------------
    @classmethod
    def deploy(cls, plan: Plan, cell: Cell, run: Run) -> NativeTopology:
        check_components(plan)
        return deploy_cell(cls, plan, cell, run)

    def _uses_network_faults(self) -> bool:
        """Whether the run's clients and replicas go through toxiproxy links."""
        return uses_links(self.plan.actions(), "native")

    def _deploy(self) -> None:
        t0 = time.monotonic()
        kind = self.plan.topology
        on_tmpfs = disk_nodes(self.plan.actions())
        binlogs_on_tmpfs = binlog_nodes(self.plan.actions())
        if any_disk_nodes(self.plan.actions()) and os.geteuid() != 0:
            raise ComponentError("disk full", "needs root: the lab mounts a tmpfs for "
                                 f"{', '.join(any_disk_nodes(self.plan.actions()))} (its data "
                                 "directory or binary logs; run as root, or leave the fault "
                                 "out)")
        on_iofs = self.plan.iofs_nodes  # the plan decides (dsl.plan.iofs_nodes)
        if on_iofs and os.geteuid() != 0:
            raise ComponentError(iofs.BINARY, "needs root: the lab mounts lab-iofs (FUSE) at "
                                 f"{', '.join(on_iofs)}'s data directory (run as root, or "
                                 "leave the io faults out)")
        if self._uses_network_faults():
            self.toxi = Toxiproxy(self.run, self.run.ports.toxiproxy_api)
            self.toxi.start()
        if kind in ("replication", "single"):
            self._deploy_sandboxes()
        elif kind == "galera":
            cluster = GaleraCluster(self.run, list(self.cell.nodes), self.admin, self.app,
                                    self.repl)
            for gnode in cluster.deploy():
                self.nodes[gnode.name] = gnode
        elif kind == "primary_primary":
            names = [n.name for n in self.cell.nodes]
            repl_ports: dict[str, int] = {}
            if self.toxi:
                for i, name in enumerate(names, start=1):
                    other = 2 if i == 1 else 1
                    self.toxi.add_link(name, "replication", self.run.ports.replication_proxy(i),
                                       self.run.ports.node(other))
                    repl_ports[name] = self.run.ports.replication_proxy(i)
            pair = PrimaryPair(self.run, list(self.cell.nodes), self.admin, self.app,
                               self.repl, repl_ports)
            for pnode in pair.deploy():
                self.nodes[pnode.name] = pnode
        else:  # mongodb_replset: never run on the project's build machine (README)
            from runners.mongo import MongoReplicaSet

            rs = MongoReplicaSet(self.run, [n.name for n in self.cell.nodes], self.plan.engine,
                                 {n.name: dict(n.config) for n in self.cell.nodes})
            for mnode in rs.deploy():
                self.nodes[mnode.name] = mnode
        if self.toxi:
            for node in self.nodes.values():
                self.toxi.add_link(node.name, "clients", self.run.ports.client_proxy(node.index),
                                   node.port)
        if on_tmpfs:
            self._datadirs_on_tmpfs(on_tmpfs)
        if binlogs_on_tmpfs:
            self._binlogs_on_tmpfs(binlogs_on_tmpfs)
        if on_iofs:
            self._datadirs_on_iofs(on_iofs)
        skewed = self.plan.faketime_nodes  # the plan decides (dsl.plan.faketime_nodes)
        if skewed:
            self._under_faketime(skewed)
        self.timings["nodes_ready"] = time.monotonic() - t0
        if self.plan.router is not None:
            self._start_router()
        self.timings["ready"] = time.monotonic() - t0
        self.run.set_state("up", endpoints=self.endpoints(), nodes=self.describe_nodes())

    def _deploy_sandboxes(self) -> None:
        configs = {n.name: dict(n.config) for n in self.cell.nodes}
        ordered = sorted(self.cell.nodes, key=lambda n: (n.role != "primary", n.index))
        names = [n.name for n in ordered]
        common, per_node = split_config(configs, names)
        req = SandboxRequest(
            kind="replication" if self.plan.topology == "replication" else "single",
            replicas=len(names) - 1, base_port=self.run.ports.base,
            common_config=common, semi_sync=self.plan.semi_sync, admin=self.admin,
            repl=self.repl, post_grants=[])
        roles = [self.planned[n].role for n in names]
        nodes = deploy_sandbox(self.run, req, names, roles, self.plan.engine.flavor,
                               self.plan.engine.version)
        for node in nodes:
            self.nodes[node.name] = node
        if self.plan.topology == "replication":
            self.primary = names[0]
        # Per-node settings that differ from the common ones: into that node's my.sandbox.cnf,
        # then a restart so they are in force.
        to_restart: list[SandboxNode] = []
        check_identity(nodes, self.planned)
        for node in nodes:
            extra = per_node[node.name]
            if extra and isinstance(node, SandboxNode):
                with open(node.sandbox_dir / "my.sandbox.cnf", "a") as f:
                    f.write("\n# per-node settings from the experiment\n")
                    for k, v in extra.items():
                        f.write(f"{k}={v}\n")
                if set(extra) - {"read_only"}:
                    to_restart.append(node)
        # The primary first (replicas retry their connection only every 60 s), then the
        # replicas together: their stops and starts are mostly waiting.
        from concurrent.futures import ThreadPoolExecutor

        for n in [n for n in to_restart if n.role != "replica"]:
            n.restart()
            # Its replicas lost their connection and would retry only in 60 s: reconnect now.
            for other in nodes:
                if other.role == "replica" and other not in to_restart:
                    execute_all(other.addr, self.admin, ["STOP SLAVE", "START SLAVE"])
        replicas = [n for n in to_restart if n.role == "replica"]
        with ThreadPoolExecutor(max_workers=max(1, len(replicas))) as pool:
            for fut in [pool.submit(n.restart) for n in replicas]:
                fut.result()
        # The lab's users, made on the primary (they replicate). Not through dbdeployer's
        # --post-grants-sql, which fails silently with some server settings.
        # dbdeployer's admin user has no GRANT OPTION on MariaDB: grant as root on the socket.
        import MySQLdb

        from runners.users import user_statements

        first = nodes[0]
        sock = next(first.datadir.glob("mysql_sandbox*.sock"))
        try:  # root@localhost authenticates by unix_socket when we are the OS root user
            conn = MySQLdb.connect(unix_socket=str(sock), user="root", connect_timeout=5)
        except MySQLdb.OperationalError:
            conn = MySQLdb.connect(unix_socket=str(sock), user="root",
                                   password=self.admin.password, connect_timeout=5)
        try:
            cur = conn.cursor()
            # dbdeployer's replication user is the one the replicas use: no lab one
            for stmt in user_statements(self.admin, self.app, None):
                cur.execute(stmt)
            cur.close()
        finally:
            conn.close()
        if self.plan.topology == "replication":
            # the users reach every replica (through dbdeployer's replication, before any
            # delay is set) before a client may connect there: a replica that does not have
            # them yet refuses the lab's own users (1045), measured under load
            for node in nodes[1:]:
                # a replica whose primary restarted retries its connection only every 60 s (the
                # retry interval is set later, in _wire_replication); with no restart,
                # dbdeployer's START SLAVE of a moment ago is connected unless it failed
                if to_restart or not replication.replicating(node):
                    execute_all(node.addr, self.admin, ["STOP SLAVE", "START SLAVE"])
                replication.wait_applied(node, first)
            self._wire_replication()

    def _wire_replication(self) -> None:
        assert self.primary is not None
        primary = self.nodes[self.primary]
        for name, node in self.nodes.items():
            if name == self.primary:
                continue
            planned = self.planned[name]
            port = primary.port
            if self.toxi:
                link = self.toxi.add_link(name, "replication",
                                          self.run.ports.replication_proxy(node.index),
                                          primary.port)
                port = link.listen
            # dbdeployer wired these replicas (its user, its GTID setting: both kept). With no
            # link, delay or file coordinates to set, its wiring is what the plan wants but
            # for the retry interval: address None keeps it.
            keep = not self.toxi and self.plan.replication_mode != "file_position" and \
                not planned.delay
            replication.wire_replica(
                node, primary, None if keep else (replication.LOOPBACK, port), None,
                mode=self.plan.replication_mode or "gtid", delay=planned.delay,
                flavor=self.plan.engine.flavor, dbdeployer=True)
        self.wait_replication_running()

    def wait_replication_running(self, timeout: float = 30.0) -> None:
        for name, node in self.nodes.items():
            if name == self.primary:
                continue
            wait_until(partial(replication.replicating, node), timeout, "replicating",
                       node.component, node.error_log)

    def _restart_each(self, names: list[str], timing: str,
                      change: Callable[[Node], None]) -> None:
        """Stop each node, ``change`` what it starts with (its data directory's filesystem,
        its environment), start it again; then wait until replication runs again (Galera:
        every node synced). The deploy-time moves of ``disk full``, ``io delay``/``io fail``
        and ``clock skew`` nodes."""
        t0 = time.monotonic()
        for name in names:
            node = self.nodes[name]
            node.stop()
            change(node)
            node.start()
            if self.plan.topology == "galera":
                # every node synced again before the next one stops: stopping g2 while g1 still
                # joins leaves one of three members, no quorum (a non-primary component; seen
                # on a loaded machine when three nodes moved onto lab-iofs one after another)
                self._wait_topology_running()
        self._wait_topology_running()
        self.timings[timing] = time.monotonic() - t0

    def _under_faketime(self, names: list[str]) -> None:
        """``clock skew NODE`` needs the node's server started with libfaketime preloaded
        (``runners.faketime``): its offset file says ``+0``; stop the node and start it again
        with that environment (for that node only)."""
        lib = faketime.library()
        if lib is None:
            raise ComponentError("faketime", "clock skew needs libfaketime "
                                 "(libfaketime.so.1): Debian's faketime package "
                                 "(`make bootstrap`), or set LAB_LIBFAKETIME to the library")

        def preload(node: Node) -> None:
            path = faketime.offset_file(self.run.dir, node.name)
            faketime.write_offset(path, 0.0)
            node.env = {**(node.env or os.environ), **faketime.faketime_env(lib, path)}

        self._restart_each(names, "faketime", preload)

    def _datadirs_on_tmpfs(self, names: list[str]) -> None:
        """``disk full NODE`` needs the node's data directory on a tmpfs of its own
        (``runners.disk``): stop the node, move its files there, start it again."""

        def move(node: Node) -> None:
            self.tmpfs[node.name] = move_onto_tmpfs(node.datadir)

        self._restart_each(names, "tmpfs", move)

    def _datadirs_on_iofs(self, names: list[str]) -> None:
        """``io delay NODE`` / ``io fail NODE`` need the node's data directory on lab-iofs
        (``runners.iofs``): stop the node, mount lab-iofs over its files, start it again."""
        binary = components.require(iofs.BINARY)
        if not os.path.exists("/dev/fuse"):
            raise ComponentError(iofs.BINARY, "/dev/fuse is missing: the kernel's FUSE module "
                                 "is not loaded (modprobe fuse)")

        unsynced = unsynced_nodes(self.plan.actions())  # `kill ... losing unsynced writes`

        def move(node: Node) -> None:
            self.iofs[node.name] = iofs.move_onto_iofs(self.run, node.name, binary,
                                                       node.datadir,
                                                       unsynced=node.name in unsynced)

        self._restart_each(names, "iofs", move)

    def _binlogs_on_tmpfs(self, names: list[str]) -> None:
        """``disk full NODE binlog`` needs the node's binary logs on a tmpfs of their own
        (``runners.disk.move_binlogs_onto_tmpfs``): stop the node, move them, start it again;
        its GTID position must be what it was, and replication must run again."""
        bases: dict[str, str] = {}
        before: dict[str, Any] = {}
        for name in names:
            node = self.nodes[name]
            base = next((v for k, v in self.planned[name].config.items()
                         if normal_key(k) == "log_bin"), None)
            if base is None or node.config_file is None:
                raise ComponentError(node.component, "disk full ... binlog: the server writes "
                                     "no binary logs (config { log_bin = mysql-bin })")
            bases[name] = base
            before[name] = node.scalar("SELECT @@gtid_binlog_pos")

        def move(node: Node) -> None:
            assert node.config_file is not None
            try:
                self.tmpfs[f"{node.name} binlog"] = move_binlogs_onto_tmpfs(
                    node.datadir, bases[node.name], node.config_file)
            except OSError as e:
                raise ComponentError(node.component, f"moving its binary logs: {e}",
                                     node.error_log) from None

        self._restart_each(names, "binlog_tmpfs", move)
        for name in names:
            node = self.nodes[name]
            after = node.scalar("SELECT @@gtid_binlog_pos")
            if after != before[name]:
                raise ComponentError(node.component, "its binary logs moved onto a tmpfs, its "
                                     f"GTID position changed from {before[name]!r} to "
                                     f"{after!r}", node.error_log)

    def _wait_topology_running(self) -> None:
        """After nodes restarted at deploy: replicas replicate again, Galera nodes are synced."""
        if self.plan.topology in ("replication", "primary_primary"):
            self.wait_replication_running()  # every node but the primary (both of a pair)
        elif self.plan.topology == "galera":
            for node in self.nodes.values():
                wait_until(partial(replication.synced, node), 60, "synced with the cluster",
                           node.component, node.error_log)

    def promote_targets(self) -> set[str]:
        return {a.node.name for a in self.plan.actions() if isinstance(a, Promote)}

    def _start_router(self) -> None:
        r = self.plan.router
        assert r is not None
        ports = self.run.ports
        backends = []
        for node in self.nodes.values():
            port = node.port
            if self.toxi:
                port = ports.client_proxy(node.index)
            backends.append(Backend(node.name, port, ports.agent(node.index, "writer"),
                                    ports.agent(node.index, "reader")))
        # Replication: every node may become the writer (promote); the role-aware check keeps
        # read-only nodes out. Elsewhere: the declared writers and any promote target.
        extra = list(self.nodes) if self.plan.topology == "replication" else \
            sorted(self.promote_targets())
        writers = list(dict.fromkeys([*r.writers, *extra]))
        if r.kind == "proxysql":  # never run on the project's build machine (README)
            from runners.proxysql import mode_for, monitor_user_setup

            flavor = "mariadb" if self.plan.engine.flavor == "mariadb" else "mysql"
            for node in self.nodes.values():
                execute_all(node.addr, self.admin, monitor_user_setup(self.monitor, flavor))
            self.router = ProxySQL(self.run, backends, writers, r.readers, r.check_interval,
                                   ports.router_writer, ports.router_reader, app=self.app,
                                   monitor=self.monitor, mode=mode_for(self.plan.topology),
                                   settings=router_settings.resolve(r.settings,
                                                                    self.cell.sweep))
        else:
            self.router = HAProxy(self.run, backends, writers, r.readers, r.check_interval,
                                  ports.router_writer, ports.router_reader)
        self.router.start(self.writer_ok, self.reader_ok)

    # --- roles, as the agent checks see them ---------------------------------------------------
    def writer_ok(self, name: str) -> bool:
        read_only, synced = replication.role_state(self.nodes[name].addr, self.admin)
        return not read_only and (self.plan.topology != "galera" or synced)

    def reader_ok(self, name: str) -> bool:
        _, synced = replication.role_state(self.nodes[name].addr, self.admin)
        return self.plan.topology != "galera" or synced

    # --- endpoints (roles and process primitives: NodePrimitives) ----------------------------
    def address(self, endpoint: str) -> Address:
        """Where a client connects: a node (through its client link when links exist),
        ``router.writer`` or ``router.reader``."""
        if endpoint == "router.writer":
            return Address("127.0.0.1", self.run.ports.router_writer)
        if endpoint == "router.reader":
            return Address("127.0.0.1", self.run.ports.router_reader)
        node = self.nodes[endpoint]
        if self.toxi:
            return Address("127.0.0.1", self.run.ports.client_proxy(node.index))
        return node.addr

    def describe_nodes(self) -> list[dict[str, Any]]:
        return [{"name": n.name, "role": n.role, "port": n.port, "pid": n.pid(),
                 "datadir": str(n.datadir), "error_log": str(n.error_log)}
                for n in self.nodes.values()]

    # --- teardown -------------------------------------------------------------------------------
    def teardown(self) -> float:
        t0 = time.monotonic()
        if self.router:
            self.router.stop()
        for node in self.nodes.values():
            if node.paused:
                node.resume()
        self.run.stop_all()  # SIGKILL every recorded process (supervisors first) and reap
        for fs in self.iofs.values():  # lab-iofs mounts: unmounted, the files put back
            iofs.unmount(fs)
        if self.toxi:
            self.toxi.stop()
        return time.monotonic() - t0
