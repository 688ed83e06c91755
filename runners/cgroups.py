"""cgroup v1 ``cpu`` and ``memory`` groups of one node, named for the run: what ``cpu limit``
and ``memory limit`` put a server into (``fault.resources``).

A node's group is ``<root>/<controller>/rcl-<run id>-<node>`` (``group_name``): the run id (a
cell's run directory id) and the node name, so that ``lab gc`` can remove the groups of a dead
run, and only those (``remove_run_groups``). Writing the server's pid to the group's
``cgroup.procs`` moves all its threads; healing writes it back to the group it came from
(read from ``/proc/<pid>/cgroup`` before the move) and removes the group. A group without
tasks can always be removed (``rmdir``); one whose tasks are still in it gets them moved to
the controller's root first.

The cgroup v2 hierarchy (``unified_dir``: ``/sys/fs/cgroup/unified`` on a hybrid system,
``/sys/fs/cgroup`` itself on a v2-only one) holds a node's **network group** of the same name
(``network_group``): a Galera node's server is started inside it (``joined``: the child joins
before it execs the server, so every socket it ever opens belongs to the group), which lets an
iptables rule match the packets of that one server (``-m cgroup --path rcl-<run>-<node>``, the
group partition of ``fault.network``). No controller is enabled in it: it limits nothing.
``run_groups`` and ``remove_run_groups`` cover it too.

Everything takes the cgroup root as an argument (``CGROUP_ROOT`` by default) so that the unit
tests run on a fake tree in a temporary directory. Writing needs root.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
PREFIX = "rcl-"
CFS_PERIOD_US = 100_000  # the scheduler period the quota is a share of (100 ms)
MIN_QUOTA_US = 1_000  # the kernel's smallest quota
CONTROLLERS = ("cpu", "memory")
BUSY_WAIT = 3.0  # seconds a group may stay busy after its last task was killed
UNIFIED = "unified"  # where a hybrid (v1 + v2) system mounts the cgroup v2 hierarchy


class CgroupError(OSError):
    """A cgroup could not be made, written or removed (not mounted, not root)."""


def group_name(run_id: str, node: str) -> str:
    return f"{PREFIX}{run_id}-{node}"


def cpu_quota_us(share: float, period_us: int = CFS_PERIOD_US) -> int:
    """``0.2`` (20 % of one core) -> 20000 µs of CPU time per 100 ms period (at least 1 ms)."""
    return max(MIN_QUOTA_US, round(share * period_us))


def controller_dir(controller: str, root: Path = CGROUP_ROOT) -> Path:
    return root / controller


def available(controller: str, root: Path = CGROUP_ROOT) -> bool:
    """The v1 controller is mounted (its root has ``cgroup.procs``)."""
    return (controller_dir(controller, root) / "cgroup.procs").exists()


def unified_dir(root: Path = CGROUP_ROOT) -> Path | None:
    """The cgroup v2 hierarchy: ``<root>/unified`` on a hybrid system, ``<root>`` itself when
    only v2 is mounted; None when there is none."""
    hybrid = root / UNIFIED
    if (hybrid / "cgroup.procs").exists():
        return hybrid
    if (root / "cgroup.controllers").exists():
        return root
    return None


def network_group(run_id: str, node: str, root: Path = CGROUP_ROOT) -> Path:
    """Make (or take) the node's group in the cgroup v2 hierarchy, for its server's sockets;
    returns its directory. Its path for iptables (``-m cgroup --path``) is its name."""
    base = unified_dir(root)
    if base is None:
        raise CgroupError(errno.ENOENT, f"no cgroup v2 hierarchy at {root / UNIFIED} or "
                          f"{root}")
    path = base / group_name(run_id, node)
    try:
        path.mkdir(exist_ok=True)
    except OSError as e:
        raise CgroupError(e.errno, f"cannot create {path}: {e.strerror}") from None
    return path


JOIN_SCRIPT = 'echo $$ > "$1" && shift && exec "$@"'


def joined(argv: list[str], group: Path) -> list[str]:
    """``argv`` run inside ``group`` from its first instruction: a shell writes its own pid to
    the group's ``cgroup.procs`` and then execs ``argv`` (same pid), so the program opens
    every socket inside the group. Values are arguments of the shell, never part of its
    script. When the write fails the program does not start."""
    return ["/bin/sh", "-c", JOIN_SCRIPT, "sh", str(group / "cgroup.procs"), *argv]


def current_group(pid: int, controller: str, proc: Path = Path("/proc")) -> str:
    """The group of ``pid`` in a v1 controller, relative to its root (``/`` for the root),
    from ``/proc/<pid>/cgroup`` (lines ``id:controllers:path``)."""
    try:
        text = (proc / str(pid) / "cgroup").read_text()
    except OSError:
        return "/"
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and controller in parts[1].split(","):
            return parts[2] or "/"
    return "/"


def _write(path: Path, value: str) -> None:
    try:
        with open(path, "w") as f:
            f.write(value)
    except OSError as e:
        raise CgroupError(e.errno, f"cannot write {value!r} to {path}: {e.strerror}") from None


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def pids_in(group: Path) -> list[int]:
    return [int(x) for x in _read(group / "cgroup.procs").split() if x.strip().isdigit()]


@dataclass
class NodeGroup:
    """One node's group in one controller, and where its server came from."""

    controller: str
    path: Path
    origin: Path  # the group the server was in before (moved back when healing)
    pid: int | None = None
    limit: int | None = None  # memory: the limit written, bytes

    @classmethod
    def make(cls, controller: str, run_id: str, node: str, pid: int,
             root: Path = CGROUP_ROOT, proc: Path = Path("/proc")) -> NodeGroup:
        """Create the group (or take the existing one) and move ``pid`` (all its threads)
        into it."""
        base = controller_dir(controller, root)
        if not available(controller, root):
            raise CgroupError(errno.ENOENT, f"the cgroup v1 '{controller}' controller is not "
                              f"mounted at {base}")
        path = base / group_name(run_id, node)
        before = current_group(pid, controller, proc)
        origin = base / before.lstrip("/") if before != "/" else base
        if origin == path:  # already in it (a second limit): keep where it came from
            origin = base
        try:
            path.mkdir(exist_ok=True)
        except OSError as e:
            raise CgroupError(e.errno, f"cannot create {path}: {e.strerror}") from None
        group = cls(controller, path, origin, pid)
        group.move_in(pid)
        return group

    def move_in(self, pid: int) -> None:
        self.pid = pid
        _write(self.path / "cgroup.procs", str(pid))

    def set_cpu(self, share: float, period_us: int = CFS_PERIOD_US) -> int:
        """Limit the group to ``share`` of one core; returns the quota in µs per period."""
        quota = cpu_quota_us(share, period_us)
        _write(self.path / "cpu.cfs_period_us", str(period_us))
        _write(self.path / "cpu.cfs_quota_us", str(quota))
        return quota

    def set_memory(self, limit: int) -> dict[str, int]:
        """Cap the group's memory (and memory + swap, when the kernel accounts swap) at
        ``limit`` bytes. The kernel reclaims what it can first; when it cannot get below the
        limit the write fails (EBUSY)."""
        _write(self.path / "memory.limit_in_bytes", str(limit))
        self.limit = limit
        memsw = self.path / "memory.memsw.limit_in_bytes"
        if memsw.exists():
            with contextlib.suppress(CgroupError):
                _write(memsw, str(limit))
        return {"limit_bytes": limit, "usage_bytes": self.memory_usage()}

    def memory_usage(self) -> int:
        text = _read(self.path / "memory.usage_in_bytes").strip()
        return int(text) if text.isdigit() else 0

    def oom_kills(self) -> int:
        """How many processes the kernel's OOM killer killed in this group
        (``memory.oom_control``: ``oom_kill N``)."""
        return oom_kills(self.path)

    def cpu_use(self) -> CpuUse:
        """What the group's server has used and been denied so far: its process's CPU time
        (``/proc/<pid>/stat``: the server alone, as its ``cpuacct`` group is not this one) and
        the group's throttling (``cpu.stat``)."""
        return cpu_use(self.path, process_cpu_seconds(self.pid))

    def release(self) -> list[int]:
        """Move every task back to where the server came from (the controller's root when that
        group is gone) and remove the group. Returns the pids moved."""
        moved = []
        for pid in pids_in(self.path):
            target = self.origin if (self.origin / "cgroup.procs").exists() \
                else self.path.parent
            try:
                _write(target / "cgroup.procs", str(pid))
            except CgroupError:
                _write(self.path.parent / "cgroup.procs", str(pid))
            moved.append(pid)
        remove_group(self.path)
        return moved


