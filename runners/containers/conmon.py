"""Container monitors (``conmon``) left behind by containers that no longer exist.

A run interrupted in the middle of a ``podman exec`` (Ctrl-C, or ``kill -9`` of the lab, while
an ``iptables`` ran inside a node, say) can leave that exec session's ``conmon`` running after
``lab gc`` has removed the container and stopped the lab's podman service: seen at the end of
a stopped ``make validity`` and of a killed CI, six of them. Nothing would ever end them.

An orphan here is a ``conmon`` of this user whose ``-c`` names a container that the local
podman store no longer has (``podman ps -a --external``), and whose bundle (``-b``) is that
container's directory in the store (``<graphroot>/<driver>-containers/<id>/``): a monitor of
another store (another user's podman, another ``--root``) or of a container that still exists
is never touched, and a signal goes only to the very process found (pid, command line and
start time unchanged).
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


@dataclass(frozen=True)
class Monitor:
    pid: int
    container: str  # its -c: the container's full id
    bundle: str  # its -b
    started: int = 0  # its start time (/proc/PID/stat, clock ticks): a reused pid is not it


def parse(argv: list[str]) -> tuple[str, str] | None:
    """A conmon command line's container id (``-c``) and bundle (``-b``); None when it is
    not conmon's or lacks either."""
    if not argv or os.path.basename(argv[0]) != "conmon":
        return None
    got: dict[str, str] = {}
    for flag, value in zip(argv, argv[1:], strict=False):
        if flag in ("-c", "--cid"):
            got.setdefault("c", value)
        elif flag in ("-b", "--bundle"):
            got.setdefault("b", value)
    if "c" not in got or "b" not in got:
        return None
    return got["c"], got["b"]


def monitors(proc: Path = PROC) -> list[Monitor]:
    """The ``conmon`` processes of this user."""
    out: list[Monitor] = []
    uid = os.getuid()
    for d in proc.iterdir():
        if not d.name.isdigit():
            continue
        try:
            if d.stat().st_uid != uid:
                continue
        except OSError:
            continue
        got = _command(int(d.name), proc)
        started = _start_time(int(d.name), proc) if got is not None else None
        if got is not None and started is not None:
            out.append(Monitor(int(d.name), *got, started))
    return out


def _command(pid: int, proc: Path = PROC) -> tuple[str, str] | None:
    """``parse`` of the process's command line (None: gone, or not a conmon)."""
    try:
        argv = (proc / str(pid) / "cmdline").read_bytes().rstrip(b"\0").split(b"\0")
    except OSError:
        return None
    return parse([a.decode(errors="replace") for a in argv])


def orphans(found: list[Monitor], existing: set[str], graphroot: str) -> list[Monitor]:
    """Those of ``found`` whose container is not in ``existing`` (full ids) and whose bundle
    is that container's in ``graphroot`` (``<graphroot>/<driver>-containers/<id>/...``)."""
    store = graphroot.rstrip("/") + "/"
    return [m for m in found if m.container not in existing and m.bundle.startswith(store)
            and f"-containers/{m.container}/" in m.bundle[len(store):]]


def end(found: list[Monitor], grace: float = 2.0) -> list[str]:
    """SIGTERM, then SIGKILL to what is left after ``grace`` seconds; what was ended, one line
    each. Each signal goes only to the process found (its pid, command line and start time
    still the same): a pid reused since is never signalled."""
    ended: list[str] = []
    termed: list[Monitor] = []
    for m in found:
        if _signal(m, signal.SIGTERM):
            termed.append(m)
            ended.append(f"conmon {m.pid} (of removed container {m.container[:12]})")
    deadline = time.monotonic() + grace
    for m in termed:
        while time.monotonic() < deadline and _alive(m):
            time.sleep(0.05)
        if _alive(m):
            _signal(m, signal.SIGKILL)
    return ended


def _signal(m: Monitor, sig: int) -> bool:
    if not _alive(m):
        return False
    try:
        os.kill(m.pid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _start_time(pid: int, proc: Path = PROC) -> int | None:
    """The process's start time in clock ticks since boot (None: gone), and only while it is
    not a zombie."""
    try:
        stat = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return None if fields[0] == "Z" else int(fields[19])


def _alive(m: Monitor) -> bool:
    """The same process is still running (not a zombie, not a pid reused by another)."""
    return _start_time(m.pid) == m.started and _command(m.pid) == (m.container, m.bundle)
