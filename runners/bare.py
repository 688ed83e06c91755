"""Topologies dbdeployer cannot make with MariaDB: Galera clusters and two primaries
replicating from each other. Each node is a plain ``mariadbd`` process the lab starts.

Data directories come from the lab's cache of initialised ones (``runners.templates``): one
``mariadb-install-db`` per server and settings, a copy per node (``LAB_TEMPLATES=off``: installed
per node, as before).

Galera without state transfers at bring-up: every node starts from the same freshly initialised
data directory (node 1's, or the template's). Node 1 bootstraps a new cluster from a
``grastate.dat`` with a new cluster UUID at seqno 0; each joiner in turn gets a ``grastate.dat``
with that UUID at the cluster's position just before it starts (``wsrep_last_committed``: so far
only configuration changes, no data), so it joins with no transfer at all — neither SST nor IST
(its log says ``state transfer needed: no``). One joiner at a time: two joining at once sat in a
non-primary view for 6–7 s (EVS). While they join, EVS join messages go every 0.1 s instead of
Galera's 1 s (``BRINGUP_PROVIDER``), set back once every node is synced: an experiment runs with
the plan's options only. The lab's users are made on node 1 once every node is synced
and reach the others as ordinary write sets. A later fault that needs a state transfer (a node
behind the cluster's gcache, a wiped data directory) still gets a real one: the SST settings
are the plan's.
Running as root, the nodes run as the ``mysql`` user and their directories are chowned to it,
because the rsync state-transfer daemon drops privileges.

Every node's ``my.cnf`` is the plan's effective config (``dsl.compile.for_base_port`` for the
run's ports) with the lab's paths made absolute in the node's directory, plus the settings of
``dsl.owned.RUNTIME``: the OS user, the Galera provider found, the state-transfer credentials.

As root, each Galera node's server runs in a cgroup v2 group of its own from its first
instruction (``network_group_of``), which the group partition's iptables rules match.
"""

from __future__ import annotations

import logging
import os
import pwd
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path

import MySQLdb

from dsl.owned import NODE_DIR_PATHS, PROVIDER_KEY, RUNTIME, normal_key, parse_provider_options
from dsl.plan import PlannedNode
from runners import cgroups, templates
from runners.components import SPEC_BY_NAME, galera_provider, require
from runners.errors import ComponentError
from runners.mysql import Credentials, wait_until
from runners.node import ProcessNode
from runners.replication import LOOPBACK, synced, wire_replica
from runners.runtime import Run
from runners.users import user_statements

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
            if "\n" in k or "\n" in v or '"' in v:
                raise ValueError(f"newline or quote in config {k!r}")
            if ";" in v:  # Galera's options: quoted, as the server's own examples write them
                v = f'"{v}"'
            out.append(f"{k}={v}" if v != "" else k)
        out.append("")
    return "\n".join(out)


def node_config(planned: PlannedNode, node_dir: Path, runtime: dict[str, str]) -> dict[str, str]:
    """The my.cnf settings of a node: the plan's effective config with the lab's paths made
    absolute inside the node's directory, and the settings that depend on the machine and
    the run (``dsl.owned.RUNTIME``). Nothing else is decided here."""
    unexpected = set(runtime) - set(RUNTIME)
    if unexpected:
        raise ValueError(f"not run-time settings: {sorted(unexpected)}")
    cfg = {k: (str(node_dir / v) if k in NODE_DIR_PATHS else v) for k, v in planned.config.items()}
    missing = NODE_DIR_PATHS - set(cfg)
    if missing:
        raise ValueError(f"the plan of {planned.name} has no {sorted(missing)}")
    return {**cfg, **runtime}


def server_runtime() -> dict[str, str]:
    user = _server_user()
    return {"user": user} if user else {}


INSTALL_FLAGS = ("--auth-root-authentication-method=normal", "--skip-test-db")


def _installer() -> str:
    path = require("mariadbd").replace("/sbin/mariadbd", "/bin/mariadb-install-db")
    if not Path(path).exists():
        path = shutil.which("mariadb-install-db") or "mariadb-install-db"
    return path