@dataclass(frozen=True)
class CpuUse:
    """A reading of a limited node's CPU: seconds of CPU used, throttled periods and seconds
    (each None when it cannot be read: a remote engine, a server gone)."""

    cpu_seconds: float | None
    throttled_periods: int | None
    throttled_seconds: float | None

    def since(self, before: CpuUse) -> dict[str, float | int | None]:
        """What happened between ``before`` and this reading (None where either is unknown,
        or the counter went back: the group or the process is not the same one)."""
        def delta(a: float | None, b: float | None) -> float | None:
            return None if a is None or b is None or a < b else a - b
        periods = delta(self.throttled_periods, before.throttled_periods)
        cpu, throttled = (delta(self.cpu_seconds, before.cpu_seconds),
                          delta(self.throttled_seconds, before.throttled_seconds))
        return {"cpu_seconds": None if cpu is None else round(cpu, 3),
                "throttled_periods": None if periods is None else int(periods),
                "throttled_seconds": None if throttled is None else round(throttled, 3)}


def cpu_stat(group: Path) -> dict[str, int]:
    """A v1 ``cpu`` group's ``cpu.stat`` (``nr_periods``, ``nr_throttled``,
    ``throttled_time`` in ns); empty when it cannot be read."""
    out: dict[str, int] = {}
    for line in _read(group / "cpu.stat").splitlines():
        k, _, v = line.partition(" ")
        if v.strip().isdigit():
            out[k] = int(v)
    return out


