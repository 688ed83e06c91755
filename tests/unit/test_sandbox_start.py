"""A sandbox's ``start`` script is done once the server's pid file exists; the server writes
its pid in it a moment later. A start whose pid file is still empty when the script returns
is waited for, not read as a failed start (a busy machine failed lesson 12 so); a server that
never shows up is still the component's error."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
from pathlib import Path
from typing import Any

import pytest

from runners.errors import ComponentError
from runners.mysql import Credentials
from runners.node import SandboxNode

START = """#!/bin/sh
# the pid file at once, empty; the pid in it {delay} s later (what mariadbd does, slowly)
sleep 30 </dev/null >/dev/null 2>&1 &
pid=$!
echo $pid > "{pidfile}.server"
: > "{pidfile}"
(sleep {delay}; echo $pid > "{pidfile}") </dev/null >/dev/null 2>&1 &
echo "sandbox server started"
"""


class _Run:
    def record(self, pid: int, name: str) -> None:
        pass


def _node(tmp_path: Path, delay: float) -> Any:
    sb = tmp_path / "sb"
    (sb / "data").mkdir(parents=True)
    node = SandboxNode(_Run(), "db1", "single", 1, 31501, sb,  # type: ignore[arg-type]
                       Credentials("u", "p"), dict(os.environ))
    start = sb / "start"
    start.write_text(START.format(delay=delay, pidfile=node.pid_file))
    start.chmod(start.stat().st_mode | stat.S_IXUSR)
    return node


def _kill(node: Any) -> None:
    """The fake server, whether or not its pid reached the pid file."""
    with contextlib.suppress(OSError, ValueError):
        os.kill(int(Path(f"{node.pid_file}.server").read_text()), signal.SIGKILL)


def test_a_pid_file_still_empty_after_the_script_is_waited_for(tmp_path: Path) -> None:
    node = _node(tmp_path, 0.5)
    try:
        node.start(wait=False)
        assert node.is_running()
    finally:
        _kill(node)


def test_a_server_that_never_writes_its_pid_is_a_failed_start(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import runners.node

    monkeypatch.setattr(runners.node, "PID_FILE_WAIT", 0.3)
    node = _node(tmp_path, 5)
    try:
        with pytest.raises(ComponentError, match="start failed: sandbox server started"):
            node.start(wait=False)
    finally:
        _kill(node)