def _install(cfg: dict[str, str], cnf: Path, node_dir: Path) -> None:
    Path(cfg["datadir"]).mkdir(parents=True, exist_ok=True)
    Path(cfg["tmpdir"]).mkdir(parents=True, exist_ok=True)
    user = _server_user()
    if user and user != "root":
        _chown_tree(node_dir, user)
    cmd = [_installer(), f"--defaults-file={cnf}", *INSTALL_FLAGS]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        server_log = Path(cfg["log_error"])
        extra = server_log.read_text(errors="replace") if server_log.exists() else ""
        (node_dir / "install.log").write_text(out.stdout + out.stderr + extra)
        raise ComponentError(f"mariadb-install-db ({node_dir.name})",
                             "could not initialise the data directory", node_dir / "install.log")


def install_datadir(cfg: dict[str, str], cnf: Path, node_dir: Path
                    ) -> templates.Template | None:
    """The node's data directory initialised: a copy of the template of its server and
    settings (``runners.templates``, returned), built first when missing;
    ``mariadb-install-db`` run for this node alone when templates are off (None)."""
    if not templates.enabled():
        _install(cfg, cnf, node_dir)
        return None
    try:
        template = templates.ensure(install_key(cfg), lambda raw: _install_into(
            cfg, node_dir.parent / f".template-build-{node_dir.name}", raw))
    except (OSError, subprocess.SubprocessError, templates.TemplateError) as e:
        # the cache saves time, it never stops a run: installed as without it
        log.warning("no data directory template (%s): %s installed alone", e, node_dir.name)
        _install(cfg, cnf, node_dir)
        return None
    copy_datadir(template, cfg, node_dir)
    return template


def copy_datadir(template: templates.Template, cfg: dict[str, str], node_dir: Path) -> None:
    Path(cfg["tmpdir"]).mkdir(parents=True, exist_ok=True)
    templates.copy_into(template, Path(cfg["datadir"]))
    user = _server_user()
    if user and user != "root":
        _chown_tree(node_dir, user)


# Settings that differ from node to node or run to run and never reach the initialised files
# (ports, addresses, names, the node's own paths, credentials): left out of the template's key.
# Every other setting of the node's my.cnf is in it (mariadb-install-db reads that file).
NOT_IN_INIT = NODE_DIR_PATHS | {
    "port", "server_id", "bind_address", "report_port", "report_host",
    "wsrep_cluster_address", "wsrep_node_name", "wsrep_node_address",
    "wsrep_node_incoming_address", "wsrep_sst_receive_address", "wsrep_sst_auth"}
PROVIDER_PORTS = ("gmcast.listen_addr", "ist.recv_addr", "ist.recv_bind", "base_port")


def install_key(cfg: dict[str, str]) -> templates.TemplateKey:
    """The template key of ``mariadb-install-db --defaults-file=my.cnf``: the binaries, the
    server's OS user, the installer's own flags, and every setting of the node's config but
    ``NOT_IN_INIT`` (in Galera's provider options, the run's ports are left out)."""
    fields: dict[str, str] = {}
    for k, v in cfg.items():
        key = normal_key(k)
        if key in NOT_IN_INIT:
            continue
        if key == "wsrep_provider_options":
            v = "; ".join(o.strip() for o in v.split(";")
                          if o.strip() and o.split("=")[0].strip() not in PROVIDER_PORTS)
        fields[f"config:{key}"] = v
    fields["mariadbd"] = templates.file_identity(require("mariadbd"))
    fields["installer"] = templates.file_identity(_installer())
    fields["flags"] = " ".join(INSTALL_FLAGS)
    fields["uid"] = str(os.getuid())
    return templates.TemplateKey("mariadb-install-db", fields)


