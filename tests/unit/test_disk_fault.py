"""``disk full`` / ``disk free`` without mounting anything: the nodes the fault needs on a
tmpfs, the tmpfs's size and mount command, filling and freeing (on a simulated filesystem),
the mount points a run leaves, and the fault's heal bookkeeping."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import pytest
from fakes import FakeTopology, nemesis, ref

from dsl.actions import describe, needs_root, undo
from dsl.api import check_text, plan_text
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


# --- the binary logs on a tmpfs of their own (disk full NODE binlog) ------------------------------

BINLOG_EXP = """experiment "b" {
  duration 10s
  topology replication { primary db1  replicas db2 }
  workload w: probe { target db1 }
  at 2s disk full db1 binlog
  at 3s disk full db2
  at 4s disk free db1 binlog
}
"""


def test_binlog_is_a_target_of_its_own() -> None:
    plan = plan_text(BINLOG_EXP, "b.exp")
    full = plan.actions()[0]
    assert isinstance(full, DiskFault) and full.target == "binlog"
    assert describe(full) == "disk full db1 binlog"
    assert undo(full) == DiskFault(verb="free", node=full.node, target="binlog", span=full.span)
    assert disk.binlog_nodes(plan.actions()) == ["db1"]
    assert disk.disk_nodes(plan.actions()) == ["db2"]  # the data directory only
    assert disk.any_disk_nodes(plan.actions()) == ["db2", "db1"]
    assert "db1's binary logs" in str(needs_root(full, "replication"))


def test_a_single_server_has_binlogs_only_when_the_file_names_them() -> None:
    single = """experiment "s" {
  duration 5s
  topology single { node db1 }
  %s
  workload w: probe { target db1 }
  at 2s disk full db1 binlog
}
"""
    errors = check_text(single % "", "s.exp")
    assert [e.message for e in errors] == [
        "'disk full db1 binlog' fills the filesystem of the binary logs; a single server "
        "writes none unless the file turns them on"]
    assert check_text(single % "config { log_bin = mysql-bin }", "s.exp") == []


def test_binlog_dir_is_beside_the_data_directory() -> None:
    assert disk.binlog_dir(Path("/r/sb/s/master/data")) == Path("/r/sb/s/master/binlog")
    assert disk.binlog_dir(Path("/r/db1/data")) == Path("/r/db1/binlog")


def test_the_index_names_each_log_at_its_new_place() -> None:
    text = "./mysql-bin.000001\n./mysql-bin.000002\n\n/old/data/mysql-bin.000003\n"
    assert disk.index_lines(text, Path("/r/db1/binlog")) == (
        "/r/db1/binlog/mysql-bin.000001\n/r/db1/binlog/mysql-bin.000002\n"
        "/r/db1/binlog/mysql-bin.000003\n")


def test_move_binlogs_moves_only_the_binlog_files_and_points_the_server_there(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mounted: list[list[str]] = []
    real_run = disk._run
    monkeypatch.setattr(disk, "_run", lambda argv: mounted.append(argv) if argv[0] == "mount"
                        else real_run(argv))
    data = tmp_path / "node1" / "data"
    data.mkdir(parents=True)
    for name in ("mysql-bin.000001", "mysql-bin.000002", "mysql-bin.state", "ibdata1",
                 "mysql-relay.000001", "mysql-relay.index"):
        (data / name).write_bytes(b"x" * 100)
    (data / "mysql-bin.index").write_text("./mysql-bin.000001\n./mysql-bin.000002\n")
    cnf = tmp_path / "node1" / "my.sandbox.cnf"
    cnf.write_text("[mysqld]\nlog-bin = mysql-bin\n")
    size = disk.move_binlogs_onto_tmpfs(data, "mysql-bin", cnf)
    target = tmp_path / "node1" / "binlog"
    assert size == disk.HEADROOM + 1024**2  # a few bytes of logs: one more MiB
    assert mounted == [disk.mount_argv(target, size)]
    assert sorted(p.name for p in target.iterdir()) == [
        "mysql-bin.000001", "mysql-bin.000002", "mysql-bin.index", "mysql-bin.state"]
    assert sorted(p.name for p in data.iterdir()) == [
        "ibdata1", "mysql-relay.000001", "mysql-relay.index"]  # relay logs stay
    assert (target / "mysql-bin.index").read_text() == (
        f"{target}/mysql-bin.000001\n{target}/mysql-bin.000002\n")
    assert cnf.read_text().endswith(
        f"[mysqld]\nlog_bin={target}/mysql-bin\nlog_bin_index={target}/mysql-bin.index\n")


def test_move_binlogs_refuses_a_server_without_binlogs(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    with pytest.raises(OSError, match="no binary log index"):
        disk.move_binlogs_onto_tmpfs(tmp_path / "data", "mysql-bin", tmp_path / "my.cnf")
    assert not (tmp_path / "binlog").exists()  # nothing mounted


def test_a_full_binlog_disk_is_its_own_fault(tmp_path: Path, mounted: list[Any]) -> None:
    nem, history = nemesis(FakeTopology(tmp_path))
    detail = nem.apply(DiskFault(verb="full", node=ref("db2"), target="binlog"))
    assert detail["path"] == str(tmp_path / "binlog")  # beside db2's data directory
    nem.apply(DiskFault(verb="full", node=ref("db3")))
    assert nem.heal_all() == ["disk free db2 binlog", "disk free db3"]
    assert mounted == ["fill binlog", "fill db3", "free binlog", "free db3"]


def test_a_binlog_not_on_a_tmpfs_is_refused(tmp_path: Path) -> None:
    nem, _ = nemesis(FakeTopology(tmp_path))
    with pytest.raises(ActionFailed, match=r"binary logs of db2 .*`disk full db2 binlog`"):
        nem.apply(DiskFault(verb="full", node=ref("db2"), target="binlog"))


def test_lab_plan_says_what_goes_on_a_tmpfs() -> None:
    from lab.cli.lang import tmpfs_line

    line = tmpfs_line(plan_text(BINLOG_EXP, "b.exp"))
    assert line is not None and line.startswith(
        "On a tmpfs of its own (disk full): db2 (data directory), db1 (binary logs, at binlog "
        "beside its data directory).")
    assert tmpfs_line(plan_text(BINLOG_EXP.replace("disk full", "disk free"), "b.exp")) is None
