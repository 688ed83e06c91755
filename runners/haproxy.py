"""HAProxy in front of the nodes, with health checks that know roles.

``option mysql-check`` only tests the handshake, so a read-only replica or a non-synced Galera
node would still count as a writer. Each backend server therefore also has an *agent check*:
the lab answers on a small TCP port per node and role with ``up`` or ``down`` from what the node
says (writer: ``read_only=0`` and, on Galera, ``wsrep_local_state=4``; reader: answering and,
on Galera, synced). The lab can also move the writer at once through the admin socket
(``promote``).
"""

from __future__ import annotations

import contextlib
import socket
import socketserver
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from runners.components import require
from runners.errors import ComponentError
from runners.mysql import wait_until
from runners.runtime import Run

RoleCheck = Callable[[], bool]


class _AgentHandler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        check: RoleCheck = self.server.check  # type: ignore[attr-defined]
        try:
            ok = check()
        except Exception:  # noqa: BLE001 - any failure is "down"
            ok = False
        with contextlib.suppress(OSError):
            self.request.sendall(b"up ready\n" if ok else b"down\n")


class _AgentServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class RoleAgent:
    """One agent port answering for one node in one role."""

    def __init__(self, port: int, check: RoleCheck) -> None:
        self.server = _AgentServer(("127.0.0.1", port), _AgentHandler)
        self.server.check = check  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True,
                                       kwargs={"poll_interval": 0.1})
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class Backend:
    name: str  # node name
    port: int  # where haproxy sends traffic (the node, or its client proxy)
    writer_agent: int
    reader_agent: int


class HAProxy:
    def __init__(self, run: Run, backends: list[Backend], writers: list[str], readers: list[str],
                 check_interval: float, writer_port: int, reader_port: int) -> None:
        self.run = run
        self.start_crashes: list[str] = []  # ``Router``'s: never started again by the lab
        self.backends = backends
        self.writers = writers
        self.readers = readers
        self.interval_ms = max(50, int(check_interval * 1000))
        self.writer_port = writer_port
        self.reader_port = reader_port
        self.dir = run.dir / "haproxy"
        self.dir.mkdir(exist_ok=True)
        self.cfg = self.dir / "haproxy.cfg"
        self.sock = self.dir / "admin.sock"
        self.log = self.dir / "haproxy.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.agents: list[RoleAgent] = []

    # --- where things are (``runners.containers.router`` places them in a container) ---------
    def _stats_socket(self) -> str:
        return str(self.sock)

    def _bind(self, port: int) -> str:
        return f"127.0.0.1:{port}"

    def _server(self, b: Backend, agent: int, inter: int) -> str:
        return (f"    server {b.name} 127.0.0.1:{b.port} check agent-check "
                f"agent-port {agent} agent-inter {inter}ms")

    def config_text(self) -> str:
        inter = self.interval_ms
        lines = [
            "global",
            f"    stats socket {self._stats_socket()} mode 600 level admin",
            "    maxconn 4000",
            "defaults",
            "    mode tcp",
            "    timeout connect 2s",
            "    timeout client 1h",
            "    timeout server 1h",
            f"    default-server inter {inter}ms fastinter {inter}ms downinter {inter}ms "
            "fall 2 rise 2 on-marked-down shutdown-sessions",
        ]
        for role, port, balance, members in (
            ("writer", self.writer_port, "first", self.writers),
            ("reader", self.reader_port, "roundrobin", self.readers),
        ):
            lines += ["", f"frontend {role}", f"    bind {self._bind(port)}",
                      f"    default_backend {role}", f"backend {role}", f"    balance {balance}",
                      "    option mysql-check user hacheck post-41"]
            for b in self.backends:
                if b.name in members:
                    agent = b.writer_agent if role == "writer" else b.reader_agent
                    lines.append(self._server(b, agent, inter))
        return "\n".join(lines) + "\n"

    def start(self, writer_check: Callable[[str], bool], reader_check: Callable[[str], bool],
              ready_timeout: float = 15.0) -> None:
        binary = require("haproxy")
        for b in self.backends:
            if b.name in self.writers:
                self.agents.append(RoleAgent(b.writer_agent, partial(writer_check, b.name)))
            if b.name in self.readers:
                self.agents.append(RoleAgent(b.reader_agent, partial(reader_check, b.name)))
        self.cfg.write_text(self.config_text())
        check = subprocess.run([binary, "-c", "-f", str(self.cfg)], capture_output=True,
                               text=True)
        if check.returncode != 0:
            self.log.write_text(check.stdout + check.stderr)
            raise ComponentError("haproxy", "configuration rejected", self.log)
        logf = open(self.log, "ab")
        self.proc = subprocess.Popen([binary, "-db", "-f", str(self.cfg)], stdout=logf,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        logf.close()
        self.run.record(self.proc.pid, "haproxy")
        proc = self.proc
        wait_until(lambda: self.sock.exists() and bool(self.stat()), 10, "answering on its "
                   "admin socket", "haproxy", self.log, alive=lambda: proc.poll() is None)
        # Ready when the writer backend has a server up (if any writer is meant to be).
        # ... and no server is in transition ("UP 1/2": haproxy assumes servers up at start,
        # so read-only nodes must first be seen failing the role check).
        def settled() -> bool:
            states = {**self.server_states("writer"), **{
                f"r/{k}": v for k, v in self.server_states("reader").items()}}
            return bool(self.up_servers("writer")) and not any("/" in v for v in states.values())

        wait_until(settled, ready_timeout,
                   "routing to a writer", "haproxy", self.log,
                   alive=lambda: proc.poll() is None)

    # --- admin socket ------------------------------------------------------------------------
    def admin(self, command: str) -> str:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(2)
            s.connect(str(self.sock))
            s.sendall(command.encode() + b"\n")
            chunks: list[bytes] = []
            while True:
                data = s.recv(65536)
                if not data:
                    break
                chunks.append(data)
        return b"".join(chunks).decode()

    def show_stat(self) -> str:
        """``show stat`` (CSV) from the admin socket."""
        return self.admin("show stat")

    def stat(self) -> list[dict[str, str]]:
        text = self.show_stat()
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if not lines or not lines[0].startswith("# "):
            return []
        cols = lines[0][2:].split(",")
        return [dict(zip(cols, ln.split(","), strict=False)) for ln in lines[1:]]

    def server_states(self, backend: str) -> dict[str, str]:
        return {r["svname"]: r["status"] for r in self.stat()
                if r.get("pxname") == backend and r["svname"] not in ("FRONTEND", "BACKEND")}

    def up_servers(self, backend: str) -> list[str]:
        return [n for n, st in self.server_states(backend).items() if st.startswith("UP")]

    def move_writer(self, node: str) -> float:
        """Route writes to ``node`` now: every other writer server to maintenance. Returns
        the seconds it took."""
        t0 = time.monotonic()
        if node not in self.writers:
            raise ComponentError("haproxy", f"{node} is not in the writer backend")
        for b in self.backends:
            if b.name in self.writers and b.name != node:
                self.admin(f"set server writer/{b.name} state maint")
        # Do not wait for the next checks to notice the new role: mark it up now (the checks
        # keep running and would take it down again if it were wrong).
        for cmd in ("state ready", "health up", "agent up"):
            self.admin(f"set server writer/{node} {cmd}")
        return time.monotonic() - t0

    def stop(self) -> None:
        for a in self.agents:
            a.close()
        self.agents = []
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)
            self.run.forget(self.proc.pid)