def _install_into(cfg: dict[str, str], work: Path, raw: Path) -> Path:
    """``mariadb-install-db`` with the node's settings into a directory of the run (the
    server's OS user reaches it); that data directory (``raw`` unused)."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    paths = {"datadir": work / "data", "tmpdir": work / "tmp", "socket": work / "mysqld.sock",
             "pid_file": work / "mysqld.pid", "log_error": work / "error.log"}
    build_cfg = {**cfg, **{k: str(v) for k, v in paths.items()}}
    cnf = work / "my.cnf"
    cnf.write_text(cnf_text({"mysqld": build_cfg}))
    _install(build_cfg, cnf, work)
    return work / "data"


def bootstrap_users(socket: Path, statements: Iterable[str]) -> None:
    conn = MySQLdb.connect(unix_socket=str(socket), user="root", connect_timeout=5)
    try:
        cur = conn.cursor()
        for s in statements:
            cur.execute(s)
        cur.close()
    finally:
        conn.close()


def network_group_of(run_id: str, node: str, root: Path = cgroups.CGROUP_ROOT) -> Path | None:
    """The cgroup v2 group a Galera node's server runs in (``runners.cgroups.network_group``),
    so that a group partition can cut the connections the node opens itself: made when the
    lab runs as root and the machine has a cgroup v2 hierarchy; None otherwise (the partition
    then refuses to run, ``fault.network``). Cheap (a directory) and harmless (no controller
    is enabled in it), so every Galera node gets one, whether or not the plan partitions."""
    if os.geteuid() != 0 or cgroups.unified_dir(root) is None:
        return None
    try:
        return cgroups.network_group(run_id, node, root)
    except cgroups.CgroupError as e:
        log.warning("galera %s: no network group (%s): group partitions will refuse", node, e)
        return None


class GaleraCluster:
    def __init__(self, run: Run, planned: list[PlannedNode], admin: Credentials,
                 app: Credentials, repl: Credentials) -> None:
        self.run = run
        self.planned = planned
        self.admin, self.app, self.repl = admin, app, repl
        provider = galera_provider()
        if provider is None:
            raise ComponentError("galera", "no Galera provider (libgalera_smm.so): "
                                 + SPEC_BY_NAME["galera"].how_to_get)
        self.provider = provider
        self.mariadbd = require("mariadbd")
        require("rsync")
        self.nodes: list[ProcessNode] = []
        self.configs: dict[str, dict[str, str]] = {}

    def _cnf(self, planned: PlannedNode, node_dir: Path) -> dict[str, str]:
        return node_config(planned, node_dir, {
            **server_runtime(), "wsrep_provider": self.provider,
            "wsrep_sst_auth": f"{self.admin.user}:{self.admin.password}"})

    def deploy(self) -> list[ProcessNode]:
        for p in self.planned:
            node_dir = self.run.dir / p.name
            node_dir.mkdir()
            cfg = self._cnf(p, node_dir)
            self.configs[p.name] = cfg
            (node_dir / "my.cnf").write_text(cnf_text({"mysqld": bringup_config(cfg)[0]}))
            node = ProcessNode(self.run, p.name, "galera", p.index, p.port, node_dir,
                               self.admin, self.mariadbd, datadir=Path(cfg["datadir"]),
                               error_log=Path(cfg["log_error"]))
            node.network_group = network_group_of(self.run.id, p.name)
            self.nodes.append(node)
        # Every node starts from the same freshly initialised data directory; node 1
        # bootstraps a new cluster at <uuid>:0, each joiner joins at the cluster's position
        # (no state transfer), then the users are made once, on node 1 (module docstring).
        first = self.nodes[0]
        first_cfg = self.configs[first.name]
        t0 = time.monotonic()
        template = install_datadir(first_cfg, first.cnf, first.node_dir)
        cluster = str(uuid.uuid4())
        user = _server_user()
        for node in self.nodes[1:]:  # node 1's template, or a copy of its fresh directory
            cfg = self.configs[node.name]
            if template is not None:
                copy_datadir(template, cfg, node.node_dir)
                continue
            shutil.copytree(first.datadir, node.datadir, symlinks=True)
            Path(cfg["tmpdir"]).mkdir(parents=True, exist_ok=True)
            if user and user != "root":
                _chown_tree(node.node_dir, user)
        log.info("galera: data directories ready at %.2fs", time.monotonic() - t0)
        write_grastate(first.datadir, cluster, 0, safe_to_bootstrap=True)
        first.extra_args = ["--wsrep-new-cluster"]
        try:
            first.start(wait=False)
        finally:
            first.extra_args = []  # a later start joins the cluster, never bootstraps another
        sock = Path(first_cfg["socket"])
        self._wait_socket(first, sock, _wsrep_ready, "ready for application use (wsrep_ready)")
        log.info("galera: node 1 bootstrapped at %.2fs", time.monotonic() - t0)
        for node in self.nodes[1:]:
            position = int(_status(sock, "wsrep_last_committed"))
            write_grastate(node.datadir, cluster, position, safe_to_bootstrap=False)
            node.start(wait=False)
            self._wait_socket(node, Path(self.configs[node.name]["socket"]), _wsrep_synced,
                              "synced with the cluster")
            log.info("galera: %s joined at %.2fs", node.name, time.monotonic() - t0)
        bootstrap_users(sock, user_statements(self.admin, self.app, self.repl))
        made = int(_status(sock, "wsrep_last_committed"))
        for node in self.nodes[1:]:  # the users are there before a client may connect
            nsock = Path(self.configs[node.name]["socket"])
            self._wait_socket(node, nsock,
                              lambda s: int(_status(s, "wsrep_last_committed")) >= made,
                              "applying the lab's users")
        for node in self.nodes:
            self.wait_synced(node, 60)
        self._end_bringup()
        log.info("galera: every node synced at %.2fs", time.monotonic() - t0)
        return self.nodes

    def _end_bringup(self) -> None:
        """Every node runs the plan's provider options from here on: the bring-up ones set
        back (``SET GLOBAL``, read back) and the plan's my.cnf written for later starts."""
        for node in self.nodes:
            cfg = self.configs[node.name]
            _, restore = bringup_config(cfg)
            sock = Path(cfg["socket"])
            if restore:
                bootstrap_users(sock, [f"SET GLOBAL wsrep_provider_options = '{restore}'"])
                running = {k.strip(): v.strip() for k, _, v in (
                    item.partition("=") for item in _variable(sock, PROVIDER_KEY).split(";"))}
                for key, value in parse_provider_options(restore):
                    if running.get(key) != value:
                        raise ComponentError(node.component, f"{key} is {running.get(key)} "
                                             f"after setting it back to {value}",
                                             node.error_log)
            node.cnf.write_text(cnf_text({"mysqld": cfg}))

    def _wait_socket(self, node: ProcessNode, sock: Path, ready: Callable[[Path], bool],
                     what: str, timeout: float = 60.0) -> None:
        proc = node.proc

        def check() -> bool:
            try:
                return sock.exists() and ready(sock)
            except MySQLdb.Error:
                return False

        wait_until(check, timeout, what, node.component, node.error_log,
                   alive=lambda: proc is not None and proc.poll() is None)

    def wait_synced(self, node: ProcessNode, timeout: float) -> float:
        proc = node.proc
        return wait_until(lambda: synced(node), timeout, "synced with the cluster",
                          node.component, node.error_log,
                          alive=lambda: proc is not None and proc.poll() is None)


