"""A node's data directory on ``lab-iofs``, a passthrough FUSE filesystem (C, libfuse3:
``runners/iofs/lab_iofs.c``, built by ``make bootstrap`` into ``.tools/bin``) that can delay
or fail the server's reads, writes and fsyncs: ``io delay NODE 50ms on fsyncs``, ``io fail
NODE on writes`` (EIO), ``io heal NODE``; and, mounted with ``--unsynced`` for a ``kill NODE
losing unsynced writes``, put every file back as of its last sync once the server is dead
(``drop_unsynced``).

Only when the experiment has an ``io delay`` or ``io fail`` (``dsl.plan.iofs_nodes``), and only
for those nodes: once the topology is up it stops the node, renames its data directory to
``<datadir>.iofs`` (the backing directory), mounts ``lab-iofs`` at the old path, and starts it
again (``move_onto_iofs``). The daemon's pid is recorded with the run's processes, so the
run's teardown and ``lab gc`` stop it; ``unmount`` unmounts and puts the files back.

The faults are in a control file of 128 bytes (``CONTROL``, the C ``struct control``) in the
run directory that the daemon maps and reads at every operation: ``Control.set`` writes them
with a sequence lock (the generation is odd while it writes), ``Control.counts`` reads what
the daemon counted: operations per class, those delayed and those failed.
"""

from __future__ import annotations

import contextlib
import errno
import json
import mmap
import os
import signal
import struct
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from runners.errors import ComponentError, log_tail
from runners.runtime import Run, alive

OpClass = Literal["reads", "writes", "fsyncs"]
OP_CLASSES: tuple[OpClass, ...] = ("reads", "writes", "fsyncs")  # the C daemon's class order
MAGIC = 0x464F494C  # "LIOF"
VERSION = 1
# magic, version, generation, delay_us[3], fail_mask, fail_errno, pad, ops[3], delayed[3],
# failed[3], reserved[2]: 128 bytes, the C struct control
CONTROL = struct.Struct("<IIQ3IIiI3Q3Q3Q2Q")
GENERATION = struct.Struct("<Q")
GENERATION_AT = 8
FAULTS = struct.Struct("<3IIi")  # delay_us[3], fail_mask, fail_errno
FAULTS_AT = 16
MAX_DELAY_US = 2**32 - 1
BINARY = "lab-iofs"
BACKING_SUFFIX = ".iofs"
MOUNT_TIMEOUT = 10.0


@dataclass(frozen=True)
class Faults:
    """What the daemon does to each class of operation (``OP_CLASSES`` order)."""

    delay_us: tuple[int, int, int] = (0, 0, 0)
    fail_mask: int = 0  # bit i: class i fails
    fail_errno: int = errno.EIO

    def delay(self, op: OpClass, seconds: float) -> Faults:
        us = min(MAX_DELAY_US, round(seconds * 1e6))
        delays = list(self.delay_us)
        delays[OP_CLASSES.index(op)] = us
        return Faults((delays[0], delays[1], delays[2]), self.fail_mask, self.fail_errno)

    def fail(self, op: OpClass) -> Faults:
        return Faults(self.delay_us, self.fail_mask | 1 << OP_CLASSES.index(op), self.fail_errno)

    def heal(self, op: OpClass) -> Faults:
        i = OP_CLASSES.index(op)
        delays = list(self.delay_us)
        delays[i] = 0
        return Faults((delays[0], delays[1], delays[2]), self.fail_mask & ~(1 << i),
                      self.fail_errno)

    @property
    def active(self) -> bool:
        return any(self.delay_us) or bool(self.fail_mask)

    def describe(self) -> dict[str, object]:
        """``{"delay_ms": {"fsyncs": 200.0}, "fail": ["writes"]}``: the classes affected."""
        return {"delay_ms": {op: us / 1000 for op, us in zip(OP_CLASSES, self.delay_us,
                                                             strict=True) if us},
                "fail": [op for i, op in enumerate(OP_CLASSES) if self.fail_mask >> i & 1]}


@dataclass(frozen=True)
class Counts:
    """What the daemon counted per class since it started (``OP_CLASSES`` order)."""

    ops: tuple[int, int, int] = (0, 0, 0)
    delayed: tuple[int, int, int] = (0, 0, 0)
    failed: tuple[int, int, int] = (0, 0, 0)

    def minus(self, other: Counts) -> Counts:
        def sub(a: tuple[int, int, int], b: tuple[int, int, int]) -> tuple[int, int, int]:
            return a[0] - b[0], a[1] - b[1], a[2] - b[2]

        return Counts(sub(self.ops, other.ops), sub(self.delayed, other.delayed),
                      sub(self.failed, other.failed))

    def as_dict(self) -> dict[str, dict[str, int]]:
        """``{"fsyncs": {"ops": 40, "delayed": 40, "failed": 0}, ...}``."""
        return {op: {"ops": self.ops[i], "delayed": self.delayed[i], "failed": self.failed[i]}
                for i, op in enumerate(OP_CLASSES)}


