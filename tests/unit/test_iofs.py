"""Stalled and failing I/O (`io delay`, `io fail`, `io heal`): syntax, validation, plan, the
control file's encoding (against the C daemon's layout), the daemon's argv, the fault family
and its heal on a fake topology, the bootstrap build; and, as root with /dev/fuse, the real
daemon on a temporary directory (no database server)."""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from fakes import FakeTopology, nemesis, ref
from fault_exp import errors, exp

from dsl.actions import describe, history_name, is_fault, needs_root, undo
from dsl.api import parse_text, plan_text
from dsl.models import IoFault, NodeRef
from fault import HEALERS
from fault.iofs import IoState, apply
from lab.cli.lang import iofs_line
from runners import iofs
from runners.components import SPEC_BY_NAME, MissingComponent, require
from runners.topology import needed_components

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "runners" / "iofs" / "lab_iofs.c"
BOOTSTRAP = ROOT / "tools" / "bootstrap.sh"



# --- the language ---------------------------------------------------------------------------

def test_io_actions_parse_to_their_model_with_the_operations_named() -> None:
    e = parse_text(exp("at 2s io delay db1 200ms on fsyncs for 5s\nat 8s io fail db2 on writes\n"
                       "at 9s io heal db2 on writes\nat 10s io delay db1 5ms\n"
                       "at 11s io fail db1\nat 12s io heal db1\nat 13s io delay db2 1s on reads"))
    acts = [t.action for t in e.timeline]
    assert acts[0] == IoFault(verb="delay", node=acts[0].node, ops="fsyncs", delay=0.2,
                              span=acts[0].span)
    assert e.timeline[0].lasts == 5.0
    assert [(a.verb, a.ops, a.delay) for a in acts] == [  # type: ignore[union-attr]
        ("delay", "fsyncs", 0.2), ("fail", "writes", None), ("heal", "writes", None),
        ("delay", "all", 0.005), ("fail", "all", None), ("heal", "all", None),
        ("delay", "reads", 1.0)]
    assert [describe(a) for a in acts] == [
        "io delay db1 200ms on fsyncs", "io fail db2 on writes", "io heal db2 on writes",
        "io delay db1 5ms", "io fail db1", "io heal db1", "io delay db2 1s on reads"]
    assert [history_name(a) for a in acts[:3]] == ["io_delay", "io_fail", "io_heal"]
    assert [is_fault(a) for a in acts[:3]] == [True, True, False]


def test_an_io_fault_is_undone_by_the_heal_of_the_same_operations_and_needs_root() -> None:
    node = NodeRef(name="db1")
    delay = IoFault(verb="delay", node=node, ops="fsyncs", delay=0.2)
    assert undo(delay) == IoFault(verb="heal", node=node, ops="fsyncs")
    assert undo(IoFault(verb="fail", node=node)) == IoFault(verb="heal", node=node, ops="all")
    assert undo(IoFault(verb="heal", node=node)) is None
    assert "lab-iofs" in (needs_root(delay, "single") or "")
    assert needs_root(IoFault(verb="heal", node=node), "single") is None


def test_io_faults_are_checked() -> None:
    assert errors(exp("at 2s io delay db1 200ms on fsyncs for 5s")) == []
    assert any("more than 60s" in m for m in errors(exp("at 2s io delay db1 2m")))
    assert any("nothing to heal" in m for m in errors(exp("at 2s io heal db2")))
    assert any("unknown node" in m for m in errors(exp("at 2s io fail db9")))
    assert any("'io delay' needs a duration" in m for m in errors(exp("at 2s io delay db1 5M")))
    both = errors(exp("at 2s io fail db1 on writes\nat 3s disk full db1"))
    assert any("cannot be on both" in m for m in both)
    assert errors(exp("at 2s io fail db1 on writes\nat 3s disk full db2")) == []
    assert any("MongoDB" in m for m in errors(
        'experiment "m" {\n  topology mongodb_replset { members m1, m2, m3 }\n'
        "  workload w: probe { target m1 }\n  at 2s io fail m1\n}\n"))


def test_for_takes_an_io_fault_and_a_trigger_may_fire_one() -> None:
    assert errors(exp("when rows(db1) >= 100 io delay db2 50ms on fsyncs for 2s")) == []
    plan = plan_text(exp("when rows(db1) >= 100 io delay db2 50ms on fsyncs for 2s\n"
                         "at 1s io fail db1 on writes"))
    assert plan.iofs_nodes == ["db1", "db2"]


