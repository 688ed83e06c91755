"""What each integration test costs the machine in CPU, for planning the suite's time.

Off unless ``RCL_TEST_CPU`` names a file. Then each pytest process (an xdist worker) moves
itself into a cpuacct cgroup of its own (cgroup v1, as on this machine), so every server,
router and load it starts, daemonised or not, is counted there; around each test the cgroup's
``cpuacct.usage`` is read and a line is appended to the file: the test, its wall seconds, its
CPU seconds, and the machine's busy fraction meanwhile (/proc/stat). Containers run in
podman's own cgroups and are not counted (their ``cpu_s`` is a lower bound). ``tools/
test_cpu.py`` sums the file.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from runners.cgroups import CGROUP_ROOT, controller_dir, remove_group


def _machine() -> tuple[int, int]:
    """(busy, total) jiffies of the machine, from /proc/stat's first line."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


class CpuAccount:
    def __init__(self, out: Path, root: Path = CGROUP_ROOT) -> None:
        self.out = out
        self.group = controller_dir("cpuacct", root) / f"rcl-acct-{os.getpid()}"
        self.group.mkdir(exist_ok=True)
        (self.group / "cgroup.procs").write_text(str(os.getpid()))

    def usage(self) -> int:
        return int((self.group / "cpuacct.usage").read_text())

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        t0, u0, (b0, a0) = time.monotonic(), self.usage(), _machine()
        yield
        t1, u1, (b1, a1) = time.monotonic(), self.usage(), _machine()
        line = {"test": item.nodeid, "wall_s": round(t1 - t0, 2),
                "cpu_s": round((u1 - u0) / 1e9, 2),
                "machine_busy": round((b1 - b0) / max(1, a1 - a0), 3),
                "worker": os.environ.get("PYTEST_XDIST_WORKER", "main")}
        with open(self.out, "a") as f:
            f.write(json.dumps(line) + "\n")

    def pytest_unconfigure(self) -> None:
        """The group removed, whatever is still in it moved to the controller's root first
        (a server left running is the leak check's to report)."""
        remove_group(self.group, busy_wait=0)


def register(config: pytest.Config, root: Path = CGROUP_ROOT) -> None:
    out = os.environ.get("RCL_TEST_CPU")
    if not out:
        return
    try:
        account = CpuAccount(Path(out), root)
    except OSError as e:  # no cgroup v1 cpuacct here, or not root: the tests run, uncounted
        warnings.warn(f"RCL_TEST_CPU: cannot count CPU through {controller_dir('cpuacct', root)}"
                      f" ({e}); not recorded", stacklevel=1)
        return
    config.pluginmanager.register(account, "rcl-cpu-account")
