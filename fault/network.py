"""Network faults: latency, bandwidth, partition and link_down on a node's toxiproxy links
(clients, replication), and a Galera group partition with iptables (root).

A partition drops the node's packets on every connection of the link kinds named, whoever
opened it: on ``all`` or ``replication`` also the other nodes' replication links whose
upstream is the node (``links_to``: a primary's replicas, the other of two primaries); on
Galera the group connections the node opened itself as well as those opened to it
(``iptables_rules``).

On a back-end whose nodes have network namespaces of their own (it declares
``runners.netcut.PeerCuts``: ``backend containers``), ``partition`` and ``link_down`` cut the
node from the peers of the link instead, with iptables rules inside the node
(``peer_network``); latency and bandwidth go on toxiproxy links there too, in a container of
their own, and so do the cuts of the links that pass through it (``cuts_and_links``).

Heal state: the damaged links (their toxics removed, re-enabled), the other nodes' links a
node's partition cut (healed with it), and, per partitioned node, the iptables rules inserted
(deleted); the cuts made between nodes (mended).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

from dsl.models import NetworkFault
from fault.context import ActionFailed, Context, Detail, Handler, Needs
from runners import cgroups, firewall, sockets
from runners.capabilities import Latency, LinkCut, Need
from runners.netcut import Cut, PeerCuts
from runners.toxiproxy import Link

if TYPE_CHECKING:  # a native node's class, for the type only
    from runners.node import ProcessNode


@dataclass
class NetworkState:
    damaged_links: set[str] = field(default_factory=set)
    cut_for: dict[str, set[str]] = field(default_factory=dict)  # node -> others' links cut
    partitions: dict[str, list[list[str]]] = field(default_factory=dict)  # node -> its rules
    left: dict[str, list[list[str]]] = field(default_factory=dict)  # ``for good``: not healed
    cuts: list[Cut] = field(default_factory=list)  # cuts between nodes (``PeerCuts``)
    left_cuts: list[Cut] = field(default_factory=list)  # ``for good``: not healed

    @property
    def iptables_rules(self) -> list[list[str]]:
        """The rules inserted and healed at the end of the run."""
        return [r for rules in self.partitions.values() for r in rules]

    @property
    def left_rules(self) -> list[list[str]]:
        """The rules of ``for good`` partitions: deleted when the cell ends."""
        return [r for rules in self.left.values() for r in rules]


def network(ctx: Context, a: NetworkFault) -> Detail:
    topo = ctx.topo
    if ctx.has(PeerCuts):
        return cuts_and_links(ctx, cast(PeerCuts, topo), a)
    node = a.node.name if a.node else None
    if a.link == "group" or (topo.plan.topology == "galera" and a.verb == "partition"
                             and a.link == "all"):
        return galera_partition(ctx, node, heal=a.verb == "heal")
    detail = link_faults(ctx, a)
    if a.verb == "heal" and (node is None or a.link in ("all", "group")):
        group = galera_partition(ctx, node, heal=True)  # fails if a rule stays in place
        if group and group.get("removed_rules"):
            detail = {**(detail or {}), **group}
    return detail


def cuts_and_links(ctx: Context, topo: PeerCuts, a: NetworkFault) -> Detail:
    """On a topology whose nodes have namespaces of their own (``backend containers``):
    latency and bandwidth go on the toxiproxy links, and so do partition and link_down of the
    ``clients`` and ``replication`` links when the run has links (``dsl.backends.uses_links``:
    the traffic goes through toxiproxy, so that is where it is cut); every other partition or
    link_down is a cut between the node and its link's peers (``peer_network``); ``all``
    with links does both; a heal heals both."""
    toxi = ctx.topo.toxi
    links = toxi is not None
    on_links = links and (a.verb in ("latency", "bandwidth", "heal")
                          or a.link in ("clients", "replication", "all"))
    on_peers = a.verb in ("partition", "link_down", "heal") and not (
        links and a.link in ("clients", "replication"))
    if not on_links and not on_peers:
        raise ActionFailed(f"network {a.verb} needs toxiproxy links, which were not created")
    detail: dict[str, object] = {}
    if on_links:
        detail.update(link_faults(ctx, a) or {})
    if on_peers:
        try:
            detail.update(peer_network(ctx, topo, a) or {})
        except Exception:
            # the cut failed: the links' part is undone too (no half-applied fault)
            if a.verb != "heal":
                st = ctx.state(NetworkState)
                for link in detail.get("links") or []:  # type: ignore[attr-defined]
                    with contextlib.suppress(Exception):
                        assert toxi is not None
                        toxi.heal(link)
                    st.damaged_links.discard(link)
            raise
    return detail


def link_faults(ctx: Context, a: NetworkFault) -> Detail:
    """A fault on the node's toxiproxy links of the kind named (``all``: every one); a
    partition of ``all`` or ``replication`` cuts the other nodes' replication from the node
    too (``links_to``)."""
    topo = ctx.topo
    st = ctx.state(NetworkState)
    node = a.node.name if a.node else None
    if topo.toxi is None:
        raise ActionFailed("network faults need toxiproxy links, which were not created")
    links = topo.toxi.links_of(node, "all" if a.link == "all" else a.link)
    if node is not None and a.verb == "partition" and a.link in ("all", "replication"):
        others = [k for k in links_to(topo.toxi.links, topo.nodes[node].port) if k not in links]
        st.cut_for.setdefault(node, set()).update(others)
        links += others
    elif node is not None and a.verb == "heal" and a.link in ("all", "replication"):
        links += sorted(st.cut_for.pop(node, set()) - set(links))
    elif node is None and a.verb == "heal":
        st.cut_for.clear()
    if a.verb == "heal":
        for link in links:
            topo.toxi.heal(link)
            st.damaged_links.discard(link)
        return {"links": links}
    if not links:
        raise ActionFailed(f"no {a.link} link for {node}")
    n = ctx.applied  # unique toxic names within the run
    for link in links:
        if a.verb == "latency":
            ms = int(round((a.latency or 0) * 1000))
            jitter = int(round((a.jitter or 0) * 1000))
            topo.toxi.add_toxic(link, f"latency_down_{n}", "latency",
                                {"latency": ms, "jitter": jitter})
        elif a.verb == "bandwidth":
            kbps = max(1, int((a.bandwidth or 0) / 1024))
            topo.toxi.add_toxic(link, f"bandwidth_{n}", "bandwidth", {"rate": kbps})
        elif a.verb == "partition":
            topo.toxi.add_toxic(link, f"blackhole_down_{n}", "timeout", {"timeout": 0})
            topo.toxi.add_toxic(link, f"blackhole_up_{n}", "timeout", {"timeout": 0},
                                stream="upstream")
        elif a.verb == "link_down":
            topo.toxi.set_enabled(link, False)
        st.damaged_links.add(link)
    return {"links": links}


def peer_network(ctx: Context, topo: PeerCuts, a: NetworkFault) -> Detail:
    """``partition`` / ``link_down``: cut the node from its link's peers (``PeerCuts``);
    ``heal``: mend the cuts of that node and link (every cut without a node), those left
    ``for good`` too."""
    st = ctx.state(NetworkState)
    node = a.node.name if a.node else None
    if a.verb == "heal":
        healed = [c for c in st.cuts + st.left_cuts
                  if (node is None or c.node == node) and (a.link == "all" or c.link == a.link)]
        for c in healed:
            topo.mend(c)
        st.cuts = [c for c in st.cuts if c not in healed]
        st.left_cuts = [c for c in st.left_cuts if c not in healed]
        return {"mended": [f"{c.node}|{','.join(c.peers)}" for c in healed]}
    if a.verb not in ("partition", "link_down"):
        raise ActionFailed(f"network {a.verb} does not run on this back-end (only partition, "
                           "link_down and heal)")
    if node is None:
        raise ActionFailed(f"network {a.verb} needs a node")
    try:
        peers = topo.link_peers(node, a.link)
    except ValueError as e:
        raise ActionFailed(str(e)) from None
    cut = topo.cut(node, a.link, peers, refuse=a.verb == "link_down")
    st.cuts.append(cut)
    return {"cut": node, "link": a.link, "from": list(cut.peers), "rules": len(cut.rules)}


def leave_cut(ctx: Context, detail: dict[str, object]) -> None:
    """``for good`` on a cut: kept out of the heal at the end of the run."""
    st = ctx.state(NetworkState)
    for c in [c for c in st.cuts if c.node == detail.get("cut") and c.link == detail.get("link")]:
        st.cuts.remove(c)
        st.left_cuts.append(c)


def links_to(links: Mapping[str, Link], port: int) -> list[str]:
    """The replication links whose upstream is the server on ``port``: the other nodes'
    replication from it (a primary's replicas, the other of two primaries). A partition of a
    node on ``all`` or ``replication`` cuts them too, as the node's own links: the node's
    packets are dropped on every connection, whoever opened it."""
    return sorted(name for name, link in links.items()
                  if link.kind == "replication" and link.upstream == port)


MULTIPORT_MAX = 15  # ports one iptables ``multiport`` match takes


def iptables_rules(port: int, peer_ports: Sequence[int] = (), group: str | None = None,
                   label: Sequence[str] = ()) -> list[list[str]]:
    """The rules that cut every group connection of a Galera node on the loopback, in both
    directions, whoever opened it:

    - ``INPUT ... --dport PORT`` and ``--sport PORT``: the connections the other nodes opened to
      the node's own group port ``port`` (their packets to it, its answers);
    - ``OUTPUT -m cgroup --path GROUP ... -m multiport --dports PEERS``: the connections the
      node opened itself, from an ephemeral port to the other nodes' group ports
      ``peer_ports``: every packet its server sends on them (data and acknowledgements) is
      dropped; its server runs in the cgroup v2 group ``group`` (``runners.cgroups``), which
      is how the rule knows the packets are the node's. The other side's packets on those
      connections are dropped by ``return_rules`` (they carry nothing that names the node).

    Without ``group`` only the first two (which leave the node's own connections up).
    ``label`` (``runners.firewall.label``: a comment naming the run and the node) goes into
    every rule, so that ``lab gc`` finds the rules of a run that could not delete them."""
    tail = [*label, "-j", "DROP"]
    rules = [["INPUT", "-i", "lo", "-p", "tcp", "--dport", str(port), *tail],
             ["INPUT", "-i", "lo", "-p", "tcp", "--sport", str(port), *tail]]
    peers = sorted(set(peer_ports) - {port})
    if group is not None:
        for i in range(0, len(peers), MULTIPORT_MAX):
            dports = ",".join(str(p) for p in peers[i:i + MULTIPORT_MAX])
            rules.append(["OUTPUT", "-o", "lo", "-p", "tcp", "-m", "cgroup", "--path", group,
                          "-m", "multiport", "--dports", dports, *tail])
    return rules


def return_rules(port: int, peer_ports: Sequence[int], connections: Sequence[tuple[int, int]],
                 label: Sequence[str] = ()) -> list[list[str]]:
    """The rules that drop what the other nodes send on the connections a Galera node opened
    itself: ``INPUT ... --sport PEER --dport LOCAL`` for each of its established
    ``connections`` (``runners.sockets.established``: local port, remote port) whose remote
    end is another node's group port. Without them the peers' packets on those connections
    still reached the node after the cut (until their unacknowledged data stalled them): for a
    moment the node heard a group that could not hear it, which a real partition never does."""
    peers = set(peer_ports) - {port}
    return [["INPUT", "-i", "lo", "-p", "tcp", "--sport", str(remote), "--dport", str(local),
             *label, "-j", "DROP"]
            for local, remote in sorted(set(connections))
            if remote in peers and local != port]


def _delete(rules: list[list[str]]) -> list[list[str]]:
    """Delete the rules; return those still in place (a rule already gone is not one)."""
    left: list[list[str]] = []
    for rule in rules:
        out = subprocess.run(["iptables", "-D", *rule], capture_output=True)
        if out.returncode != 0 and subprocess.run(["iptables", "-C", *rule],
                                                  capture_output=True).returncode == 0:
            left.append(rule)
    return left


def galera_partition(ctx: Context, node: str | None, heal: bool,
                     include_left: bool = True) -> Detail:
    """Cut (or, with ``heal``, restore) a node's group traffic with iptables rules
    (``iptables_rules``). Healing a node deletes the rules of that node's partitions; healing
    with no node deletes every rule inserted, those of ``for good`` faults too unless
    ``include_left`` is False (the heal at the end of a run leaves them; the cell's release
    deletes them)."""
    st = ctx.state(NetworkState)
    if heal:
        nodes = [node] if node is not None else sorted(set(st.partitions) | set(st.left))
        removed = 0
        stuck: list[str] = []
        for name in nodes:
            rules = st.partitions.pop(name, [])
            if include_left:
                rules += st.left.pop(name, [])
            still = _delete(rules)
            removed += len(rules) - len(still)
            if still:  # kept, so that the end of the run tries again
                st.partitions.setdefault(name, []).extend(still)
                stuck.append(f"{name} ({len(still)})")
        if stuck:
            raise ActionFailed("iptables: the group partition rules of "
                               f"{', '.join(stuck)} could not be deleted")
        return {"removed_rules": removed}
    if os.geteuid() != 0:
        raise ActionFailed("partitioning Galera group traffic needs root (iptables)")
    if node is None:
        raise ActionFailed("partition needs a node")
    ports = ctx.topo.run.ports
    target = ctx.node(node)
    # natively (a back-end with PeerCuts cuts between nodes instead) a Galera node is a process
    group: Path | None = cast("ProcessNode", target).network_group
    if group is None:
        raise ActionFailed(
            f"partitioning {node}'s group traffic needs its server in a cgroup v2 group of its "
            "own (made when a Galera node starts as root on a machine with a cgroup v2 "
            "hierarchy: none here), else the connections it opened itself would survive")
    port = ports.galera_group(target.index)
    peers = [ports.galera_group(n.index) for name, n in ctx.topo.nodes.items() if name != node]
    label = firewall.label(ctx.topo.run.id, node)
    inserted: list[list[str]] = []

    def insert(rules: list[list[str]]) -> None:
        for rule in rules:
            out = subprocess.run(["iptables", "-I", *rule], capture_output=True, text=True)
            if out.returncode != 0:
                _delete(inserted)
                raise ActionFailed(f"iptables: {out.stderr.strip()}")
            inserted.append(rule)

    insert(iptables_rules(port, peers, group.name, label))
    # its own packets are dropped now, so it opens no new connection: the list is complete
    own = sockets.established(cgroups.pids_in(group))
    back = return_rules(port, peers, own, label)
    insert(back)
    st.partitions.setdefault(node, []).extend(inserted)
    return {"port": port, "peer_ports": sorted(peers), "cgroup": group.name,
            "rules": len(inserted), "connections_opened": len(back)}


def heal(ctx: Context) -> list[str]:
    """Heal every damaged link, then delete the iptables rules."""
    done: list[str] = []
    st = ctx.state(NetworkState)
    if ctx.topo.toxi:
        for link in sorted(st.damaged_links):
            with contextlib.suppress(Exception):
                ctx.topo.toxi.heal(link)
                done.append(f"heal {link}")
    st.damaged_links.clear()
    st.cut_for.clear()
    if st.cuts and ctx.has(PeerCuts):
        cuts = cast(PeerCuts, ctx.topo)
        for c in st.cuts:
            with contextlib.suppress(Exception):
                cuts.mend(c)
                done.append(f"mend the cut of {c.node} from {', '.join(c.peers)}")
        st.cuts = []
    if st.partitions:
        try:
            galera_partition(ctx, None, heal=True, include_left=False)
            done.append("heal group partition")
        except ActionFailed as e:  # said, and the rest of the healing goes on
            done.append(f"heal group partition failed: {e}")
    return done


def needs(a: NetworkFault, topology: str) -> list[Need]:
    """Latency and bandwidth need links that delay; partition and link_down, links that cut
    (toxiproxy, iptables, or cuts between nodes); a heal, nothing of its own."""
    if a.verb in ("latency", "bandwidth"):
        return [Need(Latency, f"network {a.verb}")]
    if a.verb in ("partition", "link_down"):
        return [Need(LinkCut, f"network {a.verb.replace('_', ' ')}")]
    return []


HANDLERS: dict[type, Handler] = {NetworkFault: network}
NEEDS: dict[type, Needs] = {NetworkFault: needs}
