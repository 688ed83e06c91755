"""Network faults: latency, bandwidth, partition and link_down on a node's toxiproxy links
(clients, replication), and a Galera group partition with iptables (root).

On a topology whose nodes have network namespaces of their own (``runners.netcut.PeerCuts``:
``backend containers``), ``partition`` and ``link_down`` cut the node from the peers of the
link instead, with iptables rules inside the node (``peer_network``); latency and bandwidth do
not run there (``lab check`` refuses them).

Heal state: the damaged links (their toxics removed, re-enabled), the iptables rules
inserted (deleted), and the cuts made (mended).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from dataclasses import dataclass, field

from dsl.models import NetworkFault
from fault.context import ActionFailed, Context, Detail, Handler
from runners.netcut import Cut, PeerCuts


@dataclass
class NetworkState:
    damaged_links: set[str] = field(default_factory=set)
    iptables_rules: list[list[str]] = field(default_factory=list)
    left_rules: list[list[str]] = field(default_factory=list)  # ``for good``: not healed
    cuts: list[Cut] = field(default_factory=list)  # cuts between nodes (``PeerCuts``)
    left_cuts: list[Cut] = field(default_factory=list)  # ``for good``: not healed


def network(ctx: Context, a: NetworkFault) -> Detail:
    topo = ctx.topo
    if isinstance(topo, PeerCuts):
        return peer_network(ctx, topo, a)
    st = ctx.state(NetworkState)
    node = a.node.name if a.node else None
    if a.link == "group" or (topo.plan.topology == "galera" and a.verb == "partition"
                             and a.link == "all"):
        return galera_partition(ctx, node, heal=a.verb == "heal")
    if topo.toxi is None:
        raise ActionFailed("network faults need toxiproxy links, which were not created")
    links = topo.toxi.links_of(node, "all" if a.link == "all" else a.link)
    if a.verb == "heal":
        for link in links:
            topo.toxi.heal(link)
            st.damaged_links.discard(link)
        if node is None or a.link in ("all", "group"):
            with contextlib.suppress(ActionFailed):
                galera_partition(ctx, node, heal=True)
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


def iptables_rules(port: int) -> list[list[str]]:
    """The rules that cut a Galera node's group traffic on the loopback (both directions)."""
    return [["INPUT", "-i", "lo", "-p", "tcp", "--dport", str(port), "-j", "DROP"],
            ["INPUT", "-i", "lo", "-p", "tcp", "--sport", str(port), "-j", "DROP"]]


def galera_partition(ctx: Context, node: str | None, heal: bool,
                     include_left: bool = True) -> Detail:
    """Cut (or, with ``heal``, restore) a node's group traffic with iptables rules. Healing
    deletes every rule inserted, those of ``for good`` faults too unless ``include_left`` is
    False (the heal at the end of a run leaves them; the cell's release deletes them)."""
    st = ctx.state(NetworkState)
    if heal:
        rules = st.iptables_rules + (st.left_rules if include_left else [])
        for rule in rules:
            subprocess.run(["iptables", "-D", *rule], capture_output=True)
        st.iptables_rules = []
        if include_left:
            st.left_rules = []
        return {"removed_rules": len(rules)}
    if os.geteuid() != 0:
        raise ActionFailed("partitioning Galera group traffic needs root (iptables)")
    if node is None:
        raise ActionFailed("partition needs a node")
    port = ctx.topo.run.ports.galera_group(ctx.node(node).index)
    for rule in iptables_rules(port):
        out = subprocess.run(["iptables", "-I", *rule], capture_output=True, text=True)
        if out.returncode != 0:
            raise ActionFailed(f"iptables: {out.stderr.strip()}")
        st.iptables_rules.append(rule)
    return {"port": port}


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
    if st.cuts and isinstance(ctx.topo, PeerCuts):
        for c in st.cuts:
            with contextlib.suppress(Exception):
                ctx.topo.mend(c)
                done.append(f"mend the cut of {c.node} from {', '.join(c.peers)}")
        st.cuts = []
    if st.iptables_rules:
        galera_partition(ctx, None, heal=True, include_left=False)
        done.append("heal group partition")
    return done


HANDLERS: dict[type, Handler] = {NetworkFault: network}