def test_the_plan_names_the_lab_iofs_nodes_and_what_becomes_of_o_direct() -> None:
    plan = plan_text(exp("at 2s io delay db2 200ms on fsyncs\nat 4s io heal db2"))
    assert plan.iofs_nodes == ["db2"]
    assert json.loads(plan.model_dump_json())["iofs_nodes"] == ["db2"]
    line = iofs_line(plan) or ""
    assert line.startswith("On lab-iofs (io delay, io fail): db2.")
    assert "O_DIRECT" in line and "innodb_log_file_buffering" in line
    plain = plan_text(exp("at 2s kill db2"))
    assert plain.iofs_nodes == [] and iofs_line(plain) is None


def test_the_topology_needs_lab_iofs_and_says_how_to_build_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    plan = plan_text(exp("at 2s io delay db2 200ms on fsyncs"))
    assert "lab-iofs" in needed_components(plan)
    assert "lab-iofs" not in needed_components(plan_text(exp("at 2s kill db2")))
    monkeypatch.setattr("runners.components.which", lambda b: None)
    with pytest.raises(MissingComponent) as e:
        require("lab-iofs")
    assert "lab-iofs" in str(e.value) and "make bootstrap" in str(e.value)
    assert "libfuse3" in SPEC_BY_NAME["lab-iofs"].how_to_get


# --- the control file -----------------------------------------------------------------------

def test_the_control_layout_is_the_c_structs() -> None:
    """The C daemon asserts its layout at compile time: the same offsets and size here."""
    c = SOURCE.read_text()
    assert f"sizeof(struct control) == {iofs.CONTROL.size}" in c
    assert f"offsetof(struct control, delay_us) == {iofs.FAULTS_AT}" in c
    assert "offsetof(struct control, ops) == 40" in c
    assert iofs.FAULTS_AT + iofs.FAULTS.size == 36  # fail_errno ends at 36, pad to 40
    assert re.search(r"#define CONTROL_MAGIC 0x([0-9a-f]+)u", c)[1] == f"{iofs.MAGIC:x}"  # type: ignore[index]
    order = re.search(r"enum \{ C_READ = 0, C_WRITE = 1, C_SYNC = 2 \}", c)
    assert order and iofs.OP_CLASSES == ("reads", "writes", "fsyncs")


def test_faults_and_counts_survive_encoding() -> None:
    faults = iofs.Faults().delay("fsyncs", 0.2).fail("writes")
    counts = iofs.Counts((1, 2, 3), (0, 0, 3), (0, 2, 0))
    gen, back, got = iofs.decode(iofs.encode(faults, 6, counts))
    assert (gen, back, got) == (6, faults, counts)
    assert faults.delay_us == (0, 0, 200_000) and faults.fail_mask == 0b010
    assert faults.describe() == {"delay_ms": {"fsyncs": 200.0}, "fail": ["writes"]}
    assert faults.heal("fsyncs") == iofs.Faults().fail("writes")
    assert not faults.heal("fsyncs").heal("writes").active
    assert iofs.Faults().delay("reads", 1e9).delay_us[0] == iofs.MAX_DELAY_US
    assert iofs.Faults().fail_errno == errno.EIO
    with pytest.raises(ValueError):
        iofs.decode(bytes(iofs.CONTROL.size))
    assert counts.minus(iofs.Counts((1, 1, 1), (0, 0, 1), (0, 1, 0))).as_dict() == {
        "reads": {"ops": 0, "delayed": 0, "failed": 0},
        "writes": {"ops": 1, "delayed": 0, "failed": 1},
        "fsyncs": {"ops": 2, "delayed": 2, "failed": 0}}


def test_setting_faults_leaves_an_even_generation_and_the_counts(tmp_path: Path) -> None:
    path = tmp_path / "c.ctl"
    path.write_bytes(iofs.encode(iofs.Faults(), 0, iofs.Counts((5, 6, 7), (0, 0, 0), (1, 0, 0))))
    ctl = iofs.Control(path)
    ctl.set(iofs.Faults().delay("writes", 0.05))
    ctl.set(iofs.Faults().fail("reads"))
    gen, faults, counts = iofs.decode(path.read_bytes())  # what the daemon maps
    assert gen == 4 and faults == iofs.Faults().fail("reads")
    assert counts == iofs.Counts((5, 6, 7), (0, 0, 0), (1, 0, 0))  # the daemon's, untouched
    ctl.close()


def test_the_daemons_command_line(tmp_path: Path) -> None:
    argv = iofs.mount_argv("/x/lab-iofs", tmp_path / "d.iofs", tmp_path / "c.ctl", tmp_path / "d")
    assert argv[:5] == ["/x/lab-iofs", str(tmp_path / "d.iofs"), str(tmp_path / "c.ctl"),
                        str(tmp_path / "d"), "-f"]
    opts = argv[argv.index("-o") + 1].split(",")
    assert {"allow_other", "default_permissions", "subtype=lab-iofs"} <= set(opts)


