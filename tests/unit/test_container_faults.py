"""The fault families on ``backend containers`` without an engine: when a run gets toxiproxy
links, how a network fault is split between the links and the cuts between nodes, where
toxiproxy's container listens and leads, the resource update through Docker's or podman's
API, the OOM watcher on a container, the servers' arguments with the lab's tmpfs, and what
`lab check` and `lab plan` say."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import pytest

from dsl.api import check_text, plan_text
from dsl.backends import needs_local_engine, uses_links
from dsl.models import (
    DiskFault,
    DropCaches,
    IoFault,
    NetworkFault,
    NodeAction,
    NodeGroupAction,
    NodeRef,
)
from fault.context import Context
from fault.network import NetworkState, heal, network
from fault.resources import OomWatcher
from lab.cli.lang import links_rows
from runners import netcut
from runners.containers import resources
from runners.containers.node import server_args
from runners.containers.resources import ContainerLimit
from runners.containers.router import ContainerHAProxy
from runners.containers.topology import ContainerTopology
from runners.containers.toxiproxy import ContainerToxiproxy
from runners.errors import ComponentError
from runners.toxiproxy import Link

DB1 = NodeRef(name="db1")
DB2 = NodeRef(name="db2")


def test_a_run_gets_links_natively_with_any_network_fault_on_containers_only_for_shaping() -> None:
    cut = NetworkFault(verb="partition", node=DB2, link="replication")
    slow = NetworkFault(verb="latency", node=DB2, latency=0.1)
    thin = NetworkFault(verb="bandwidth", node=DB2, bandwidth=1024.0)
    clients = NetworkFault(verb="link_down", node=DB2, link="clients")
    heal_clients = NetworkFault(verb="heal", node=DB2, link="clients")
    assert uses_links([cut], "native") and not uses_links([], "native")
    assert not uses_links([cut, heal_clients], "containers")
    for a in (slow, thin, clients):
        assert uses_links([cut, a], "containers")


def test_only_the_page_cache_a_tmpfs_and_lab_iofs_need_the_engine_on_this_machine() -> None:
    assert needs_local_engine(DropCaches())
    assert needs_local_engine(DropCaches(node=DB1))
    assert needs_local_engine(NodeAction(verb="cold_restart", node=DB1))
    assert needs_local_engine(DiskFault(verb="full", node=DB1))
    assert needs_local_engine(IoFault(verb="delay", node=DB1, delay=0.05))
    assert needs_local_engine(NodeAction(verb="kill", node=DB1, lose_unsynced=True))
    assert needs_local_engine(NodeGroupAction(verb="kill", nodes=[DB1], lose_unsynced=True))
    assert not needs_local_engine(NodeAction(verb="kill", node=DB1))
    assert not needs_local_engine(NetworkFault(verb="latency", node=DB1, latency=0.1))


INCIDENTS = """
experiment "x" {
  backend containers
  topology primary_primary { nodes p1, p2  config { log_bin = mysql-bin } }
  at 1s network latency p2 50ms on replication
  at 2s cpu limit p1 to 20%
  at 3s memory limit p1 to 300M
  at 4s clock skew p2 by +30s
  at 5s disk full p1
  at 6s disk full p2 binlog
  at 7s drop caches
  at 8s drop caches on p2
  at 9s cold restart p2
}
"""


def test_every_fault_family_runs_on_containers() -> None:
    assert [e.message for e in check_text(INCIDENTS)] == []


def test_a_group_recovery_runs_on_containers_and_is_refused_where_undeclared(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A Galera cluster's whole-cluster recovery and lab-iofs faults run on containers; on a
    back-end that does not declare the recovery, lab check refuses it where the action
    stands (it failed at run time before there was a check)."""
    text = """experiment "n" {
  backend containers
  duration 20s
  topology galera { nodes g1, g2, g3 }
  at 2s io delay g1 50ms on fsyncs
  at 4s io heal g1
  at 6s kill g1, g2, g3 within 1s
  at 9s start g1, g2, g3
}
"""
    assert check_text(text) == []
    from runners import capabilities as caps
    from runners.containers.topology import ContainerTopology

    monkeypatch.setattr(ContainerTopology, "capabilities",
                        ContainerTopology.capabilities - {caps.GroupRecovery})
    got = [(e.span.line, e.message.split(" runs natively")[0]) for e in check_text(text)]
    assert got == [
        (7, "kill of several Galera nodes at once (the whole-cluster recovery: --wsrep-recover,"
            " bootstrap, joins)"),
        (8, "start of several Galera nodes at once (the whole-cluster recovery: "
            "--wsrep-recover, bootstrap, joins)")]