def _socket_answers(sock: Path) -> bool:
    return sock.exists() and _socket_ok(sock)


def _alive(proc: subprocess.Popen[bytes] | None) -> bool:
    return proc is not None and proc.poll() is None


def _socket_ok(sock: Path) -> bool:
    try:
        conn = MySQLdb.connect(unix_socket=str(sock), user="root", connect_timeout=1)
    except MySQLdb.Error:
        return False
    conn.close()
    return True


def write_grastate(datadir: Path, cluster: str, seqno: int, safe_to_bootstrap: bool) -> None:
    """Galera's saved state (``grastate.dat``): the cluster's UUID and the node's position;
    owned like its directory (the server's OS user writes it again)."""
    path = datadir / "grastate.dat"
    path.write_text("# GALERA saved state\nversion: 2.1\n"
                    f"uuid:    {cluster}\nseqno:   {seqno}\n"
                    f"safe_to_bootstrap: {1 if safe_to_bootstrap else 0}\n")
    st = datadir.stat()
    if os.getuid() == 0:
        os.chown(path, st.st_uid, st.st_gid)


# Bring-up only: EVS join messages every 0.1 s instead of Galera's 1 s, so that a joiner is
# declared a member in a tenth of the time (measured: 3 nodes ready in 3.45 s median instead of
# 4.68 s); set back to Galera's default, or to the plan's value, once every node is synced, and
# never in force while an experiment runs. An option the plan sets is the plan's from the start.
BRINGUP_PROVIDER = {"evs.join_retrans_period": "PT0.1S"}
GALERA_DEFAULTS = {"evs.join_retrans_period": "PT1S"}