def test_a_fuse_mount_is_found_by_its_mount_point(tmp_path: Path) -> None:
    mounts = (f"lab-iofs {tmp_path}/d fuse.lab-iofs rw,nosuid 0 0\n"
              f"tmpfs {tmp_path}/e tmpfs rw 0 0\n")
    assert iofs.is_fuse_mount(tmp_path / "d", mounts)
    assert not iofs.is_fuse_mount(tmp_path / "e", mounts)
    assert not iofs.is_fuse_mount(tmp_path / "f", mounts)


def test_restore_puts_the_files_back_once_unmounted(tmp_path: Path) -> None:
    data, backing = tmp_path / "data", tmp_path / "data.iofs"
    backing.mkdir()
    (backing / "ibdata1").write_text("x")
    data.mkdir()  # the empty mount point, unmounted
    iofs.restore(data, backing)
    assert (data / "ibdata1").read_text() == "x" and not backing.exists()
    iofs.restore(data, backing)  # twice: nothing to do
    assert (data / "ibdata1").exists()


# --- the fault family, on a fake topology ---------------------------------------------------

def test_apply_changes_only_the_operations_named() -> None:
    start = iofs.Faults().fail("writes")
    node = NodeRef(name="db1")
    delayed = apply(start, IoFault(verb="delay", node=node, ops="fsyncs", delay=0.3))
    assert delayed == start.delay("fsyncs", 0.3)
    assert apply(delayed, IoFault(verb="heal", node=node, ops="writes")) == \
        iofs.Faults().delay("fsyncs", 0.3)
    every = apply(iofs.Faults(), IoFault(verb="delay", node=node, delay=0.01))
    assert every.delay_us == (10_000, 10_000, 10_000)
    assert not apply(every, IoFault(verb="heal", node=node)).active


def _bump(path: Path, ops: tuple[int, int, int], delayed: tuple[int, int, int],
          failed: tuple[int, int, int]) -> None:
    """What the daemon does: count in the mapped file (the faults stay as the lab set them)."""
    gen, faults, _ = iofs.decode(path.read_bytes())
    path.write_bytes(iofs.encode(faults, gen, iofs.Counts(ops, delayed, failed)))


def test_an_io_fault_sets_the_control_and_its_heal_counts_what_it_did(tmp_path: Path) -> None:
    topo = FakeTopology(tmp_path)
    path = iofs.control_file(tmp_path, "db1")
    iofs.new_control(path)
    n, history = nemesis(topo)
    n.apply(IoFault(verb="delay", node=ref("db1"), ops="fsyncs", delay=0.2))
    assert iofs.decode(path.read_bytes())[1] == iofs.Faults().delay("fsyncs", 0.2)
    _bump(path, (0, 25, 25), (0, 0, 25), (0, 0, 0))
    healed = n.apply(IoFault(verb="heal", node=ref("db1"), ops="fsyncs"))
    assert not iofs.decode(path.read_bytes())[1].active
    assert healed["delayed"] == 25 and healed["failed"] == 0
    assert healed["since_previous"]["fsyncs"] == {"ops": 25, "delayed": 25, "failed": 0}
    done = [o for o in history if o.type == "ok"]
    assert [o.f for o in done] == ["io_delay", "io_heal"] and done[1].node == "db1"
    assert done[1].value["faults"] == {"delay_ms": {}, "fail": []}


def test_healing_puts_every_faulty_node_back_to_normal(tmp_path: Path) -> None:
    topo = FakeTopology(tmp_path)
    for name in ("db1", "db2"):
        iofs.new_control(iofs.control_file(tmp_path, name))
    n, _ = nemesis(topo)
    n.apply(IoFault(verb="fail", node=ref("db1"), ops="writes"))
    n.apply(IoFault(verb="delay", node=ref("db2"), delay=0.1))
    assert "io: stalled and failing I/O back to normal" in [name for name, _ in HEALERS]
    assert [d for d in n.heal_all() if d.startswith("io")] == ["io heal db1", "io heal db2"]
    for name in ("db1", "db2"):
        assert not iofs.decode(iofs.control_file(tmp_path, name).read_bytes())[1].active
    assert n.ctx.state(IoState).faulty == set()


