"""Integration tests: real servers on this machine. Each test session runs with its own
LAB_RUNTIME and LAB_HOME in a directory of its own, and ends with a leak check: no server of ours
may be left running; the directory goes when every test passed (pytest_sessionfinish)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import MySQLdb
import pytest

from dsl.models import Engine
from dsl.plan import Cell, Plan, PlannedNode, PlannedRouter, PlannedWorkload
from fault.cache import MEMORY_FILESYSTEMS
from runners.components import find
from runners.mysql import Address, Credentials, scalar
from runners.runtime import filesystem_type
from tests.integration import cpu_account

ROOT = Path(__file__).resolve().parents[2]

# RCL_IT_DIR: where the session's directory goes (default /tmp); `make test` puts the pool's
# on a tmpfs (the Makefile's IT_DIR says why). The tests whose point is the page cache
# (PAGE_CACHE) run theirs on the disk all the same, in DISK_DIR (its twin in /tmp); the leak
# check finds both by the session's name.
_session_dir = tempfile.mkdtemp(prefix="rcl-it-", dir=os.environ.get("RCL_IT_DIR") or "/tmp")
SESSION_DIR = Path(_session_dir)
DISK_DIR = Path("/tmp") / f"{SESSION_DIR.name}-disk"
os.environ["LAB_RUNTIME"] = str(Path(_session_dir) / "rt")
os.environ.setdefault("LAB_HOME", str(Path(_session_dir) / "home"))


# calibrations whose tolerance is stated for an idle machine: visibility's p99 (2 s + 60 ms)
# read 2.08 s beside a CPU-bound process and helper jobs (docs/workshop/README.md, "A busy
# machine"); they run alone, after the pool
IDLE_ONLY = ("visibility",
             # its replica's lag (300 ms of link, at most 500 ms) read 611 ms with four tests
             # at a time: a starved replica applies late, truly, but that is not the link's
             "lost-writes")
# lessons whose experiments act on the whole machine, not on their own run: `drop caches` (the
# OS page cache) stalls every other test's I/O for a moment (a container ProxySQL test beside
# lesson 10 read 705 ms of downtime on writes straight to its nodes, and failed). `make test`
# runs them beside the unit tests (``beside_unit``), which claim no time: lesson 10 claims only
# that no second went without a transaction, which holds beside a CPU-bound process
MACHINE_WIDE = ("10-cache-drop",)
# the tests that keep a core or more busy through their load (RCL_TEST_CPU at 821edcf, four at
# a time: CPU seconds over wall seconds 0.66 to 1.18, 13 to 46 CPU s each; 317 s of test time
# together): they share one worker (``xdist_group``), so two of them never run at once and the
# timing figures of the tests beside them see one such load, not two or three
HEAVY = ("[02-read-your-writes/ryw-galera]", "[05-galera-certification/galera-conflicts]",
         "[13-connect-cost/", "[14-config-variants]", "[25-galera-isolation/",
         "test_the_timeline_recovers_a_galera_cluster_killed_at_once",
         "test_kill_9_during_a_recovery_then_gc_leaves_nothing")


def pytest_configure(config: pytest.Config) -> None:
    cpu_account.register(config)  # RCL_TEST_CPU=FILE: each test's CPU (tools/test_cpu.py)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the group marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test here is ``integration``. ``make test`` runs them five at a time (another
    count with ``IT_WORKERS=N``: runs at once must not collide, and most of a run is waiting
    for its timeline) except the
    ``serial`` ones, which run alone afterwards: the calibrations whose tolerance is stated
    for an idle machine (``IDLE_ONLY``), and the lessons that act on the whole machine
    (``MACHINE_WIDE``: a drop of the OS page cache). The other calibrations run in the pool:
    each passed five at a time and beside a CPU-bound process (``make catalogue-busy``). The
    container tests share one worker (``xdist_group``: CONTAINERS_APART); those that compare
    the host's network before and after (``host_network``) hold every other container run off
    while they run (``host_network_lock``), in any worker or session."""
    items.sort(key=_order)
    for item in items:
        if "tests/integration" not in str(item.fspath):
            continue
        item.add_marker(pytest.mark.integration)
        if any(f"[calibration/{n}]" in item.nodeid for n in IDLE_ONLY) or any(
                f"[{n}]" in item.nodeid for n in MACHINE_WIDE):
            item.add_marker(pytest.mark.serial)
        if any(f"[{n}]" in item.nodeid for n in MACHINE_WIDE):
            item.add_marker(pytest.mark.beside_unit)
        if CONTAINERS_APART and uses_containers(item):
            item.add_marker(pytest.mark.xdist_group("containers"))
        elif item.get_closest_marker("host_network"):  # they would wait for each other
            item.add_marker(pytest.mark.xdist_group("host-network"))
        elif any(n in item.nodeid for n in HEAVY):
            item.add_marker(pytest.mark.xdist_group("heavy"))


