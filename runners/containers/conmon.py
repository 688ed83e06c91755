"""Container monitors (``conmon``) left behind by containers that no longer exist.

A run interrupted in the middle of a ``podman exec`` (Ctrl-C, or ``kill -9`` of the lab, while
an ``iptables`` ran inside a node, say) can leave that exec session's ``conmon`` running after
``lab gc`` has removed the container and stopped the lab's podman service: seen at the end of
a stopped ``make validity`` and of a killed CI, six of them. Nothing would ever end them.

An orphan here is a ``conmon`` of this user whose ``-c`` names a container that the local
podman store no longer has, and whose bundle (``-b``) lies in that store's
``overlay-containers`` directory: a monitor of another store (another user's podman, another
``--root``) or of a container that still exists is never touched.
"""

from __future__ import annotations

import contextlib
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
            argv = (d / "cmdline").read_bytes().rstrip(b"\0").split(b"\0")
        except OSError:
            continue
        got = parse([a.decode(errors="replace") for a in argv])
        if got is not None:
            out.append(Monitor(int(d.name), *got))
    return out


def orphans(found: list[Monitor], existing: set[str], graphroot: str) -> list[Monitor]:
    """Those of ``found`` whose container is not in ``existing`` (full ids) and whose bundle
    is in ``graphroot``'s ``overlay-containers``."""
    store = graphroot.rstrip("/") + "/overlay-containers/"
    return [m for m in found if m.container not in existing and m.bundle.startswith(store)]


def end(found: list[Monitor], grace: float = 2.0) -> list[str]:
    """SIGTERM, then SIGKILL after ``grace`` seconds; what was ended, one line each."""
    ended: list[str] = []
    for m in found:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(m.pid, signal.SIGTERM)
            ended.append(f"conmon {m.pid} (of removed container {m.container[:12]})")
    deadline = time.monotonic() + grace
    for m in found:
        while time.monotonic() < deadline and _alive(m.pid):
            time.sleep(0.05)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(m.pid, signal.SIGKILL)
    return ended


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for its parent."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"
