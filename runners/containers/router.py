"""HAProxy in a container of its own on the run's network, in front of the node containers.

The configuration is ``runners.haproxy.HAProxy``'s (the same frontends, balance, mysql-check,
agent checks and timings); only where things are changes: the servers are the nodes by name
(``g1:3306``), the frontends listen on 3306 (writer) and 3307 (reader) inside the container,
published on 127.0.0.1 at the run's ``router.writer`` / ``router.reader`` ports, and the admin
socket is inside the container (``admin`` goes through the engine's ``exec``). What the lab reads
often — ``show stat``, every 50 ms while a load runs (``runners.router_watch``) — comes from a
second, read-only stats socket (``level user``) on TCP, published like the frontends at the
run's router admin port: an ``exec`` is a ``conmon`` and a ``runc exec`` on the engine's
machine, and polling through it left about 550 ``conmon`` processes behind in a 24 s Galera
run (ended at teardown: 4.5 s of its 5.9 s) and kept the machine busy beside every other test.

The role-aware agent checks run in the router's container too, not in the lab: one ``socat``
listener per node and role on the container's loopback runs ``assets/agent.sh``, which asks the
node with the ``mariadb`` client what the native agent asks (``read_only`` and, on Galera,
``wsrep_local_state``) and answers ``up ready`` or ``down``. Everything the router needs is on
the run's network, so it works the same on a remote engine (the lab on the host need not be
reachable from the containers).
"""

from __future__ import annotations

import shlex
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runners.containers import engine as engines
from runners.containers.part import ContainerPart
from runners.errors import ComponentError
from runners.haproxy import Backend, HAProxy
from runners.mysql import Credentials, wait_until
from runners.runtime import Run

AGENT = Path(__file__).with_name("assets") / "agent.sh"
AGENT_PATH = "/etc/lab/agent.sh"
CONFIG_PATH = "/etc/lab/haproxy.cfg"
ADMIN_SOCKET = "/run/haproxy-admin.sock"
STATS_PORT = 3308  # inside the router's container: the read-only stats socket (TCP)
WRITER_PORT, READER_PORT = 3306, 3307  # inside the router's container
AGENT_BASE = {"writer": 9100, "reader": 9200}  # + node index, on the container's loopback
NAME = "router"  # its alias on the run's network


def backends(names: list[str]) -> list[Backend]:
    """The nodes as the router's servers (node port inside its container, agent ports in the
    router's container)."""
    return [Backend(n, 3306, AGENT_BASE["writer"] + i, AGENT_BASE["reader"] + i)
            for i, n in enumerate(names, start=1)]


def agent_command(bs: list[Backend], writers: list[str], readers: list[str],
                  galera: bool) -> str:
    """The router container's command: the agent listeners, then HAProxy in the foreground."""
    parts = []
    for b in bs:
        for role, port, members in (("writer", b.writer_agent, writers),
                                    ("reader", b.reader_agent, readers)):
            if b.name in members:
                run = f"{AGENT_PATH} {role} {b.name} {int(galera)}"
                parts.append(f"socat TCP-LISTEN:{port},bind=127.0.0.1,fork,reuseaddr "
                             f"EXEC:{shlex.quote(run)} &")
    parts.append(f"exec haproxy -db -f {CONFIG_PATH}")
    return " ".join(parts)


