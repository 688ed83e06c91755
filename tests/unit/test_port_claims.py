"""Port blocks (runners.runtime): every run claims a block of 100 loopback ports with an
exclusive file in one directory for the whole machine, so two runs at once never collide
(whatever their LAB_RUNTIME); a dead run's claim is taken over; a block
with a busy port is skipped; releasing removes only the run's own claim."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from runners import runtime
from runners.runtime import BLOCK, PORT_FIRST, PORT_LAST, Run


@pytest.fixture(autouse=True)
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LAB_RUNTIME", str(tmp_path))
    monkeypatch.setenv("LAB_PORTS_DIR", str(tmp_path / "ports"))
    monkeypatch.setattr(runtime, "port_free", lambda port: True)
    return tmp_path


def claim_of(root: Path, base: int) -> dict[str, object]:
    data: dict[str, object] = json.loads((root / "ports" / str(base)).read_text())
    return data


def test_a_run_claims_a_block_in_range_with_its_id_and_pid(root: Path) -> None:
    with Run(experiment="t") as run:
        base = run.base_port
        assert PORT_FIRST <= base and base + BLOCK <= PORT_LAST
        assert (base - PORT_FIRST) % BLOCK == 0
        claim = claim_of(root, base)
        assert claim["run_id"] == run.id and claim["pid"] == os.getpid()
        assert run.ports.node(1) == base + 1 and run.ports.toxiproxy_api == base + 99
    assert not (root / "ports" / str(base)).exists()  # released on close


def test_two_runs_at_once_never_share_a_block(root: Path) -> None:
    with Run(experiment="a") as a, Run(experiment="b") as b:
        assert a.base_port != b.base_port
        assert abs(a.base_port - b.base_port) >= BLOCK


def test_a_dead_runs_claim_is_taken_over(root: Path) -> None:
    start = PORT_FIRST + (os.getpid() % ((PORT_LAST - PORT_FIRST) // BLOCK)) * BLOCK
    (root / "ports").mkdir(exist_ok=True)
    (root / "ports" / str(start)).write_text(json.dumps(
        {"run_id": "deadbeef0000", "pid": 2**22 + 12345, "start_time": 1}))
    with Run(experiment="t") as run:
        assert run.base_port == start
        assert claim_of(root, start)["run_id"] == run.id


def test_a_live_claim_is_skipped(root: Path) -> None:
    start = PORT_FIRST + (os.getpid() % ((PORT_LAST - PORT_FIRST) // BLOCK)) * BLOCK
    (root / "ports").mkdir(exist_ok=True)
    mine = {"run_id": "other0000000", "pid": os.getpid(),
            "start_time": runtime.proc_start_time(os.getpid())}
    (root / "ports" / str(start)).write_text(json.dumps(mine))
    with Run(experiment="t") as run:
        assert run.base_port != start
    assert claim_of(root, start)["run_id"] == "other0000000"  # not released by another run


def test_a_block_with_a_busy_port_is_skipped(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    start = PORT_FIRST + (os.getpid() % ((PORT_LAST - PORT_FIRST) // BLOCK)) * BLOCK
    monkeypatch.setattr(runtime, "port_free", lambda port: not start <= port < start + BLOCK)
    with Run(experiment="t") as run:
        assert run.base_port != start
    assert not (root / "ports" / str(start)).exists()  # the claim was given back at once


def test_no_free_block_is_one_clear_error(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime, "port_free", lambda port: False)
    with pytest.raises(RuntimeError, match="no free block of 100 loopback ports"):
        Run(experiment="t")


def test_release_leaves_another_runs_claim(root: Path) -> None:
    run = Run(experiment="t")
    claim = root / "ports" / str(run.base_port)
    claim.write_text(json.dumps({"run_id": "someoneelse0", "pid": 1}))
    run.close()
    assert claim.exists()


def test_port_blocks_stay_below_the_ephemeral_range(tmp_path: Path) -> None:
    """Outgoing connections take ephemeral ports: a lab port inside that range can be taken by
    a replica's connection just before the lab listens on it (seen: toxiproxy's bind failed)."""
    from runners.runtime import port_bounds

    f = tmp_path / "range"
    f.write_text("32768\t60999\n")
    assert port_bounds(f) == (23000, 32700)
    f.write_text("23500 60999\n")  # too little room below: the blocks go above it
    assert port_bounds(f) == (61000, 65500)
    assert port_bounds(tmp_path / "missing") == (23000, 32700)


def test_two_labs_with_different_state_directories_never_share_a_block(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The claims are the machine's: a lab whose LAB_RUNTIME differs still sees them."""
    monkeypatch.setenv("LAB_RUNTIME", str(root / "lab-a"))
    a = Run(experiment="a")
    monkeypatch.setenv("LAB_RUNTIME", str(root / "lab-b"))
    b = Run(experiment="b")
    try:
        assert abs(a.base_port - b.base_port) >= BLOCK
    finally:
        b.close()
        monkeypatch.setenv("LAB_RUNTIME", str(root / "lab-a"))
        a.close()