def _order(it: pytest.Item) -> tuple[bool, int, bool]:
    """What acts on the whole machine runs last: after a drop of the page cache every binary
    and file is read back from the disk (8 ms a read on this machine), which an idle-machine
    calibration run right after it would pay for. The longest tests first (LONGEST, longest
    first), then the lessons: they are the longest tests (20-180 s: a run of several cells, a
    search), and a long one handed out last keeps the others idle at the end (at five, the
    shrink test handed out at 544 s of a 616 s pool, the search at 372 s)."""
    return (any(f"[{n}]" in it.nodeid for n in MACHINE_WIDE), _longest_rank(it.nodeid),
            "test_lesson_runs_as_written[" not in it.nodeid)


# the tests that took longest five at a time (ci61 at 582eebc, RCL_TEST_CPU: 153, 104, 77, 76,
# 56, 56 and 52 s), longest first: handed out before any other
LONGEST = ("[29-search-promote-delay]", "[26-unsynced-loss]",
           "[24-coordinated-crash/galera-crash]", "[12-disk-full/disk-full-binlog]",
           "[07-semi-sync-failover]", "[22-containers/containers-replication]",
           "test_shrinking_a_planted_failure_returns_the_one_action_that_matters")


def _longest_rank(nodeid: str) -> int:
    return next((i for i, n in enumerate(LONGEST) if n in nodeid), len(LONGEST))


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Under ``--dist loadgroup`` a grouped test's id ends in ``@group``; if it does not, the
    grouping silently did not take effect (pytest 9.2 broke it: pytest-xdist#1386) and the
    container tests run on both workers at once, each seeing the other's network state. Such a
    test fails with the reason instead of with a confusing host-state diff."""
    if (item.config.getoption("loadgroup", default=False)
            and item.get_closest_marker("xdist_group") and "@" not in item.nodeid):
        pytest.fail("xdist_group did not take effect, so this test may share the host with "
                    "another container test (pytest-xdist#1386: keep pytest < 9.2, see "
                    "pyproject.toml)", pytrace=False)


# The container tests run one at a time, on one worker, beside the other tests. At three workers
# that chain was the pool's longest (550 s of its 921 s); at five it is shorter than the pool
# (528 s of container tests against about 600 s for each of the four other workers), so
# spreading them saves nothing there, and spread at five two of four CI runs ran
# containers-replication twice (its pause read 2.60 s; 3 windows where the pause makes 1)
# and one failed a container test's replication wait. (Spread at four: no faster, and two
# failures on the latency of container actions under load, since fixed.) host_network_lock
# keeps the tests that compare the host's network apart either way. Two chains at six
# workers (a6e01f8, two container tests at a time): containers-replication's primary, which
# no fault touched, stalled 239 ms 1.2 s into the load in one run and 1.27 s right after its
# replica's kill in the next (two windows where the pause makes one), while the other chain's
# containers started and stopped: one chain again.
CONTAINERS_APART = True


# Every container run changes this machine's network while it runs (ip_forward, podman's
# iptables chains); a test that compares that state before and after (``host_network``) must
# see no other container run in between, in any worker or session. A readers-writer lock over
# flock(2): a container test holds HOST_NET_LOCK shared, a host_network test exclusive; the
# turnstile (HOST_NET_TURN), held by a waiting writer, keeps new readers from overtaking it.
HOST_NET_LOCK = Path("/tmp/rcl-it-host-network.lock")
HOST_NET_TURN = Path("/tmp/rcl-it-host-network.turn")


def uses_containers(item: pytest.Item) -> bool:
    """A test that runs containers: in a test_containers* file, or marked ``containers``."""
    return (Path(str(item.fspath)).name.startswith("test_containers")
            or item.get_closest_marker("containers") is not None)


@pytest.fixture(autouse=True)
def host_network_lock(request: pytest.FixtureRequest) -> Iterator[None]:
    """Shared for a container test, exclusive for one that compares the host's network
    (``host_network``); nothing for the others."""
    item = request.node
    exclusive = item.get_closest_marker("host_network") is not None
    if not exclusive and not uses_containers(item):
        yield
        return
    with open(HOST_NET_TURN, "a") as turn, open(HOST_NET_LOCK, "a") as lock:
        fcntl.flock(turn, fcntl.LOCK_EX)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        finally:
            if not exclusive:
                fcntl.flock(turn, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            if exclusive:
                fcntl.flock(turn, fcntl.LOCK_UN)


def require(*components: str) -> None:
    for c in components:
        f = find(c)
        if not f.ok:
            pytest.skip(f"{c} not installed here: {f.spec.how_to_get}")


def our_processes() -> list[str]:
    """Live (not zombie) server processes whose command line points into this session."""
    out = subprocess.run(["ps", "-eo", "pid=,stat=,args="], capture_output=True, text=True)
    left = []
    for line in out.stdout.splitlines():
        parts = line.split(None, 2)
        if len(parts) < 3 or parts[1].startswith("Z"):
            continue
        if SESSION_DIR.name in parts[2] and any(
            k in parts[2]
            for k in ("mariadbd", "mysqld", "haproxy", "toxiproxy", "sysbench", "proxysql",
                      "mongod", "lab-iofs")
        ):
            left.append(line.strip())
    return left


@pytest.fixture(scope="session", autouse=True)
def leak_check() -> Iterator[None]:
    yield
    left = our_processes()
    assert not left, "servers left running after the tests:\n" + "\n".join(left)


def _mounted_under(root: str) -> list[str]:
    """Mount points at or below ``root`` (/proc/self/mounts; octal escapes as the kernel
    writes them)."""
    prefix = root.rstrip("/") + "/"
    with open("/proc/self/mounts") as f:
        points = [line.split()[1].encode().decode("unicode_escape") for line in f]
    return [p for p in points if p == root or p.startswith(prefix)]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The session's directory (runs, results, logs) goes when every test passed and nothing
    of it is left running or mounted; after a failure it stays, for its logs, and its path is
    printed. Every process that imports this file (each xdist worker, the controller) has a
    directory of its own."""
    for root in (_session_dir, str(DISK_DIR)):
        left = our_processes() or _mounted_under(root)
        if exitstatus == 0 and not left:
            shutil.rmtree(root, ignore_errors=True)
        elif os.path.isdir(root) and any(os.scandir(root)):
            print(f"\nthe integration session's runs and logs are kept in {root}")


# the tests whose point is the page cache: on a tmpfs a file's pages are its storage and
# nothing is evicted (`drop caches on NODE`, `cold restart` say so in their detail), so their
# runs are on the disk whatever RCL_IT_DIR is
PAGE_CACHE = ("[11-cold-restart]", "test_drop_one_nodes_cache_shrinks_its_resident_pages")


@pytest.fixture(autouse=True)
def _page_cache_tests_on_the_disk(request: pytest.FixtureRequest,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Autouse: set before the fixtures that deploy (function-scoped ones run after it)."""
    if any(n in request.node.nodeid for n in PAGE_CACHE) and (
            filesystem_type(SESSION_DIR) in MEMORY_FILESYSTEMS):
        DISK_DIR.mkdir(exist_ok=True)
        monkeypatch.setenv("LAB_RUNTIME", str(DISK_DIR / "rt"))


def node(name: str, role: str, i: int, **kw: object) -> PlannedNode:
    return PlannedNode(name=name, role=role, index=i, server_id=i, port_offset=i, port=i,
                       **kw)  # type: ignore[arg-type]


def router(writers: list[str], readers: list[str], interval: float = 0.5,
           kind: Literal["haproxy", "proxysql"] = "haproxy",
           settings: dict[str, str] | None = None) -> PlannedRouter:
    return PlannedRouter(kind=kind, writers=writers, readers=readers,
                         check_interval=interval, writer_port_offset=90, reader_port_offset=91,
                         writer_port=0, reader_port=0, settings=settings or {})


def eventually(check: Callable[[], bool], timeout: float = 10.0,
               errors: tuple[type[BaseException], ...] = (MySQLdb.Error,)) -> bool:
    """Whether ``check()`` comes true within ``timeout`` seconds (polled every 50 ms; one of
    ``errors`` counts as "not yet")."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return True
        except errors:
            pass
        time.sleep(0.05)
    return False


def assert_capped(heal: dict[str, Any], share: float, free: float, limited: float) -> None:
    """What a cpu limit did, from ``cpu heal``'s detail (the kernel's accounting, not wall
    times that depend on what else runs): the server used at most ``share`` of a core while
    limited (40 ms of slack: the kernel hands the quota out in 5 ms slices per CPU and checks
    it at its ticks; measured: 1.184 s of a 1.199 s quota on a container), its group was
    throttled in at least half of the periods whose quota it used up (a cpu-bound query wants
    more than the quota in each; counted from the CPU it used, not from the wall time: on a
    busy machine it got no core at all in some periods, which throttles nothing — 0.673 CPU s
    in 12 s and 42 throttled periods of 100, five tests at a time), and that query
    (``limited`` seconds) took longer than the free one (``free``)."""
    assert heal["released"] is True
    cap = share * heal["limited_seconds"] + 0.04
    assert heal["cpu_seconds"] is not None and heal["cpu_seconds"] <= cap, (heal, cap)
    used_up = heal["cpu_seconds"] / (share * 0.1)  # periods of 100 ms whose quota it used
    assert heal["throttled_periods"] >= 0.5 * used_up, (heal, used_up)
    assert heal["throttled_seconds"] > 0, heal
    assert limited > free, (free, limited)


def port_via(addr: Address, creds: Credentials) -> int | None:
    """The port of the server an endpoint (a router's) leads to, None when it answers not."""
    try:
        return int(scalar(addr, creds, "SELECT @@port", timeout=2))
    except MySQLdb.Error:
        return None


def make_plan(topology: str, nodes: list[PlannedNode], *, router_: PlannedRouter | None = None,
              workloads: list[PlannedWorkload] | None = None, mode: str = "gtid",
              **kw: object) -> Plan:
    cell = Cell(index=1, label="base", nodes=nodes, workloads=workloads or [])
    return Plan(name="it", duration=kw.pop("duration", 10), topology=topology,  # type: ignore[arg-type]
                engine=Engine(), replication_mode=mode, router=router_, cells=[cell],
                auto_increment_offsets=kw.pop("auto_increment_offsets", True), **kw)  # type: ignore[arg-type]


def replication_nodes(replicas: int = 2, **per_node: dict[str, str]) -> list[PlannedNode]:
    out = [node("db1", "primary", 1, config=per_node.get("db1", {}))]
    for i in range(2, replicas + 2):
        out.append(node(f"db{i}", "replica", i, replicates_from=["db1"],
                        config=per_node.get(f"db{i}", {})))
    return out


def lab_iofs_left() -> list[str]:
    """lab-iofs mounts and daemons of this test session still there."""
    session = os.environ["LAB_RUNTIME"]
    mounts = [line for line in Path("/proc/self/mounts").read_text().splitlines()
              if "lab-iofs" in line and session in line]
    out = subprocess.run(["ps", "-eo", "pid=,stat=,args="], capture_output=True, text=True)
    daemons = [line for line in out.stdout.splitlines()
               if "lab-iofs" in line and session in line and " Z" not in line]
    return mounts + daemons
