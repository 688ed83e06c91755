"""A node of ``backend containers`` (``runners.containers.topology``): ``ContainerNode``, the
server in a container of the lab's image, whose process verbs go through the engine's API
(``kill`` SIGKILL to the container, ``stop`` a clean shutdown, ``start`` with the same data and
the ``start ... with`` options of that start, ``pause``/``resume`` the engine's freezer);
the server's command line in the container (``server_args``: the plan's config, less what
the container decides) and the names of a run's containers and network."""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Any

from dsl.owned import NODE_DIR_PATHS, RUNTIME
from dsl.plan import PlannedNode
from runners import disk
from runners.containers import engine as engines
from runners.errors import ComponentError
from runners.mysql import Address, Credentials, sql_ready, wait_until
from runners.node import READY_TIMEOUT, Node
from runners.runtime import Run

log = logging.getLogger(__name__)

SERVER_PORT = 3306  # inside every container
START_OPTIONS = "/etc/lab/start-options"
DATADIR = "/var/lib/mysql"  # in every node's container
FAKETIME_FILE = "/etc/lab/faketime"  # clock skew: the server's offset, in its container
USER_ENTRYPOINT = "/lab-entrypoint"  # the lab's entrypoint, copied into an image of the file's
USERS_FILE = "/lab-users.sql"  # the lab's users (runners.users.init_file), in every node
# disk full: the lab's tmpfs (this machine's, bind-mounted) in the node's container; io faults:
# the lab-iofs mount (this machine's, bind-mounted) at the same place
MOUNTS = {"data": "/lab/data", "binlog": "/lab/binlog"}
SEED_SIZE = 2 * 1024**3  # a data directory's tmpfs while the image's is copied in (then shrunk)
STOP_TIMEOUT = 60
# Settings the container decides (where the server listens and keeps its files): replaced.
CONTAINER_SETTINGS = {
    "port": str(SERVER_PORT),
    "bind_address": "0.0.0.0",
    "datadir": DATADIR,
    "tmpdir": "/tmp",
    "socket": "/run/mysqld/mysqld.sock",
    "pid_file": "/run/mysqld/mysqld.pid",
}
DROPPED = frozenset({"server_id", "log_error", "report_port", *RUNTIME}) | NODE_DIR_PATHS
GALERA_PROVIDER = "/usr/lib/galera/libgalera_smm.so"  # galera-4 in the image
# The native back-end's loopback addresses and ports: in a container the defaults apply
# (4567 group, 4568 IST, 4444 state transfer on the node's own address).
GALERA_DROPPED = frozenset({"wsrep_node_address", "wsrep_sst_receive_address",
                            "wsrep_node_incoming_address"})
PROVIDER_DROPPED = ("gmcast.listen_addr", "ist.recv_addr")


def provider_options(value: str) -> str:
    """The plan's ``wsrep_provider_options`` without the native back-end's addresses."""
    kept = [o.strip() for o in value.split(";")
            if o.strip() and o.split("=", 1)[0].strip() not in PROVIDER_DROPPED]
    return "; ".join(kept)


def server_args(planned: PlannedNode, group: list[str] | None = None,
                mounts: dict[str, str] | None = None) -> list[str]:
    """``mariadbd`` arguments of a node in its container: the plan's effective config, with
    where it listens and keeps its files set for the container; its error log goes to the
    container's output (``ContainerNode.error_log`` keeps a copy in the run directory).
    ``group``: the Galera nodes, by name (their addresses on the run's network)."""
    cfg = {k: v for k, v in planned.config.items() if k not in DROPPED}
    cfg.update(CONTAINER_SETTINGS)
    mounts = mounts or {}
    if "data" in mounts:  # disk full NODE: the data directory on the lab's tmpfs
        cfg["datadir"] = mounts["data"]
    if "binlog" in mounts:  # disk full NODE binlog: the binary logs on the lab's tmpfs
        base = next((v for k, v in planned.config.items()
                     if k.replace("-", "_") == "log_bin"), None)
        if base is None:
            raise ComponentError(f"node {planned.name}", "disk full ... binlog: the server "
                                 "writes no binary logs (config { log_bin = mysql-bin })")
        cfg.update(disk.binlog_settings(Path(mounts["binlog"]), Path(base).name))
    cfg["report_host"] = planned.name
    cfg["report_port"] = str(SERVER_PORT)
    cfg.setdefault("skip_name_resolve", "ON")  # no reverse lookups of the clients' addresses
    if group is not None:
        cfg = {k: v for k, v in cfg.items() if k not in GALERA_DROPPED}
        cfg["wsrep_provider"] = GALERA_PROVIDER
        cfg["wsrep_cluster_address"] = "gcomm://" + ",".join(group)
        cfg["wsrep_node_name"] = planned.name
        # the client address each member lists (wsrep_incoming_addresses: the split-brain
        # checker's memberships), by name on the run's network
        cfg["wsrep_node_incoming_address"] = f"{planned.name}:{SERVER_PORT}"
        if "wsrep_provider_options" in cfg:
            cfg["wsrep_provider_options"] = provider_options(cfg["wsrep_provider_options"])
    return [f"--{k}={v}" for k, v in cfg.items()]


