"""A node whose clock the experiment skews (``clock skew NODE by +30s``) runs its server with
libfaketime preloaded (Debian's ``faketime`` package) from its start: the plan decides it
(``dsl.plan.faketime_nodes``: the plan's ``faketime_nodes``, shown by ``lab plan``), the
topology restarts the node with ``faketime_env`` once it is up.

The server reads its offset from a file in the run directory (``FAKETIME_TIMESTAMP_FILE``,
``offset_file``), re-read at every clock read (``FAKETIME_NO_CACHE=1``: a change is seen at
once, at the cost of a small file read per clock read on that node only). ``write_offset``
replaces the file atomically; ``+0`` is the host's clock. libfaketime shifts the monotonic
clocks by the same offset (not faking them breaks the server's sleeps in libfaketime 0.9.10),
so a change of skew is also a jump for the server's timers. Nothing outside the server's
process is touched: the host's clock never changes, and killing the server ends the skew.

libfaketime (0.9.10) gives each process it is loaded into a POSIX semaphore and a shared
memory object named by its pid (``/dev/shm/sem.faketime_sem_<pid>``, ``faketime_shm_<pid>``)
and removes them when the process exits; a process killed with SIGKILL (``kill NODE``, a
teardown) leaves them behind. ``remove_leftovers`` removes those of the run's dead processes
(``Run.close``, ``lab gc``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from dsl.models import Action
from dsl.plan import faketime_nodes

LIBRARY_CANDIDATES = (
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/faketime/libfaketime.so.1",
    "/usr/local/lib/faketime/libfaketime.so.1",
)


def skew_nodes(actions: Iterable[Action]) -> list[str]:
    """The nodes a ``clock skew`` action names, in first-use order (the plan's decision:
    ``dsl.plan.faketime_nodes``)."""
    return faketime_nodes(actions)


def library() -> str | None:
    found = os.environ.get("LAB_LIBFAKETIME")
    if found and Path(found).is_file():
        return found
    return next((c for c in LIBRARY_CANDIDATES if Path(c).is_file()), None)


def offset_file(run_dir: Path, node: str) -> Path:
    return run_dir / f"faketime-{node}"


def offset_text(seconds: float) -> str:
    """``30`` -> ``+30``, ``-2.5`` -> ``-2.5``, ``0`` -> ``+0`` (libfaketime's relative form;
    no unit: seconds)."""
    text = f"{abs(seconds):.6f}".rstrip("0").rstrip(".")
    return ("-" if seconds < 0 else "+") + text


def write_offset(path: Path, seconds: float) -> str:
    """Set the server's offset (atomically: the server never reads half a file)."""
    text = offset_text(seconds)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text + "\n")
    os.chmod(tmp, 0o644)
    tmp.replace(path)
    return text


def faketime_env(lib: str, path: Path) -> dict[str, str]:
    """The environment that makes a server read its clock through libfaketime."""
    return {"LD_PRELOAD": lib, "FAKETIME_TIMESTAMP_FILE": str(path), "FAKETIME_NO_CACHE": "1"}


SHM_DIR = Path("/dev/shm")


def leftovers(pid: int, shm_dir: Path = SHM_DIR) -> list[Path]:
    """The files libfaketime made for process ``pid``."""
    return [shm_dir / f"sem.faketime_sem_{pid}", shm_dir / f"faketime_shm_{pid}"]


def remove_leftovers(pids: Iterable[int], alive: Callable[[int], bool],
                     shm_dir: Path = SHM_DIR) -> int:
    """Remove libfaketime's files of the processes in ``pids`` that are gone (a live one's
    are its own: a pid may have been taken by another process since). Returns how many."""
    removed = 0
    for pid in set(pids):
        if alive(pid):
            continue
        for path in leftovers(pid, shm_dir):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed += 1
    return removed
