"""The established TCP connections a process holds, read from ``/proc``: which local port of it
talks to which remote port (``established``).

A Galera group partition (``fault.network``) needs them: the packets a node's peers send on a
connection the node opened itself carry the peer's group port as source and the node's
ephemeral port as destination, and nothing else on the loopback tells them from other
traffic. Listing the node's connections once its own packets are dropped (so that it opens no
new one) lets a rule drop those too, so that the cut is the same both ways from its first
instant.

Everything takes the ``/proc`` root as an argument so that the unit tests give a tree of their
own.
"""

from __future__ import annotations

import os
from pathlib import Path

PROC = Path("/proc")
ESTABLISHED = "01"  # the ``st`` column of /proc/net/tcp


def socket_inodes(pid: int, proc: Path = PROC) -> set[str]:
    """The inodes of the sockets the process has open (its ``fd`` links ``socket:[N]``)."""
    out: set[str] = set()
    try:
        fds = list((proc / str(pid) / "fd").iterdir())
    except OSError:
        return out
    for fd in fds:
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:[") and target.endswith("]"):
            out.add(target[len("socket:["):-1])
    return out


def _port(address: str) -> int:
    """The port of a ``/proc/net/tcp`` address (``0100007F:1F90`` -> 8080)."""
    return int(address.rsplit(":", 1)[1], 16)


def established(pids: list[int], proc: Path = PROC) -> list[tuple[int, int]]:
    """``(local port, remote port)`` of every established TCP connection (IPv4 and IPv6) the
    processes hold, sorted; nothing for a process that is gone."""
    found: set[tuple[int, int]] = set()
    for pid in pids:
        inodes = socket_inodes(pid, proc)
        if not inodes:
            continue
        for table in ("tcp", "tcp6"):
            try:
                lines = (proc / str(pid) / "net" / table).read_text().splitlines()[1:]
            except OSError:
                continue
            for line in lines:
                cols = line.split()
                if len(cols) > 9 and cols[3] == ESTABLISHED and cols[9] in inodes:
                    found.add((_port(cols[1]), _port(cols[2])))
    return sorted(found)
