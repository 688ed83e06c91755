"""Validation of the topology, router, images and config of an experiment (a part of
``dsl.validate``)."""

from __future__ import annotations

from dsl.models import (
    GaleraTopology,
    NodeRef,
    PrimaryPrimaryTopology,
    ReplicationTopology,
    Span,
)
from dsl.owned import normal_key
from dsl.validate_base import (
    MAX_NODES,
    MONGO_FLAVORS,
    NameChecks,
    listing,
)
from dsl.validate_safety import setting_problems
from dsl.versions import mysql_unspoken


class TopologyChecks(NameChecks):
    """Checks of the topology, router, images and config."""

    def check_topology(self) -> None:
        t = self.exp.topology
        for info in self.node_list:
            if info.name in self.nodes:
                first = self.nodes[info.name].ref.span.line
                self.error(
                    info.ref.span, f"node '{info.name}' is declared twice (first at line {first})"
                )
                continue
            if info.name == "router":
                self.error(
                    info.ref.span,
                    "'router' cannot name a node",
                    "it names the router's endpoints: router.writer, router.reader",
                )
            elif info.name == "toxiproxy":
                self.error(
                    info.ref.span,
                    "'toxiproxy' cannot name a node",
                    "it names the lab's toxiproxy on a container run's network",
                )
            self.nodes[info.name] = info
        if len(self.node_list) > MAX_NODES:
            self.error(
                t.span,
                f"the topology has {len(self.node_list)} nodes; at most "
                f"{MAX_NODES} fit the port layout",
            )
        flavor = t.engine.flavor
        if self.kind == "mongodb_replset" and flavor not in MONGO_FLAVORS:
            self.error(
                t.engine.span,
                f"a MongoDB replica set runs psmdb or mongodb, not {flavor}",
                "engine psmdb 7.0  or  engine mongodb 7.0",
            )
        elif self.kind != "mongodb_replset" and flavor in MONGO_FLAVORS:
            self.error(
                t.engine.span,
                f"{flavor} only runs a mongodb_replset topology",
                "for MySQL-family servers: engine mariadb, mysql or percona",
            )
        elif self.kind == "galera" and flavor != "mariadb":
            self.error(
                t.engine.span,
                f"the galera topology runs on mariadb (galera-4), not {flavor}",
                "engine mariadb 10.11",
            )
        elif flavor in ("mysql", "percona") and mysql_unspoken(t.engine.version):
            self.error(
                t.engine.span,
                f"{flavor} {t.engine.version}: the lab speaks MySQL 8.0's replication "
                "statements (SHOW SLAVE STATUS, CHANGE MASTER TO), which 8.4 removed",
                f"engine {flavor} 8.0",
            )
        elif self.kind == "primary_primary" and flavor != "mariadb":
            self.error(
                t.engine.span,
                f"primary_primary runs on mariadb (the lab starts two mariadbd), not {flavor}",
                "engine mariadb 10.11",
            )
        if isinstance(t, GaleraTopology) and len(t.nodes) < 2:
            self.error(
                t.span,
                "a galera cluster needs at least 2 nodes",
                "3 nodes keep a quorum when one fails: nodes g1, g2, g3",
            )
        if isinstance(t, PrimaryPrimaryTopology) and len(t.nodes) != 2:
            self.error(
                t.span,
                f"primary_primary has exactly 2 nodes, not {len(t.nodes)}",
                "nodes p1, p2 (for more writers, use galera)",
            )
        if isinstance(t, ReplicationTopology):
            self.check_replication(t)

    def check_replication(self, t: ReplicationTopology) -> None:
        if t.semi_sync and not t.replicas:
            self.error(t.span, "semi_sync needs at least one replica", "add: replicas db2, db3")
        delayed: set[str] = set()
        for d in t.delays:
            info = self.node(d.node)
            if info is None:
                continue
            if info.role == "primary":
                self.error(
                    d.node.span,
                    f"'{d.node.name}' is the primary; only a replica can be delayed",
                    f"delay one of: {listing(r.name for r in t.replicas)}",
                )
            elif d.node.name in delayed:
                self.error(d.node.span, f"'{d.node.name}' is delayed twice")
            delayed.add(d.node.name)

    def check_router(self) -> None:
        r = self.exp.router
        if r is None:
            return
        if self.kind == "mongodb_replset":
            self.error(
                r.span,
                f"{r.kind} routes MySQL-protocol traffic; a MongoDB replica set has no router here",
                "clients of a replica set target its members",
            )
        for group in (r.writers, r.readers):
            seen: set[str] = set()
            for ref in group:
                self.node(ref)
                if ref.name in seen:
                    self.error(ref.span, f"'{ref.name}' is listed twice")
                seen.add(ref.name)

    def check_router_params(self, params: dict[str, list[str]]) -> set[str]:
        """``set mysql-... = $name`` in a proxysql router: ``$name`` is a ``vary``, and each of
        its values is one ProxySQL takes. Returns the parameters used there."""
        from dsl import router_settings

        r = self.exp.router
        used: set[str] = set()
        for key, value in (r.settings if r is not None else {}).items():
            if not router_settings.PARAM.match(value):
                continue
            name = value[1:]
            if name not in params:
                known = ", ".join(f"${p}" for p in params) or "none"
                self.error(r.span if r is not None else self.exp.span,
                           f"{key} = ${name}: unknown parameter (known: {known})",
                           f"add: vary {name} in 500, 1000")
                continue
            used.add(name)
            for v in params[name]:
                problem = router_settings.value_problem(key, v, params=False)
                if problem:
                    self.error(r.span if r is not None else self.exp.span, problem)
        return used

    def check_images(self) -> None:
        """``image``: known nodes, one image per node, and only where containers run."""
        images = list(self.exp.topology.images)
        if self.exp.router is not None and self.exp.router.image is not None:
            images.append(self.exp.router.image)
        seen: dict[str | None, int] = {}
        for spec in images:
            self.node(spec.node)
            key = spec.node.name if spec.node is not None else None
            if spec in self.exp.topology.images and key in seen:
                self.error(spec.span, f"{'every node' if key is None else key} has an image "
                           f"already (line {seen[key]})")
            if spec in self.exp.topology.images:
                seen.setdefault(key, spec.span.line)
        if images and self.exp.backend != "containers":
            self.error(images[0].span, "`image` needs `backend containers`: natively the "
                       "servers are this machine's programs", "add: backend containers")

    def check_configs(self) -> None:
        blocks = list(self.exp.configs) + list(self.exp.topology.configs)
        for block in blocks:
            self.node(block.node)
            self.check_settings(block.settings, block.span)
            if block.node is not None:
                self.check_node_settings(block.node, block.settings, block.span)
        seen: dict[str, int] = {}
        for v in self.exp.variants:
            if v.name in seen:
                self.error(
                    v.span, f"variant '{v.name}' is defined twice (first at line {seen[v.name]})"
                )
            seen.setdefault(v.name, v.span.line)
            self.check_settings(v.settings, v.span)

    def check_node_settings(self, node: NodeRef, settings: dict[str, str], span: Span) -> None:
        """Settings that must be the same on every node of the topology."""
        for key in settings:
            name = normal_key(key)
            if name == "wsrep_cluster_name" and self.kind == "galera":
                self.error(
                    span,
                    f"'{key}' cannot be set for one node: every node of a galera cluster "
                    "has the same cluster name",
                    "set it for every node: config { wsrep_cluster_name = ... }",
                )
            elif name == "log_bin" and self.kind == "replication":
                self.error(
                    span,
                    f"'{key}' cannot be set for one node of a replication topology: renaming "
                    f"the binary log of a node that has started ({node.name}) loses its GTID "
                    "state",
                    "set it for every node: config { log_bin = ... }",
                )

    def check_settings(self, settings: dict[str, str], span: Span, context: str = "config") -> None:
        """Defence in depth: the builder already left unsafe settings out."""
        for key, value in settings.items():
            for _, message, hint in setting_problems(key, value, context):
                self.error(span, message, hint)
