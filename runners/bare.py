"""Topologies dbdeployer cannot make with MariaDB: Galera clusters and two primaries
replicating from each other. Each node is a plain ``mariadbd`` process the lab starts.

Galera: node 1 bootstraps the cluster. To avoid a full state transfer per joiner (serial, ~4.5 s
each), every node starts from a copy of one freshly installed data directory and a
``grastate.dat`` carrying the same cluster UUID at seqno 0, so joiners need no transfer at all.
Running as root, the nodes run as the ``mysql`` user and their directories are chowned to it,
because the rsync state-transfer daemon drops privileges.
"""

from __future__ import annotations

import logging
import os
import pwd
import shutil
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path

import MySQLdb

from runners.components import galera_provider, require
from runners.errors import ComponentError
from runners.mysql import Address, Credentials, execute_all, wait_until
from runners.node import ProcessNode
from runners.runtime import Run

log = logging.getLogger(__name__)


def _server_user() -> str | None:
    if os.getuid() != 0:
        return None
    try:
        pwd.getpwnam("mysql")
        return "mysql"
    except KeyError:
        return "root"


def _make_traversable(path: Path) -> None:
    """The server user must reach its directory: give o+x to every parent we own."""
    for parent in [path, *path.parents]:
        try:
            st = parent.stat()
            if st.st_uid == os.getuid() and not st.st_mode & 0o001:
                os.chmod(parent, st.st_mode | 0o011)
        except OSError:
            continue


def _chown_tree(path: Path, user: str) -> None:
    _make_traversable(path.parent)
    pw = pwd.getpwnam(user)
    for root, dirs, files in os.walk(path):
        os.chown(root, pw.pw_uid, pw.pw_gid)
        for n in dirs + files:
            os.lchown(os.path.join(root, n), pw.pw_uid, pw.pw_gid)


def cnf_text(sections: dict[str, dict[str, str]]) -> str:
    out: list[str] = []
    for section, values in sections.items():
        out.append(f"[{section}]")
        for k, v in values.items():
            if "\n" in k or "\n" in v:
                raise ValueError(f"newline in config {k!r}")
            out.append(f"{k}={v}" if v != "" else k)
        out.append("")
    return "\n".join(out)


def base_server_config(node_dir: Path, port: int, server_id: int) -> dict[str, str]:
    data = node_dir / "data"
    cfg = {
        "datadir": str(data),
        "socket": str(node_dir / "mysqld.sock"),
        "pid-file": str(node_dir / "mysqld.pid"),
        "log-error": str(node_dir / "error.log"),
        "port": str(port),
        "bind-address": "127.0.0.1",
        "server-id": str(server_id),
        "log-bin": "mysql-bin",
        "log-slave-updates": "ON",
        "binlog_format": "ROW",
        "skip-name-resolve": "ON",
        "innodb_log_file_size": "32M",
        "innodb_buffer_pool_size": "64M",
        "tmpdir": str(node_dir / "tmp"),
    }
    user = _server_user()
    if user:
        cfg["user"] = user
    return cfg


def install_datadir(node_dir: Path, cnf: Path) -> None:
    (node_dir / "data").mkdir(parents=True, exist_ok=True)
    (node_dir / "tmp").mkdir(parents=True, exist_ok=True)
    user = _server_user()
    if user and user != "root":
        _chown_tree(node_dir, user)
    cmd = [require("mariadbd").replace("/sbin/mariadbd", "/bin/mariadb-install-db"),
           f"--defaults-file={cnf}", "--auth-root-authentication-method=normal",
           "--skip-test-db"]
    if not Path(cmd[0]).exists():
        cmd[0] = shutil.which("mariadb-install-db") or "mariadb-install-db"
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        server_log = node_dir / "error.log"
        extra = server_log.read_text(errors="replace") if server_log.exists() else ""
        (node_dir / "install.log").write_text(out.stdout + out.stderr + extra)
        raise ComponentError(f"mariadb-install-db ({node_dir.name})",
                             "could not initialise the data directory", node_dir / "install.log")


def bootstrap_users(socket: Path, statements: Iterable[str]) -> None:
    conn = MySQLdb.connect(unix_socket=str(socket), user="root", connect_timeout=5)
    try:
        cur = conn.cursor()
        for s in statements:
            cur.execute(s)
        cur.close()
    finally:
        conn.close()


