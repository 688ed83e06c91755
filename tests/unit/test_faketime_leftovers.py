"""libfaketime leaves a semaphore and a shared memory object in /dev/shm for every process it
was loaded into that died of SIGKILL (a `kill NODE` of a skewed node, a teardown): the run
removes those of its own dead processes when it closes and `lab gc` when it removes a run
(runners/faketime.py, runners/runtime.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from runners import faketime, runtime


def test_only_the_dead_processes_files_go(tmp_path: Path) -> None:
    for pid in (101, 102):
        for path in faketime.leftovers(pid, tmp_path):
            path.write_bytes(b"x")
    other = tmp_path / "faketime_shm_103"  # a process the run never had
    other.write_bytes(b"x")
    removed = faketime.remove_leftovers([101, 102, 101], lambda pid: pid == 102, tmp_path)
    assert removed == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "faketime_shm_102", "faketime_shm_103", "sem.faketime_sem_102"]


@pytest.mark.skipif(faketime.library() is None or not faketime.SHM_DIR.is_dir(),
                    reason="libfaketime (Debian's faketime) is not installed here")
def test_a_killed_skewed_process_leaves_nothing_after_the_run_closes(tmp_path: Path) -> None:
    lib = faketime.library()
    assert lib is not None
    offset = tmp_path / "offset"
    faketime.write_offset(offset, 30)
    env = {**os.environ, **faketime.faketime_env(lib, offset)}
    run = runtime.Run(experiment="faketime-leftovers")
    try:
        procs = [subprocess.Popen(["sleep", "60"], env=env) for _ in range(2)]
        for p in procs:
            run.record(p.pid, "mariadbd db1")
        files = [f for p in procs for f in faketime.leftovers(p.pid)]
        deadline = time.monotonic() + 10
        while not all(f.exists() for f in files) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert all(f.exists() for f in files)  # what libfaketime makes at a process's start
        os.kill(procs[0].pid, signal.SIGKILL)  # `kill db1`: then forgotten, started again
        procs[0].wait()
        run.forget(procs[0].pid)
        assert all(f.exists() for f in files)  # SIGKILL: libfaketime cleaned up nothing
    finally:
        run.close()
    procs[1].wait(5)
    assert [f for f in files if f.exists()] == []
