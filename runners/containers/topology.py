"""A topology of containers: every node a container of the lab's image on a network of the run.

``ContainerTopology`` is the ``Topology`` of ``backend containers``: the nodes run in their own
network namespaces on a per-run bridge network where each is reachable by its name (the
replicas replicate from ``db1:3306``); each node's port 3306 is published on 127.0.0.1 at the
node's port of the run's block (the same ports ``lab plan`` shows), so workloads and the lab's
own connections reach it as they reach a native node. Credentials are made for the run; the
users are the native ones at '%' (``runners.users``), in a file each node's server runs at
every start (``--init-file``) without writing them to the binary log.

The process verbs go through the engine's API, so they work on a remote engine too:
``kill`` is SIGKILL to the container (its init and the server die at once: a crash; the
container stays exited until the experiment starts it, as a killed native server stays down),
``stop`` a clean shutdown (SIGTERM, up to 60 s), ``start`` starts the container again with the
same data (``start ... with`` options are written to ``/etc/lab/start-options`` in the
container first and apply to that start only), ``pause``/``resume`` the engine's freezer.

Replication is wired as natively, by the same function
(``runners.replication.wire_replica``): GTID (``slave_pos``) or file and position, semi-sync from
the plan's settings, ``delay``. Galera: the nodes find each other by name
(``gcomm://g1,g2,g3`` on the default ports, each in its own namespace), the lab's provider
options (evs timeouts, gcache) without the loopback addresses of the native back-end; the first
node bootstraps (``--wsrep-new-cluster`` in its start options for that one start), the others
join by rsync state transfer.

Two primaries: both nodes writable, each replicating from the other by name (GTID, one domain
per node, as natively).

Network faults between nodes (``runners.netcut.PeerCuts``): ``partition`` / ``link_down``
insert iptables rules in the node's own namespace (``exec`` through the API: it works on a
remote engine) that drop or refuse its traffic with the peers of the link, by their addresses
on the run's network. A cut lives in the node's namespace: it is inserted again when the node
starts after a kill or stop. Latency and bandwidth go on toxiproxy links
(``runners.containers.toxiproxy``: toxiproxy in a container of its own), made when the file has
such a fault or one on the clients link (``dsl.backends.uses_links``): the replicas replicate
through it, the clients and the router reach the nodes through it, as natively.

I/O faults (``io delay``, ``io fail``, ``kill ... losing unsynced writes``): the node's data
directory is lab-iofs mounted on this machine and bind-mounted into its container
(``runners.containers.iofs``): the same daemon and control file as natively.

A node (``ContainerNode``: its container, the process verbs, files and commands in it) and the
server's command line (``server_args``) are in ``runners.containers.node``.
What the fault families call (process verbs that put a node's cuts back, clock offsets,
container limits, cuts between nodes) is ``runners.containers.faults``.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from dsl import router_settings
from dsl.actions import describe
from dsl.backends import CONTAINER_TOPOLOGIES, needs_local_engine, uses_links
from dsl.models import Promote
from dsl.plan import Cell, Plan, PlannedNode, unsynced_nodes
from runners import components, disk, iofs, netcut, replication
from runners.capabilities import (
    Capabilities,
    CgroupLimits,
    Clock,
    ClockInNode,
    ContainerLimits,
    Disk,
    GroupRecovery,
    IoFaults,
    Latency,
    LinkCut,
    NamedSources,
    PageCache,
    Pause,
    PeerCuts,
    Process,
    RouterProcess,
    UnsyncedLoss,
)
from runners.containers import conmon
from runners.containers import engine as engines
from runners.containers import image as images
from runners.containers import iofs as ctr_iofs
from runners.containers.faults import ContainerFaults
from runners.containers.node import (
    FAKETIME_FILE,
    MOUNTS,
    SEED_SIZE,
    SERVER_PORT,
    START_OPTIONS,
    USER_ENTRYPOINT,
    USERS_FILE,
    ContainerNode,
    container_name,
    network_name,
    server_args,
)
from runners.errors import ComponentError
from runners.iofs import IoFs
from runners.mongo import MongoNode
from runners.mysql import Address, Credentials, execute_all, wait_until
from runners.node import Node
from runners.node_primitives import deploy_cell, password
from runners.router import Router
from runners.runtime import Run, runtime_root
from runners.toxiproxy import Toxiproxy
from runners.users import init_file

log = logging.getLogger(__name__)


@dataclass
class ContainerTopology(ContainerFaults):
    """Servers as containers of the lab's node image on a container engine
    (``runners.containers.engine``)."""

    # io faults and unsynced loss: lab-iofs of this machine, bind-mounted
    # (``runners.containers.iofs``); a whole Galera cluster's recovery: through each node's
    # container (``ContainerNode.wsrep_recover``, ``start_recovered``)
    capabilities: ClassVar[Capabilities] = frozenset({
        Process, Pause, Latency, LinkCut, Disk, CgroupLimits, Clock, PageCache, IoFaults,
        UnsyncedLoss, GroupRecovery, RouterProcess, PeerCuts, NamedSources, ClockInNode,
        ContainerLimits})

    run: Run
    plan: Plan
    cell: Cell
    admin: Credentials
    app: Credentials
    repl: Credentials
    engine: engines.Engine | None = None
    image: str = ""
    network: Any = None
    nodes: dict[str, Node] = field(default_factory=dict)
    planned: dict[str, PlannedNode] = field(default_factory=dict)
    router: Router | None = None
    toxi: Toxiproxy | None = None
    primary: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    cuts: list[netcut.Cut] = field(default_factory=list)  # in force, node by node
    tmpfs: dict[str, int] = field(default_factory=dict)  # node -> its data dir's tmpfs size
    iofs: dict[str, IoFs] = field(default_factory=dict)  # node -> its data dir's lab-iofs
    monitor: Credentials = field(default_factory=lambda: Credentials("lab_monitor", password()))
    user_images: dict[str, str] = field(default_factory=dict)  # the file's image -> the engine's

    @classmethod
    def deploy(cls, plan: Plan, cell: Cell, run: Run) -> ContainerTopology:
        return deploy_cell(cls, plan, cell, run)

    # --- building ------------------------------------------------------------------------------
    def _deploy(self) -> None:
        t0 = time.monotonic()
        if self.plan.topology not in CONTAINER_TOPOLOGIES:
            raise ComponentError("containers", f"the {self.plan.topology} topology does not "
                                 "run on containers yet (backend native runs it)")
        self.run.set_state("starting", backend="containers")
        self.engine = engines.connect(self.run)
        self.timings["engine"] = time.monotonic() - t0
        local_only = [describe(a) for a in self.plan.actions() if needs_local_engine(a)]
        if self.plan.iofs_nodes and self.plan.topology == "mongodb_replset":
            raise ComponentError("containers", "io faults and unsynced loss on containers: "
                                 "MariaDB nodes only (backend native runs them on mongod)")
        if local_only and not self.engine.local:
            raise ComponentError("container engine", f"{', '.join(local_only)}: needs the "
                                 f"engine on this machine, and {self.engine.url} is another "
                                 "(the page cache and the tmpfs are its machine's)")
        t = time.monotonic()
        self.image, built = images.ensure(self.engine.client, runtime_root(),
                                          self.run.dir / "image-build.log")
        found = images.find_image(self.engine.client, self.image)
        if found is not None and found.tags:
            self.image = found.tags[0]
        # the file's images, every one had (or pulled) before anything starts
        for ref in dict.fromkeys([*self._node_images().values(), *self._router_image()]):
            self.user_images[ref] = images.user_image(self.engine.client, ref)
        self.timings["image"] = time.monotonic() - t
        if built:
            self.timings["image_build"] = built
        self._make_network()
        t = time.monotonic()
        ordered = sorted(self.cell.nodes, key=lambda n: (n.role != "primary", n.index))
        if self.plan.topology == "galera":
            self._galera(ordered)
        elif self.plan.topology == "mongodb_replset":
            for p in ordered:
                self.nodes[p.name] = self._make_mongo_node(p)
        else:
            for p in ordered:
                self.nodes[p.name] = self._make_node(p)
        for node in self.nodes.values():
            node.wait_ready()
            assert isinstance(node, ContainerNode)
            node.locate_datadir()
        self._shrink_disks()
        t = time.monotonic()
        for name in unsynced_nodes(self.plan.actions()):  # the deploy's writes: synced
            ctr_iofs.mark_synced(self.iofs[name])
        if self.iofs:
            self.timings["iofs_synced"] = time.monotonic() - t
        if self.plan.topology == "mongodb_replset":
            from runners.mongo import initiate, replset_name

            initiate([n for n in self.nodes.values() if isinstance(n, MongoNode)],
                     replset_name(self.run.id))
        self.timings["nodes_up"] = time.monotonic() - t
        if uses_links(self.plan.actions(), "containers"):
            t = time.monotonic()
            self._start_links()
            self.timings["links_ready"] = time.monotonic() - t
        if self.plan.topology == "replication":
            self.primary = ordered[0].name
            t = time.monotonic()
            self._wire_replication()
            self.timings["replication_ready"] = time.monotonic() - t
        elif self.plan.topology == "primary_primary":
            t = time.monotonic()
            self._wire_pair()
            self.timings["replication_ready"] = time.monotonic() - t
        self.timings["nodes_ready"] = time.monotonic() - t0
        if self.plan.router is not None:
            t = time.monotonic()
            self._start_router()
            self.timings["router_ready"] = time.monotonic() - t
        self.timings["ready"] = time.monotonic() - t0
        self.run.set_state("up", backend="containers", endpoints=self.endpoints(),
                           nodes=self.describe_nodes())

    def _container_ids(self, eng: engines.Engine) -> set[str] | None:
        """The run's containers on the engine (full ids); None when it cannot say."""
        with contextlib.suppress(Exception):
            return {c.id for c in eng.client.containers.list(
                all=True, filters={"label": f"{engines.LABEL_RUN}={self.run.id}"})}
        return None

    def _start_router(self) -> None:
        """HAProxy in its own container (``runners.containers.router``), or ProxySQL in its
        own from the image the router names (``runners.containers.proxysql``)."""
        from runners.containers.router import ContainerHAProxy

        r = self.plan.router
        assert r is not None and self.engine is not None
        extra = list(self.nodes) if self.plan.topology == "replication" else sorted(
            {a.node.name for a in self.plan.actions() if isinstance(a, Promote)})
        writers = list(dict.fromkeys([*r.writers, *extra]))
        # through the client links when the run has them (as natively)
        via = {} if self.toxi is None else {
            n: (self.toxi.link_host, self.run.ports.client_proxy(self.planned[n].index))
            for n in self.nodes}
        if r.kind == "proxysql":
            self._start_proxysql(writers, via)
            return
        router = ContainerHAProxy(
            self.run, list(self.nodes), writers, list(r.readers), r.check_interval,
            (self.run.ports.router_writer, self.run.ports.router_reader,
             self.run.ports.router_admin), eng=self.engine,
            image=self.image, network=self.network, admin=self.admin,
            galera=self.plan.topology == "galera", via=via)
        self.router = router
        router.start()

    def _start_proxysql(self, writers: list[str], via: dict[str, tuple[str, int]]) -> None:
        from runners.containers.proxysql import DEFAULT_IMAGE, ContainerProxySQL, local_image
        from runners.haproxy import Backend
        from runners.proxysql import mode_for, monitor_user_setup

        r = self.plan.router
        assert r is not None and self.engine is not None
        binary = components.which("proxysql") if r.image is None else None
        if binary is not None:  # this machine's ProxySQL, in the node image
            image = local_image(self.engine.client, Path(binary), self.image)
        else:
            image = self.user_images[r.image or DEFAULT_IMAGE]
        for node in self.nodes.values():
            execute_all(node.addr, self.admin,
                        monitor_user_setup(self.monitor, "mariadb", ("%",)))
        backends = [Backend(n, SERVER_PORT, 0, 0) for n in self.nodes]
        router = ContainerProxySQL(
            self.run, backends, writers, list(r.readers), r.check_interval,
            self.run.ports.router_writer, self.run.ports.router_reader, self.app,
            self.monitor, mode_for(self.plan.topology), eng=self.engine, image=image,
            network=self.network, via=via,
            settings=router_settings.resolve(r.settings, self.cell.sweep))
        self.router = router
        router.start(self._writable, lambda name: True)

    def _node_images(self) -> dict[str, str]:
        """The nodes that run an image of the file's (MongoDB members always do: the lab's
        image holds MariaDB only), and that image."""
        out = {p.name: p.image for p in self.cell.nodes if p.image}
        if self.plan.topology == "mongodb_replset":
            from runners.containers.mongo import default_image

            default = default_image(self.plan.engine.flavor, self.plan.engine.version)
            out = {p.name: p.image or default for p in self.cell.nodes}
        return out

    def _make_mongo_node(self, p: PlannedNode) -> ContainerNode:
        """A replica set member (``runners.containers.mongo``): its image, the lab's start
        script and its ``mongod`` arguments copied in, port 27017 published."""
        engines.testcontainers_env()
        from runners.containers.mongo import (
            ARGS_PATH,
            MONGO_PORT,
            START_SCRIPT,
            START_SCRIPT_TEXT,
            ContainerMongoNode,
            mongod_args,
        )
        from runners.containers.transfer import new_container
        from runners.mongo import replset_name

        assert self.engine is not None
        try:
            args = mongod_args(replset_name(self.run.id), p.config)
        except ValueError as e:
            raise ComponentError(f"node {p.name}", str(e)) from None
        tc = new_container(
            self.user_images[self._node_images()[p.name]],
            docker_client_kw=self.engine.client_kw, name=container_name(self.run.id, p.name),
            network=self.network, network_aliases=[p.name], init=True, hostname=p.name,
            labels=self._labels(), cap_add=["NET_ADMIN"], entrypoint=["/bin/sh", START_SCRIPT],
            **engines.limits())
        tc.with_copy_into_container(START_SCRIPT_TEXT.encode(), START_SCRIPT, mode=0o755)
        tc.with_copy_into_container("".join(f"{a}\n" for a in args).encode(), ARGS_PATH)
        tc.ports[f"{MONGO_PORT}/tcp"] = (self.engine.address, p.port)  # type: ignore[assignment]
        container = engines.start_container(tc, f"node {p.name}", self.engine.url)
        return ContainerMongoNode(self.run, p, container, self.engine,
                                  replset_name(self.run.id), p.config)

    def _router_image(self) -> list[str]:
        """The router's image when it runs one of the file's (ProxySQL)."""
        from runners.containers.proxysql import DEFAULT_IMAGE

        r = self.plan.router
        if r is None or r.kind != "proxysql":
            return []
        if r.image is None and components.which("proxysql") is not None:
            return []  # made here from this machine's binary (``_start_proxysql``)
        return [r.image or DEFAULT_IMAGE]

    def _writable(self, name: str) -> bool:
        """A writer candidate that takes writes now (ProxySQL's first placement)."""
        read_only, synced = replication.role_state(self.nodes[name].addr, self.admin)
        return not read_only and (self.plan.topology != "galera" or synced)

    def _labels(self) -> dict[str, str]:
        return engines.run_labels(self.run.id, self.run.dir)

    def _make_network(self) -> None:
        engines.testcontainers_env()
        from testcontainers.core.network import Network

        assert self.engine is not None
        net = Network(docker_client_kw=self.engine.client_kw,
                      docker_network_kw={"driver": "bridge", "labels": self._labels()})
        net.name = network_name(self.run.id)
        self.network = net.create()

    def _galera(self, ordered: list[PlannedNode]) -> None:
        """The first node bootstraps a cluster (``--wsrep-new-cluster`` for that one start),
        the others join it (rsync state transfer from the first), all synced."""
        t0 = time.monotonic()
        group = [p.name for p in ordered]
        first = self._make_node(ordered[0], group, bootstrap=True)
        self.nodes[first.name] = first
        try:
            wait_until(partial(replication.synced, first), 60, "bootstrapped (synced)",
                       first.component, None, alive=first.is_running)
        except ComponentError as e:
            raise ComponentError(first.component, e.message, first.save_log()) from None
        first._write_start_options({})  # a later start joins the cluster: no bootstrap
        self.timings["galera_bootstrap"] = time.monotonic() - t0
        for p in ordered[1:]:
            self.nodes[p.name] = self._make_node(p, group)
        for node in self.nodes.values():
            assert isinstance(node, ContainerNode)
            for attempt in (1, 2):
                try:
                    wait_until(partial(replication.synced, node), 90, "synced with the cluster",
                               node.component, None, alive=node.is_running)
                    break
                except ComponentError as e:
                    if attempt == 2 or node.is_running():
                        raise ComponentError(node.component, e.message,
                                             node.save_log()) from None
                    # a joiner that gave up on its state transfer (seen once in a few dozen
                    # deploys here): its container is started once more
                    log.warning("%s exited while joining; starting it again", node.name)
                    node.save_log()
                    node.container.start()

    def _make_node(self, p: PlannedNode, group: list[str] | None = None,
                   bootstrap: bool = False) -> ContainerNode:
        engines.testcontainers_env()
        from runners.containers.transfer import new_container

        assert self.engine is not None
        env: dict[str, str] = {}
        if p.name in self.plan.faketime_nodes:
            env["LAB_FAKETIME_FILE"] = FAKETIME_FILE
        mounts = self._disk_mounts(p.name)
        if p.name in self.plan.iofs_nodes:  # io delay, io fail: lab-iofs, bind-mounted
            if "data" in mounts:
                raise ComponentError(f"node {p.name}", "disk full and io faults on one node's "
                                     "data directory: lab-iofs cannot share it with the tmpfs")
            self.iofs[p.name] = ctr_iofs.mount(self.run, p.name,
                                               p.name in unsynced_nodes(self.plan.actions()))
            mounts["data"] = self.iofs[p.name].mountpoint
        if "data" in mounts:
            env["LAB_DATADIR"] = MOUNTS["data"]
        if "binlog" in mounts:
            env["LAB_BINLOG_DIR"] = MOUNTS["binlog"]
        image = self.image
        extra: dict[str, Any] = {}
        if p.image is not None:  # the experiment's image: the lab's entrypoint copied in
            image = self.user_images[p.image]
            extra["entrypoint"] = [USER_ENTRYPOINT]
        tc = new_container(
            image, docker_client_kw=self.engine.client_kw,
            env=env,
            name=container_name(self.run.id, p.name), network=self.network,
            network_aliases=[p.name],
            # init: a stop is the server's shutdown, not a 10 s wait for a PID 1 that ignores
            # SIGTERM; NET_ADMIN: iptables inside the node (partitions between named nodes)
            init=True, hostname=p.name, labels=self._labels(), cap_add=["NET_ADMIN"], **extra,
            **engines.limits(),
        )
        if p.image is not None:
            tc.with_copy_into_container(images.ENTRYPOINT.read_bytes(), USER_ENTRYPOINT,
                                        mode=0o755)
        # the lab's users (runners.users, as natively but at '%'): the server's init file,
        # given after the entrypoint's own (the last --init-file is the one read)
        tc.with_copy_into_container(init_file(self.admin, self.app, self.repl).encode(),
                                    USERS_FILE, mode=0o644)
        tc.with_command([str(p.server_id), *server_args(
            p, group, {k: MOUNTS[k] for k in mounts}), f"--init-file={USERS_FILE}"])
        for kind, host_dir in mounts.items():
            tc.with_volume_mapping(str(host_dir), MOUNTS[kind], "rw")
        if bootstrap:  # the options of the first start only (the entrypoint reads them)
            tc.with_copy_into_container(b"--wsrep-new-cluster\n", START_OPTIONS)
        # published on the loopback only (testcontainers' with_bind_ports takes no address)
        tc.ports[f"{SERVER_PORT}/tcp"] = (self.engine.address, p.port)  # type: ignore[assignment]
        container = engines.start_container(tc, f"node {p.name}", self.engine.url)
        node = ContainerNode(self.run, p, self.admin, container, self.engine)
        node.host_datadir = mounts.get("data")
        node.host_binlog_dir = mounts.get("binlog")
        return node

    def _disk_mounts(self, name: str) -> dict[str, Path]:
        """``disk full NODE`` / ``disk full NODE binlog``: a tmpfs on this machine for the
        node's data directory / binary logs (``<run dir>/<node>/data``, ``.../binlog``, where
        ``fault.disk`` fills them), bind-mounted into its container. The data directory's is
        made large while the entrypoint copies the image's data directory in, and shrunk to
        what it holds plus ``runners.disk.HEADROOM`` once the node answers
        (``_shrink_disks``), as natively."""
        acts = self.plan.actions()
        kinds = [k for k, nodes in (("data", disk.disk_nodes(acts)),
                                    ("binlog", disk.binlog_nodes(acts))) if name in nodes]
        out: dict[str, Path] = {}
        for kind in kinds:
            path = self.run.dir / name / kind
            path.mkdir(parents=True, exist_ok=True)
            size = SEED_SIZE if kind == "data" else disk.tmpfs_size(0)
            try:
                disk._run(disk.mount_argv(path, size))
            except OSError as e:
                raise ComponentError(f"node {name}", f"disk full needs a tmpfs: {e}") from None
            out[kind] = path
        return out

    def _shrink_disks(self) -> None:
        for node in self.nodes.values():
            assert isinstance(node, ContainerNode)
            if node.host_datadir is None or node.name in self.iofs:
                continue
            size = disk.tmpfs_size(disk.dir_bytes(node.host_datadir))
            try:
                disk._run(["mount", "-o", f"remount,size={size}", str(node.host_datadir)])
            except OSError as e:
                raise ComponentError(node.component, f"shrinking its tmpfs: {e}") from None
            self.tmpfs[node.name] = size

    def _start_links(self) -> None:
        """toxiproxy in its own container (``runners.containers.toxiproxy``), with every
        node's client link; the replication links are made as replication is wired."""
        from runners.containers.toxiproxy import ContainerToxiproxy

        assert self.engine is not None
        ports = self.run.ports
        from runners.containers.mongo import MONGO_PORT

        toxi = ContainerToxiproxy(
            self.run, ports.toxiproxy_api, eng=self.engine, image=self.image,
            network=self.network, upstreams={p.port: p.name for p in self.cell.nodes},
            published=[ports.client_proxy(p.index) for p in self.cell.nodes],
            server_port=MONGO_PORT if self.plan.topology == "mongodb_replset" else SERVER_PORT)
        self.toxi = toxi
        toxi.start()
        for p in self.cell.nodes:
            toxi.add_link(p.name, "clients", ports.client_proxy(p.index), p.port)

    def _replication_source(self, replica: str, source: str) -> tuple[str, int]:
        """Where ``replica`` replicates ``source`` from: through its replication link when the
        run has links, else by name."""
        if self.toxi is None:
            return source, SERVER_PORT
        link = self.toxi.add_link(replica, "replication",
                                  self.run.ports.replication_proxy(self.planned[replica].index),
                                  self.planned[source].port)
        return self.toxi.link_host, link.listen

    def _wire_replication(self) -> None:
        assert self.primary is not None
        primary = self.nodes[self.primary]
        for name, node in self.nodes.items():
            if name == self.primary:
                continue
            replication.wire_replica(
                node, primary, self._replication_source(name, self.primary), self.repl,
                mode=self.plan.replication_mode or "gtid", delay=self.planned[name].delay,
                flavor=self.plan.engine.flavor)
        self.wait_replication_running()

    def _wire_pair(self) -> None:
        """Two primaries: each replicates from the other (GTID, one domain per node: the
        plan's settings), both writable."""
        names = [p.name for p in sorted(self.cell.nodes, key=lambda n: n.index)]
        for name in names:
            other = names[1] if name == names[0] else names[0]
            replication.wire_replica(
                self.nodes[name], self.nodes[other], self._replication_source(name, other),
                self.repl, flavor=self.plan.engine.flavor, read_only=False)
        self.wait_replication_running()

    def wait_replication_running(self, timeout: float = 30.0) -> None:
        for name, node in self.nodes.items():
            if name == self.primary:
                continue
            assert isinstance(node, ContainerNode)
            try:
                wait_until(partial(replication.replicating, node), timeout, "replicating",
                           node.component, None)
            except ComponentError as e:
                raise ComponentError(node.component, e.message, node.save_log()) from None

    # --- endpoints -------------------------------------------------------------------------------
    def address(self, endpoint: str) -> Address:
        """Where a client connects: a node's published port (its client link's when the run
        has links), ``router.writer`` or ``router.reader``."""
        host = self.engine.address if self.engine is not None else "127.0.0.1"
        if endpoint == "router.writer":
            return Address(host, self.run.ports.router_writer)
        if endpoint == "router.reader":
            return Address(host, self.run.ports.router_reader)
        if self.toxi is not None:
            return Address(host, self.run.ports.client_proxy(self.planned[endpoint].index))
        return self.nodes[endpoint].addr

    def describe_nodes(self) -> list[dict[str, Any]]:
        out = []
        for n in self.nodes.values():
            assert isinstance(n, ContainerNode)
            out.append({"name": n.name, "role": n.role, "port": n.port,
                        "container": n.container.name, "error_log": str(n.error_log)})
        return out

    # --- teardown -------------------------------------------------------------------------------
    def teardown(self) -> float:
        """Remove the run's containers and network, stop its podman service, and put the
        host's forwarding and iptables back when no other container run is alive."""
        t0 = time.monotonic()
        for node in self.nodes.values():
            assert isinstance(node, ContainerNode)
            node.save_log()
        if self.router is not None:
            with contextlib.suppress(Exception):
                self.router.stop()
        if self.toxi is not None:
            with contextlib.suppress(Exception):
                self.toxi.stop()
        eng = self.engine
        if eng is not None:
            before = self._container_ids(eng) if eng.local else None  # its conmons are here
            with contextlib.suppress(Exception):
                engines.remove_labelled(eng.client, lambda rid, _dir: rid == self.run.id)
            after = self._container_ids(eng) if before else None
            if before and after is not None:  # an exec cut short (Ctrl-C) leaves its conmon:
                gone = before - after  # ended with the containers that were removed
                conmon.end([m for m in conmon.monitors() if m.container in gone])
            service = eng.service
            eng.close()
            if service is not None:
                self.run.forget(service)
            if eng.host_net:  # the lab's service, or an engine the user runs on this machine
                engines.HostNetState.release(self.run.dir)
        for fs in self.iofs.values():  # lab-iofs: unmounted once no container holds it
            iofs.unmount(fs)
        return time.monotonic() - t0
