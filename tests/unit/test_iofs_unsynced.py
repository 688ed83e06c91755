"""Issue 21, item 5: lab-iofs keeps what each file held at its last sync and puts it back on a
crash (``--unsynced``): the filesystem itself, mounted for real (root and /dev/fuse), then the
language and the plan around it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_iofs import _Run, daemon  # noqa: F401 - the module's fixture: lab-iofs built here

from dsl.api import plan_text
from dsl.plan import iofs_nodes, unsynced_nodes
from runners import iofs

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/dev/fuse"),
                                reason="mounting lab-iofs needs root and /dev/fuse")


@pytest.fixture
def mounted(tmp_path: Path, daemon: Path) -> iofs.IoFs:  # noqa: F811
    data = tmp_path / "data"
    data.mkdir()
    (data / "old").write_bytes(b"A" * 8192)  # there before the mount: synced
    fs = iofs.move_onto_iofs(_Run(tmp_path), "db1", str(daemon), data,  # type: ignore[arg-type]
                             unsynced=True)
    yield fs  # type: ignore[misc]
    iofs.unmount(fs)


def _write(path: Path, data: bytes, off: int, flags: int = 0, sync: bool = False) -> None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | flags, 0o640)
    try:
        os.pwrite(fd, data, off)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def test_a_write_never_synced_is_dropped_a_synced_one_kept(mounted: iofs.IoFs) -> None:
    old = mounted.mountpoint / "old"
    _write(old, b"B" * 100, 10)                     # overwritten, never synced
    _write(old, b"C" * 5000, 8192)                  # grown, never synced
    kept = mounted.mountpoint / "kept"
    _write(kept, b"K" * 300, 0, sync=True)          # created, written and synced
    _write(kept, b"L" * 10, 50)                     # then overwritten, not synced
    got = iofs.drop_unsynced(mounted)
    assert old.read_bytes() == b"A" * 8192          # content and size as before the mount
    assert kept.read_bytes() == b"K" * 300          # as at its fsync
    assert got["restored_files"] == 2 and got["cut_bytes"] == 5000
    assert got["old_bytes"] == 100 + 10


def test_the_oldest_content_wins_and_truncations_are_undone(mounted: iofs.IoFs) -> None:
    old = mounted.mountpoint / "old"
    _write(old, b"1" * 64, 0)
    _write(old, b"2" * 64, 32)
    os.truncate(old, 16)                            # a cut below the synced size
    _write(old, b"3" * 8, 0)
    got = iofs.drop_unsynced(mounted)
    assert old.read_bytes() == b"A" * 8192
    assert got["regrown_bytes"] == 8192 - 16  # it was cut to 16 bytes, now 8192 again


def test_o_dsync_writes_and_fdatasync_count_as_synced(mounted: iofs.IoFs) -> None:
    d = mounted.mountpoint / "dsync"
    _write(d, b"D" * 4096, 0, flags=os.O_DSYNC)
    f = mounted.mountpoint / "fdatasync"
    fd = os.open(f, os.O_RDWR | os.O_CREAT, 0o640)
    try:
        os.pwrite(fd, b"F" * 512, 0)
        os.fdatasync(fd)
    finally:
        os.close(fd)
    iofs.drop_unsynced(mounted)
    assert d.read_bytes() == b"D" * 4096 and f.read_bytes() == b"F" * 512


def test_o_direct_is_not_a_sync(mounted: iofs.IoFs) -> None:
    old = mounted.mountpoint / "old"
    fd = os.open(old, os.O_RDWR | os.O_DIRECT)
    try:
        import mmap

        buf = mmap.mmap(-1, 4096)
        buf.write(b"Z" * 4096)
        os.pwritev(fd, [buf], 0)
    finally:
        os.close(fd)
    iofs.drop_unsynced(mounted)
    assert old.read_bytes() == b"A" * 8192


def test_a_second_drop_finds_nothing_to_drop(mounted: iofs.IoFs) -> None:
    _write(mounted.mountpoint / "old", b"X", 0)
    assert iofs.drop_unsynced(mounted)["restored_files"] == 1
    assert iofs.drop_unsynced(mounted)["restored_files"] == 0


def test_the_plan_puts_the_crashed_nodes_on_lab_iofs() -> None:
    plan = plan_text("""experiment "t" {
  topology galera { nodes g1, g2, g3 }
  workload w: unique_writes { target g1 }
  at 5s kill g1, g2 within 1s losing unsynced writes
  at 9s kill g3
}
""")
    assert unsynced_nodes(plan.actions()) == ["g1", "g2"] == iofs_nodes(plan.actions())
    assert plan.iofs_nodes == ["g1", "g2"]


def test_the_daemon_is_told_to_keep_unsynced_writes(tmp_path: Path) -> None:
    argv = iofs.mount_argv("lab-iofs", tmp_path / "b", tmp_path / "c", tmp_path / "m",
                           tmp_path / "r.json")
    assert argv[4:6] == ["--unsynced", str(tmp_path / "r.json")] and argv[6] == "-f"
