"""Where a run lives and what it started: run directories, port blocks, process bookkeeping.

Every run gets an id of 12 hex digits (``new_run_id``: the same id in the results database, the
run directory and every command), a directory ``$LAB_RUNTIME/<id>`` (``<id>-<cell>`` for the
second and later cells of a matrix; default root ``/tmp/rcl-<uid>``: short, because Unix socket
paths must stay under 108 bytes) and a block of 100 loopback ports claimed
with an exclusive file, so two runs at once never collide. Every process the lab starts, or that
a tool it calls (dbdeployer, mysqld_safe) starts, is recorded in ``processes.json`` with its pid,
its start time (to survive pid reuse) and the run id. ``lab gc`` stops and removes what dead
runs left. The lab process makes itself a child subreaper so that daemonized servers are
reparented to it and can be reaped (PID 1 on these machines does not reap orphans).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import logging
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from dsl import ports
from runners.cgroups import remove_run_groups
from runners.faketime import remove_leftovers
from runners.firewall import remove_run_rules

log = logging.getLogger(__name__)

BLOCK = ports.BLOCK
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def port_bounds(range_file: Path = EPHEMERAL_RANGE) -> tuple[int, int]:
    """Where the lab's blocks of ports may lie: from 23000 up to the kernel's first ephemeral
    port (32768 by default). Inside the ephemeral range, an outgoing connection (a replica to its
    primary through toxiproxy) can take a port the lab is about to listen on: measured here,
    `bind: address already in use`. With a range that leaves too little room below it, the
    blocks lie above it instead."""
    first = 23000
    try:
        low, high = (int(x) for x in range_file.read_text().split()[:2])
    except (OSError, ValueError):
        return first, 32700
    if low - first >= 10 * BLOCK:
        return first, low - low % BLOCK
    return high + 1 + (BLOCK - (high + 1) % BLOCK) % BLOCK, 65500


PORT_FIRST, PORT_LAST = port_bounds()
PR_SET_CHILD_SUBREAPER = 36
RUN_ID_HEX = 12  # hex digits of a run id


def new_run_id() -> str:
    """A fresh run id: 12 hex digits. ``lab run`` stores it in the results database and names
    the run directory with it; ``lab up`` uses one of the same form."""
    return secrets.token_hex(RUN_ID_HEX // 2)


def cell_dir_id(run_id: str, cell: int) -> str:
    """The run directory of a cell: the run id for the first cell, ``<id>-<cell>`` for the
    others (a kept cell's directory stays while the next one starts)."""
    return run_id if cell <= 1 else f"{run_id}-{cell}"


def runtime_root() -> Path:
    root = os.environ.get("LAB_RUNTIME") or f"/tmp/rcl-{os.getuid()}"
    p = Path(root)
    p.mkdir(parents=True, exist_ok=True)
    return p


def ports_dir() -> Path:
    """The port claims: one directory for the whole machine (``LAB_PORTS_DIR`` overrides it,
    for tests), not one per ``LAB_RUNTIME`` — two labs with different state directories share
    the machine's loopback ports. World-writable and sticky, like /tmp: another user's claim
    can be read, never removed."""
    p = Path(os.environ.get("LAB_PORTS_DIR") or "/tmp/rcl-ports")
    if not p.is_dir():
        p.mkdir(parents=True, exist_ok=True)
        if not os.environ.get("LAB_PORTS_DIR"):
            with contextlib.suppress(OSError):
                os.chmod(p, 0o1777)
    return p


def terminate(proc: subprocess.Popen[bytes], timeout: float) -> None:
    """SIGTERM, a wait of ``timeout`` seconds, then SIGKILL: a server's own shutdown, or its
    end when it does not come."""
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def become_subreaper() -> None:
    """Orphaned descendants (mysqld_safe, mariadbd) are reparented to us, not to PID 1."""
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def reap_children() -> None:
    """Collect exit statuses of finished children we do not otherwise wait for."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def proc_start_time(pid: int) -> int | None:
    """The process start time in clock ticks since boot (field 22 of /proc/pid/stat)."""
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = data[data.rindex(")") + 2 :].split()
    return int(fields[19])


def proc_state(pid: int) -> str | None:
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return data[data.rindex(")") + 2]


def owner_identity(pid: int | None = None) -> tuple[int, int | None]:
    """``(pid, start time)`` of a process (this one by default): what tells later whether it
    still runs, even once the pid is reused (``alive(pid, start_time)``)."""
    pid = os.getpid() if pid is None else pid
    return pid, proc_start_time(pid)


def alive(pid: int, start_time: int | None = None) -> bool:
    """True when pid runs (not a zombie) and, if given, started at start_time."""
    state = proc_state(pid)
    if state is None or state in ("Z", "X"):
        return False
    return start_time is None or proc_start_time(pid) == start_time


@dataclass
class ProcessRecord:
    pid: int
    start_time: int | None
    name: str  # e.g. "mariadbd db1", "mysqld_safe db1", "haproxy", "toxiproxy"
    run_id: str
    started_at: float  # wall clock


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class PortLayout:
    """Ports of a run, all inside its block of 100 (``dsl.ports``, docs/topologies.md)."""

    def __init__(self, base: int) -> None:
        self.base = base

    def node(self, i: int) -> int:  # i is 1-based; dbdeployer uses base+1, base+2, ...
        return self.base + ports.NODE_OFFSET + i

    def client_proxy(self, i: int) -> int:
        return self.base + ports.CLIENT_PROXY_OFFSET + i

    def replication_proxy(self, i: int) -> int:
        return self.base + ports.REPLICATION_PROXY_OFFSET + i

    def galera_group(self, i: int) -> int:
        return self.base + ports.GALERA_GROUP_OFFSET + i

    def galera_ist(self, i: int) -> int:
        return self.base + ports.GALERA_IST_OFFSET + i

    def galera_sst(self, i: int) -> int:
        return self.base + ports.GALERA_SST_OFFSET + i

    def agent(self, i: int, role: str) -> int:
        offset = ports.WRITER_AGENT_OFFSET if role == "writer" else ports.READER_AGENT_OFFSET
        return self.base + offset + i

    @property
    def router_writer(self) -> int:
        return self.base + ports.ROUTER_WRITER_OFFSET

    @property
    def router_reader(self) -> int:
        return self.base + ports.ROUTER_READER_OFFSET

    @property
    def proxysql_admin(self) -> int:
        return self.base + ports.PROXYSQL_ADMIN_OFFSET

    @property
    def router_admin(self) -> int:
        """The router's admin port: ProxySQL's admin interface (``proxysql_admin``), or the
        read-only stats socket of HAProxy in a container (a run has one router)."""
        return self.base + ports.PROXYSQL_ADMIN_OFFSET

    @property
    def toxiproxy_api(self) -> int:
        return self.base + ports.TOXIPROXY_API_OFFSET


class Run:
    """One run's directory, ports and processes. Use as a context manager or call close()."""

    def __init__(
        self,
        run_id: str | None = None,
        experiment: str = "",
        meta: Mapping[str, object] | None = None,
    ) -> None:
        """``meta``: more to keep in ``run.json``; the engine passes ``run`` (the results
        database's run id), ``cell`` and ``db`` (the database's path, for ``lab gc``)."""
        become_subreaper()
        self.id = run_id or new_run_id()
        self.dir = runtime_root() / self.id
        self.dir.mkdir(parents=True, exist_ok=False)
        self.experiment = experiment
        self.owner_pid = os.getpid()
        self.base_port = self._claim_ports()
        self.ports = PortLayout(self.base_port)
        self._write_meta(state="starting", **dict(meta or {}))
        self._records: list[ProcessRecord] = []
        self._lock = threading.Lock()  # nodes restart in threads: no lost records

    # --- ports ---------------------------------------------------------------------------
    def _claim_ports(self) -> int:
        claims = ports_dir()
        start = PORT_FIRST + (os.getpid() % ((PORT_LAST - PORT_FIRST) // BLOCK)) * BLOCK
        span = PORT_LAST - PORT_FIRST
        for k in range(span // BLOCK):
            base = PORT_FIRST + ((start - PORT_FIRST + k * BLOCK) % span)
            claim = claims / str(base)
            if claim.exists():
                try:
                    owner = json.loads(claim.read_text())
                    if alive(owner["pid"], owner.get("start_time")) or (
                        runtime_root() / owner["run_id"]
                    ).exists() and alive(owner["pid"]):
                        continue
                except (OSError, ValueError, KeyError):
                    pass
                try:
                    claim.unlink(missing_ok=True)
                except PermissionError:  # another user's claim (sticky directory): not ours
                    continue
            try:
                fd = os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                continue
            with os.fdopen(fd, "w") as f:
                json.dump({"run_id": self.id, "pid": os.getpid(),
                           "start_time": proc_start_time(os.getpid())}, f)
            if all(port_free(p) for p in range(base, base + BLOCK)):
                return base
            claim.unlink(missing_ok=True)
        raise RuntimeError(f"no free block of 100 loopback ports between {PORT_FIRST} and "
                           f"{PORT_LAST} (below the kernel's ephemeral ports)")

    def release_ports(self) -> None:
        claim = ports_dir() / str(self.base_port)
        with contextlib.suppress(OSError, ValueError):
            if json.loads(claim.read_text()).get("run_id") == self.id:
                claim.unlink()

    # --- metadata --------------------------------------------------------------------------
    def _write_meta(self, **extra: object) -> None:
        meta_path = self.dir / "run.json"
        meta: dict[str, object] = {}
        if meta_path.exists():
            with contextlib.suppress(ValueError):
                meta = json.loads(meta_path.read_text())
        meta.update(
            id=self.id, experiment=self.experiment, owner_pid=self.owner_pid,
            owner_start=proc_start_time(self.owner_pid), base_port=self.base_port,
            created=meta.get("created", time.time()),
        )
        meta.update(extra)
        tmp = meta_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(meta, indent=2))
        tmp.replace(meta_path)

    def set_state(self, state: str, **extra: object) -> None:
        self._write_meta(state=state, **extra)

    # --- processes -------------------------------------------------------------------------
    def record(self, pid: int, name: str) -> ProcessRecord:
        rec = ProcessRecord(pid, proc_start_time(pid), name, self.id, time.time())
        with self._lock:
            note_pids(self.dir, [pid])
            self._records = [r for r in self._records if not (r.pid == pid)]
            self._records.append(rec)
            self._save_records()
        return rec

    def forget(self, pid: int) -> None:
        with self._lock:
            self._records = [r for r in self._records if r.pid != pid]
            self._save_records()

    def _save_records(self) -> None:
        tmp = self.dir / "processes.tmp"
        tmp.write_text(json.dumps([asdict(r) for r in self._records], indent=2))
        tmp.replace(self.dir / "processes.json")

    @property
    def records(self) -> list[ProcessRecord]:
        return list(self._records)

    def stop_all(self) -> None:
        """SIGKILL every recorded process that still runs, supervisors first, then reap; then
        any process left whose command line names this run's directory (a safety net for a
        process a tool started that was never recorded)."""
        kill_records(self._records)
        stray = strays(self.dir, self.id)
        note_pids(self.dir, [r.pid for r in stray])
        kill_records(stray)
        reap_children()
        self._records = []
        self._save_records()
        remove_leftovers(noted_pids(self.dir), alive)

    def close(self, remove: bool = True) -> None:
        self.stop_all()
        self.release_ports()
        if remove:
            unmount_under(self.dir)  # a data directory on a tmpfs (disk full) or lab-iofs
            remove_run_groups(self.id)  # cpu/memory limits (cpu limit, memory limit)
            remove_run_rules(self.id)  # a Galera group partition's iptables rules
            shutil.rmtree(self.dir, ignore_errors=True)
        else:
            self.set_state("stopped")

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


PIDS_FILE = "pids"  # every pid a run ever recorded, one a line (libfaketime's leftovers)


def note_pids(run_dir: Path, pids: list[int]) -> None:
    if pids:
        with contextlib.suppress(OSError), open(run_dir / PIDS_FILE, "a") as f:
            f.write("".join(f"{p}\n" for p in pids))


def noted_pids(run_dir: Path) -> list[int]:
    try:
        text = (run_dir / PIDS_FILE).read_text()
    except OSError:
        return []
    return [int(w) for w in text.split() if w.isdigit()]


def kill_records(records: list[ProcessRecord], sig: int = signal.SIGKILL) -> None:
    # Supervisors (mysqld_safe) first, so they cannot restart what we kill next.
    ordered = sorted(records, key=lambda r: 0 if "safe" in r.name else 1)
    for r in ordered:
        if alive(r.pid, r.start_time):
            with contextlib.suppress(ProcessLookupError):
                os.kill(r.pid, sig)
    deadline = time.monotonic() + 5
    for r in ordered:
        while alive(r.pid, r.start_time) and time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(r.pid, os.WNOHANG)
            time.sleep(0.01)
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(r.pid, os.WNOHANG)


def strays(run_dir: Path, run_id: str) -> list[ProcessRecord]:
    """Live processes (not us) whose command line mentions ``run_dir``."""
    needle = str(run_dir).encode()
    me = os.getpid()
    out: list[ProcessRecord] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if needle in cmdline and alive(int(entry.name)):
            # the first two words: "/bin/sh bin/mysqld_safe" must still read as a supervisor
            name = " ".join(a.decode(errors="replace") for a in cmdline.split(b"\0")[:2])
            out.append(ProcessRecord(int(entry.name), proc_start_time(int(entry.name)),
                                     name, run_id, 0.0))
    return out


def mount_entries(mounts: str) -> list[tuple[str, str]]:
    """(mount point, filesystem type) of each line of ``/proc/self/mounts`` text, the point's
    octal escapes (``\\040`` for a space ...) decoded as the kernel writes them."""
    out = []
    for line in mounts.splitlines():
        parts = line.split()
        if len(parts) >= 3:
            out.append((re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), parts[1]),
                        parts[2]))
    return out


def read_mounts() -> str:
    """``/proc/self/mounts`` ("" when it cannot be read)."""
    try:
        return Path("/proc/self/mounts").read_text()
    except OSError:
        return ""


def mounts_under(root: Path, mounts: str) -> list[Path]:
    """Mount points at or below ``root`` in ``/proc/self/mounts`` text, deepest first."""
    top = str(root).rstrip("/")
    found = [Path(point) for point, _ in mount_entries(mounts)
             if point == top or point.startswith(top + "/")]
    return sorted(found, key=lambda p: len(p.parts), reverse=True)


def filesystem_type(path: Path, mounts: str | None = None) -> str:
    """The type of the filesystem ``path`` is on: that of the longest mount point above it;
    "" when none is found."""
    target = os.path.realpath(path)
    best, kind = "", ""
    for point, fstype in mount_entries(read_mounts() if mounts is None else mounts):
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, fstype
    return kind



def unmount_under(root: Path) -> list[Path]:
    """Unmount every filesystem the lab mounted below a run's directory: a data directory's
    tmpfs (disk full) or lab-iofs (io delay, io fail; its daemon, killed, left the mount
    behind). Lazily: a server still holding files does not keep it. Returns the mount points."""
    points = mounts_under(root, read_mounts())
    for point in points:
        subprocess.run(["umount", "-l", str(point)], capture_output=True, timeout=60)
    return points


# --- runs seen from outside: status and gc ------------------------------------------------------

@dataclass
class RunInfo:
    id: str
    dir: Path
    meta: dict[str, object]
    records: list[ProcessRecord]

    @property
    def run(self) -> str:
        """The run this directory belongs to: the results database's run id (``lab run``), or
        the directory's own id (``lab up``)."""
        r = self.meta.get("run")
        return r if isinstance(r, str) and r else self.id

    @property
    def owner_alive(self) -> bool:
        pid = self.meta.get("owner_pid")
        start = self.meta.get("owner_start")
        return isinstance(pid, int) and alive(pid, start if isinstance(start, int) else None)


def read_run(d: Path) -> RunInfo | None:
    """The run whose directory is ``d`` (None when it has no ``run.json``: gone)."""
    if not (d / "run.json").is_file():
        return None
    try:
        meta = json.loads((d / "run.json").read_text())
    except (OSError, ValueError):
        meta = {}
    recs: list[ProcessRecord] = []
    with contextlib.suppress(OSError, ValueError, TypeError):
        recs = [ProcessRecord(**r) for r in json.loads((d / "processes.json").read_text())]
    return RunInfo(d.name, d, meta, recs)


def list_runs() -> list[RunInfo]:
    return [info for d in sorted(runtime_root().iterdir()) if (info := read_run(d))]


def gc(include_live: bool = False) -> list[str]:
    """Stop and remove runs whose owning lab process is gone. Returns the ids removed."""
    return [info.id for info in gc_runs(include_live)]


def gc_runs(include_live: bool = False) -> list[RunInfo]:
    """``gc``, returning what was removed (``meta`` names the results database and run id
    of a ``lab run``: ``lab gc`` marks that run abandoned there)."""
    removed: list[RunInfo] = []
    for info in list_runs():
        if info.owner_alive and not include_live:
            continue
        remove_run(info)
        removed.append(info)
    return removed


def remove_run(info: RunInfo) -> None:
    """Put back everything a run whose owner is gone left: its processes, its ports' claim,
    its mounts, cgroups and iptables rules, its directory (``lab gc``, ``lab down``)."""
    kill_records(info.records)
    stray = strays(info.dir, info.id)
    kill_records(stray)
    remove_leftovers([*noted_pids(info.dir), *(r.pid for r in stray)], alive)
    claim = ports_dir() / str(info.meta.get("base_port"))
    with contextlib.suppress(OSError, ValueError):
        if json.loads(claim.read_text()).get("run_id") == info.id:
            claim.unlink()
    unmount_under(info.dir)
    remove_run_groups(info.id)
    remove_run_rules(info.id)
    shutil.rmtree(info.dir, ignore_errors=True)


def signal_owner(info: RunInfo, sig: int = signal.SIGTERM) -> bool:
    pid = info.meta.get("owner_pid")
    if not isinstance(pid, int) or not info.owner_alive:
        return False
    try:
        os.kill(pid, sig)
    except OSError as e:
        if e.errno != errno.ESRCH:
            raise
        return False
    return True


@contextlib.contextmanager
def timed(label: str) -> Iterator[None]:
    t0 = time.monotonic()
    yield
    log.debug("%s took %.3fs", label, time.monotonic() - t0)
