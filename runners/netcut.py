"""Cuts between named nodes: iptables rules in one node's own network namespace that drop (or
refuse) its traffic with some peers, in both directions.

A back-end whose nodes each have a network namespace of their own (``backend containers``)
implements ``PeerCuts``; the network faults (``fault.network``) then partition a node from the
peers of one of its links instead of going through toxiproxy: a real partition between
servers (the replica cannot reach its primary, a Galera node its group), which a proxy in front
of a port cannot make.

``rules(peer_ips, refuse)`` are the rules of one cut: for each peer, ``INPUT -s IP`` and
``OUTPUT -d IP`` (``partition``: ``DROP``, connections hang; ``link_down``: TCP reset first,
so connections are refused or reset at once, and anything else dropped). Healing deletes
exactly the rules inserted (``iptables -D`` with the same specification).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

Rule = tuple[str, ...]  # an iptables rule specification after -I / -D (chain first)

COMMENT = "lab-cut"


@dataclass(frozen=True)
class Cut:
    node: str  # the node whose namespace holds the rules
    link: str  # the link the fault named (all, clients, replication, group)
    peers: tuple[str, ...]  # the nodes (or the router) cut off
    refuse: bool  # link_down (reset) rather than partition (drop)
    rules: tuple[Rule, ...]  # as inserted (peer addresses resolved then)


def rules(peer_ips: list[str], refuse: bool) -> list[Rule]:
    """The iptables rules that cut a node from these addresses, both directions."""
    out: list[Rule] = []
    tag = ("-m", "comment", "--comment", COMMENT)
    for ip in peer_ips:
        for chain, match in (("INPUT", "-s"), ("OUTPUT", "-d")):
            if refuse:
                out.append((chain, match, ip, "-p", "tcp", *tag, "-j", "REJECT",
                            "--reject-with", "tcp-reset"))
            out.append((chain, match, ip, *tag, "-j", "DROP"))
    return out


def insert_order(rs: list[Rule]) -> list[Rule]:
    """``iptables -I`` puts each rule first: insert in reverse so the chain reads in order
    (the TCP reset before the catch-all drop)."""
    return list(reversed(rs))


def script(op: str, rs: list[Rule], stop_on_error: bool = True) -> str:
    """One shell command that inserts (``-I``) or deletes (``-D``) the rules in order: a cut
    goes in at once, through one ``exec``."""
    sep = " && " if stop_on_error else "; "
    return sep.join(shlex.join(["iptables", "-w", op, *r]) for r in rs)


@runtime_checkable
class PeerCuts(Protocol):
    """What a topology offers when its nodes can be cut from named peers."""

    def link_peers(self, node: str, link: str) -> list[str]:
        """The peers a fault on this link of ``node`` cuts it from (``ValueError`` with the
        reason when the link has none on this topology)."""

    def cut(self, node: str, link: str, peers: list[str], refuse: bool) -> Cut:
        """Insert the rules of a cut in ``node``'s namespace and return it."""

    def mend(self, cut: Cut) -> None:
        """Delete exactly the cut's rules (nothing when its node's namespace is gone)."""
