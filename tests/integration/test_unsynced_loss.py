"""Issue 21, item 5 on a real server: `kill db1 losing unsynced writes` with lab-iofs under
the data directory. With innodb_flush_log_at_trx_commit = 2 and sync_binlog = 0 acknowledged
writes are lost (the kill's value says what lab-iofs dropped); with = 1 and sync_binlog = 1
none; nothing is left mounted or running afterwards. Needs root and /dev/fuse."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runners import iofs

from .conftest import our_processes, require
from .test_coordinated_crash import reported
from .test_incident_faults import run_lab

pytestmark = pytest.mark.integration

SINGLE = """experiment "unsynced" {{
  duration 10s
  topology single {{
    node db1
    config {{ innodb_flush_log_at_trx_commit = {flush}
             sync_binlog = {sync} }}
  }}
  workload w: unique_writes {{ target db1  rate 300/s }}
  at 5s kill db1 losing unsynced writes
  at 7s start db1
  report lost_writes(w)
}}
"""


@pytest.fixture(autouse=True)
def _needs_fuse() -> None:
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse"):
        pytest.skip("lab-iofs needs root and /dev/fuse")
    require("dbdeployer", "mariadbd", iofs.BINARY)


@pytest.mark.parametrize(("flush", "sync", "lost"), [(2, 0, True), (1, 1, False)])
def test_a_crash_loses_what_was_not_synced(tmp_path: Path, flush: int, sync: int,
                                           lost: bool) -> None:
    cell, ops = run_lab(tmp_path, SINGLE.format(flush=flush, sync=sync))
    assert cell["status"] == "passed", cell.get("error")
    kill = next(o for o in ops if o.f == "kill" and o.type == "ok")
    dropped = kill.value["unsynced"]
    assert dropped["files"] > 0
    count = reported(cell, "lost_writes(w).count")
    if lost:
        assert dropped["restored_files"] > 0 and 0 < count <= 450  # about a second of 300/s
    else:
        assert count == 0
    assert our_processes() == []
    assert not any(iofs.is_fuse_mount(p) for p in tmp_path.rglob("data"))
