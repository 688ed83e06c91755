"""``disk full`` / ``disk free`` without mounting anything: the nodes the fault needs on a
tmpfs, the tmpfs's size and mount command, filling and freeing (on a simulated filesystem),
the mount points a run leaves, and the fault's heal bookkeeping."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import pytest
from fakes import FakeTopology, nemesis, ref

from dsl.api import plan_text
from dsl.models import DiskFault, NodeAction
from fault.nemesis import ActionFailed
from runners import disk
from runners.runtime import mounts_under

EXP = """experiment "d" {
  duration 10s
  topology replication { primary db1  replicas db2, db3 }
  workload w: probe { target db1 }
  before load { disk full db3 }
  at 3s disk full db2
  at 4s disk full db3
  at 6s disk free db2
}
"""


def test_only_the_nodes_named_by_disk_full_go_on_a_tmpfs() -> None:
    assert disk.disk_nodes(plan_text(EXP, "d.exp").actions()) == ["db3", "db2"]
    assert disk.disk_nodes([DiskFault(verb="free", node=ref("db1"))]) == []


def test_the_tmpfs_holds_the_directory_plus_headroom_in_whole_mib() -> None:
    mib = 1024**2
    assert disk.tmpfs_size(0) == disk.HEADROOM
    assert disk.tmpfs_size(10 * mib + 1, headroom=mib) == 12 * mib
    assert disk.tmpfs_size(10 * mib, headroom=mib) == 11 * mib


def test_mount_command_is_argv() -> None:
    assert disk.mount_argv(Path("/r/db1/data"), 75497472) == [
        "mount", "-t", "tmpfs", "-o", "size=75497472,mode=0750", "tmpfs", "/r/db1/data"]


def test_dir_bytes_counts_files_below(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f").write_bytes(b"x" * 10000)
    (tmp_path / "g").write_bytes(b"y" * 10)
    assert disk.dir_bytes(tmp_path) >= 10010


class FakeFs:
    """A filesystem of ``size`` bytes where fallocate beyond what is free fails."""

    def __init__(self, size: int) -> None:
        self.free = size

    def available(self, path: Path) -> int:
        return self.free

    def fallocate(self, fd: int, offset: int, length: int) -> None:
        if length > self.free:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.free -= length


def test_fill_takes_every_free_byte_then_free_gives_it_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fs = FakeFs(10_000_000)
    monkeypatch.setattr(disk, "available", fs.available)
    monkeypatch.setattr(disk.os, "posix_fallocate", fs.fallocate)
    assert disk.fill(tmp_path) == 10_000_000
    assert fs.free == 0 and (tmp_path / disk.FILLER).exists()
    (tmp_path / disk.FILLER).write_bytes(b"z" * 123)  # what a real fallocate leaves
    assert disk.free(tmp_path) == 123
    assert not (tmp_path / disk.FILLER).exists()
    assert disk.free(tmp_path) == 0  # freeing twice is harmless


def test_fill_halves_its_chunk_when_the_filesystem_says_less(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fs = FakeFs(1_000_000)
    monkeypatch.setattr(disk, "available", lambda p: fs.free + 8192)  # statvfs over-reports
    monkeypatch.setattr(disk.os, "posix_fallocate", fs.fallocate)
    taken = disk.fill(tmp_path)
    assert 1_000_000 - 4 * disk.PAGE < taken <= 1_000_000  # all but a few pages


def test_fill_does_not_hide_other_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(fd: int, offset: int, length: int) -> None:
        raise OSError(errno.EOPNOTSUPP, "not supported")

    monkeypatch.setattr(disk, "available", lambda p: 1 << 20)
    monkeypatch.setattr(disk.os, "posix_fallocate", fail)
    with pytest.raises(OSError, match="not supported"):
        disk.fill(tmp_path)


def test_mounts_under_a_run_deepest_first() -> None:
    mounts = "\n".join([
        "tmpfs /tmp/rcl-0/abc/db1/data tmpfs rw,size=65536k 0 0",
        "tmpfs /tmp/rcl-0/abc/sb/s/node2/data tmpfs rw 0 0",
        "tmpfs /tmp/rcl-0/abcd/db1/data tmpfs rw 0 0",  # another run with a longer id
        "/dev/sda1 / ext4 rw 0 0",
    ])
    assert mounts_under(Path("/tmp/rcl-0/abc"), mounts) == [
        Path("/tmp/rcl-0/abc/sb/s/node2/data"), Path("/tmp/rcl-0/abc/db1/data")]


# --- the fault's bookkeeping --------------------------------------------------------------------

@pytest.fixture
def mounted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    monkeypatch.setattr("fault.disk.os.path.ismount", lambda p: True)
    monkeypatch.setattr(disk, "fill", lambda p: calls.append(f"fill {p.name}") or 1000)
    monkeypatch.setattr(disk, "free", lambda p: calls.append(f"free {p.name}") or 1000)
    monkeypatch.setattr(disk, "available", lambda p: 0)
    return calls


def test_a_disk_not_on_a_tmpfs_is_refused(tmp_path: Path) -> None:
    nem, history = nemesis(FakeTopology(tmp_path))
    with pytest.raises(ActionFailed, match="not on a tmpfs of its own"):
        nem.apply(DiskFault(verb="full", node=ref("db2")))
    assert [(o.type, o.f) for o in history] == [("invoke", "disk_full"), ("fail", "disk_full")]


def test_full_disks_are_freed_before_stopped_nodes_start(tmp_path: Path,
                                                         mounted: list[Any]) -> None:
    topo = FakeTopology(tmp_path)
    nem, history = nemesis(topo)
    assert nem.apply(DiskFault(verb="full", node=ref("db2")))["filled_bytes"] == 1000
    nem.apply(DiskFault(verb="full", node=ref("db3")))
    nem.apply(DiskFault(verb="free", node=ref("db3")))
    nem.apply(NodeAction(verb="kill", node=ref("db2")))
    assert nem.heal_all() == ["disk free db2", "start db2"]
    assert mounted == ["fill db2", "fill db3", "free db3", "free db2"]
    assert [o.f for o in history if o.type == "invoke"] == [
        "disk_full", "disk_full", "disk_free", "kill"]