def bringup_config(cfg: dict[str, str]) -> tuple[dict[str, str], str]:
    """A Galera node's config for bring-up (the plan's, with ``BRINGUP_PROVIDER``'s options
    the plan does not set) and the provider options that set them back afterwards ("" when
    nothing was added: not a Galera node, or the plan sets them all)."""
    value = cfg.get(PROVIDER_KEY)
    if value is None:
        return cfg, ""
    plan_keys = {k for k, _ in parse_provider_options(value)}
    added = {k: v for k, v in BRINGUP_PROVIDER.items() if k not in plan_keys}
    if not added:
        return cfg, ""
    extra = "; ".join(f"{k}={v}" for k, v in added.items())
    restore = "; ".join(f"{k}={GALERA_DEFAULTS[k]}" for k in added)
    return {**cfg, PROVIDER_KEY: f"{value.rstrip().rstrip(';')}; {extra}"}, restore


def _show(sock: Path, what: str, name: str, connect_timeout: int = 1) -> str:
    """One value of ``SHOW GLOBAL STATUS`` or ``SHOW GLOBAL VARIABLES`` (``what``) through
    the node's socket as root ("" when there is no such name)."""
    conn = MySQLdb.connect(unix_socket=str(sock), user="root", connect_timeout=connect_timeout)
    try:
        cur = conn.cursor()
        cur.execute(f"SHOW GLOBAL {what} LIKE %s", (name,))
        row = cur.fetchone()
        return "" if row is None else str(row[1])
    finally:
        conn.close()


def _variable(sock: Path, name: str) -> str:
    return _show(sock, "VARIABLES", name, connect_timeout=5)


def _status(sock: Path, name: str) -> str:
    return _show(sock, "STATUS", name)


def _wsrep_synced(sock: Path) -> bool:
    """The node is a synced member of the primary component (``wsrep_local_state`` 4)."""
    return _status(sock, "wsrep_local_state") == "4" and _wsrep_ready(sock)


def _wsrep_ready(sock: Path) -> bool:
    """The node answers and is ready for application use (``wsrep_ready = ON``): before that,
    statements fail with 1047 even though the socket answers."""
    try:
        conn = MySQLdb.connect(unix_socket=str(sock), user="root", connect_timeout=1)
    except MySQLdb.Error:
        return False
    try:
        cur = conn.cursor()
        cur.execute("SHOW STATUS LIKE 'wsrep_ready'")
        row = cur.fetchone()
        return row is not None and str(row[1]).upper() == "ON"
    except MySQLdb.Error:
        return False
    finally:
        conn.close()


class PrimaryPair:
    """Two primaries replicating from each other, one GTID domain per node (the plan's)."""

    def __init__(self, run: Run, planned: list[PlannedNode], admin: Credentials,
                 app: Credentials, repl: Credentials,
                 replication_port: dict[str, int] | None = None) -> None:
        self.run = run
        self.planned = planned
        self.admin, self.app, self.repl = admin, app, repl
        self.mariadbd = require("mariadbd")
        self.replication_port = replication_port or {}
        self.nodes: list[ProcessNode] = []
        self.configs: dict[str, dict[str, str]] = {}

    def deploy(self) -> list[ProcessNode]:
        for p in self.planned:
            node_dir = self.run.dir / p.name
            node_dir.mkdir()
            cfg = node_config(p, node_dir, server_runtime())
            self.configs[p.name] = cfg
            (node_dir / "my.cnf").write_text(cnf_text({"mysqld": bringup_config(cfg)[0]}))
            node = ProcessNode(self.run, p.name, "primary_primary", p.index, p.port, node_dir,
                               self.admin, self.mariadbd, datadir=Path(cfg["datadir"]),
                               error_log=Path(cfg["log_error"]))
            self.nodes.append(node)
        for node in self.nodes:
            install_datadir(self.configs[node.name], node.cnf, node.node_dir)
        for node in self.nodes:
            node.extra_args = ["--skip-slave-start"]
            node.start(wait=False)
        for node in self.nodes:
            sock = Path(self.configs[node.name]["socket"])
            proc = node.proc
            wait_until(partial(_socket_answers, sock), 60, "answering on its socket",
                       node.component, node.error_log, alive=partial(_alive, proc))
            # Users are made locally on each node before replication starts, not replicated.
            bootstrap_users(sock, ["SET sql_log_bin=0",
                                   *user_statements(self.admin, self.app, self.repl)])
            node.extra_args = []
        for node in self.nodes:
            other = self.nodes[1] if node is self.nodes[0] else self.nodes[0]
            port = self.replication_port.get(node.name, other.port)
            wire_replica(node, other, (LOOPBACK, port), self.repl, read_only=False)
        return self.nodes
