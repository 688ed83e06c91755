"""dbdeployer's sandbox scripts poll every 0.1 s for the lab (``SLEEP_TIME``: at its 1 s a
restart kept a replica down about 0.9 s longer than the server needed), and its ``start``
keeps its 180 s before giving up (its ``TIMEOUT`` counts polls, not seconds)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from runners.node import SLEEP_TIME, START_POLLS, SandboxNode, keep_start_timeout

START = """#!/bin/bash
source sb_include
TIMEOUT=180
if [ -n "$(is_running)" ]
then
    echo "sandbox server already started"
fi
"""


def test_the_start_script_keeps_its_180_seconds(tmp_path: Path) -> None:
    start = tmp_path / "start"
    start.write_text(START)
    start.chmod(0o755)
    keep_start_timeout(tmp_path)
    assert f"\nTIMEOUT={START_POLLS}\n" in start.read_text()
    assert START_POLLS * float(SLEEP_TIME) == 180
    assert os.stat(start).st_mode & stat.S_IXUSR  # still runnable
    keep_start_timeout(tmp_path)  # a second time changes nothing
    assert start.read_text().count("TIMEOUT=") == 1
    keep_start_timeout(tmp_path / "none")  # no script: nothing to do


def test_the_scripts_run_with_the_lab_s_poll_interval(tmp_path: Path) -> None:
    node = SandboxNode.__new__(SandboxNode)
    node.env = {"PATH": "/usr/bin", "HOME": str(tmp_path)}
    env = node.script_env()
    assert env["SLEEP_TIME"] == "0.1" and env["HOME"] == str(tmp_path)
    assert "SLEEP_TIME" not in node.env  # the server's own environment is left as it was
