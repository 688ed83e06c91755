"""Fakes of a running topology for the fault tests: nodes, toxiproxy links and the
Topology protocol's process primitives, without servers."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from dsl.models import NodeRef
from fault.nemesis import Nemesis
from runners.mysql import Address, Credentials
from runners.ops import Op
from runners.runtime import PortLayout
from runners.topology import NativeTopology
from runners.toxiproxy import Toxiproxy

ADMIN = Credentials("lab_admin", "pw")


class FakeNode:
    def __init__(self, name: str, index: int, datadir: Path) -> None:
        self.name, self.index = name, index
        self.port = 23000 + index
        self.addr = Address("127.0.0.1", self.port)
        self.admin = ADMIN
        self.datadir = datadir
        self.running = True
        self.paused = False
        self.pause_retries: list[str] = []  # runners.node.Node's
        self.scalars: dict[str, Any] = {}  # statement -> what SELECT returns
        self.network_group: Path | None = None  # a native Galera node's (runners.node.ProcessNode)

    def scalar(self, statement: str, timeout: float = 5.0) -> Any:
        return self.scalars.get(statement, "")

    def pid(self) -> int | None:
        return 1000 + self.index if self.running else None

    def is_running(self) -> bool:
        return self.running

    def cache_dirs(self) -> list[Path]:
        return [self.datadir]

    def tmpfs_dir(self, target: str) -> Path:
        from runners.disk import binlog_dir

        return binlog_dir(self.datadir) if target == "binlog" else self.datadir


class FakeToxiproxy(Toxiproxy):
    """The real bookkeeping of links, without toxiproxy: API calls are recorded."""

    def __init__(self) -> None:
        self.links = {}
        self.calls: list[tuple[str, str, Any]] = []

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        self.calls.append((method, path, body))
        return [] if method == "GET" else {}


class FakeTopology:
    """The Topology protocol's process primitives, as a log of what was asked."""

    capabilities = NativeTopology.capabilities

    def __init__(self, tmp_path: Path, kind: str = "replication") -> None:
        self.plan = SimpleNamespace(topology=kind, seed=0, router=None,
                                    engine=SimpleNamespace(flavor="mariadb"))
        self.run = SimpleNamespace(ports=PortLayout(23000), dir=tmp_path, id="r1")
        self.admin = self.app = ADMIN
        self.repl = Credentials("lab_repl", "pw")
        self.nodes = {n: FakeNode(n, i, tmp_path / n) for i, n in
                      enumerate(("db1", "db2", "db3"), start=1)}
        self.primary: str | None = "db1"
        self.router = None
        self.toxi: FakeToxiproxy | None = None
        self.log: list[str] = []

    def address(self, endpoint: str) -> Address:
        return self.nodes[endpoint].addr

    def _verb(self, verb: str, name: str) -> None:
        self.log.append(f"{verb} {name}")
        node = self.nodes[name]
        if verb in ("kill", "stop"):
            node.running = False
        elif verb in ("start", "restart"):
            node.running = True
        node.paused = verb == "pause"

    def kill(self, name: str) -> None:
        self._verb("kill", name)

    def pause(self, name: str) -> None:
        self._verb("pause", name)

    def resume(self, name: str) -> None:
        self._verb("resume", name)

    def stop(self, name: str) -> None:
        self._verb("stop", name)

    def start(self, name: str, options: dict[str, str] | None = None) -> None:
        self._verb("start", name)

    def restart(self, name: str, options: dict[str, str] | None = None) -> None:
        self._verb("restart", name)


def ref(name: str) -> NodeRef:
    return NodeRef(name=name)


def nemesis(topo: FakeTopology) -> tuple[Nemesis, list[Op]]:
    history: list[Op] = []

    def record(op: Op) -> Op:
        history.append(op)
        return op

    return Nemesis(topo, record), history  # type: ignore[arg-type]
