"""What every back-end's topology does the same way with its ``nodes``: the writer and the
replicas, the process primitives by node name, and the endpoints by name. A back-end's
topology (``NativeTopology``, ``ContainerTopology``) inherits it and supplies ``address``
(where a client connects: the back-ends differ there) and, where it must, its own
``start``/``restart`` (containers put a node's network cuts back when it starts)."""

from __future__ import annotations

from runners.mysql import Address, Credentials
from runners.node import Node
from runners.router import Router


class NodePrimitives:
    nodes: dict[str, Node]
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
    def node_by_port(self, port: int) -> str | None:
        for n in self.nodes.values():
            if n.port == port:
                return n.name
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