class ContainerHAProxy(ContainerPart, HAProxy):
    def __init__(self, run: Run, names: list[str], writers: list[str], readers: list[str],
                 check_interval: float, published: tuple[int, int, int], *,
                 eng: engines.Engine,
                 image: str, network: Any, admin: Credentials, galera: bool,
                 via: dict[str, tuple[str, int]] | None = None) -> None:
        super().__init__(run, backends(names), writers, readers, check_interval, WRITER_PORT,
                         READER_PORT)
        self.published = published
        self.engine = eng
        self.image = image
        self.network = network
        self.admin_creds = admin
        self.galera = galera
        self.via = dict(via or {})  # node -> (host, port) the router reaches it at
        self.container: Any = None

    # --- where things are ----------------------------------------------------------------------
    def _stats_socket(self) -> str:
        return ADMIN_SOCKET

    def _bind(self, port: int) -> str:
        return f"0.0.0.0:{port}"

    def config_text(self) -> str:
        """HAProxy's, plus the read-only stats socket on TCP (``level user``: ``show stat``
        and ``show info``, nothing that changes a server)."""
        admin = f"    stats socket {self._stats_socket()} mode 600 level admin\n"
        text = super().config_text()
        assert admin in text
        return text.replace(admin, admin + f"    stats socket ipv4@0.0.0.0:{STATS_PORT} "
                            "level user\n", 1)

    def show_stat(self) -> str:
        """``show stat`` from the published stats socket: no ``exec`` (see the module)."""
        with socket.create_connection((self.engine.address, self.published[2]), timeout=2) as s:
            s.sendall(b"show stat\n")
            chunks: list[bytes] = []
            while data := s.recv(65536):
                chunks.append(data)
        return b"".join(chunks).decode()

    def _server(self, b: Backend, agent: int, inter: int) -> str:
        host, port = self.via.get(b.name, (b.name, b.port))
        return (f"    server {b.name} {host}:{port} check agent-check agent-addr 127.0.0.1 "
                f"agent-port {agent} agent-inter {inter}ms")

    # --- life ------------------------------------------------------------------------------------
    def start(self, writer_check: Callable[[str], bool] | None = None,
              reader_check: Callable[[str], bool] | None = None,
              ready_timeout: float = 20.0) -> None:
        """Start the router's container and wait until it routes writes (the role checks are
        the agent's in the container: ``writer_check`` and ``reader_check`` are not used)."""
        engines.testcontainers_env()
        from runners.containers.transfer import new_container

        self.cfg.write_text(self.config_text())  # a copy in the run directory
        tc = new_container(
            self.image, docker_client_kw=self.engine.client_kw,
            env={"LAB_ADMIN_USER": self.admin_creds.user,
                 "LAB_ADMIN_PASSWORD": self.admin_creds.password},
            name=f"lab-{self.run.id}-{NAME}", network=self.network, network_aliases=[NAME],
            init=True, hostname=NAME, labels=engines.run_labels(self.run.id, self.run.dir),
            **engines.limits(),
            cap_add=["NET_ADMIN"], entrypoint=["/bin/sh", "-c"],
        )
        tc.with_command([agent_command(self.backends, self.writers, self.readers,
                                       self.galera)])
        tc.with_copy_into_container(self.config_text().encode(), CONFIG_PATH)
        tc.with_copy_into_container(AGENT.read_bytes(), AGENT_PATH, mode=0o755)
        host = self.engine.address
        tc.ports[f"{WRITER_PORT}/tcp"] = (host, self.published[0])  # type: ignore[assignment]
        tc.ports[f"{READER_PORT}/tcp"] = (host, self.published[1])  # type: ignore[assignment]
        tc.ports[f"{STATS_PORT}/tcp"] = (host, self.published[2])  # type: ignore[assignment]
        self.container = engines.start_container(tc, "haproxy (container)", self.engine.url)
        wait_until(lambda: bool(self.stat()), 10, "answering on its admin socket", "haproxy",
                   None, alive=self.running)

        def settled() -> bool:
            states = {**self.server_states("writer"), **{
                f"r/{k}": v for k, v in self.server_states("reader").items()}}
            return bool(self.up_servers("writer")) and not any("/" in v for v in states.values())

        try:
            wait_until(settled, ready_timeout, "routing to a writer", "haproxy", None,
                       alive=self.running)
        except ComponentError as e:
            raise ComponentError("haproxy (container)", e.message, self.save_log()) from None

    def exec(self, cmd: list[str]) -> tuple[int, str]:
        code, out = self.container.exec_run(cmd, stdout=True, stderr=True)
        return int(code), out.decode("utf-8", "replace")

    def admin(self, command: str) -> str:
        """A command on the admin socket, through ``exec`` in the router's container."""
        code, out = self.exec(["sh", "-c", f"echo {shlex.quote(command)} | "
                               f"socat -t 2 - UNIX-CONNECT:{ADMIN_SOCKET}"])
        if code != 0:
            raise ComponentError("haproxy (container)", f"admin socket: {out.strip()}")
        return out
