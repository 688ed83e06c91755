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


def test_monitors_reads_this_user_s_processes(tmp_path: Path) -> None:
    for pid, args in ((10, argv()), (11, ["/usr/bin/sleep", "5"])):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "cmdline").write_bytes(b"\0".join(a.encode() for a in args) + b"\0")
    (tmp_path / "self").mkdir()
    assert conmon.monitors(tmp_path) == [
        conmon.Monitor(10, CID, f"{STORE}/overlay-containers/{CID}/userdata/e1")]


def test_an_orphan_is_of_a_missing_container_in_the_store_s_directory() -> None:
    gone = conmon.Monitor(1, CID, f"{STORE}/overlay-containers/{CID}/userdata")
    alive = conmon.Monitor(2, "b" * 64, f"{STORE}/overlay-containers/{'b' * 64}/userdata")
    elsewhere = conmon.Monitor(3, "c" * 64, "/home/u/.local/share/containers/storage/"
                               f"overlay-containers/{'c' * 64}/userdata")
    assert conmon.orphans([gone, alive, elsewhere], {"b" * 64}, STORE + "/") == [gone]


def test_end_terminates_and_reports_each() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        t0 = time.monotonic()
        ended = conmon.end([conmon.Monitor(proc.pid, CID, "/b")], grace=5)
        assert ended == [f"conmon {proc.pid} (of removed container {CID[:12]})"]
        assert proc.wait(timeout=5) == -15  # SIGTERM was enough
        assert time.monotonic() - t0 < 5
    finally:
        proc.kill()
