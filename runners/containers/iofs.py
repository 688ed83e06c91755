"""lab-iofs for a node in a container: ``io delay`` / ``io fail`` / ``io heal`` and ``kill NODE
losing unsynced writes`` on ``backend containers``.

The FUSE daemon runs on this machine, exactly as natively (``runners.iofs``): before the node's
container is made, it mounts ``<run dir>/<node>/data`` over the backing directory
``<run dir>/<node>/data.iofs``, and that mount is bind-mounted into the container as the
server's data directory (``/lab/data``, as for ``disk full``; the entrypoint seeds it with the
image's data directory on the first start, through the mount). The mount allows other users
and checks permissions in the kernel; the engine is rootful here, so a file the container's
``mysql`` user creates is owned by the same uid on this machine. The control file
(``iofs-<node>.ctl``) and the daemon stay in the run directory and among the run's processes,
so ``fault.iofs`` and the unsynced-loss kill are the same on both back-ends; the run's
teardown unmounts (after the containers are removed), and ``lab gc`` after a ``kill -9`` of the
lab kills the recorded daemon and unmounts whatever is mounted under the run's directory.

Unsynced writes: natively the lab mounts over files already on disk, which count as synced.
Here the seed is copied in through the mount, never synced, so a drop would empty the node's
files: once the node answers, ``mark_synced`` fsyncs every file of the mount (what the deploy
wrote becomes the synced state, before any workload).

Needs root, ``/dev/fuse`` and the engine on this machine (``dsl.backends.needs_local_engine``).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from runners import components, iofs
from runners.errors import ComponentError
from runners.runtime import Run


def mount(run: Run, node: str, unsynced: bool) -> iofs.IoFs:
    """lab-iofs mounted at ``<run dir>/<node>/data`` (an empty backing directory beside it),
    ready to be bind-mounted into the node's container."""
    binary = components.require(iofs.BINARY)
    if os.geteuid() != 0:
        raise ComponentError(iofs.BINARY, f"needs root: the lab mounts lab-iofs (FUSE) for "
                             f"{node}'s data directory (run as root, or leave the io faults "
                             "out)")
    if not os.path.exists("/dev/fuse"):
        raise ComponentError(iofs.BINARY, "/dev/fuse is missing: the kernel's FUSE module is "
                             "not loaded (modprobe fuse)")
    mountpoint = run.dir / node / "data"
    backing = iofs.backing_dir(mountpoint)
    backing.mkdir(parents=True, exist_ok=True)
    mountpoint.mkdir(exist_ok=True)
    return iofs.start(run, node, binary, mountpoint, backing, unsynced=unsynced)


def mark_synced(fs: iofs.IoFs) -> int:
    """fsync every regular file under the mount (through it: the daemon takes each file's
    content now as its last synced state). Returns how many files."""
    n = 0
    for root, _dirs, files in os.walk(fs.mountpoint):
        for name in files:
            path = Path(root) / name
            with contextlib.suppress(FileNotFoundError):
                if not path.is_file() or path.is_symlink():
                    continue
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
                n += 1
    return n