def user_statements(admin: Credentials, app: Credentials, repl: Credentials) -> list[str]:
    """Users of every lab topology. The application user lacks SUPER and READ_ONLY ADMIN,
    so ``read_only=1`` stops it (in 10.11 ALL PRIVILEGES includes READ_ONLY ADMIN)."""
    out: list[str] = []
    for host in ("127.0.0.1", "localhost"):
        out += [
            f"CREATE USER IF NOT EXISTS '{admin.user}'@'{host}' IDENTIFIED BY '{admin.password}'",
            f"GRANT ALL PRIVILEGES ON *.* TO '{admin.user}'@'{host}' WITH GRANT OPTION",
            f"CREATE USER IF NOT EXISTS '{app.user}'@'{host}' IDENTIFIED BY '{app.password}'",
            f"GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, INDEX, ALTER, "
            f"CREATE TEMPORARY TABLES, LOCK TABLES, EXECUTE, PROCESS, "
            f"REPLICATION CLIENT ON *.* TO '{app.user}'@'{host}'",
        ]
    out += [
        f"CREATE USER IF NOT EXISTS '{repl.user}'@'127.0.0.1' IDENTIFIED BY '{repl.password}'",
        f"GRANT REPLICATION SLAVE ON *.* TO '{repl.user}'@'127.0.0.1'",
        "CREATE USER IF NOT EXISTS 'hacheck'@'127.0.0.1'",
    ]
    return out


class GaleraCluster:
    def __init__(self, run: Run, names: list[str], configs: dict[str, dict[str, str]],
                 admin: Credentials, app: Credentials, repl: Credentials) -> None:
        self.run = run
        self.names = names
        self.configs = configs
        self.admin, self.app, self.repl = admin, app, repl
        provider = galera_provider()
        if provider is None:
            raise ComponentError("galera", "no Galera provider (libgalera_smm.so): "
                                 "apt-get install -y galera-4")
        self.provider = provider
        self.mariadbd = require("mariadbd")
        require("rsync")
        self.nodes: list[ProcessNode] = []

    def _cnf(self, i: int, name: str, node_dir: Path) -> dict[str, str]:
        ports = self.run.ports
        n = len(self.names)
        group = ",".join(f"127.0.0.1:{ports.galera_group(k)}" for k in range(1, n + 1))
        cfg = base_server_config(node_dir, ports.node(i), i)
        cfg.update({
            "wsrep_on": "ON",
            "wsrep_provider": self.provider,
            "wsrep_cluster_name": f"lab_{self.run.id}",
            "wsrep_cluster_address": f"gcomm://{group}",
            "wsrep_node_name": name,
            "wsrep_node_address": f"127.0.0.1:{ports.galera_group(i)}",
            "wsrep_provider_options": (
                f'"gmcast.listen_addr=tcp://127.0.0.1:{ports.galera_group(i)};'
                f"ist.recv_addr=127.0.0.1:{ports.galera_ist(i)};"
                f'evs.suspect_timeout=PT3S;evs.inactive_timeout=PT6S;gcache.size=64M"'
            ),
            "wsrep_sst_method": "rsync",
            "wsrep_sst_receive_address": f"127.0.0.1:{ports.galera_sst(i)}",
            "wsrep_sst_auth": f"{self.admin.user}:{self.admin.password}",
            "innodb_autoinc_lock_mode": "2",
            "log-bin": "mysql-bin",
            "gtid_domain_id": "1",
        })
        cfg.update(self.configs.get(name, {}))
        return cfg

    def deploy(self) -> list[ProcessNode]:
        for i, name in enumerate(self.names, start=1):
            node_dir = self.run.dir / name
            node_dir.mkdir()
            cfg = self._cnf(i, name, node_dir)
            (node_dir / "my.cnf").write_text(cnf_text({"mysqld": cfg}))
            self.nodes.append(ProcessNode(self.run, name, "galera", i, self.run.ports.node(i),
                                          node_dir, self.admin, self.mariadbd))
        # Node 1 bootstraps a one-node cluster (which creates the wsrep schema and users),
        # stops cleanly, and its data directory is copied to the others: they then join at
        # the same position and need no state transfer.
        first = self.nodes[0]
        t0 = time.monotonic()
        install_datadir(first.node_dir, first.cnf)
        first.extra_args = ["--wsrep-new-cluster"]
        first.start(wait=False)
        sock = first.node_dir / "mysqld.sock"
        proc = first.proc
        wait_until(lambda: sock.exists() and _socket_ok(sock), 60, "answering on its socket",
                   first.component, first.error_log,
                   alive=lambda: proc is not None and proc.poll() is None)
        bootstrap_users(sock, user_statements(self.admin, self.app, self.repl))
        log.info("galera: node 1 bootstrapped in %.2fs", time.monotonic() - t0)
        first.stop()
        log.info("galera: node 1 stopped at %.2fs", time.monotonic() - t0)
        user = _server_user()
        for node in self.nodes[1:]:
            shutil.copytree(first.datadir, node.datadir, symlinks=True)
            (node.node_dir / "tmp").mkdir(exist_ok=True)
            state = (node.datadir / "grastate.dat").read_text()
            (node.datadir / "grastate.dat").write_text(
                state.replace("safe_to_bootstrap: 1", "safe_to_bootstrap: 0"))
            for f in ("mysqld.sock", "mysqld.pid"):
                (node.node_dir / f).unlink(missing_ok=True)
            if user and user != "root":
                _chown_tree(node.node_dir, user)
        log.info("galera: copies made at %.2fs", time.monotonic() - t0)
        first.start()
        log.info("galera: node 1 restarted at %.2fs", time.monotonic() - t0)
        first.extra_args = []
        for node in self.nodes[1:]:
            node.start(wait=False)
        for node in self.nodes:
            self.wait_synced(node, 60)
            log.info("galera: %s synced at %.2fs", node.name, time.monotonic() - t0)
        return self.nodes

    def wait_synced(self, node: ProcessNode, timeout: float) -> float:
        def synced() -> bool:
            rows = node.sql("SHOW GLOBAL STATUS LIKE 'wsrep_local_state'", timeout=1)
            return bool(rows) and str(rows[0]["Value"]) == "4"
        proc = node.proc
        return wait_until(synced, timeout, "synced with the cluster", node.component,
                          node.error_log, alive=lambda: proc is not None and proc.poll() is None)