def cpu_use(group: Path | None, cpu_seconds: float | None) -> CpuUse:
    stat = cpu_stat(group) if group is not None else {}
    ns = stat.get("throttled_time")
    return CpuUse(cpu_seconds, stat.get("nr_throttled"), None if ns is None else ns / 1e9)


def process_cpu_seconds(pid: int | None, proc: Path = Path("/proc")) -> float | None:
    """User + system CPU time of a process, every thread (``/proc/<pid>/stat``); None when
    it is gone."""
    if pid is None:
        return None
    text = _read(proc / str(pid) / "stat")
    fields = text[text.rfind(")") + 2:].split()
    if len(fields) < 13:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def oom_kills(group: Path) -> int:
    for line in _read(group / "memory.oom_control").splitlines():
        k, _, v = line.partition(" ")
        if k == "oom_kill" and v.strip().isdigit():
            return int(v)
    return 0


def remove_group(path: Path, busy_wait: float = BUSY_WAIT) -> bool:
    """``rmdir`` a group (its tasks moved to the controller's root first). True when gone.
    A group whose last task was just killed stays busy (EBUSY) until the kernel has finished
    that task's exit, which takes a moment after the kill: retried for up to ``busy_wait``
    seconds."""
    if not path.exists():
        return True
    for pid in pids_in(path):
        with contextlib.suppress(CgroupError):
            _write(path.parent / "cgroup.procs", str(pid))
    deadline = time.monotonic() + busy_wait
    while True:
        try:
            _rmdir(path)
            return True
        except OSError as e:
            if e.errno != errno.EBUSY or time.monotonic() >= deadline:
                return not path.exists()
        time.sleep(0.02)


def _rmdir(path: Path) -> None:
    os.rmdir(path)  # a cgroup directory goes with its control files (tests replace this)


def run_groups(run_id: str, root: Path = CGROUP_ROOT) -> list[Path]:
    """The groups of one run (``rcl-<run id>-<node>``; a node name has no ``-``, so the run
    ``abc`` does not claim the groups of its cell ``abc-2``), in every controller and in the
    cgroup v2 hierarchy (the network groups)."""
    prefix = f"{PREFIX}{run_id}-"
    out: list[Path] = []
    bases = [controller_dir(c, root) for c in CONTROLLERS]
    unified = unified_dir(root)
    if unified is not None:
        bases.append(unified)
    for base in bases:
        if not base.is_dir():
            continue
        with contextlib.suppress(OSError):
            for d in sorted(base.iterdir()):
                rest = d.name[len(prefix):]
                if d.is_dir() and d.name.startswith(prefix) and rest and "-" not in rest:
                    out.append(d)
    return out


def remove_run_groups(run_id: str, root: Path = CGROUP_ROOT) -> list[Path]:
    """Remove every group of a run (teardown, ``lab gc``); returns those removed."""
    return [g for g in run_groups(run_id, root) if remove_group(g)]
