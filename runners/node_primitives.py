"""What every back-end's topology does the same way with its ``nodes``: the writer and the
replicas, the process primitives by node name, and the endpoints by name. A back-end's
topology (``NativeTopology``, ``ContainerTopology``) inherits it and supplies ``address``
(where a client connects: the back-ends differ there) and, where it must, its own
``start``/``restart`` (containers put a node's network cuts back when it starts)."""

from __future__ import annotations

import secrets
import string
from collections.abc import Callable
from typing import Protocol, TypeVar

from dsl.compile import for_base_port
from dsl.plan import Cell, Plan, PlannedNode
from runners import server_identity, settings_in_force
from runners.mysql import Address, Credentials
from runners.node import Node
from runners.router import Router
from runners.runtime import Run


def server_source(plan: Plan) -> str:
    """What decides which server runs on this back-end (the hint of a wrong engine)."""
    if plan.backend == "containers":
        return "the lab's node image holds this machine's MariaDB: name another with image"
    if plan.topology in ("galera", "primary_primary"):
        return "galera and primary_primary run this machine's mariadbd"
    return "dbdeployer runs this machine's MariaDB, or the server under LAB_SANDBOX_BINARY"


def password(n: int = 20) -> str:
    """A credential of the run: ``n`` random letters and digits."""
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(n))


class _Deployable(Protocol):
    planned: dict[str, PlannedNode]
    nodes: dict[str, Node]

    def _deploy(self) -> None: ...
    def teardown(self) -> float: ...


T = TypeVar("T", bound=_Deployable)


def deploy_cell(make: Callable[[Run, Plan, Cell, Credentials, Credentials, Credentials], T],
                plan: Plan, cell: Cell, run: Run) -> T:
    """A back-end's topology of one cell, running: the plan for this run's ports (what the
    runners start, exactly: ``dsl.compile``), the run's own credentials (admin, app,
    replication), then its ``_deploy``; whatever fails on the way is torn down."""
    plan = for_base_port(plan, run.ports.base)
    cell = next(c for c in plan.cells if c.index == cell.index)
    topo = make(run, plan, cell, Credentials("lab_admin", password()),
                Credentials("lab_app", password()), Credentials("lab_repl", password()))
    topo.planned = {n.name: n for n in cell.nodes}
    try:
        topo._deploy()
        if plan.topology != "mongodb_replset":  # runners.mongo checks its own
            server_identity.check(plan.engine.flavor, plan.engine.version,
                                  topo.nodes.values(), server_source(plan))
            settings_in_force.check(topo.nodes.values(), topo.planned)
    except BaseException:
        topo.teardown()
        raise
    return topo


class NodePrimitives:
    nodes: dict[str, Node]
    planned: dict[str, PlannedNode]
    primary: str | None
    router: Router | None
    app: Credentials

    def address(self, endpoint: str) -> Address:  # pragma: no cover - every back-end has one
        raise NotImplementedError

    # --- roles ---------------------------------------------------------------------------------
    def writer(self) -> str | None:
        return self.primary

    def replicas(self) -> list[str]:
        if self.primary is None:
            return []
        return [n for n in self.nodes if n != self.primary]

    # --- process primitives --------------------------------------------------------------------
    def kill(self, name: str) -> None:
        self.nodes[name].kill()

    def pause(self, name: str) -> None:
        self.nodes[name].pause()

    def resume(self, name: str) -> None:
        self.nodes[name].resume()

    def stop(self, name: str) -> None:
        self.nodes[name].stop()

    def start(self, name: str, options: dict[str, str] | None = None) -> None:
        self.nodes[name].start(options)

    def restart(self, name: str, options: dict[str, str] | None = None) -> None:
        self.nodes[name].restart(options)

    # --- endpoints -----------------------------------------------------------------------------
    def node_by_server_id(self, server_id: int) -> str | None:
        """The node a client's connection reached, by the ``@@server_id`` it answered (the
        lab sets them: 100 × index). Not by ``@@port``: in containers every server listens
        on 3306, so a port named no node there and every operation lost its node."""
        for name, planned in self.planned.items():
            if planned.server_id == server_id:
                return name
        return None

    def endpoints(self) -> dict[str, str]:
        out = {name: str(self.address(name)) for name in self.nodes}
        if self.router is not None:
            out["router.writer"] = str(self.address("router.writer"))
            out["router.reader"] = str(self.address("router.reader"))
        return out

    def connect_hint(self, endpoint: str) -> str:
        a = self.address(endpoint)
        return f"mariadb -h{a.host} -P{a.port} -u{self.app.user} -p{self.app.password}"