def _socket_ok(sock: Path) -> bool:
    try:
        conn = MySQLdb.connect(unix_socket=str(sock), user="root", connect_timeout=1)
    except MySQLdb.Error:
        return False
    conn.close()
    return True


class PrimaryPair:
    """Two primaries replicating from each other, one GTID domain per node."""

    def __init__(self, run: Run, names: list[str], configs: dict[str, dict[str, str]],
                 auto_increment_offsets: bool, admin: Credentials, app: Credentials,
                 repl: Credentials, replication_port: dict[str, int] | None = None) -> None:
        self.run = run
        self.names = names
        self.configs = configs
        self.offsets = auto_increment_offsets
        self.admin, self.app, self.repl = admin, app, repl
        self.mariadbd = require("mariadbd")
        self.replication_port = replication_port or {}
        self.nodes: list[ProcessNode] = []

    def deploy(self) -> list[ProcessNode]:
        n = len(self.names)
        for i, name in enumerate(self.names, start=1):
            node_dir = self.run.dir / name
            node_dir.mkdir()
            cfg = base_server_config(node_dir, self.run.ports.node(i), i)
            cfg["gtid_domain_id"] = str(i)
            if self.offsets:
                cfg["auto_increment_increment"] = str(n)
                cfg["auto_increment_offset"] = str(i)
            cfg.update(self.configs.get(name, {}))
            (node_dir / "my.cnf").write_text(cnf_text({"mysqld": cfg}))
            node = ProcessNode(self.run, name, "primary_primary", i, self.run.ports.node(i),
                               node_dir, self.admin, self.mariadbd)
            self.nodes.append(node)
        for node in self.nodes:
            install_datadir(node.node_dir, node.cnf)
        for node in self.nodes:
            node.extra_args = ["--skip-slave-start"]
            node.start(wait=False)
        for node in self.nodes:
            sock = node.node_dir / "mysqld.sock"
            proc = node.proc
            wait_until(lambda s=sock: s.exists() and _socket_ok(s), 60, "answering on its socket",
                       node.component, node.error_log,
                       alive=lambda p=proc: p is not None and p.poll() is None)
            # Users are made locally on each node before replication starts, not replicated.
            bootstrap_users(sock, ["SET sql_log_bin=0",
                                   *user_statements(self.admin, self.app, self.repl)])
            node.extra_args = []
        for node in self.nodes:
            other = self.nodes[1] if node is self.nodes[0] else self.nodes[0]
            port = self.replication_port.get(node.name, other.port)
            execute_all(node.addr, self.admin, [
                f"CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={port}, "
                f"MASTER_USER='{self.repl.user}', MASTER_PASSWORD='{self.repl.password}', "
                "MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1",
                "START SLAVE",
            ])
        return self.nodes


def addresses(nodes: list[ProcessNode]) -> list[Address]:
    return [n.addr for n in nodes]
