"""Page-cache faults: drop the whole OS page cache (root), or evict one node's files.

Nothing to heal: the cache fills again by itself.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path
from typing import Any

from dsl.models import DropCaches
from fault.context import ActionFailed, ActionIncomplete, Context, Detail, Handler, Needs
from runners.capabilities import Need, PageCache
from runners.errors import ComponentError
from runners.runtime import filesystem_type

DROP_WAIT = 2.0  # seconds the timeline waits for the kernel to finish dropping the page cache


def drop_caches(ctx: Context, a: DropCaches) -> Detail:
    if a.node is None:
        if not os.access("/proc/sys/vm/drop_caches", os.W_OK):
            raise ActionFailed("dropping the whole OS page cache needs root "
                               "(/proc/sys/vm/drop_caches is not writable); "
                               "use `drop caches on NODE` to evict one node's files")
        before = cached_bytes_total()
        # 1: the page cache (what the write-ups drop). No sync first: under load a sync
        # can block for many seconds (measured: 11 s); the drop evicts clean pages.
        # Under a read load through the page cache the kernel's drop itself can take
        # until the load stops (measured: 30 s): the timeline does not wait more than
        # DROP_WAIT for it, and the detail says whether it had finished.
        done = threading.Event()

        def drop() -> None:
            with contextlib.suppress(OSError):
                Path("/proc/sys/vm/drop_caches").write_text("1\n")
            done.set()

        t0 = time.monotonic()
        threading.Thread(target=drop, daemon=True, name="drop-caches").start()
        finished = done.wait(DROP_WAIT)
        detail: dict[str, Any] = {"scope": "os", "cached_before": before,
                                  "cached_after": cached_bytes_total(), "finished": finished,
                                  "seconds": round(time.monotonic() - t0, 3)}
        if not finished:  # the cache may be as it was: a failed action, nothing from it
            raise ActionIncomplete(
                f"the kernel had not finished dropping the page cache after {DROP_WAIT:g} s "
                f"(cached {before} → {detail['cached_after']} bytes): the drop did not "
                "complete", detail)
        return detail
    n = ctx.node(a.node.name)
    try:
        dirs = n.cache_dirs()
    except ComponentError as e:
        raise ActionFailed(e.message) from None
    before = sum(resident_bytes(d) for d in dirs)
    for d in dirs:
        evict_files(d)
    detail = {"scope": n.name, "resident_before": before,
              "resident_after": sum(resident_bytes(d) for d in dirs)}
    return {**detail, **in_memory_note(n.name, list(dirs))}


MEMORY_FILESYSTEMS = ("tmpfs", "ramfs")  # a file's pages there are its storage: never evicted


def in_memory_note(node: str, dirs: list[Path]) -> dict[str, str]:
    """A note for the action's detail when a node's files are on a filesystem in memory (a
    ``LAB_RUNTIME`` on a tmpfs, or a ``disk full`` node's tmpfs): there the page cache is
    the files' storage, so evicting them does nothing, and a figure after the drop is that
    of a warm cache."""
    kinds = sorted({k for d in dirs if (k := filesystem_type(d)) in MEMORY_FILESYSTEMS})
    if not kinds:
        return {}
    return {"note": f"{node}'s files are on a {'/'.join(kinds)}, in memory: nothing of them "
                    "can be evicted from the page cache"}


HANDLERS: dict[type, Handler] = {DropCaches: drop_caches}
NEEDS: dict[type, Needs] = {DropCaches: lambda a, _: [Need(PageCache, "drop caches")]}


# --- page cache helpers ----------------------------------------------------------------------

def _files(root: Path) -> list[Path]:
    out: list[Path] = []
    for dirpath, _, files in os.walk(root):
        for f in files:
            p = Path(dirpath) / f
            if p.is_file() and not p.is_symlink():
                out.append(p)
    return out


def evict_files(root: Path) -> int:
    """Evict a directory's files from the page cache (no privileges needed). Returns bytes."""
    total = 0
    for p in _files(root):
        try:
            fd = os.open(p, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.fdatasync(fd)
            size = os.fstat(fd).st_size
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            total += size
        except OSError:
            pass
        finally:
            os.close(fd)
    return total


def resident_bytes(root: Path) -> int:
    """Bytes of a directory's files resident in the page cache (mmap + mincore)."""
    import ctypes
    import mmap

    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    page = mmap.PAGESIZE
    total = 0
    for p in _files(root):
        try:
            size = p.stat().st_size
            fd = os.open(p, os.O_RDONLY)
        except OSError:
            continue
        try:
            if size == 0:
                continue
            addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
            if addr in (None, ctypes.c_void_p(-1).value):
                continue
            try:
                pages = (size + page - 1) // page
                vec = (ctypes.c_ubyte * pages)()
                if libc.mincore(addr, size, vec) == 0:
                    total += sum(b & 1 for b in vec) * page
            finally:
                libc.munmap(addr, size)
        finally:
            os.close(fd)
    return total


def cached_bytes_total() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("Cached:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0
