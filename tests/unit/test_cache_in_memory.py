"""A node's files on a filesystem in memory (a LAB_RUNTIME on a tmpfs, a `disk full` node's
tmpfs) cannot be evicted from the page cache: `drop caches on NODE` and `cold restart` say so in
their detail instead of reporting a drop that did nothing (fault/cache.py)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from fault.cache import MEMORY_FILESYSTEMS, in_memory_note
from runners.runtime import filesystem_type, mount_entries

SHM = Path("/dev/shm")


def _root_type() -> str:
    with open("/proc/self/mounts") as f:
        return next(line.split()[2] for line in f if line.split()[1] == "/")


@pytest.mark.skipif(filesystem_type(SHM) != "tmpfs", reason="/dev/shm is not a tmpfs here")
def test_files_on_a_tmpfs_get_a_note_naming_the_node() -> None:
    with tempfile.TemporaryDirectory(dir=SHM) as d:
        deep = Path(d) / "data" / "ibdata1"  # not there yet: the mount above it decides
        assert filesystem_type(deep) == "tmpfs"
        note = in_memory_note("db1", [Path(d)])
        assert note == {"note": "db1's files are on a tmpfs, in memory: nothing of them can "
                                "be evicted from the page cache"}


def test_files_on_the_disk_get_no_note(tmp_path: Path) -> None:
    kind = filesystem_type(tmp_path)
    assert kind  # a mount point is always found: / at worst
    if kind in MEMORY_FILESYSTEMS:
        pytest.skip(f"{tmp_path} is on a {kind} here")
    assert in_memory_note("db1", [tmp_path]) == {}


def test_the_longest_mount_point_decides() -> None:
    assert filesystem_type(Path("/")) == _root_type()
    assert filesystem_type(Path("/proc/self")) == "proc"  # below /, on its own mount


def test_mount_points_are_decoded_as_the_kernel_escapes_them() -> None:
    text = ("tmpfs /run/a\\040b tmpfs rw 0 0\n"
            "lab-iofs /tmp/r\\011x fuse.lab-iofs rw 0 0\nshort\n")
    assert mount_entries(text) == [("/run/a b", "tmpfs"), ("/tmp/r\tx", "fuse.lab-iofs")]
    assert filesystem_type(Path("/run/a b/data"), text) == "tmpfs"
    assert filesystem_type(Path("/elsewhere"), text) == ""
