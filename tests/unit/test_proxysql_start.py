"""``start router``: a ProxySQL that a signal kills while it starts is started once more, as its
angel process would, and the start says so; one that exits by itself, or crashes twice, is
the component's error (with its log), never retried in silence."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from runners.errors import ComponentError
from runners.proxysql import ProxySQL

CRASH = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"]
EXIT = [sys.executable, "-c", "raise SystemExit(1)"]
RUNS = [sys.executable, "-c", "import time; time.sleep(30)"]


class _Run:
    def __init__(self) -> None:
        self.pids: set[int] = set()

    def record(self, pid: int, name: str) -> None:
        self.pids.add(pid)

    def forget(self, pid: int) -> None:
        self.pids.discard(pid)


def _router(tmp_path: Path, launches: list[list[str]]) -> Any:
    r: Any = object.__new__(ProxySQL)
    r.proc, r.run, r.writers, r.start_crashes = None, _Run(), [], []
    r.log = tmp_path / "proxysql.log"
    r.log.write_text("")
    started: list[subprocess.Popen[bytes]] = []

    def launch(initial: bool = True) -> None:
        r.proc = subprocess.Popen(launches.pop(0))
        r.run.record(r.proc.pid, "proxysql")
        started.append(r.proc)

    r._launch = launch
    r._admin_answers = lambda: r.proc.poll() is None and started[-1].args == RUNS
    r.started = started
    return r


def _stop(r: Any) -> None:
    for p in r.started:
        p.kill()
        p.wait()


def test_a_start_that_crashes_is_made_once_more_and_said(tmp_path: Path) -> None:
    r = _router(tmp_path, [CRASH, RUNS])
    try:
        assert r.start_process(ready_timeout=10) < 10
        assert r.proc.poll() is None and len(r.started) == 2
        assert len(r.start_crashes) == 1 and r.start_crashes[0].startswith("SIGSEGV")
        assert r.run.pids == {r.proc.pid}  # the crashed one forgotten, the running one kept
    finally:
        _stop(r)


def test_a_first_start_that_crashes_is_made_once_more_from_the_cnf(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same crash at a run's first start (seen five tests at a time): launched again
    with ``--initial``, and the cell's notes get ``start_crashes`` (lab/run/engine.py)."""
    import runners.proxysql as proxysql

    r = _router(tmp_path, [CRASH, RUNS])
    launched: list[bool] = []
    launch = r._launch
    r._launch = lambda initial=True: (launched.append(initial), launch(initial))
    r.cfg, r.mode = tmp_path / "proxysql.cnf", "replication"
    r.config_text = lambda: "datadir=\"x\"\n"
    r.routing_for = lambda current: None
    r.admin_execute = lambda statements: None
    r._check_settings = lambda: None
    monkeypatch.setattr(proxysql, "admin_statements", lambda routing: [])
    try:
        r.start(lambda n: True, lambda n: True)
        assert r.proc.poll() is None and launched == [True, True]
        assert len(r.start_crashes) == 1 and r.start_crashes[0].startswith("SIGSEGV")
        assert r.run.pids == {r.proc.pid}
    finally:
        _stop(r)


@pytest.mark.parametrize("launches", [[EXIT, RUNS], [CRASH, CRASH, RUNS]],
                         ids=["exits", "crashes-twice"])
def test_an_exit_or_a_second_crash_is_the_components_error(tmp_path: Path,
                                                          launches: list[list[str]]) -> None:
    n = len(launches)
    r = _router(tmp_path, launches)
    try:
        with pytest.raises(ComponentError, match="exited while waiting"):
            r.start_process(ready_timeout=10)
        assert len(r.started) == n - 1  # the last launch never made
    finally:
        _stop(r)


@pytest.mark.parametrize("state, signal_", [
    ({"Running": False, "ExitCode": 139}, 11),  # its init: 128 + SIGSEGV of its one child
    ({"Running": False, "ExitCode": 1}, None),  # exited by itself
    ({"Running": False, "ExitCode": 0}, None),
    ({"Running": True, "ExitCode": 0}, None),
    ({}, None),
])
def test_a_container_s_crash_is_read_from_its_exit_code(monkeypatch: pytest.MonkeyPatch,
                                                        state: dict[str, Any],
                                                        signal_: int | None) -> None:
    from runners.containers import engine as engines
    from runners.containers.proxysql import ContainerProxySQL

    r: Any = object.__new__(ContainerProxySQL)
    r.engine = type("E", (), {"client": None})()
    r.container = type("C", (), {"id": "abc"})()
    monkeypatch.setattr(engines, "inspect", lambda client, cid: {"State": state})
    assert r._crash_signal() == signal_
