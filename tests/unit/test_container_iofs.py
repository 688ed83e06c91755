"""lab-iofs for a node in a container (``runners.containers.iofs``), without a container: the
mount at ``<run dir>/<node>/data`` over an empty backing directory beside it, and why the
files seeded through it are fsynced before a kill losing unsynced writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_iofs import _Run  # what iofs.start needs of a Run

from runners import components, iofs
from runners.containers import iofs as ctr_iofs


@pytest.fixture
def can_mount() -> None:
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse"):
        pytest.skip("mounting lab-iofs needs root and /dev/fuse")
    if not components.find(iofs.BINARY).ok:
        pytest.skip("lab-iofs is not built (make bootstrap)")


def _seed_then_drop(tmp_path: Path, synced: bool) -> tuple[bytes, dict[str, int]]:
    """A file copied in through the mount as the entrypoint's seed is (never fsynced), then
    (``synced``) every file fsynced, then an unsynced append, then the drop."""
    run = _Run(tmp_path)
    fs = ctr_iofs.mount(run, "db1", unsynced=True)  # type: ignore[arg-type]
    try:
        assert fs.mountpoint == tmp_path / "db1" / "data" and iofs.is_fuse_mount(fs.mountpoint)
        assert fs.backing == tmp_path / "db1" / "data.iofs"
        assert run.recorded == [(fs.pid, "lab-iofs db1")]
        (fs.mountpoint / "mysql").mkdir()
        (fs.mountpoint / "mysql" / "user.MAD").write_bytes(b"seed" * 1024)
        if synced:
            assert ctr_iofs.mark_synced(fs) == 1
        with open(fs.mountpoint / "mysql" / "user.MAD", "ab") as f:
            f.write(b"unsynced")
        dropped = iofs.drop_unsynced(fs)
        return (fs.backing / "mysql" / "user.MAD").read_bytes(), dropped
    finally:
        iofs.unmount(fs)
        assert not iofs.is_fuse_mount(fs.mountpoint) and not fs.running()


def test_a_seed_marked_synced_survives_the_drop_of_what_came_after(
        tmp_path: Path, can_mount: None) -> None:
    content, dropped = _seed_then_drop(tmp_path, synced=True)
    assert content == b"seed" * 1024
    assert dropped["cut_bytes"] == len(b"unsynced")
    assert (tmp_path / "db1" / "data" / "mysql" / "user.MAD").exists()  # put back, unmounted
    assert not (tmp_path / "db1" / "data.iofs").exists()


def test_a_seed_never_synced_is_lost_by_the_drop(tmp_path: Path, can_mount: None) -> None:
    """Why ``mark_synced`` runs: without it the seed is unsynced growth, cut to nothing."""
    content, dropped = _seed_then_drop(tmp_path, synced=False)
    assert content == b""
    assert dropped["cut_bytes"] == 4096 + len(b"unsynced")
