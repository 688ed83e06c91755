"""tools/bootstrap.sh never stops a process by name: after installing packages it stops only a
package service that the install started, by the service's own init script."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "bootstrap.sh"
FAKE_INIT = """#!/bin/sh
# a package's init script: running while its state file exists
state="$(dirname "$0")/$(basename "$0").running"
case "$1" in
  status) [ -f "$state" ] ;;
  stop) echo "stop $(basename "$0")" >> "$(dirname "$0")/calls"; rm -f "$state" ;;
esac
"""


def test_no_process_is_stopped_by_name() -> None:
    text = SCRIPT.read_text()
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    assert not re.search(r"\b(pkill|killall|kill)\b", code)


def run_install(init_d: Path, before: list[str], after: list[str]) -> str:
    """Source the script, note the services running before, "install" (start ``after``), then
    stop what the install started. Returns the init scripts' calls."""
    for name in ("mariadb", "mysql"):
        script = init_d / name
        script.write_text(FAKE_INIT)
        script.chmod(0o755)
    for name in before:
        (init_d / f"{name}.running").touch()
    starts = " ".join(f'touch "{init_d}/{n}.running";' for n in after)
    subprocess.run(
        [
            "bash",
            "-c",
            f'source "{SCRIPT}"; before=$(running_services); {starts} '
            'stop_services_started_since "$before"',
        ],
        env={"LAB_INIT_D": str(init_d), "PATH": "/usr/bin:/bin"},
        check=True,
        capture_output=True,
        text=True,
    )
    calls = init_d / "calls"
    return calls.read_text() if calls.exists() else ""


def test_a_service_the_install_started_is_stopped_by_its_init_script(tmp_path: Path) -> None:
    assert run_install(tmp_path, before=[], after=["mariadb"]) == "stop mariadb\n"
    assert not (tmp_path / "mariadb.running").exists()


@pytest.mark.parametrize(
    "before,after",
    [(["mariadb"], ["mariadb"]), ([], []), (["mysql"], [])],
    ids=["running-before", "never-started", "user-service-untouched"],
)
def test_a_service_running_before_the_install_keeps_running(
    tmp_path: Path, before: list[str], after: list[str]
) -> None:
    assert run_install(tmp_path, before=before, after=after) == ""
    for name in before:
        assert (tmp_path / f"{name}.running").exists()


def test_sourcing_the_script_only_defines_functions(tmp_path: Path) -> None:
    out = subprocess.run(
        ["bash", "-c", f'source "{SCRIPT}"; type main >/dev/null && echo defined'],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout == "defined\n" and "[bootstrap]" not in out.stdout + out.stderr
