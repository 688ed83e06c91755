"""Cuts between named nodes (runners.netcut) and what rides on them without an engine: the
iptables rules, the network faults' dispatch to a topology that can cut (fault.network), the
Galera servers' arguments in containers, and HAProxy's configuration in its container."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, ClassVar

from dsl.api import plan_text
from dsl.models import NetworkFault, NodeRef
from fault.context import ActionFailed, Context
from fault.nemesis import leave_in_place
from fault.network import NetworkState, heal, network
from runners import netcut
from runners.containers.node import provider_options, server_args
from runners.containers.router import ContainerHAProxy, agent_command, backends
from runners.containers.topology import ContainerTopology


def test_a_partition_drops_both_directions_per_peer() -> None:
    rules = netcut.rules(["10.0.0.2", "10.0.0.3"], refuse=False)
    assert [(r[0], r[1], r[2], r[-1]) for r in rules] == [
        ("INPUT", "-s", "10.0.0.2", "DROP"), ("OUTPUT", "-d", "10.0.0.2", "DROP"),
        ("INPUT", "-s", "10.0.0.3", "DROP"), ("OUTPUT", "-d", "10.0.0.3", "DROP")]
    assert all(netcut.COMMENT in r for r in rules)


def test_a_link_down_resets_tcp_before_dropping_the_rest() -> None:
    rules = netcut.rules(["10.0.0.2"], refuse=True)
    inp = [r for r in rules if r[0] == "INPUT"]
    assert inp[0][-3:] == ("REJECT", "--reject-with", "tcp-reset") and "tcp" in inp[0]
    assert inp[1][-1] == "DROP"
    # -I puts each rule first: inserted in reverse, the chain reads reset, then drop
    chain: list[netcut.Rule] = []
    for r in netcut.insert_order([r for r in rules if r[0] == "INPUT"]):
        chain.insert(0, r)
    assert chain == inp


@dataclass
class FakeCuts:
    """A topology that can cut (netcut.PeerCuts), recording what it was asked."""

    capabilities: ClassVar[frozenset[type]] = ContainerTopology.capabilities
    nodes: dict[str, Any] = field(default_factory=lambda: {"g1": 0, "g2": 0, "g3": 0})
    toxi: Any = None
    made: list[netcut.Cut] = field(default_factory=list)
    mended: list[netcut.Cut] = field(default_factory=list)

    def link_peers(self, node: str, link: str) -> list[str]:
        if link == "clients":
            raise ValueError("no router")
        return [n for n in self.nodes if n != node]

    def cut(self, node: str, link: str, peers: list[str], refuse: bool) -> netcut.Cut:
        c = netcut.Cut(node, link, tuple(peers), refuse,
                       tuple(netcut.rules([f"ip-{p}" for p in peers], refuse)))
        self.made.append(c)
        return c

    def mend(self, cut: netcut.Cut) -> None:
        self.mended.append(cut)


def _ctx(topo: FakeCuts) -> Context:
    return Context(topo, lambda op: op)  # type: ignore[arg-type]


def test_network_faults_cut_and_mend_on_a_topology_that_can_cut() -> None:
    topo = FakeCuts()
    assert isinstance(topo, netcut.PeerCuts)
    ctx = _ctx(topo)
    detail = network(ctx, NetworkFault(verb="partition", node=NodeRef(name="g3"), link="group"))
    assert detail is not None and detail["from"] == ["g1", "g2"] and detail["rules"] == 4
    network(ctx, NetworkFault(verb="link_down", node=NodeRef(name="g1")))
    assert [c.refuse for c in topo.made] == [False, True]
    # heal g3: its cut only
    network(ctx, NetworkFault(verb="heal", node=NodeRef(name="g3")))
    assert [c.node for c in topo.mended] == ["g3"]
    assert [c.node for c in ctx.state(NetworkState).cuts] == ["g1"]
    # the heal at the end of the run mends what is left
    assert heal(ctx) == ["mend the cut of g1 from g2, g3"]
    assert [c.node for c in topo.mended] == ["g3", "g1"]


def test_a_cut_for_good_outlives_the_final_heal_but_not_an_explicit_one() -> None:
    topo = FakeCuts()
    ctx = _ctx(topo)
    a = NetworkFault(verb="partition", node=NodeRef(name="g2"), link="group", left=True)
    detail = network(ctx, a)
    assert detail is not None
    leave_in_place(ctx, a, detail)
    assert heal(ctx) == [] and topo.mended == []
    network(ctx, NetworkFault(verb="heal"))
    assert [c.node for c in topo.mended] == ["g2"]


def test_faults_a_cut_cannot_make_fail_clearly() -> None:
    ctx = _ctx(FakeCuts())
    for bad, words in ((NetworkFault(verb="latency", node=NodeRef(name="g1"), latency=0.05),
                        "needs toxiproxy links"),
                       (NetworkFault(verb="partition", node=NodeRef(name="g1"), link="clients"),
                        "no router")):
        try:
            network(ctx, bad)
        except ActionFailed as e:
            assert words in str(e)
        else:
            raise AssertionError(f"{bad} did not fail")


GALERA = """
experiment "g" {
  backend containers
  topology galera { nodes g1, g2, g3 }
}
"""


def test_galera_in_containers_finds_its_group_by_name_with_the_labs_provider_options() -> None:
    plan = plan_text(GALERA)
    g2 = plan.cells[0].nodes[1]
    opts = dict(a[2:].split("=", 1) for a in server_args(g2, ["g1", "g2", "g3"]))
    assert opts["wsrep_cluster_address"] == "gcomm://g1,g2,g3"
    assert opts["wsrep_provider"] == "/usr/lib/galera/libgalera_smm.so"
    assert opts["wsrep_node_name"] == "g2" and opts["wsrep_sst_method"] == "rsync"
    assert "wsrep_node_address" not in opts and "wsrep_sst_receive_address" not in opts
    provider = opts["wsrep_provider_options"]
    assert "evs.suspect_timeout=PT3S" in provider and "gcache.size=64M" in provider
    assert "127.0.0.1" not in " ".join(opts.values())  # nothing of the native loopback layout
    assert provider_options("a=1; gmcast.listen_addr=tcp://x:1;ist.recv_addr=y; b=2") == \
        "a=1; b=2"


def test_haproxy_in_its_container_routes_to_nodes_by_name_with_agents_beside_it(
        tmp_path: Any) -> None:
    from runners.runtime import Run

    run = Run(experiment="x")
    try:
        r = ContainerHAProxy(run, ["g1", "g2", "g3"], ["g1", "g2"], ["g1", "g2", "g3"], 0.5,
                             (25001, 25002, 25003), eng=None, image="img", network=None,  # type: ignore[arg-type]
                             admin=None, galera=True)  # type: ignore[arg-type]
        text = r.config_text()
    finally:
        run.close()
    assert "bind 0.0.0.0:3306" in text and "bind 0.0.0.0:3307" in text
    # what the lab polls (show stat) comes from a read-only socket on TCP, not through exec
    assert "stats socket ipv4@0.0.0.0:3308 level user\n" in text
    assert text.count("level admin") == 1  # the admin socket stays the container's own file
    assert "server g1 g1:3306 check agent-check agent-addr 127.0.0.1 agent-port 9101" in text
    assert "stats socket /run/haproxy-admin.sock" in text
    writer = text[text.index("backend writer"):text.index("frontend reader")]
    assert "server g3" not in writer  # not a writer
    cmd = agent_command(backends(["g1", "g2", "g3"]), ["g1", "g2"], ["g1", "g2", "g3"], True)
    assert cmd.count("socat TCP-LISTEN") == 5 and cmd.endswith("exec haproxy -db -f "
                                                               "/etc/lab/haproxy.cfg")
    assert "'/etc/lab/agent.sh writer g1 1'" in cmd


def test_promote_repoints_replicas_by_name_on_a_topology_with_its_own_network() -> None:
    from dsl.models import Promote
    from fault.replication import promote, rejoin
    from runners.mysql import Credentials

    sent: dict[str, list[str]] = {}

    @dataclass
    class N:
        name: str
        port: int
        addr: str = ""
        admin: Any = None

        def scalar(self, statement: str, timeout: float = 5.0) -> str:
            return "0-100-9"  # a GTID position, for the rejoin

    class Topo:
        capabilities = ContainerTopology.capabilities
        plan = SimpleNamespace(engine=SimpleNamespace(flavor="mariadb"))
        nodes = {n: N(n, 27700 + i) for i, n in enumerate(["db1", "db2", "db3"], 1)}
        primary = "db1"
        router = None
        toxi = None
        repl = Credentials("r", "p")

        def source_address(self, name: str) -> tuple[str, int]:
            return name, 3306

    topo = Topo()
    for n in topo.nodes.values():
        n.addr = n.name
    import fault.replication as fr

    orig = fr.execute_all
    fr.execute_all = lambda addr, creds, stmts: sent.setdefault(addr, []).extend(stmts)  # type: ignore[assignment]
    try:
        ctx = Context(topo, lambda op: op)  # type: ignore[arg-type]
        promote(ctx, Promote(node=NodeRef(name="db2")))
        rejoin(ctx, "db1")
    finally:
        fr.execute_all = orig
    assert "RESET SLAVE ALL" in sent["db2"]
    assert any("MASTER_HOST='db2', MASTER_PORT=3306" in s for s in sent["db3"])
    assert any("MASTER_HOST='db2', MASTER_PORT=3306" in s and "slave_pos" in s
               for s in sent["db1"])
    assert "SET GLOBAL gtid_slave_pos = '0-100-9'" in sent["db1"]


def test_a_group_partition_on_containers_needs_no_root_here() -> None:
    from dsl.compile_warnings import root_needs

    text = GALERA.replace("}\n}", "}\n  at 2s network partition g3 on group\n}")
    assert root_needs(plan_text(text)) == []
    native = plan_text(text.replace("backend containers", ""))
    assert [a.action for a, _ in root_needs(native)] == ["network"]


def test_a_cut_goes_in_through_one_command() -> None:
    rs = netcut.rules(["10.0.0.2"], refuse=False)
    text = netcut.script("-I", netcut.insert_order(rs))
    assert text.count("iptables -w -I") == 2 and " && " in text
    assert text.index("OUTPUT") < text.index("INPUT")  # reversed: -I puts each first
    assert "; " in netcut.script("-D", rs, stop_on_error=False)