def test_lab_plan_shows_toxiproxys_container_and_its_links_by_name() -> None:
    plan = plan_text(INCIDENTS)
    rows = {r[0]: r for r in links_rows(plan)}
    base = plan.base_port
    assert rows["p2.replication"][1:3] == (f"toxiproxy:{base + 32}", "p1:3306")
    assert rows["p1.clients"][1:3] == (f"{base + 21}", "p1:3306")
    assert "container" in rows["toxiproxy API"][3]
    assert "cut inside its container (iptables)" in rows["partitions"][3]
    native = {r[0]: r for r in links_rows(plan_text(INCIDENTS.replace(
        "backend containers", "backend native")))}
    assert native["p2.replication"][1:3] == (f"{base + 32}", f"p1 ({plan.cells[0].nodes[0].port})")


@dataclass
class FakeToxi:
    links: dict[str, Link] = field(default_factory=lambda: {
        "db1.clients": Link("db1.clients", "db1", "clients", 21, 1),
        "db2.clients": Link("db2.clients", "db2", "clients", 22, 2),
        "db2.replication": Link("db2.replication", "db2", "replication", 32, 1)})
    calls: list[tuple[str, str]] = field(default_factory=list)

    def links_of(self, node: str | None, kind: str = "all") -> list[str]:
        return [n for n in self.links if (node is None or n.startswith(f"{node}."))
                and (kind == "all" or n.endswith(f".{kind}"))]

    def add_toxic(self, link: str, name: str, kind: str, attributes: dict[str, Any],
                  stream: str = "downstream") -> None:
        self.calls.append((kind, link))

    def set_enabled(self, link: str, enabled: bool) -> None:
        self.calls.append(("enabled" if enabled else "disabled", link))

    def heal(self, link: str) -> None:
        self.calls.append(("heal", link))


@dataclass
class FakeTopo:
    """A topology that cuts between nodes (netcut.PeerCuts) and has toxiproxy links."""

    capabilities: ClassVar[frozenset[type]] = ContainerTopology.capabilities
    toxi: Any = field(default_factory=FakeToxi)
    nodes: dict[str, Any] = field(default_factory=dict)
    made: list[netcut.Cut] = field(default_factory=list)
    mended: list[netcut.Cut] = field(default_factory=list)

    def __post_init__(self) -> None:
        @dataclass
        class N:
            port: int

        self.nodes = {"db1": N(1), "db2": N(2)}

    def link_peers(self, node: str, link: str) -> list[str]:
        return [n for n in self.nodes if n != node]

    def cut(self, node: str, link: str, peers: list[str], refuse: bool) -> netcut.Cut:
        c = netcut.Cut(node, link, tuple(peers), refuse, ())
        self.made.append(c)
        return c

    def mend(self, cut: netcut.Cut) -> None:
        self.mended.append(cut)


