"""A node's data directory on a tmpfs of its own, so that ``disk full NODE`` can fill it.

Only when the experiment has ``disk full NODE`` (``disk_nodes``), and only for those nodes:
once the topology is up, ``NativeTopology`` stops the node, moves its data directory onto a
tmpfs mounted at the same path (``move_onto_tmpfs``: the tmpfs holds what the directory held
plus ``HEADROOM``), and starts it again. The binary and relay logs live in the data directory
(``log_bin`` is a base name there), so they share the filesystem.

``fill`` takes every free byte of the filesystem with one file (``FILLER``, reserved with
``fallocate``: nothing is written) so the server's next write that needs space hits ENOSPC;
``free`` removes it. Mounting needs root (``mount``/``umount``); the tmpfs is unmounted when
the run's directory is removed (``runners.runtime.unmount_under``, also by ``lab gc``).
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

from dsl.models import Action, DiskFault

HEADROOM = 64 * 1024**2  # bytes of the tmpfs beyond what the data directory holds
FILLER = ".lab-disk-full"  # the file that fills the filesystem
PAGE = 4096


def disk_nodes(actions: Iterable[Action]) -> list[str]:
    """The nodes a ``disk full`` action names, in first-use order."""
    out: list[str] = []
    for a in actions:
        if isinstance(a, DiskFault) and a.verb == "full" and a.node.name not in out:
            out.append(a.node.name)
    return out


def tmpfs_size(used: int, headroom: int = HEADROOM) -> int:
    """The tmpfs's size: what the directory holds plus the headroom, in whole MiB."""
    mib = 1024**2
    return -(-(used + headroom) // mib) * mib


def mount_argv(path: Path, size: int) -> list[str]:
    return ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0750", "tmpfs", str(path)]


def dir_bytes(path: Path) -> int:
    """Bytes a directory's files take (allocated blocks, as a tmpfs counts them)."""
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                st = os.lstat(os.path.join(root, f))
            except OSError:
                continue
            total += max(st.st_blocks * 512, st.st_size)
    return total


def _run(argv: list[str]) -> None:
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise OSError(f"{' '.join(argv[:3])}: {out.stderr.strip() or out.returncode}")


def move_onto_tmpfs(datadir: Path, headroom: int = HEADROOM) -> int:
    """Put a (stopped) server's data directory on a tmpfs mounted at the same path, with the
    same owner, mode and files. Returns the tmpfs's size."""
    ondisk = datadir.with_name(datadir.name + ".ondisk")
    st = datadir.stat()
    size = tmpfs_size(dir_bytes(datadir), headroom)
    datadir.rename(ondisk)
    datadir.mkdir()
    _run(mount_argv(datadir, size))
    os.chown(datadir, st.st_uid, st.st_gid)
    os.chmod(datadir, st.st_mode & 0o7777)
    _run(["cp", "-a", f"{ondisk}/.", str(datadir)])
    shutil.rmtree(ondisk)
    return size


def available(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def fill(path: Path) -> int:
    """Reserve every free byte of ``path``'s filesystem in ``FILLER``; the bytes taken."""
    fd = os.open(path / FILLER, os.O_CREAT | os.O_WRONLY, 0o600)
    taken = os.fstat(fd).st_size
    try:
        chunk = available(path)
        while chunk >= PAGE:
            try:
                os.posix_fallocate(fd, taken, chunk)
                taken += chunk
                chunk = available(path)
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
                chunk //= 2
    finally:
        os.close(fd)
    return taken


def free(path: Path) -> int:
    """Remove ``FILLER``; the bytes it held (0 when there was none)."""
    filler = path / FILLER
    try:
        size = filler.stat().st_size
        filler.unlink()
    except FileNotFoundError:
        return 0
    return size
