"""A node's data directory, or its binary logs, on a tmpfs of its own, so that ``disk full NODE``
(``disk full NODE binlog``) can fill it.

Only when the experiment has ``disk full NODE`` (``disk_nodes``), and only for those nodes:
once the topology is up, ``NativeTopology`` stops the node, moves its data directory onto a
tmpfs mounted at the same path (``move_onto_tmpfs``: the tmpfs holds what the directory held
plus ``HEADROOM``), and starts it again. The binary and relay logs live in the data directory
(``log_bin`` is a base name there), so they share the filesystem.

``disk full NODE binlog`` (``binlog_nodes``): the node's binary logs alone go onto a tmpfs
mounted at ``<node dir>/binlog`` (``binlog_dir``, beside the data directory): the node is
stopped, its ``<log_bin>.*`` files (the logs, the index, the GTID state file) are moved there,
the index is rewritten with their new paths (``index_lines``), the node's config file gets
``log_bin`` and ``log_bin_index`` pointing there (``binlog_settings``), and it is started again
(``move_binlogs_onto_tmpfs``). Relay logs stay in the data directory.

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


def disk_nodes(actions: Iterable[Action], target: str = "datadir") -> list[str]:
    """The nodes a ``disk full`` action names, in first-use order: of their data directory
    (``target="datadir"``) or of their binary logs (``"binlog"``)."""
    out: list[str] = []
    for a in actions:
        if isinstance(a, DiskFault) and a.verb == "full" and a.target == target \
                and a.node.name not in out:
            out.append(a.node.name)
    return out


def binlog_nodes(actions: Iterable[Action]) -> list[str]:
    """The nodes whose binary logs ``disk full NODE binlog`` fills, in first-use order."""
    return disk_nodes(actions, "binlog")


def any_disk_nodes(actions: Iterable[Action]) -> list[str]:
    """Every node a ``disk full`` puts something of on a tmpfs (needs root)."""
    acts = list(actions)
    return list(dict.fromkeys(disk_nodes(acts) + binlog_nodes(acts)))


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


# --- the binary logs on a tmpfs of their own (``disk full NODE binlog``) --------------------------

BINLOG_DIR = "binlog"  # the mount point, beside the node's data directory


def binlog_dir(datadir: Path) -> Path:
    """Where a node's binary logs go for ``disk full NODE binlog``: ``<node dir>/binlog``
    (the node's directory holds its data directory, for sandboxes and bare servers alike)."""
    return datadir.parent / BINLOG_DIR


def binlog_files(datadir: Path, base: str) -> list[Path]:
    """The files of binary logs named ``base`` in the data directory: ``base.000001``...,
    ``base.index`` and MariaDB's GTID state file ``base.state``."""
    return sorted(p for p in datadir.glob(f"{base}.*") if p.is_file())


def index_lines(text: str, target: Path) -> str:
    """The binary log index with every log's path made ``target/<its file name>``: the server
    finds a log a replica asks for by its full name in the index (``./mysql-bin.000002`` ->
    ``/run/db1/binlog/mysql-bin.000002``)."""
    out = [str(target / Path(line.strip()).name) for line in text.splitlines() if line.strip()]
    return "".join(f"{line}\n" for line in out)


def binlog_settings(target: Path, base: str) -> dict[str, str]:
    """The settings that make the server write its binary logs and their index in ``target``."""
    return {"log_bin": str(target / base), "log_bin_index": str(target / f"{base}.index")}


def config_lines(settings: dict[str, str]) -> str:
    """A ``[mysqld]`` section to append to a node's option file (the last value read wins)."""
    body = "".join(f"{k}={v}\n" for k, v in settings.items())
    return f"\n# the binary logs on a tmpfs of their own (disk full ... binlog)\n[mysqld]\n{body}"


def move_binlogs_onto_tmpfs(datadir: Path, base: str, config_file: Path,
                            headroom: int = HEADROOM) -> int:
    """Put a (stopped) server's binary logs named ``base`` on a tmpfs of their own at
    ``binlog_dir(datadir)``, with the same owner and mode as the data directory; rewrite the
    index; point the server's option file at them. Returns the tmpfs's size."""
    files = binlog_files(datadir, base)
    index = datadir / f"{base}.index"
    if index not in files:
        raise OSError(f"no binary log index {index}: the server writes no binary logs "
                      f"named {base!r} there")
    target = binlog_dir(datadir)
    st = datadir.stat()
    size = tmpfs_size(sum(max(f.stat().st_size, f.stat().st_blocks * 512) for f in files),
                      headroom)
    target.mkdir()
    _run(mount_argv(target, size))
    os.chown(target, st.st_uid, st.st_gid)
    os.chmod(target, st.st_mode & 0o7777)
    for f in files:
        _run(["cp", "-a", str(f), str(target / f.name)])
    moved_index = target / index.name
    moved_index.write_text(index_lines(index.read_text(), target))
    for f in files:
        f.unlink()
    with open(config_file, "a") as cf:
        cf.write(config_lines(binlog_settings(target, base)))
    return size
