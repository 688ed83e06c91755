"""The Galera group partition cuts every group connection of the node, whoever opened it: the
node's server runs in a cgroup v2 group of its own from its first instruction, the iptables
rules (the exact lists), their insertion and their heal; and a partition on replication links
cuts the other nodes' replication from the node too (two primaries)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from fakes import FakeTopology, FakeToxiproxy, nemesis, ref

from dsl.models import NetworkFault
from fault.nemesis import ActionFailed
from fault.network import MULTIPORT_MAX, NetworkState, iptables_rules, links_to, return_rules
from runners import bare, cgroups, firewall, sockets
from runners.node import ProcessNode
from runners.toxiproxy import Link

# --- cgroup v2 network groups ------------------------------------------------------------------


def hybrid(tmp_path: Path) -> Path:
    """A fake hybrid tree: v1 cpu and memory, v2 at unified/."""
    root = tmp_path / "cg"
    for d in ("cpu", "memory", "unified"):
        (root / d).mkdir(parents=True)
        (root / d / "cgroup.procs").write_text("")
    return root


def test_the_v2_hierarchy_is_found_on_hybrid_and_v2_only_machines(tmp_path: Path) -> None:
    root = hybrid(tmp_path)
    assert cgroups.unified_dir(root) == root / "unified"
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "cgroup.controllers").write_text("cpu memory\n")
    assert cgroups.unified_dir(v2) == v2
    assert cgroups.unified_dir(tmp_path / "v1only") is None


def test_a_network_group_is_named_for_the_run_and_node(tmp_path: Path) -> None:
    root = hybrid(tmp_path)
    g = cgroups.network_group("abc123", "g2", root)
    assert g == root / "unified" / "rcl-abc123-g2" and g.is_dir()
    assert cgroups.network_group("abc123", "g2", root) == g  # taken when it exists
    with pytest.raises(cgroups.CgroupError, match="no cgroup v2"):
        cgroups.network_group("abc123", "g2", tmp_path / "none")


def test_gc_removes_the_network_groups_of_a_run_too(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    monkeypatch.setattr(cgroups, "_rmdir", shutil.rmtree)
    root = hybrid(tmp_path)
    mine = [cgroups.network_group("abc", n, root) for n in ("g1", "g2")]
    other = cgroups.network_group("abc-2", "g1", root)  # a cell of another run id
    (root / "cpu" / "rcl-abc-g1").mkdir()
    (mine[0] / "cgroup.procs").write_text("4242\n")  # a task left in it: moved to the root
    assert set(cgroups.run_groups("abc", root)) == {*mine, root / "cpu" / "rcl-abc-g1"}
    assert len(cgroups.remove_run_groups("abc", root)) == 3
    assert not any(g.exists() for g in mine) and other.is_dir()
    assert (root / "unified" / "cgroup.procs").read_text() == "4242"


def test_joined_runs_the_program_with_the_same_pid_after_writing_it(tmp_path: Path) -> None:
    group = tmp_path / "grp"
    group.mkdir()
    argv = cgroups.joined(["/bin/sh", "-c", 'echo "$$ $1"', "x", "a b; $(false)"], group)
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout.split()
    pid, arg = out[0], " ".join(out[1:])
    assert (group / "cgroup.procs").read_text().strip() == pid  # the program's own pid
    assert arg == "a b; $(false)"  # arguments pass untouched, never through the script


def test_joined_does_not_start_the_program_when_it_cannot_join(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    argv = cgroups.joined(["/bin/touch", str(marker)], tmp_path / "missing")
    assert subprocess.run(argv, capture_output=True).returncode != 0
    assert not marker.exists()


def test_a_galera_node_gets_a_network_group_only_as_root_with_v2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = hybrid(tmp_path)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert bare.network_group_of("r1", "g1", root) is None
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert bare.network_group_of("r1", "g1", root) == root / "unified" / "rcl-r1-g1"
    assert bare.network_group_of("r1", "g1", tmp_path / "none") is None


def test_every_start_of_a_process_node_runs_in_its_network_group(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[list[str]] = []

    class Proc:
        pid = 99999

        def __init__(self, args: list[str], **kw: Any) -> None:
            started.append(list(args))

        def poll(self) -> int:
            return 0  # "exited": the next start starts again

    monkeypatch.setattr(subprocess, "Popen", Proc)
    run: Any = type("R", (), {"record": lambda *a: None})()
    node = ProcessNode(run, "g1", "galera", 1, 23001, tmp_path, None,  # type: ignore[arg-type]
                       "/usr/sbin/mariadbd")
    node.start(wait=False)
    assert started[0][0] == "/usr/sbin/mariadbd"  # no group: the server itself
    node.network_group = tmp_path / "rcl-r-g1"
    node.start(wait=False)
    node.start({"wsrep_on": "ON"}, wait=False)  # a restart with options: in the group again
    for argv in started[1:]:
        assert argv[:5] == ["/bin/sh", "-c", cgroups.JOIN_SCRIPT, "sh",
                            str(tmp_path / "rcl-r-g1" / "cgroup.procs")]
        assert argv[5:7] == ["/usr/sbin/mariadbd", f"--defaults-file={tmp_path / 'my.cnf'}"]
    assert started[2][-1] == "--wsrep_on=ON"
    assert (tmp_path / "rcl-r-g1").is_dir()


# --- the rules ---------------------------------------------------------------------------------

def test_the_rules_cut_connections_to_the_node_and_those_it_opened() -> None:
    assert iptables_rules(23043, [23041, 23042, 23043], "rcl-r-g3") == [
        ["INPUT", "-i", "lo", "-p", "tcp", "--dport", "23043", "-j", "DROP"],
        ["INPUT", "-i", "lo", "-p", "tcp", "--sport", "23043", "-j", "DROP"],
        ["OUTPUT", "-o", "lo", "-p", "tcp", "-m", "cgroup", "--path", "rcl-r-g3",
         "-m", "multiport", "--dports", "23041,23042", "-j", "DROP"]]


def test_a_label_goes_into_every_rule_before_the_target() -> None:
    rules = iptables_rules(23043, [23041], "g", firewall.label("abc", "g3"))
    assert all(r[-6:] == ["-m", "comment", "--comment", "rcl-abc-g3", "-j", "DROP"]
               for r in rules) and len(rules) == 3


def test_gc_finds_the_rules_of_one_run_in_the_listing() -> None:
    listing = "\n".join([
        "-P INPUT ACCEPT",
        "-A INPUT -i lo -p tcp -m tcp --dport 27943 -m comment --comment rcl-abc-g3 -j DROP",
        "-A OUTPUT -o lo -p tcp -m cgroup --path rcl-abc-g3 -m multiport --dports 27941,27942 "
        "-m comment --comment rcl-abc-g3 -j DROP",
        "-A INPUT -i lo -p tcp -m tcp --dport 27944 -m comment --comment rcl-abc-2-g1 -j DROP",
        "-A INPUT -p tcp --dport 22 -m comment --comment \"not ours\" -j ACCEPT",
        "-A INPUT -i lo -p tcp -m tcp --dport 1 -j DROP"])
    assert firewall.run_rules("abc", listing) == [
        ["INPUT", "-i", "lo", "-p", "tcp", "-m", "tcp", "--dport", "27943", "-m", "comment",
         "--comment", "rcl-abc-g3", "-j", "DROP"],
        ["OUTPUT", "-o", "lo", "-p", "tcp", "-m", "cgroup", "--path", "rcl-abc-g3", "-m",
         "multiport", "--dports", "27941,27942", "-m", "comment", "--comment", "rcl-abc-g3",
         "-j", "DROP"]]  # the cell abc-2's rule and the machine's own are not the run's
    assert firewall.run_rules("abc-2", listing)[0][8] == "27944"


def test_without_a_group_only_the_node_s_own_port_is_cut() -> None:
    assert [r[0] for r in iptables_rules(23042, [23041])] == ["INPUT", "INPUT"]


def test_many_peers_take_several_multiport_rules() -> None:
    peers = list(range(30001, 30001 + MULTIPORT_MAX + 2))
    out = [r for r in iptables_rules(30000, peers, "g") if r[0] == "OUTPUT"]
    assert [len(r[r.index("--dports") + 1].split(",")) for r in out] == [MULTIPORT_MAX, 2]


def test_what_the_peers_send_on_the_connections_the_node_opened_is_dropped_too() -> None:
    # db3 (group port 23043) opened 40001 -> 23041 and 40002 -> 23042; db1 opened 50000 -> 23043
    # (db3's own port: cut by the port rules); 40003 -> 3306 is a client connection, not the group
    own = [(40002, 23042), (40001, 23041), (23043, 50000), (40003, 3306), (40001, 23041)]
    assert return_rules(23043, [23041, 23042, 23043], own, ["-m", "comment", "--comment", "x"]) == [
        ["INPUT", "-i", "lo", "-p", "tcp", "--sport", "23041", "--dport", "40001",
         "-m", "comment", "--comment", "x", "-j", "DROP"],
        ["INPUT", "-i", "lo", "-p", "tcp", "--sport", "23042", "--dport", "40002",
         "-m", "comment", "--comment", "x", "-j", "DROP"]]
    assert return_rules(23043, [23041], []) == []


def fake_proc(tmp_path: Path, pid: int, sockets_: dict[str, str], tcp: list[str]) -> Path:
    """A /proc with one process: its fd links (fd -> target) and its net/tcp rows."""
    proc = tmp_path / "proc"
    fd = proc / str(pid) / "fd"
    fd.mkdir(parents=True)
    for name, target in sockets_.items():
        os.symlink(target, fd / name)
    (proc / str(pid) / "net").mkdir()
    head = ("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
            "timeout inode")
    (proc / str(pid) / "net" / "tcp").write_text("\n".join([head, *tcp]) + "\n")
    return proc


def test_the_established_connections_of_a_process_are_read_from_proc(tmp_path: Path) -> None:
    row = ("   {n}: 0100007F:{l:04X} 0100007F:{r:04X} {st} 00000000:00000000 00:00000000 "
           "00000000   0 0 {ino} 1 0 20 4 30 10 -1")
    proc = fake_proc(tmp_path, 42, {"3": "socket:[111]", "4": "socket:[222]", "5": "/dev/null",
                                    "6": "socket:[333]"},
                     [row.format(n=0, l=40001, r=23041, st="01", ino=111),
                      row.format(n=1, l=23043, r=0, st="0A", ino=222),    # listening
                      row.format(n=2, l=40002, r=23042, st="01", ino=999),  # another process's
                      row.format(n=3, l=40005, r=23042, st="06", ino=333)])  # TIME_WAIT
    assert sockets.established([42], proc) == [(40001, 23041)]
    assert sockets.established([7], proc) == []  # gone


def test_a_partition_drops_the_peers_packets_on_the_node_s_own_connections(
        tmp_path: Path, iptables: list[list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    topo = galera(tmp_path)
    group = topo.run.ports.galera_group
    seen: list[list[int]] = []

    def established(pids: list[int]) -> list[tuple[int, int]]:
        seen.append(pids)
        assert len(iptables) == 3  # listed once the node's own packets are dropped
        return [(40001, group(1)), (40002, group(2))]

    monkeypatch.setattr(cgroups, "pids_in", lambda g: [4242] if g.name == "rcl-r-db3" else [])
    monkeypatch.setattr(sockets, "established", established)
    nem, _ = nemesis(topo)
    detail = nem.apply(NetworkFault(verb="partition", node=ref("db3"), link="group"))
    assert seen == [[4242]] and detail["rules"] == 5 and detail["connections_opened"] == 2
    assert iptables[3:] == [["iptables", "-I", *r] for r in return_rules(
        group(3), [group(1), group(2)], [(40001, group(1)), (40002, group(2))],
        firewall.label("r1", "db3"))]
    iptables.clear()
    nem.apply(NetworkFault(verb="heal", node=ref("db3"), link="group"))
    assert [c[1] for c in iptables] == ["-D"] * 5


# --- inserting and healing -----------------------------------------------------------------------

@pytest.fixture
def iptables(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """iptables as a list of calls; an insert of a rule naming port 99 fails."""
    calls: list[list[str]] = []

    def run(argv: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        calls.append(list(argv))
        bad = argv[1] == "-I" and any("99" in a.split(",") for a in argv)
        return subprocess.CompletedProcess(argv, 1 if bad else 0, "", "bad rule" if bad else "")

    monkeypatch.setattr("fault.network.subprocess.run", run)
    monkeypatch.setattr("os.geteuid", lambda: 0)
    return calls


def galera(tmp_path: Path) -> FakeTopology:
    topo = FakeTopology(tmp_path, "galera")
    for node in topo.nodes.values():
        node.network_group = tmp_path / f"rcl-r-{node.name}"
    return topo


def test_a_partition_inserts_the_rules_and_its_heal_deletes_exactly_them(
        tmp_path: Path, iptables: list[list[str]]) -> None:
    topo = galera(tmp_path)
    nem, history = nemesis(topo)
    group = topo.run.ports.galera_group
    detail = nem.apply(NetworkFault(verb="partition", node=ref("db3"), link="group"))
    assert detail == {"port": group(3), "peer_ports": [group(1), group(2)],
                      "cgroup": "rcl-r-db3", "rules": 3, "connections_opened": 0}
    db3 = iptables_rules(group(3), [group(1), group(2)], "rcl-r-db3",
                         ["-m", "comment", "--comment", "rcl-r1-db3"])  # named for gc
    assert iptables == [["iptables", "-I", *r] for r in db3]
    nem.apply(NetworkFault(verb="partition", node=ref("db1"), link="group"))
    iptables.clear()
    nem.apply(NetworkFault(verb="heal", node=ref("db3"), link="group"))
    assert iptables == [["iptables", "-D", *r] for r in db3]  # db1's rules stay
    assert nem.iptables_rules == iptables_rules(group(1), [group(2), group(3)], "rcl-r-db1",
                                                firewall.label("r1", "db1"))
    iptables.clear()
    assert nem.heal_all() == ["heal group partition"]
    assert [c[1] for c in iptables] == ["-D"] * 3 and nem.iptables_rules == []


def test_a_galera_partition_on_all_is_a_group_partition(tmp_path: Path,
                                                        iptables: list[list[str]]) -> None:
    nem, _ = nemesis(galera(tmp_path))
    nem.apply(NetworkFault(verb="partition", node=ref("db2")))
    assert len(nem.iptables_rules) == 3 and nem.damaged_links == set()


def test_a_node_without_its_network_group_is_refused_before_any_rule(
        tmp_path: Path, iptables: list[list[str]]) -> None:
    nem, history = nemesis(FakeTopology(tmp_path, "galera"))
    with pytest.raises(ActionFailed, match="cgroup v2 group"):
        nem.apply(NetworkFault(verb="partition", node=ref("db2"), link="group"))
    assert iptables == [] and history[-1].type == "fail"


def test_a_rule_iptables_refuses_takes_the_ones_inserted_out_again(
        tmp_path: Path, iptables: list[list[str]]) -> None:
    topo = galera(tmp_path)
    topo.nodes["db1"].index = 99 - topo.run.ports.galera_group(0)  # db1's port is 99
    nem, _ = nemesis(topo)
    with pytest.raises(ActionFailed, match="bad rule"):
        nem.apply(NetworkFault(verb="partition", node=ref("db2"), link="group"))
    # the INPUT rules went in, the OUTPUT rule (to port 99) did not: both INPUT rules removed
    assert [c[1] for c in iptables] == ["-I", "-I", "-I", "-D", "-D"]
    assert iptables[3][2:] == iptables[0][2:] and nem.iptables_rules == []


def test_a_partition_for_good_keeps_its_rules_until_the_cell_ends(
        tmp_path: Path, iptables: list[list[str]]) -> None:
    from fault.nemesis import leave_in_place

    nem, _ = nemesis(galera(tmp_path))
    action = NetworkFault(verb="partition", node=ref("db3"), link="group")
    detail = nem.apply(action)
    leave_in_place(nem.ctx, action, detail)
    st = nem.ctx.state(NetworkState)
    assert st.partitions == {} and len(st.left["db3"]) == 3
    iptables.clear()
    assert nem.heal_all() == []  # the end of the run leaves it
    assert iptables == []
    assert nem.release() == ["delete the group partition's iptables rules"]
    assert [c[1] for c in iptables] == ["-D"] * 3 and st.left == {}


# --- replication links: the node's packets, whoever opened the connection --------------------

def pair(tmp_path: Path) -> FakeTopology:
    topo = FakeTopology(tmp_path, "primary_primary")
    topo.toxi = FakeToxiproxy()
    n1, n2 = topo.nodes["db1"], topo.nodes["db2"]
    topo.toxi.links = {
        "db1.replication": Link("db1.replication", "db1", "replication", 24001, n2.port),
        "db2.replication": Link("db2.replication", "db2", "replication", 24002, n1.port),
        "db2.clients": Link("db2.clients", "db2", "clients", 25002, n2.port)}
    return topo


def test_links_to_a_node_are_the_replication_links_from_it(tmp_path: Path) -> None:
    topo = pair(tmp_path)
    assert topo.toxi is not None
    assert links_to(topo.toxi.links, topo.nodes["db2"].port) == ["db1.replication"]
    assert links_to(topo.toxi.links, topo.nodes["db3"].port) == []


def test_a_partition_of_one_of_two_primaries_cuts_both_replication_directions(
        tmp_path: Path) -> None:
    nem, _ = nemesis(pair(tmp_path))
    detail = nem.apply(NetworkFault(verb="partition", node=ref("db2"), link="replication"))
    assert detail == {"links": ["db2.replication", "db1.replication"]}
    assert nem.damaged_links == {"db1.replication", "db2.replication"}
    nem.apply(NetworkFault(verb="heal", node=ref("db2")))
    assert nem.damaged_links == set()


def test_latency_stays_on_the_node_s_own_links(tmp_path: Path) -> None:
    topo = pair(tmp_path)
    assert topo.toxi is not None
    nem, _ = nemesis(topo)
    nem.apply(NetworkFault(verb="latency", node=ref("db2"), latency=0.1, link="replication"))
    assert nem.damaged_links == {"db2.replication"}
    nem.apply(NetworkFault(verb="latency", node=ref("db1"), latency=0.1, link="replication"))
    topo.toxi.calls.clear()
    nem.apply(NetworkFault(verb="heal", node=ref("db2")))
    assert nem.damaged_links == {"db1.replication"}  # db1's own latency is not db2's to heal
    assert not any("db1.replication" in path for _, path, _ in topo.toxi.calls)


def test_a_group_busy_for_a_moment_after_its_last_task_died_is_removed_on_retry(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    tries: list[Path] = []

    def rmdir(path: Path) -> None:
        tries.append(path)
        if len(tries) < 3:  # the kernel has not finished the killed server's exit yet
            raise OSError(errno.EBUSY, "busy")
        path.rmdir()

    monkeypatch.setattr(cgroups, "_rmdir", rmdir)
    group = tmp_path / "rcl-r-g1"
    group.mkdir()
    assert cgroups.remove_group(group) and not group.exists() and len(tries) == 3
    tries.clear()
    other = tmp_path / "rcl-r-g2"
    other.mkdir()
    assert not cgroups.remove_group(other, busy_wait=0.0) and len(tries) == 1  # busy at the end
    assert other.is_dir()


def test_each_galera_node_announces_its_client_port_for_the_membership() -> None:
    from dsl.api import load_plan
    from runners.galera_watch import members

    plan = load_plan(str(Path(__file__).parents[2] / "experiments" / "galera-failover.exp"))
    nodes = plan.cells[0].nodes
    incoming = [n.config["wsrep_node_incoming_address"] for n in nodes]
    assert incoming == [f"127.0.0.1:{n.port}" for n in nodes]
    # what the watcher reads back from wsrep_incoming_addresses names the lab's nodes
    assert members(",".join(incoming), {n.port: n.name for n in nodes}) == ["g1", "g2", "g3"]


def test_remove_run_rules_deletes_the_run_s_rules_only(monkeypatch: pytest.MonkeyPatch) -> None:
    listing = ("-A INPUT -i lo -p tcp -m tcp --dport 7 -m comment --comment rcl-abc-g3 -j DROP\n"
               "-A INPUT -i lo -p tcp -m tcp --dport 8 -m comment --comment rcl-xyz-g3 -j DROP\n")
    calls: list[list[str]] = []

    def run(argv: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        calls.append(list(argv))
        return subprocess.CompletedProcess(argv, 0, listing if argv[1] == "-S" else "", "")

    monkeypatch.setattr(firewall.subprocess, "run", run)
    monkeypatch.setattr(firewall.shutil, "which", lambda name: "/usr/sbin/iptables")
    monkeypatch.setattr(firewall.os, "geteuid", lambda: 0)
    assert len(firewall.remove_run_rules("abc")) == 1
    assert calls == [["iptables", "-S"],
                     ["iptables", "-D", "INPUT", "-i", "lo", "-p", "tcp", "-m", "tcp", "--dport",
                      "7", "-m", "comment", "--comment", "rcl-abc-g3", "-j", "DROP"]]
    monkeypatch.setattr(firewall.os, "geteuid", lambda: 1000)
    calls.clear()
    assert firewall.remove_run_rules("abc") == [] and calls == []  # not root: nothing to find


def test_a_galera_partition_without_a_cgroup_v2_hierarchy_is_refused_up_front(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dsl.api import load_plan
    from runners.components import MissingComponent
    from runners.topology import check_network_groups

    path = Path(__file__).parents[2] / "experiments" / "galera-failover.exp"
    plan = load_plan(str(path))
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1)
                if "network partition g3 on group" in t)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    with pytest.raises(MissingComponent, match=rf"^line {line}: `network partition g3 on group` "
                       r"needs a cgroup v2 hierarchy, which is not mounted: the partition"):
        check_network_groups(plan, tmp_path / "v1only")
    check_network_groups(plan, hybrid(tmp_path))  # with one: fine
    certification = load_plan(str(Path(__file__).parents[2] / "experiments"
                                  / "galera-certification.exp"))
    check_network_groups(certification, tmp_path / "v1only")  # no partition: nothing needed


class _Ctx:
    """Just enough of fault.context.Context for the heal of group partitions."""

    def __init__(self) -> None:
        self.states: dict[type, object] = {}

    def state(self, kind: type) -> object:
        return self.states.setdefault(kind, kind())


def test_a_heal_says_how_many_rules_it_deleted_and_fails_when_one_stays(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`network heal g3` recorded only the toxiproxy links, and a rule that could not be
    deleted was silent: now the count is in the heal's value, and a rule still in place
    (iptables -C finds it) fails the heal and is kept for the end of the run."""
    from fault.context import ActionFailed
    from fault.network import NetworkState, galera_partition

    ctx = _Ctx()
    st = ctx.state(NetworkState)
    st.partitions["g3"] = [["INPUT", "-p", "tcp", "--dport", "1"],  # type: ignore[attr-defined]
                           ["OUTPUT", "-p", "tcp", "--sport", "1"]]

    class Done:
        def __init__(self, rc: int) -> None:
            self.returncode = rc

    monkeypatch.setattr(subprocess, "run", lambda argv, **kw: Done(0))
    assert galera_partition(ctx, "g3", heal=True) == {"removed_rules": 2}  # type: ignore[arg-type]
    st.partitions["g3"] = [["INPUT", "-p", "tcp", "--dport", "1"]]  # type: ignore[attr-defined]
    monkeypatch.setattr(subprocess, "run", lambda argv, **kw: Done(1 if "-D" in argv else 0))
    with pytest.raises(ActionFailed, match="g3 \\(1\\) could not be deleted"):
        galera_partition(ctx, "g3", heal=True)  # type: ignore[arg-type]
    assert st.partitions["g3"]  # type: ignore[attr-defined]
