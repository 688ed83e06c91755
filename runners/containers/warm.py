"""The container engine's helper programs, and each node image's server, read into the page
cache at a run's bring-up, so that their first use in the load does not read them from the
disk — as long as that use comes within the host's idle time of the bring-up (a minute here:
a ``pause`` two minutes into a long load finds them cold again).

Some hosts page out file pages nobody touched for a while (this machine: a DAMON ``pageout``
scheme for pages idle 60 s, /sys/kernel/mm/damon/admin). Then the first ``runc pause`` of a run
faults its 8.7 MB binary in, page by page, in the middle of the load: measured on
experiments/proxysql-router-faults.exp on containers, the disk was saturated for about 0.5 s
(/proc/pressure/io ``full``, runc waiting in ``folio_wait_bit_common``) and a node in another
container took 0.53 s to commit, so a probe writing straight to it saw an outage that the fault
(of the router) never caused. Reading the files whole beforehand costs a fraction of a second
at bring-up when they are cold (this disk reads about 100 MB/s) and nothing when they are warm.
It only reads: nothing on the host changes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

log = logging.getLogger(__name__)

CHUNK = 1 << 20
# what the engine runs for a container's start, pause, kill, exec and network set-up: the OCI
# runtime, the monitor, the network tools (podman 4's netavark, aardvark-dns) and the firewall
ENGINE_PROGRAMS = ("runc", "crun", "conmon", "iptables", "ip6tables", "nft")
ENGINE_DIRS = ("/usr/lib/podman", "/usr/libexec/podman")
# in a node's image: the server that commits the load's writes; in the router's, ProxySQL
SERVER_IN_IMAGE = ("usr/sbin/mariadbd", "usr/bin/mongod", "usr/local/bin/proxysql")


def engine_files() -> list[Path]:
    """The engine's helper programs found on this machine (real paths, once each)."""
    found: list[Path] = []
    for name in ENGINE_PROGRAMS:
        path = shutil.which(name)
        if path:
            found.append(Path(path))
    for d in ENGINE_DIRS:
        with contextlib.suppress(OSError):
            found += [p for p in Path(d).iterdir() if p.is_file()]
    return list(dict.fromkeys(p.resolve() for p in found))


def image_files(merged: Path) -> list[Path]:
    """The server of a node's image, in its container's merged file system on this machine
    (none when this user may not look there)."""
    found = []
    for rel in SERVER_IN_IMAGE:
        with contextlib.suppress(OSError):
            if (merged / rel).is_file():
                found.append(merged / rel)
    return found


def read_whole(paths: Iterable[Path]) -> int:
    """Read each file to its end (into the page cache); the bytes read. A file that cannot be
    read is skipped: warming is an optimisation, never a reason to fail a run."""
    total = 0
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            while chunk := os.read(fd, CHUNK):
                total += len(chunk)
        except OSError as e:
            log.debug("warming %s: %s", path, e)
        finally:
            os.close(fd)
    return total
