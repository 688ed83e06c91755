"""runners.containers.conmon: the monitors of containers the store no longer has (an exec
session's, left by a run cut short mid-exec) are found and ended; nothing else is."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from runners.containers import conmon

STORE = "/var/lib/containers/storage"
CID = "a" * 64


def argv(cid: str = CID,
         bundle: str = f"{STORE}/overlay-containers/{CID}/userdata/e1") -> list[str]:
    return ["/usr/bin/conmon", "--api-version", "1", "-c", cid, "-u", "e1", "-r",
            "/usr/sbin/runc", "-b", bundle, "--exec"]


def test_parse_reads_the_container_and_the_bundle_of_conmon_only() -> None:
    assert conmon.parse(argv()) == (CID, f"{STORE}/overlay-containers/{CID}/userdata/e1")
    assert conmon.parse(["/usr/bin/conmonx", "-c", CID, "-b", "/x"]) is None
    assert conmon.parse(["/usr/bin/conmon", "-c", CID]) is None  # no bundle: not ours to judge
    assert conmon.parse([]) is None


def _stat(state: str, started: int) -> str:
    """A /proc/PID/stat line: pid, (comm), state, then fields 4.. with the start time at 22."""
    return f"10 (conmon) {state} " + " ".join(
        str(started) if i == 22 else "0" for i in range(4, 53)) + "\n"


def test_monitors_reads_this_user_s_processes(tmp_path: Path) -> None:
    for pid, args, state in ((10, argv(), "S"), (11, ["/usr/bin/sleep", "5"], "S"),
                             (12, argv(), "Z")):  # a zombie is no monitor
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "cmdline").write_bytes(b"\0".join(a.encode() for a in args) + b"\0")
        (tmp_path / str(pid) / "stat").write_text(_stat(state, 4242))
    (tmp_path / "self").mkdir()
    assert conmon.monitors(tmp_path) == [
        conmon.Monitor(10, CID, f"{STORE}/overlay-containers/{CID}/userdata/e1", 4242)]


def test_an_orphan_is_of_a_missing_container_in_its_own_directory_of_the_store() -> None:
    gone = conmon.Monitor(1, CID, f"{STORE}/overlay-containers/{CID}/userdata")
    vfs = conmon.Monitor(5, "e" * 64, f"{STORE}/vfs-containers/{'e' * 64}/userdata")
    alive = conmon.Monitor(2, "b" * 64, f"{STORE}/overlay-containers/{'b' * 64}/userdata")
    elsewhere = conmon.Monitor(3, "c" * 64, "/home/u/.local/share/containers/storage/"
                               f"overlay-containers/{'c' * 64}/userdata")
    other_dir = conmon.Monitor(4, "d" * 64, f"{STORE}/overlay-containers/{CID}/userdata")
    assert conmon.orphans([gone, vfs, alive, elsewhere, other_dir], {"b" * 64},
                          STORE + "/") == [gone, vfs]


def _monitor_process(tmp_path: Path) -> tuple[subprocess.Popen[bytes], conmon.Monitor]:
    """A process whose command line is a conmon's (an interpreter named conmon, reading its
    program from stdin), and what ``monitors`` finds of it."""
    link = tmp_path / "conmon"
    link.symlink_to(sys.executable)
    bundle = f"{STORE}/overlay-containers/{CID}/userdata/e1"
    proc = subprocess.Popen([str(link), "-", "-c", CID, "-b", bundle], stdin=subprocess.PIPE)
    assert proc.stdin is not None
    proc.stdin.write(b"import time\ntime.sleep(60)\n")
    proc.stdin.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        found = [m for m in conmon.monitors() if m.pid == proc.pid]
        if found:
            return proc, found[0]
        time.sleep(0.02)
    raise AssertionError("the stand-in monitor did not show up in /proc")


def test_end_terminates_the_process_found_and_reports_it(tmp_path: Path) -> None:
    proc, mon = _monitor_process(tmp_path)
    try:
        assert (mon.container, mon.bundle) == (CID, f"{STORE}/overlay-containers/{CID}/userdata/e1")
        ended = conmon.end([mon], grace=5)
        assert ended == [f"conmon {proc.pid} (of removed container {CID[:12]})"]
        assert proc.wait(timeout=5) == -15  # SIGTERM was enough
    finally:
        proc.kill()


def test_end_never_signals_a_pid_that_is_another_process_now(tmp_path: Path) -> None:
    proc, mon = _monitor_process(tmp_path)
    try:
        reused = conmon.Monitor(mon.pid, mon.container, mon.bundle, mon.started + 1)
        assert conmon.end([reused], grace=0.2) == []  # another start time: not the one found
        other = conmon.Monitor(mon.pid, "f" * 64, mon.bundle, mon.started)
        assert conmon.end([other], grace=0.2) == []  # another command line
        assert proc.poll() is None
    finally:
        proc.kill()