def test_latency_and_cuts_of_links_go_on_toxiproxy_other_cuts_between_nodes() -> None:
    topo = FakeTopo()
    assert isinstance(topo, netcut.PeerCuts)
    ctx = Context(topo, lambda op: op)  # type: ignore[arg-type]
    network(ctx, NetworkFault(verb="latency", node=DB2, latency=0.1, link="replication"))
    assert topo.toxi.calls == [("latency", "db2.replication")] and topo.made == []
    network(ctx, NetworkFault(verb="partition", node=DB2, link="clients"))
    assert topo.toxi.calls[-2:] == [("timeout", "db2.clients")] * 2 and topo.made == []
    # all: the node's links, and a cut from every peer (its other traffic)
    topo.toxi.calls.clear()
    network(ctx, NetworkFault(verb="partition", node=DB1, link="all"))
    assert {link for _, link in topo.toxi.calls} == {"db1.clients", "db2.replication"}
    assert [(c.node, c.peers) for c in topo.made] == [("db1", ("db2",))]
    network(ctx, NetworkFault(verb="heal"))
    assert {link for verb, link in topo.toxi.calls if verb == "heal"} == set(topo.toxi.links)
    assert [c.node for c in topo.mended] == ["db1"]
    assert heal(ctx) == [] and ctx.state(NetworkState).cuts == []


def test_toxiproxys_container_listens_everywhere_and_leads_to_nodes_by_name() -> None:
    from runners.runtime import Run

    run = Run(experiment="x")
    run.close()
    t = ContainerToxiproxy(run, 8474, eng=None, image="img", network=None,  # type: ignore[arg-type]
                           upstreams={23001: "db1"}, published=[23021])
    assert t.listen_address(23032) == "0.0.0.0:23032"
    assert t.upstream_address(23001) == "db1:3306"
    assert t.link_host == "toxiproxy"
    with pytest.raises(ComponentError):
        t.upstream_address(23002)


def test_the_router_reaches_nodes_through_their_client_links_when_there_are_links() -> None:
    from runners.runtime import Run

    run = Run(experiment="x")
    try:
        r = ContainerHAProxy(run, ["db1", "db2"], ["db1", "db2"], [], 0.5, (1, 2, 3),
                             eng=None, image="i", network=None, admin=None,  # type: ignore[arg-type]
                             galera=False, via={"db1": ("toxiproxy", 23021)})
        text = r.config_text()
    finally:
        run.close()
    assert "server db1 toxiproxy:23021 check" in text and "server db2 db2:3306 check" in text


