"""runners.containers.warm: the engine's helpers and each image's server read whole before a
container run's load (a host that pages out idle files would read them mid-load)."""

from __future__ import annotations

from pathlib import Path

import pytest

from runners.containers import warm


def test_read_whole_reads_each_file_to_its_end_and_skips_what_it_cannot_open(
        tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"x" * (warm.CHUNK * 2 + 5))
    small = tmp_path / "small"
    small.write_bytes(b"abc")
    assert warm.read_whole([big, tmp_path / "missing", small]) == warm.CHUNK * 2 + 5 + 3


def test_engine_files_are_real_paths_once_each(monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    runc = tmp_path / "runc"
    runc.write_bytes(b"")
    (tmp_path / "iptables").symlink_to(runc)  # two names of one program: read once
    libexec = tmp_path / "libexec"
    libexec.mkdir()
    (libexec / "netavark").write_bytes(b"")
    (libexec / "sub").mkdir()  # not a file: not read
    monkeypatch.setattr(warm, "ENGINE_DIRS", (str(libexec), str(tmp_path / "none")))
    monkeypatch.setattr(warm.shutil, "which",
                        lambda name: str(tmp_path / name) if (tmp_path / name).exists()
                        else None)
    assert warm.engine_files() == [runc, libexec / "netavark"]


def test_image_files_are_the_servers_found_in_the_merged_file_system(tmp_path: Path) -> None:
    (tmp_path / "usr/sbin").mkdir(parents=True)
    (tmp_path / "usr/sbin/mariadbd").write_bytes(b"")
    (tmp_path / "usr/local/bin").mkdir(parents=True)
    (tmp_path / "usr/local/bin/proxysql").write_bytes(b"")
    assert warm.image_files(tmp_path) == [tmp_path / "usr/sbin/mariadbd",
                                          tmp_path / "usr/local/bin/proxysql"]
