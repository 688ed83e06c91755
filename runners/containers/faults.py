"""What the fault families call on ``backend containers``: the process verbs that put a started
node's cuts back, clock offsets (``clock skew``), container limits (cpu, memory), and cuts
between nodes (``runners.netcut.PeerCuts``: ``partition`` and ``link_down`` insert iptables
rules in the node's own network namespace, ``exec`` through the engine's API).
``ContainerFaults`` is a part of ``runners.containers.topology.ContainerTopology``."""

from __future__ import annotations

from typing import Any

from dsl.plan import Plan
from runners import netcut
from runners.containers import engine as engines
from runners.containers.node import (
    FAKETIME_FILE,
    SERVER_PORT,
    ContainerNode,
    network_name,
)
from runners.errors import ComponentError
from runners.node_primitives import NodePrimitives
from runners.runtime import Run


class ContainerFaults(NodePrimitives):
    """A part of ``ContainerTopology`` (its fields, declared here for the checker)."""

    run: Run
    plan: Plan
    engine: engines.Engine | None
    cuts: list[netcut.Cut]

    # --- process primitives (the rest: NodePrimitives): a started node's cuts are put back ----
    def start(self, name: str, options: dict[str, str] | None = None) -> None:
        self.nodes[name].start(options)
        self._recut(name)

    def restart(self, name: str, options: dict[str, str] | None = None) -> None:
        self.nodes[name].restart(options)
        self._recut(name)

    def source_address(self, name: str) -> tuple[str, int]:
        """Where replicas reach ``name`` as their primary (promote, rejoin): by its name on
        the run's network."""
        return name, SERVER_PORT

    def write_clock_offset(self, name: str, seconds: float) -> str:
        """``clock skew``: the node's offset file in its container (``FAKETIME_FILE``, read by
        the server's libfaketime at every clock read), replaced at once: through ``exec`` (a
        rename) while the container runs, else through the API's archive upload (read at the
        next start)."""
        from runners import faketime

        if name not in self.plan.faketime_nodes:
            raise ValueError(f"{name}'s server does not run under libfaketime: the topology "
                             f"preloads it when the experiment has `clock skew {name} by ...`")
        text = faketime.offset_text(seconds)
        node = self._container_of(name)
        if node.is_running():
            code, out = node.exec(["sh", "-c", 'printf "%s\\n" "$1" > "$2.tmp" && '
                                   'chmod 644 "$2.tmp" && mv "$2.tmp" "$2"', "sh", text,
                                   FAKETIME_FILE])
            if code != 0:
                raise ComponentError(node.component, f"writing its clock offset: {out.strip()}")
        else:
            node.put_file(FAKETIME_FILE, f"{text}\n".encode())
        return text

    def container_limit(self, name: str, controller: str) -> Any:
        """A cpu or memory limit on the node's container (``runners.containers.resources``:
        through the engine's API; ``fault.resources`` sets and lifts it)."""
        from runners.containers.resources import ContainerLimit

        assert self.engine is not None
        return ContainerLimit(self.engine.client, self._container_of(name), controller,
                              self.engine.local)

    # --- cuts between nodes (runners.netcut.PeerCuts) --------------------------------------------
    def link_peers(self, node: str, link: str) -> list[str]:
        """``group``: the other Galera nodes; ``replication``: a replica's primary, or the
        primary's replicas (of two primaries: the other); ``clients``: the router (clients
        on this machine reach a node through its published port, the path the lab's own
        observers take: not cut);
        ``all``: every other container of the run."""
        others = [n for n in self.nodes if n != node]
        router = ["router"] if self.router is not None else []
        if link == "all":
            return others + router
        if link == "group":
            if self.plan.topology not in ("galera", "mongodb_replset"):
                raise ValueError(f"{node} has no group link: only galera nodes and replica "
                                 "set members have one")
            return others
        if link == "replication" and self.plan.topology == "primary_primary":
            return others  # each replicates from the other: both directions
        if link == "replication":
            if self.plan.topology != "replication" or self.primary is None:
                raise ValueError(f"{node} has no replication link on a {self.plan.topology} "
                                 "topology")
            return self.replicas() if node == self.primary else [self.primary]
        if link == "clients":
            if not router:
                raise ValueError("on containers the clients link is the router's: clients on "
                                 "this machine reach a node through its published port, as the "
                                 "lab's own observers do, and are not cut")
            return router
        raise ValueError(f"unknown link {link!r}")

    def _container_of(self, name: str) -> ContainerNode:
        node = self.nodes[name]
        assert isinstance(node, ContainerNode)
        return node

    def _ip(self, name: str) -> str:
        if name == "router":
            router_ip = getattr(self.router, "ip", None)  # HAProxy's or ProxySQL's container
            if router_ip is None:
                raise ValueError("the router has no container to cut")
            ip = router_ip(network_name(self.run.id))
        else:
            ip = self._container_of(name).ip(network_name(self.run.id))
        if ip is None:
            raise ValueError(f"{name} is not running: it has no address to cut")
        return str(ip)

    def cut(self, node: str, link: str, peers: list[str], refuse: bool) -> netcut.Cut:
        rules = netcut.rules([self._ip(p) for p in peers], refuse)
        cut = netcut.Cut(node, link, tuple(peers), refuse, tuple(rules))
        self._insert(node, list(rules))
        self.cuts.append(cut)
        return cut

    def mend(self, cut: netcut.Cut) -> None:
        if cut in self.cuts:
            self.cuts.remove(cut)
        target = self._container_of(cut.node)
        if not target.is_running():
            return  # its namespace, and the rules, went with it
        target.exec(["sh", "-c", netcut.script("-D", list(cut.rules), stop_on_error=False)])

    def _insert(self, node: str, rules: list[netcut.Rule]) -> None:
        """All the rules in one ``exec`` (a few ms apart: no half-cut node for the peers to
        see one by one); on a failure the ones inserted are deleted."""
        target = self._container_of(node)
        code, out = target.exec(["sh", "-c", netcut.script("-I", netcut.insert_order(rules))])
        if code != 0:
            target.exec(["sh", "-c", netcut.script("-D", rules, stop_on_error=False)])
            raise ComponentError(target.component, f"iptables in the container: {out.strip()}")

    def _recut(self, name: str) -> None:
        """A node that starts again has a new namespace: its cuts go in again."""
        for cut in self.cuts:
            if cut.node == name:
                self._insert(name, list(cut.rules))