class APIError(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.response = type("R", (), {"status_code": status})()


def test_a_limit_goes_through_dockers_update_else_podmans(monkeypatch: pytest.MonkeyPatch) -> None:
    import docker

    monkeypatch.setattr(docker.errors, "APIError", APIError)
    posted: list[tuple[str, Any]] = []

    class Api:
        base_url = "http://engine"

        def _post_json(self, url: str, data: Any) -> str:
            posted.append((url, data))
            return "resp"

        def _raise_for_status(self, resp: str) -> None:
            pass

    class Client:
        api = Api()

    class Container:
        id, name = "c1", "lab-x-db1"

        def __init__(self, status: int | None) -> None:
            self.status = status
            self.kw: dict[str, Any] = {}

        def update(self, **kw: Any) -> None:
            self.kw = kw
            if self.status is not None:
                raise APIError(self.status)

    docker_engine = Container(None)
    assert resources.update(Client(), docker_engine, cpu=(20000, 100000)) == "docker"
    assert docker_engine.kw == {"cpu_quota": 20000, "cpu_period": 100000}
    assert resources.update(Client(), Container(404), memory=300) == "podman"
    assert posted == [("http://engine/v4.0.0/libpod/containers/c1/update",
                       {"memory": {"limit": 300, "swap": 300}})]
    with pytest.raises(ComponentError):
        resources.update(Client(), Container(500), memory=300)


def test_an_oom_kill_on_a_container_is_recorded_once() -> None:
    """The container's group counts the kernel's kill; a moment later the container is seen
    dead (its init exits after the server): one ``oom_kill`` op, and the node is down."""

    class Node:
        running = True
        container = type("C", (), {"name": "lab-x-db1"})()

        def pid(self) -> None:
            return None

        def is_running(self) -> bool:
            return self.running

        def inspect(self) -> dict[str, Any]:
            return {"State": {"OOMKilled": True}}

    node = Node()
    limit = ContainerLimit(None, node, "memory", local=False)
    ops: list[Any] = []
    ctx = Context(None, ops.append)  # type: ignore[arg-type]
    kills = iter([0, 0, 1])  # the watcher reads the count when it starts
    limit.oom_kills = lambda: next(kills)  # type: ignore[method-assign]
    watcher = OomWatcher(ctx, "db1", limit, None, limit.alive)
    assert watcher.poll() is False and ops == []  # no kill yet
    node.running = False
    assert watcher.poll() is True  # the kill and the death, seen together
    assert [(o.type, o.f) for o in ops] == [("invoke", "oom_kill"), ("ok", "oom_kill")]
    assert ctx.down == {"db1"}


def test_a_container_oom_count_never_goes_down_when_its_group_is_gone() -> None:
    class Node:
        container = type("C", (), {"name": "n"})()
        state = {"OOMKilled": True}

        def pid(self) -> None:
            return None

        def inspect(self) -> dict[str, Any]:
            return {"State": self.state}

    node = Node()
    limit = ContainerLimit(None, node, "memory", local=False)
    assert limit.oom_kills() == 1
    node.state = {}
    assert limit.oom_kills() == 1


def test_a_disk_node_keeps_its_data_and_binary_logs_on_the_labs_mounts() -> None:
    plan = plan_text(INCIDENTS)
    p1, p2 = plan.cells[0].nodes
    opts = dict(a[2:].split("=", 1) for a in server_args(p1, None, {"data": "/lab/data"}))
    assert opts["datadir"] == "/lab/data"
    opts = dict(a[2:].split("=", 1) for a in server_args(p2, None, {"binlog": "/lab/binlog"}))
    assert opts["datadir"] == "/var/lib/mysql"
    assert opts["log_bin"] == "/lab/binlog/mysql-bin"
    assert opts["log_bin_index"] == "/lab/binlog/mysql-bin.index"
    bare = p2.model_copy(update={"config": {k: v for k, v in p2.config.items()
                                            if k != "log_bin"}})
    with pytest.raises(ComponentError, match="writes no binary logs"):
        server_args(bare, None, {"binlog": "/lab/binlog"})


def test_a_clock_is_skewed_only_on_a_node_started_under_libfaketime() -> None:
    plan = plan_text(INCIDENTS)
    assert plan.faketime_nodes == ["p2"]
    topo = ContainerTopology(None, plan, plan.cells[0], None, None, None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="does not run under libfaketime"):
        topo.write_clock_offset("p1", 30.0)


IMAGES = """
experiment "x" {
  backend containers
  topology replication {
    primary db1
    replicas db2, db3
    image "registry.example.com/team/mariadb:11.4"
    image db2 "mariadb@sha256:%s"
  }
  router proxysql { writer db1  image "proxysql/proxysql:2.7.1" }
}
""" % ("a" * 64)


def test_an_image_for_every_node_one_for_a_node_and_the_routers() -> None:
    plan = plan_text(IMAGES)
    assert [(n.name, n.image) for n in plan.cells[0].nodes] == [
        ("db1", "registry.example.com/team/mariadb:11.4"), ("db2", f"mariadb@sha256:{'a' * 64}"),
        ("db3", "registry.example.com/team/mariadb:11.4")]
    assert plan.router is not None and plan.router.image == "proxysql/proxysql:2.7.1"
    assert [n.image for n in plan_text(INCIDENTS).cells[0].nodes] == [None, None]


@pytest.mark.parametrize("change,wanted", [
    (("backend containers", ""), "`image` needs `backend containers`"),
    (('image "registry', 'image db9 "registry'), "unknown node 'db9'"),
    (("mariadb@sha256", "maria db; rm -rf /"), "is not an image reference"),
    (('image db2 "', 'image "'), "every node has an image already"),
    (('router proxysql { writer db1  image "',
      'router haproxy { writer db1  image "'), "router haproxy runs in the lab's node image"),
    (('writer db1  image "', 'writer db1  image db1 "'), "a router's image names no node"),
])
def test_an_image_that_cannot_be_used_is_an_error(change: tuple[str, str], wanted: str) -> None:
    errors = check_text(IMAGES.replace(*change))
    assert any(wanted in e.message for e in errors), [e.message for e in errors]


def test_proxysql_in_its_container_reaches_the_nodes_by_name() -> None:
    from runners.containers.proxysql import ContainerProxySQL
    from runners.haproxy import Backend
    from runners.mysql import Credentials
    from runners.runtime import Run

    class Eng:
        address = "127.0.0.1"

    run = Run(experiment="x")
    try:
        p = ContainerProxySQL(run, [Backend(n, 3306, 0, 0) for n in ("g1", "g2")], ["g1"],
                              ["g2"], 0.5, 25090, 25091, Credentials("app", "pw"),
                              Credentials("mon", "pw"), "galera", eng=Eng(),  # type: ignore[arg-type]
                              image="proxysql/proxysql", network=None,
                              via={"g2": ("toxiproxy", 25022)})
        text = p.config_text()
        servers = p.servers()
    finally:
        run.close()
    assert 'mysql_ifaces="0.0.0.0:' in text and 'datadir="/var/lib/proxysql"' in text
    assert [(s.name, s.host, s.port) for s in servers] == [("g1", "g1", 3306),
                                                           ("g2", "toxiproxy", 25022)]
    assert p.names == {("g1", 3306): "g1", ("toxiproxy", 25022): "g2"}


def test_toxiproxy_and_router_cannot_name_a_node() -> None:
    text = 'experiment "x" { topology galera { nodes g1, toxiproxy, g3 } }'
    assert any("'toxiproxy' cannot name a node" in e.message for e in check_text(text))


def test_the_monitor_user_on_a_container_network_is_anyones_address() -> None:
    from runners.mysql import Credentials
    from runners.proxysql import monitor_user_setup

    stmts = monitor_user_setup(Credentials("mon", "pw"), "mariadb", ("%",))
    assert stmts[0] == "SET sql_log_bin=0"
    assert "CREATE USER IF NOT EXISTS 'mon'@'%' IDENTIFIED BY 'pw'" in stmts
    assert not any("127.0.0.1" in s for s in stmts)
    with pytest.raises(ValueError):
        monitor_user_setup(Credentials("mon", "pw"), "mariadb", ("10.0.0.1' OR '1",))


def test_a_binlog_disk_on_a_container_is_the_labs_mount_not_one_beside_the_merged_dir(
        tmp_path: Any) -> None:
    from runners.containers.node import ContainerNode

    node = ContainerNode.__new__(ContainerNode)
    node.datadir = tmp_path / "merged" / "var/lib/mysql"
    node.host_datadir, node.host_binlog_dir = None, tmp_path / "run" / "db1" / "binlog"
    assert node.tmpfs_dir("binlog") == tmp_path / "run" / "db1" / "binlog"
    assert node.tmpfs_dir("datadir") == node.datadir


def test_lifting_a_memory_limit_on_docker_is_a_limit_of_the_whole_engine(
        monkeypatch: pytest.MonkeyPatch) -> None:
    class Client:
        def info(self) -> dict[str, Any]:
            return {"MemTotal": 24 * 1024**3}

    class Container:
        kw: dict[str, Any] = {}

        def update(self, **kw: Any) -> None:
            Container.kw = kw

    assert resources.update(Client(), Container(), memory=resources.UNLIMITED) == "docker"
    assert Container.kw == {"mem_limit": 24 * 1024**3, "memswap_limit": -1}


def test_a_mongodb_member_in_a_container_takes_the_images_volume_and_the_allow_list() -> None:
    from runners.containers import mongo

    assert mongo.default_image("psmdb", "7.0") == "percona/percona-server-mongodb:7.0"
    assert mongo.default_image("mongodb", None) == "mongo"
    args = mongo.mongod_args("rs_x", {"replication.oplogSizeMB": "64"})
    assert args == ["--port", "27017", "--bind_ip_all", "--dbpath", "/data/db",
                    "--replSet", "rs_x", "--oplogSize", "64"]
    assert "--replSet" not in mongo.mongod_args(None, {})  # standalone
    with pytest.raises(ValueError):
        mongo.mongod_args("rs_x", {"net.bindIp": "0.0.0.0; rm -rf /"})
    assert "read -r arg" in mongo.START_SCRIPT_TEXT and "eval" not in mongo.START_SCRIPT_TEXT


def test_replica_set_members_on_containers_are_initiated_by_name() -> None:
    from runners.mongo import initiate_document

    doc = initiate_document("rs_x", [23001, 23002], ["m1:27017", "m2:27017"])
    assert [m["host"] for m in doc["members"]] == ["m1:27017", "m2:27017"]
    assert doc["members"][0]["priority"] == 2
    assert [m["host"] for m in initiate_document("rs_x", [23001])["members"]] == \
        ["127.0.0.1:23001"]


def test_mongodb_runs_on_containers_and_lab_plan_names_its_image() -> None:
    from lab.cli.lang import backend_text

    text = """
experiment "m" {
  backend containers
  topology mongodb_replset { engine psmdb 7.0  members m1, m2, m3 }
  at 2s kill m1
  at 4s convert m2 to standalone
}
"""
    assert check_text(text) == []
    assert "m1, m2, m3: percona/percona-server-mongodb:7.0" in backend_text(plan_text(text))


def test_lab_check_notes_what_a_remote_engine_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    from lab.cli.lang import engine_notes

    text = """
experiment "x" {
  backend containers
  topology single { node db1 }
  at 1s drop caches on db1
  at 2s kill db1
  at 3s start db1
}
"""
    plan = plan_text(text)
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    monkeypatch.setenv("LAB_DOCKER_HOST", "tcp://10.1.2.3:2375")
    notes = engine_notes(plan, "x.exp")
    assert len(notes) == 1 and notes[0].severity == "note"
    assert "`drop caches on db1` acts on the engine's machine" in notes[0].message
    monkeypatch.setenv("LAB_DOCKER_HOST", "unix:///run/podman.sock")
    assert engine_notes(plan, "x.exp") == []
    monkeypatch.setenv("LAB_ENGINE_REMOTE", "1")  # a tunnel to another machine's engine
    assert len(engine_notes(plan, "x.exp")) == 1


class _Freezer:
    """A container whose engine fails the first ``fails`` pauses as runc does on a busy
    machine (its state: thawed again, still running), unless ``froze`` says the freeze took."""

    def __init__(self, fails: int, froze: bool = False) -> None:
        self.fails, self.froze, self.calls, self.id = fails, froze, 0, "c1"
        self.state = {"Running": True, "Paused": False}

    def pause(self) -> None:
        from docker.errors import APIError

        self.calls += 1
        if self.calls <= self.fails:
            self.state["Paused"] = self.froze
            raise APIError("500 Server Error", explanation="`/usr/bin/runc pause c1` failed: "
                                                          "exit status 1")
        self.state["Paused"] = True


def _node(box: _Freezer) -> Any:
    from runners.containers.node import ContainerNode

    node: Any = ContainerNode.__new__(ContainerNode)
    node.container, node.paused, node.name = box, False, "db1"
    node.inspect = lambda: {"State": box.state}
    node.save_log = lambda: None
    return node


@pytest.mark.parametrize("fails, froze, calls", [(0, False, 1), (1, False, 2), (1, True, 1)],
                         ids=["first-time", "once-more", "froze-all-the-same"])
def test_a_pause_the_engine_fails_once_is_made_again_and_said(fails: int, froze: bool,
                                                              calls: int) -> None:
    box = _Freezer(fails, froze)
    node = _node(box)
    node.pause()
    assert node.paused and box.calls == calls and box.state["Paused"]
    assert len(node.pause_retries) == fails
    if fails:
        assert "runc pause c1" in node.pause_retries[0]


def test_a_pause_the_engine_fails_twice_is_the_error() -> None:
    from docker.errors import APIError

    node = _node(_Freezer(2))
    with pytest.raises(APIError):
        node.pause()
    assert not node.paused