def container_name(run_id: str, node: str) -> str:
    return f"lab-{run_id}-{node}"


def network_name(run_id: str) -> str:
    return f"lab-{run_id}"


class ContainerNode(Node):
    """A node in a container. ``port`` is its published port on 127.0.0.1; ``datadir`` is the
    container's data directory seen from this machine when the engine is local (its merged
    file system), else a path that does not exist here."""

    def __init__(self, run: Run, planned: PlannedNode, admin: Credentials, container: Any,
                 eng: engines.Engine) -> None:
        datadir = run.dir / planned.name / "data"  # replaced by the merged dir when local
        super().__init__(run, planned.name, planned.role, planned.index, planned.port, datadir,
                         run.dir / f"{planned.name}.log", admin)
        self.container = container
        self.engine = eng
        self.server_id = planned.server_id
        self.data_path = DATADIR  # its data directory in the container
        self.host_datadir: Path | None = None  # disk full: the tmpfs on this machine
        self.host_binlog_dir: Path | None = None  # disk full ... binlog: the same

    @property
    def addr(self) -> Address:
        """The server's published port, on the engine's address."""
        return Address(self.engine.address, self.port)

    # --- state, through inspect -------------------------------------------------------------
    def inspect(self) -> dict[str, Any]:
        return engines.inspect(self.engine.client, self.container.id)

    def pid(self) -> int | None:
        """The container's init process on the engine's machine (None when not running)."""
        doc = self.inspect()
        return engines.container_pid(doc) if doc.get("State", {}).get("Running") else None

    def ip(self, network: str) -> str | None:
        """The node's address on the run's network (None when it is not running)."""
        nets = self.inspect().get("NetworkSettings", {}).get("Networks") or {}
        addr = (nets.get(network) or {}).get("IPAddress")
        return str(addr) if addr else None

    def is_running(self) -> bool:
        with contextlib.suppress(Exception):
            return bool(self.inspect().get("State", {}).get("Running"))
        return False

    @property
    def component(self) -> str:
        return f"node {self.name} (container {self.container.name}, port {self.port})"

    def save_log(self) -> Path:
        """The container's output (the server's error log) copied to ``error_log``."""
        with contextlib.suppress(Exception):
            self.error_log.write_bytes(self.container.logs(stdout=True, stderr=True))
        return self.error_log

    def locate_datadir(self) -> None:
        if self.host_datadir is not None:
            self.datadir = self.host_datadir
            return
        if not self.engine.local:
            return
        with contextlib.suppress(Exception):
            merged = self.inspect().get("GraphDriver", {}).get("Data", {}).get("MergedDir")
            if merged:
                self.datadir = Path(merged) / self.data_path.lstrip("/")

    def tmpfs_dir(self, target: str) -> Path:
        if target == "binlog" and self.host_binlog_dir is not None:
            return self.host_binlog_dir
        return super().tmpfs_dir(target)

    def cache_dirs(self) -> list[Path]:
        """The node's data directory in the layers of its container's file system on this
        machine: the container's own (upper) layer and the image's (lower) layers — the real
        files whose pages the kernel caches, there whether the container runs or not. Only on
        a local engine: a remote engine's page cache is not this machine's."""
        if not self.engine.local:
            raise ComponentError(self.component, "its files are on the engine's machine "
                                 f"({self.engine.url}), not this one: their page cache cannot "
                                 "be dropped from here")
        if self.host_datadir is not None:
            return [self.host_datadir]
        doc = self.inspect()
        # an image that declares its data directory a volume keeps it there, not in a layer
        volumes = [Path(m["Source"]) for m in doc.get("Mounts") or []
                   if m.get("Destination") == self.data_path and m.get("Source")]
        data = doc.get("GraphDriver", {}).get("Data", {})
        layers = [data.get("UpperDir") or "", *(data.get("LowerDir") or "").split(":")]
        dirs = volumes + [Path(d) / self.data_path.lstrip("/") for d in layers if d]
        return [d for d in dirs if d.is_dir()]

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> float:
        try:
            return wait_until(sql_ready(self.addr, self.admin), timeout, "answering SQL",
                              self.component, None, alive=self.is_running)
        except ComponentError as e:
            raise ComponentError(self.component, e.message, self.save_log()) from None

    # --- verbs, through the API ---------------------------------------------------------------
    def _supervisor_pid(self) -> int | None:
        return None

    def kill(self) -> None:
        """SIGKILL to the container: the server dies at once and stays down."""
        if self.paused:
            # a frozen container takes SIGKILL too, but unfreezing first is what every engine
            # does the same way
            with contextlib.suppress(Exception):
                self.container.unpause()
        with contextlib.suppress(Exception):
            self.container.kill(signal="SIGKILL")
        self.container.wait(timeout=10)
        self.paused = False

    def pause(self) -> None:
        """The engine's pause (the cgroup freezer). On a busy machine runc's freeze can fail
        ("`runc pause` failed: exit status 1", seen with six tests at a time: the kernel's
        freezer did not settle within runc's retries, and runc thaws the container again:
        opencontainers/runc#2907): a container left running is paused once more, and
        ``pause_retries`` says so (the op's note), never silently."""
        from docker.errors import APIError

        if not self.is_running():
            raise ComponentError(self.component, "cannot pause: not running", self.save_log())
        self.pause_retries = []
        for attempt in range(2):
            try:
                self.container.pause()
                break
            except APIError as e:
                state = self.inspect().get("State", {})
                if state.get("Paused"):  # it froze after all
                    self.pause_retries.append(f"{e.explanation or e} (paused all the same)")
                    break
                if attempt == 1 or not state.get("Running"):
                    raise
                self.pause_retries.append(str(e.explanation or e))
        self.paused = True

    def resume(self) -> None:
        if self.paused or self.inspect().get("State", {}).get("Paused"):
            self.container.unpause()
        self.paused = False

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        if not self.is_running():
            return
        if self.paused:
            self.resume()
        self.container.stop(timeout=int(timeout))
        self.save_log()

    def start(self, options: dict[str, str] | None = None, wait: bool = True) -> None:
        if self.is_running():
            return
        self._write_start_options(options or {})
        self.container.start()
        self.locate_datadir()
        if wait:
            self.wait_ready()

    def _write_start_options(self, options: dict[str, str]) -> None:
        """``start ... with k = v``: the options of this start, in the container."""
        self._write_start_lines([f"--{k}={v}" for k, v in options.items()])

    def _write_start_lines(self, lines: list[str]) -> None:
        """The next start's options (the entrypoint reads them and empties the file) and its
        ``--lab-...`` steps (``assets/entrypoint.sh``)."""
        self.put_file(START_OPTIONS, "".join(f"{line}\n" for line in lines).encode())

    # --- a Galera cluster none of whose nodes runs (runners.galera_recovery) -------------------
    def data_file(self, name: str) -> str | None:
        """Read through the API, a stopped container's too (its data directory is on this
        machine only when the lab mounted it there)."""
        if self.host_datadir is not None:
            return super().data_file(name)
        import io
        import tarfile

        try:
            bits, _ = self.container.get_archive(f"{self.data_path}/{name}")
            with tarfile.open(fileobj=io.BytesIO(b"".join(bits))) as tar:
                member = tar.next()
                f = tar.extractfile(member) if member is not None else None
                return f.read().decode(errors="replace") if f is not None else None
        except Exception as e:  # noqa: BLE001 - the engine's "no such file" is NotFound
            if type(e).__name__ == "NotFound":
                return None
            raise ComponentError(self.component, f"reading {name} of its data directory: "
                                 f"{e}") from None

    def wsrep_recover(self, timeout: float) -> str:
        """The container started with ``--wsrep-recover``: the server recovers and exits, and
        the container with it; its output since that start."""
        mark = self._log_size()
        self._write_start_lines(["--wsrep-recover"])
        self.container.start()
        try:
            self.container.wait(timeout=timeout)
        except Exception:  # noqa: BLE001 - the API's read timeout
            with contextlib.suppress(Exception):
                self.container.kill(signal="SIGKILL")
            raise ComponentError(f"{self.component} --wsrep-recover",
                                 f"did not finish within {timeout:.0f}s",
                                 self.save_log()) from None
        with open(self.save_log(), "rb") as f:
            f.seek(mark if f.seek(0, 2) >= mark else 0)  # an engine that began a new log
            return f.read().decode(errors="replace")

    def start_recovered(self, position: str, bootstrap: bool) -> bool:
        """The entrypoint removes ``gvwstate.dat`` and (bootstrap) sets
        ``safe_to_bootstrap: 1`` before the server starts: a stopped container's files are
        reached through its own start, on any engine."""
        had_view = self.data_file("gvwstate.dat") is not None
        lines = [f"--wsrep_start_position={position}", "--lab-forget-view"]
        if bootstrap:
            lines += ["--wsrep-new-cluster", "--lab-safe-to-bootstrap"]
        self._write_start_lines(lines)
        self.container.start()
        self.locate_datadir()
        return had_view

    def _log_size(self) -> int:
        log = self.save_log()
        return log.stat().st_size if log.exists() else 0

    def put_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        """A file in the container, through the API's archive upload (works on a stopped
        container and on a remote engine), as a tar without ``tarfile``'s record padding
        (``transfer.trimmed``: podman's upload failed with a broken pipe on the padding when a
        container lesson started a killed node, five tests at a time)."""
        import io
        import tarfile

        from runners.containers.transfer import trimmed

        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:  # from /: missing directories made
            info = tarfile.TarInfo(path.lstrip("/"))
            info.size = len(data)
            info.mode = mode
            tar.addfile(info, io.BytesIO(data))
        self.container.put_archive("/", trimmed(buf.getvalue()))

    def exec(self, cmd: list[str]) -> tuple[int, str]:
        """Run a command in the node's container (as root): (exit code, output)."""
        code, out = self.container.exec_run(cmd, stdout=True, stderr=True)
        return int(code), out.decode("utf-8", "replace")
