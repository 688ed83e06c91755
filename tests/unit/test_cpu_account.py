"""RCL_TEST_CPU (tests/integration/cpu_account.py), on a fake cgroup tree: a test's CPU seconds
are the difference of its group's ``cpuacct.usage`` around it, and a machine without the
controller runs the tests uncounted, with a warning."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.integration import cpu_account


def _fake_root(tmp_path: Path) -> Path:
    root = tmp_path / "cgroup"
    (root / "cpuacct").mkdir(parents=True)
    (root / "cpuacct" / "cgroup.procs").write_text("")
    return root


def test_a_test_s_cpu_is_its_group_s_usage_around_it(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    root, out = _fake_root(tmp_path), tmp_path / "cpu.jsonl"
    monkeypatch.setattr(cpu_account, "remove_group", lambda path, busy_wait: True)
    account = cpu_account.CpuAccount(out, root)
    assert (account.group / "cgroup.procs").read_text() == str(os.getpid())  # moved itself in
    usage = account.group / "cpuacct.usage"
    usage.write_text("2000000000")
    item: Any = SimpleNamespace(nodeid="tests/x.py::test_y")
    around = account.pytest_runtest_protocol(item)
    next(around)
    usage.write_text("3500000000")  # 1.5 s of CPU while the test ran
    with pytest.raises(StopIteration):
        next(around)
    line = json.loads(out.read_text())
    assert line["test"] == "tests/x.py::test_y"
    assert line["cpu_s"] == 1.5
    assert 0 <= line["machine_busy"] <= 1


def test_without_the_controller_the_tests_run_uncounted(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RCL_TEST_CPU", str(tmp_path / "cpu.jsonl"))
    registered: list[object] = []
    config: Any = SimpleNamespace(pluginmanager=SimpleNamespace(
        register=lambda plugin, name: registered.append(plugin)))
    with pytest.warns(UserWarning, match="cannot count CPU"):
        cpu_account.register(config, tmp_path / "no-cgroups")
    assert registered == []
    cpu_account.register(config, _fake_root(tmp_path))
    assert len(registered) == 1