def encode(faults: Faults, generation: int = 0, counts: Counts | None = None) -> bytes:
    """A whole control file (a fresh one: ``encode(Faults())``)."""
    c = counts or Counts()
    return CONTROL.pack(MAGIC, VERSION, generation, *faults.delay_us, faults.fail_mask,
                        faults.fail_errno, 0, *c.ops, *c.delayed, *c.failed, 0, 0)


def decode(data: bytes) -> tuple[int, Faults, Counts]:
    """(generation, faults, counts) of a control file's bytes."""
    v = CONTROL.unpack_from(data)
    if v[0] != MAGIC or v[1] != VERSION:
        raise ValueError("not a lab-iofs control file of version 1")
    return (v[2], Faults((v[3], v[4], v[5]), v[6], v[7]),
            Counts((v[9], v[10], v[11]), (v[12], v[13], v[14]), (v[15], v[16], v[17])))


def control_file(run_dir: Path, node: str) -> Path:
    return run_dir / f"iofs-{node}.ctl"


def new_control(path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(encode(Faults()))
    tmp.replace(path)


class Control:
    """The control file, mapped: ``set`` the faults, read the ``counts``. One writer (the lab
    process; a lock keeps its threads apart)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        fd = os.open(path, os.O_RDWR)
        try:
            self.map = mmap.mmap(fd, CONTROL.size)
        finally:
            os.close(fd)
        self.lock = threading.Lock()
        decode(self.map[:CONTROL.size])  # raises on a file of another layout

    def read(self) -> tuple[Faults, Counts]:
        _, faults, counts = decode(self.map[:CONTROL.size])
        return faults, counts

    @property
    def faults(self) -> Faults:
        return self.read()[0]

    def counts(self) -> Counts:
        return self.read()[1]

    def set(self, faults: Faults) -> None:
        """Write the faults: generation odd, the fields, generation even (the daemon retries a
        read that saw an odd or changed generation)."""
        with self.lock:
            (gen,) = GENERATION.unpack_from(self.map, GENERATION_AT)
            gen += 1 if gen % 2 == 0 else 0  # odd: writing
            GENERATION.pack_into(self.map, GENERATION_AT, gen)
            FAULTS.pack_into(self.map, FAULTS_AT, *faults.delay_us, faults.fail_mask,
                             faults.fail_errno)
            GENERATION.pack_into(self.map, GENERATION_AT, gen + 1)

    def close(self) -> None:
        with contextlib.suppress(BufferError, ValueError):
            self.map.close()


# --- the daemon and the mount ---------------------------------------------------------------

def backing_dir(datadir: Path) -> Path:
    """Where the node's files are while ``lab-iofs`` shows them at ``datadir``."""
    return datadir.with_name(datadir.name + BACKING_SUFFIX)


def mount_argv(binary: str, backing: Path, control: Path, mountpoint: Path,
               unsynced: Path | None = None) -> list[str]:
    """The daemon's command line: in the foreground (the lab records and reaps its pid),
    multithreaded (libfuse's default: a thread per waiting request, so delayed operations
    sleep side by side), other users allowed (the server may run as ``mysql``) with the
    kernel checking permissions; ``--unsynced RESULT``: it keeps what each file held at its
    last sync, puts it back on SIGUSR1 and writes what it dropped to RESULT."""
    opts = ["allow_other", "default_permissions", "fsname=lab-iofs", "subtype=lab-iofs"]
    extra = ["--unsynced", str(unsynced)] if unsynced is not None else []
    return [binary, str(backing), str(control), str(mountpoint), *extra, "-f", "-o",
            ",".join(opts)]


def unsynced_file(run_dir: Path, node: str) -> Path:
    """Where the daemon of ``node`` says what it dropped (``drop_unsynced``)."""
    return run_dir / f"iofs-{node}.unsynced.json"


def is_fuse_mount(path: Path, mounts: str | None = None) -> bool:
    """``path`` is a ``lab-iofs`` mount point (``/proc/self/mounts``)."""
    from runners.runtime import mount_entries, read_mounts

    for point, fstype in mount_entries(read_mounts() if mounts is None else mounts):
        if point == str(path) and fstype.startswith("fuse"):
            return True
    return False


@dataclass
class IoFs:
    """One node's mount: the daemon, its mount point, backing directory and control file."""

    node: str
    mountpoint: Path
    backing: Path
    control: Path
    pid: int
    log: Path
    unsynced: Path | None = None  # the result file of --unsynced (None: not kept)

    def running(self) -> bool:
        return alive(self.pid)


# The daemon's kernel-side attribute cache (its attr_timeout and entry_timeout): a size read
# before a drop may be believed that long after it, so a server starts only once it is over.
ATTR_TIMEOUT = 1.0
DROP_TIMEOUT = 30.0


def drop_unsynced(fs: IoFs, timeout: float = DROP_TIMEOUT) -> dict[str, int]:
    """Every file of the mount put back as of its last sync (the daemon's ``--unsynced``:
    SIGUSR1, then its result file): ``files`` tracked, ``restored_files``, ``undo_entries``,
    ``old_bytes`` written back, ``cut_bytes`` (unsynced growth cut off), ``regrown_bytes``
    (unsynced truncations undone), ``skipped_removed``. Call it once the server is dead; it
    returns once the kernel's cached attributes are stale (``ATTR_TIMEOUT``)."""
    if fs.unsynced is None:
        raise ComponentError(BINARY, f"{fs.node}'s lab-iofs does not keep unsynced writes "
                             "(mounted without --unsynced)", fs.log)
    fs.unsynced.unlink(missing_ok=True)
    os.kill(fs.pid, signal.SIGUSR1)
    t0 = time.monotonic()
    while not fs.unsynced.exists():
        if not fs.running():
            raise ComponentError(BINARY, "exited before dropping the unsynced writes", fs.log)
        if time.monotonic() - t0 > timeout:
            raise ComponentError(BINARY, f"did not drop the unsynced writes within "
                                 f"{timeout:g}s", fs.log)
        time.sleep(0.01)
    got = json.loads(fs.unsynced.read_text())
    left = ATTR_TIMEOUT - (time.monotonic() - t0)
    if left > 0:
        time.sleep(left)
    return {str(k): int(v) for k, v in got.items()}


def start(run: Run, node: str, binary: str, mountpoint: Path, backing: Path,
          timeout: float = MOUNT_TIMEOUT, unsynced: bool = False) -> IoFs:
    """Start the daemon showing ``backing`` at ``mountpoint`` (an empty directory) and wait
    until the kernel has the mount (``unsynced``: keeping what each file held at its last
    sync, ``drop_unsynced``)."""
    control = control_file(run.dir, node)
    new_control(control)
    log = run.dir / f"iofs-{node}.log"
    result = unsynced_file(run.dir, node) if unsynced else None
    with open(log, "ab") as out:
        proc = subprocess.Popen(mount_argv(binary, backing, control, mountpoint, result),
                                stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                start_new_session=True)
    run.record(proc.pid, f"{BINARY} {node}")
    fs = IoFs(node, mountpoint, backing, control, proc.pid, log, result)
    deadline = time.monotonic() + timeout
    while not is_fuse_mount(mountpoint):
        if proc.poll() is not None:
            raise ComponentError(BINARY, f"exited ({proc.returncode}) before mounting "
                                 f"{mountpoint}", log)
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait(5)
            raise ComponentError(BINARY, f"did not mount {mountpoint} within {timeout:g}s", log)
        time.sleep(0.02)
    return fs


def move_onto_iofs(run: Run, node: str, binary: str, datadir: Path,
                   unsynced: bool = False) -> IoFs:
    """Put a (stopped) server's data directory on ``lab-iofs``: its files move to the backing
    directory (a rename: same filesystem), an empty directory of the same owner and mode takes
    its place, and the daemon mounts the backing directory there."""
    backing = backing_dir(datadir)
    st = datadir.stat()
    datadir.rename(backing)
    datadir.mkdir()
    os.chown(datadir, st.st_uid, st.st_gid)
    os.chmod(datadir, st.st_mode & 0o7777)
    try:
        return start(run, node, binary, datadir, backing, unsynced=unsynced)
    except BaseException:
        restore(datadir, backing)
        raise


def unmount(fs: IoFs, timeout: float = 5.0) -> None:
    """Unmount (lazily: a process still holding files does not keep it), end the daemon and
    put the files back at the mount point. Safe to call twice."""
    if is_fuse_mount(fs.mountpoint):
        subprocess.run(["umount", "-l", str(fs.mountpoint)], capture_output=True, timeout=60)
    deadline = time.monotonic() + timeout
    while fs.running() and time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(fs.pid, os.WNOHANG)
        time.sleep(0.02)
    if fs.running():
        with contextlib.suppress(ProcessLookupError):
            os.kill(fs.pid, 9)
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(fs.pid, 0)
    restore(fs.mountpoint, fs.backing)


def restore(datadir: Path, backing: Path) -> None:
    """The files back where they were: the (empty, unmounted) mount point removed, the backing
    directory renamed to it."""
    if not backing.is_dir() or is_fuse_mount(datadir):
        return
    with contextlib.suppress(OSError):
        datadir.rmdir()
    if not datadir.exists():
        backing.rename(datadir)


def log_of(fs: IoFs) -> str:
    return log_tail(fs.log)
