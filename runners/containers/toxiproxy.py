"""toxiproxy in a container of its own on the run's network: the links of ``backend
containers``, for latency and bandwidth between nodes (``tc netem`` is not there to shape a
node's own interface; a partition stays an iptables cut inside the node, ``runners.netcut``).

The container is of the node image with the lab's ``toxiproxy-server`` (v2.12, the binary
``make bootstrap`` built) copied in before it starts: no other image is needed, and the engine
gets the binary through its API as it gets everything else. Its API listens on 8474 inside and
is published on 127.0.0.1 at the run's toxiproxy port, so ``runners.toxiproxy.Toxiproxy`` drives
it unchanged. The links are the native ones, with where they listen and lead moved:

- ``<node>.replication`` listens in the container on the run's replication-proxy port of the
  node and leads to its primary by name (``db1:3306``); the replica replicates from
  ``toxiproxy:<that port>``;
- ``<node>.clients`` listens on the run's client-proxy port of the node, published on
  127.0.0.1, and leads to the node by name; the lab's clients and the router (by name, inside
  the run's network) go through it, as natively.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runners.components import require
from runners.containers import engine as engines
from runners.containers.part import ContainerPart
from runners.errors import ComponentError
from runners.mysql import wait_until
from runners.runtime import Run
from runners.toxiproxy import Toxiproxy

NAME = "toxiproxy"  # its alias on the run's network
API_PORT = 8474  # inside its container
BINARY_PATH = "/usr/local/bin/toxiproxy-server"
SERVER_PORT = 3306  # every node's, inside its container


class ContainerToxiproxy(ContainerPart, Toxiproxy):
    """``upstreams``: a node's port as the lab knows it (its published port) -> its name on
    the run's network; ``published``: the link ports clients on this machine reach (the
    client links), published on 127.0.0.1 at the same numbers."""

    link_host = NAME

    def __init__(self, run: Run, api_port: int, *, eng: engines.Engine, image: str,
                 network: Any, upstreams: dict[int, str], published: list[int],
                 server_port: int = SERVER_PORT) -> None:
        super().__init__(run, api_port)
        self.engine = eng
        self.image = image
        self.network = network
        self.upstreams = dict(upstreams)
        self.published = list(published)
        self.server_port = server_port  # the nodes' port in their containers
        self.container: Any = None

    @property
    def url(self) -> str:
        return f"http://{self.engine.address}:{self.api_port}"

    def listen_address(self, port: int) -> str:
        return f"0.0.0.0:{port}"

    def upstream_address(self, port: int) -> str:
        name = self.upstreams.get(port)
        if name is None:
            raise ComponentError("toxiproxy (container)", f"no node has port {port}")
        return f"{name}:{self.server_port}"

    def start(self) -> None:
        engines.testcontainers_env()
        from runners.containers.transfer import new_container

        binary = Path(require("toxiproxy"))
        tc = new_container(
            self.image, docker_client_kw=self.engine.client_kw,
            name=f"lab-{self.run.id}-{NAME}", network=self.network, network_aliases=[NAME],
            init=True, hostname=NAME, labels=engines.run_labels(self.run.id, self.run.dir),
            **engines.limits(),
            entrypoint=[BINARY_PATH],
        )
        tc.with_command(["-host", "0.0.0.0", "-port", str(API_PORT)])
        tc.with_copy_into_container(binary.read_bytes(), BINARY_PATH, mode=0o755)
        host = self.engine.address
        tc.ports[f"{API_PORT}/tcp"] = (host, self.api_port)  # type: ignore[assignment]
        for port in self.published:
            tc.ports[f"{port}/tcp"] = (host, port)  # type: ignore[assignment]
        self.container = engines.start_container(tc, "toxiproxy (container)", self.engine.url)
        try:
            wait_until(lambda: self._call("GET", "/version") is not None, 15,
                       "answering its API", "toxiproxy (container)", None, alive=self.running)
        except ComponentError as e:
            raise ComponentError("toxiproxy (container)", e.message, self.save_log()) from None

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        try:
            return super()._call(method, path, body)
        except ComponentError as e:
            if method == "GET" and path == "/version":
                return None  # not answering yet
            raise ComponentError("toxiproxy (container)", e.message, self.save_log()) from None
