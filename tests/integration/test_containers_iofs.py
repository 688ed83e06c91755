"""lab-iofs on the container back-end (``runners.containers.iofs``): a node's data directory is
the lab-iofs mount of this machine, bind-mounted into its container, so ``io delay``, ``io
fail`` and a kill ``losing unsynced writes`` run there as natively — the catalogue's own
files, unchanged, with ``--backend containers``. After each: no lab-iofs mount or daemon of the
session, no container or network of the run; after ``kill -9`` of the lab, ``lab gc`` leaves
none either.

Skips as tests/integration/test_containers.py does (podman, root), and without /dev/fuse or
lab-iofs (``make bootstrap``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from runners.components import find

from .conftest import ROOT, lab_iofs_left
from .test_containers import (
    LAB,
    _left_by,
    _podman_services,
    _require_podman,
    run_up,
)

pytestmark = pytest.mark.integration


def _require_iofs() -> None:
    _require_podman()
    if not os.path.exists("/dev/fuse"):
        pytest.skip("lab-iofs mounts a FUSE filesystem: /dev/fuse is missing")
    if not find("lab-iofs").ok:
        pytest.skip("lab-iofs is not built here (make bootstrap)")


def _run(exp: Path, tmp_path: Path) -> tuple[dict[str, Any], Any]:
    from lab.store.db import Store

    db = tmp_path / "r.db"
    out = subprocess.run([*LAB, "run", str(exp), "--backend", "containers", "--json",
                          "--db", str(db)], capture_output=True, text=True, cwd=ROOT,
                         timeout=400)
    assert out.returncode in (0, 1) and out.stdout.startswith("{"), \
        out.stdout[-3000:] + out.stderr[-3000:]
    summary = json.loads(out.stdout)
    for cell in summary["cells"]:
        print(cell.get("variant"), cell["status"], cell.get("error"),
              [(e["text"], e.get("observed"), e["passed"]) for e in cell["expectations"]])
    return summary, Store(db)


def test_io_stall_on_a_container_stalls_fsyncs_fails_writes_and_leaves_nothing(
        tmp_path: Path) -> None:
    """experiments/io-stall.exp on containers: each commit waits for its delayed fsync (the
    probe's p99 at least the 200 ms), the heal counts the fsyncs lab-iofs delayed, and the
    first write that fails with EIO stops the server (InnoDB aborts on a failed redo log
    write): the probe is down at least 2 s with errors — the file's own expectations."""
    _require_iofs()
    summary, store = _run(ROOT / "experiments" / "io-stall.exp", tmp_path)
    (cell,) = summary["cells"]
    assert cell["status"] == "passed", (cell.get("error"), cell["expectations"])
    got = {e["text"]: e["passed"] for e in cell["expectations"]}
    assert got["expect latency(writes).p99 >= 200ms"] is True
    assert got["expect downtime(writes) >= 2s"] is True
    ops = store.operations(summary["run_id"], 1)
    heal = next(o for o in ops if o.f == "io_heal" and o.type == "ok")
    assert heal.value["since_previous"]["fsyncs"]["delayed"] >= 10, heal.value
    fail = next(o for o in ops if o.f == "io_fail" and o.type == "ok")
    assert fail.value["faults"]["fail"] == ["writes"]
    assert lab_iofs_left() == []
    assert _left_by(summary["run_id"]) == []  # the run's (other tests' may run meanwhile)
    assert _podman_services() == []


def test_unsynced_loss_calibration_on_containers(tmp_path: Path) -> None:
    """experiments/calibration/unsynced-loss.exp, unchanged, on containers: with
    innodb_flush_log_at_trx_commit = 1 a kill losing unsynced writes loses no acknowledged
    insert; with = 2 it loses some, at most about a second's worth (750) — as natively."""
    _require_iofs()
    summary, store = _run(ROOT / "experiments" / "calibration" / "unsynced-loss.exp", tmp_path)
    cells = {c["variant"]: c for c in summary["cells"]}
    assert set(cells) == {"synced", "os_cache"}, list(cells)
    for name, cell in cells.items():
        assert cell["status"] == "passed", (name, cell.get("error"), cell["expectations"])
    ops = store.operations(summary["run_id"], cells["os_cache"]["index"])
    kill = next(o for o in ops if o.f == "kill" and o.type == "ok")
    # what lab-iofs put back: the server's unsynced redo log writes, at least
    assert kill.value["unsynced"]["restored_files"] >= 1, kill.value
    assert lab_iofs_left() == []
    assert _left_by(summary["run_id"]) == []


UP = """
experiment "ctr-io-up" {
  backend containers
  topology single { node db1 }
  at 1s io delay db1 10ms on fsyncs
  at 2s kill db1 losing unsynced writes
}
"""


def test_kill_9_of_lab_then_lab_gc_leaves_no_iofs_mount(tmp_path: Path) -> None:
    """`lab up` of a file with io faults (db1 on lab-iofs), the lab killed with SIGKILL: its
    mount, daemon and container stay; `lab gc` removes them all."""
    _require_iofs()
    from runners.runtime import list_runs

    exp = tmp_path / "ctr-io-up.exp"
    exp.write_text(UP)
    known = {i.id for i in list_runs()}
    proc = subprocess.Popen([*LAB, "up", str(exp)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    run_id = None
    try:
        run_id = run_up(proc, known, timeout=180)
        mounts = [m for m in Path("/proc/self/mounts").read_text().splitlines()
                  if run_id in m and "lab-iofs" in m]
        assert len(mounts) == 1 and "/db1/data " in mounts[0], mounts
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the lab, as `kill -9` would
        proc.wait(10)
    assert _left_by(run_id) and any(run_id in line for line in lab_iofs_left()), \
        "kill -9 of the lab should leave its container and mount to lab gc"
    gc = subprocess.run([*LAB, "gc", "--db", str(tmp_path / "r.db")], capture_output=True,
                        text=True, cwd=ROOT, timeout=120)
    assert gc.returncode == 0, gc.stderr
    assert _left_by(run_id) == []
    assert not [line for line in lab_iofs_left() if run_id in line]
    assert _podman_services() == []
