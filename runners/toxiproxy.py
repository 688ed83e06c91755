"""toxiproxy v2.12 on the links the lab creates: client -> node and replica -> primary.

A link is a toxiproxy proxy named ``<node>.clients`` or ``<node>.replication``. Faults are
toxics on it (latency with jitter, bandwidth) or the proxy itself (``enabled=false`` refuses
connections at once; a ``timeout`` toxic with timeout 0 is a blackhole partition).
"""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from runners.components import require
from runners.errors import ComponentError
from runners.mysql import wait_until
from runners.runtime import Run


@dataclass(frozen=True)
class Link:
    name: str  # e.g. "db2.clients"
    node: str
    kind: str  # "clients" or "replication"
    listen: int
    upstream: int


class Toxiproxy:
    """The lab's toxiproxy: a process on this machine, every link on the loopback.
    ``backend containers`` runs it in a container of its own on the run's network
    (``runners.containers.toxiproxy``), where only where a link listens and where it leads
    change (``listen_address``, ``upstream_address``, ``link_host``)."""

    link_host = "127.0.0.1"  # where a replica reaches its replication link

    def __init__(self, run: Run, api_port: int) -> None:
        self.run = run
        self.api_port = api_port
        self.log = run.dir / "toxiproxy.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.links: dict[str, Link] = {}

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    def start(self) -> None:
        binary = require("toxiproxy")
        logf = open(self.log, "ab")
        self.proc = subprocess.Popen([binary, "-host", "127.0.0.1", "-port", str(self.api_port)],
                                     stdout=logf, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        logf.close()
        self.run.record(self.proc.pid, "toxiproxy")
        proc = self.proc
        wait_until(lambda: self._call("GET", "/version") is not None, 10, "answering its API",
                   "toxiproxy", self.log, alive=lambda: proc.poll() is None)

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=5) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            raise ComponentError("toxiproxy", f"{method} {path}: HTTP {e.code} "
                                 f"{e.read().decode(errors='replace')}", self.log) from None
        except OSError as e:
            raise ComponentError("toxiproxy", f"{method} {path}: {e}", self.log) from None
        if not raw:
            return {}
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode()

    def listen_address(self, port: int) -> str:
        return f"127.0.0.1:{port}"

    def upstream_address(self, port: int) -> str:
        """Where a link to the server on ``port`` (a node's port, as the lab knows it) leads."""
        return f"127.0.0.1:{port}"

    def add_link(self, node: str, kind: str, listen: int, upstream: int) -> Link:
        link = Link(f"{node}.{kind}", node, kind, listen, upstream)
        self._call("POST", "/proxies", {"name": link.name, "listen": self.listen_address(listen),
                                        "upstream": self.upstream_address(upstream),
                                        "enabled": True})
        self.links[link.name] = link
        return link

    def set_upstream(self, link: str, upstream: int) -> None:
        old = self.links[link]
        self._call("POST", f"/proxies/{link}", {"upstream": self.upstream_address(upstream)})
        self.links[link] = Link(old.name, old.node, old.kind, old.listen, upstream)

    def links_of(self, node: str | None, kind: str = "all") -> list[str]:
        return [name for name, link in self.links.items()
                if (node is None or link.node == node) and (kind == "all" or link.kind == kind)]

    def add_toxic(self, link: str, name: str, kind: str, attributes: dict[str, Any],
                  stream: str = "downstream") -> None:
        self._call("POST", f"/proxies/{link}/toxics",
                   {"name": name, "type": kind, "stream": stream, "toxicity": 1.0,
                    "attributes": attributes})

    def remove_toxics(self, link: str) -> None:
        info = self._call("GET", f"/proxies/{link}/toxics")
        for t in info or []:
            self._call("DELETE", f"/proxies/{link}/toxics/{t['name']}")

    def set_enabled(self, link: str, enabled: bool) -> None:
        self._call("POST", f"/proxies/{link}", {"enabled": enabled})

    def heal(self, link: str) -> None:
        self.remove_toxics(link)
        self.set_enabled(link, True)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)
            self.run.forget(self.proc.pid)