def test_for_good_leaves_the_fault_in_place(tmp_path: Path) -> None:
    topo = FakeTopology(tmp_path)
    iofs.new_control(iofs.control_file(tmp_path, "db1"))
    n, _ = nemesis(topo)
    n.apply(IoFault(verb="fail", node=ref("db1"), ops="writes", left=True))
    assert not [d for d in n.heal_all() if d.startswith("io")]
    assert iofs.decode(iofs.control_file(tmp_path, "db1").read_bytes())[1].fail_mask == 0b010


def test_a_node_not_on_lab_iofs_fails_the_action_clearly(tmp_path: Path) -> None:
    topo = FakeTopology(tmp_path)
    n, history = nemesis(topo)
    with pytest.raises(Exception, match="not on lab-iofs"):
        n.apply(IoFault(verb="fail", node=ref("db2")))
    assert history[-1].type == "fail"


# --- the daemon: built by bootstrap, mounted for real (root and /dev/fuse) ------------------

def _build(tmp: Path, source: Path = SOURCE) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", f'source "{BOOTSTRAP}"; build_iofs "{tmp}"'],
                          env=dict(os.environ, IOFS_SOURCE=str(source)), capture_output=True,
                          text=True, cwd=ROOT, timeout=120)


def _can_build() -> bool:
    return shutil.which("cc") is not None and subprocess.run(
        ["pkg-config", "--exists", "fuse3"], capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not _can_build():
        pytest.skip("no C compiler or libfuse3-dev (apt-get install -y fuse3 libfuse3-dev)")
    tmp = tmp_path_factory.mktemp("iofs-bin")
    out = _build(tmp)
    assert out.returncode == 0, out.stderr
    return tmp / "lab-iofs"


def test_bootstrap_builds_lab_iofs_once_and_again_when_its_source_changes(
        tmp_path: Path, daemon: Path) -> None:
    source = tmp_path / "lab_iofs.c"
    shutil.copy(SOURCE, source)
    first = _build(tmp_path / "bin", source)
    assert "compiling lab-iofs" in first.stdout
    assert "1.0" in subprocess.run([tmp_path / "bin" / "lab-iofs", "--version"],
                                   capture_output=True, text=True).stdout
    assert "lab-iofs present" in _build(tmp_path / "bin", source).stdout
    source.write_text(source.read_text() + "\n/* changed */\n")
    assert "compiling lab-iofs" in _build(tmp_path / "bin", source).stdout
    assert "fuse3 libfuse3-dev" in BOOTSTRAP.read_text()


class _Run:
    """What ``iofs.start`` needs of a Run: its directory and a record of the daemon's pid."""

    def __init__(self, d: Path) -> None:
        self.dir = d
        self.recorded: list[tuple[int, str]] = []

    def record(self, pid: int, name: str) -> None:
        self.recorded.append((pid, name))


def test_the_daemon_delays_and_fails_what_the_control_says(tmp_path: Path, daemon: Path) -> None:
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse"):
        pytest.skip("mounting lab-iofs needs root and /dev/fuse")
    data = tmp_path / "data"
    data.mkdir()
    (data / "old").write_text("kept")
    run = _Run(tmp_path)
    fs = iofs.move_onto_iofs(run, "db1", str(daemon), data)  # type: ignore[arg-type]
    try:
        assert run.recorded == [(fs.pid, "lab-iofs db1")] and iofs.is_fuse_mount(data)
        assert (data / "old").read_text() == "kept"
        ctl = iofs.Control(fs.control)
        ctl.set(iofs.Faults().delay("fsyncs", 0.3))
        fd = os.open(data / "f", os.O_CREAT | os.O_RDWR | os.O_DIRECT, 0o640)
        try:
            buf = bytearray(4096)
            t0 = time.monotonic()
            os.fsync(fd)
            assert time.monotonic() - t0 >= 0.3  # it waited (a lower bound only)
            ctl.set(iofs.Faults().fail("writes"))
            with pytest.raises(OSError) as e:
                os.pwrite(fd, bytes(buf), 0)
            assert e.value.errno == errno.EIO
            ctl.set(iofs.Faults())
            assert os.pwrite(fd, b"x" * 4096, 0) == 4096  # O_DIRECT: accepted, written
        finally:
            os.close(fd)
        counts = ctl.counts().as_dict()
        assert counts["fsyncs"]["delayed"] == 1 and counts["writes"]["failed"] == 1
        assert (tmp_path / "data.iofs" / "f").stat().st_size == 4096
    finally:
        iofs.unmount(fs)
    assert not iofs.is_fuse_mount(data) and not fs.running()
    assert (data / "old").read_text() == "kept" and (data / "f").exists()
    assert not (tmp_path / "data.iofs").exists()
