"""The container back-end on this machine's podman: replication on containers, kill / start /
pause through the engine's API, and nothing left afterwards — neither after a teardown nor
after `kill -9` of the lab and `lab gc` (containers, networks, the podman service, the host's
iptables chains and ip_forward).

Skips with one line when podman, runc or mmdebstrap is missing (or when DOCKER_HOST names
another engine: the leftovers are checked with the local podman). The first test builds the
node image when it is not there (about a minute), later ones reuse it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import MySQLdb
import pytest

from runners.components import find

from .conftest import ROOT, assert_capped

pytestmark = pytest.mark.integration

LAB = [sys.executable, "-m", "lab.cli"]


def _passing_run(tmp_path: Path, name: str, text: str, timeout: float) -> tuple[str, list]:  # type: ignore[type-arg]
    """`lab run` of the experiment ``text`` in a home of its own, which must pass: its run id
    and the operations of its first cell."""
    from lab.store.db import Store

    exp = tmp_path / f"{name}.exp"
    exp.write_text(text)
    home = tmp_path / "home"
    out = subprocess.run([*LAB, "run", str(exp), "--json"], cwd=ROOT, capture_output=True,
                         text=True, timeout=timeout, env=dict(os.environ, LAB_HOME=str(home)))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    store = Store(home / "results.db")
    rid = store.conn.execute("select id from runs order by rowid desc limit 1").fetchone()[0]
    return str(rid), store.operations(rid, 1)


def _require_podman() -> None:
    for name in ("podman", "runc", "mmdebstrap"):
        if not find(name).ok:
            pytest.skip(f"{name} not installed here: the container back-end needs it")
    if os.environ.get("DOCKER_HOST") or os.environ.get("LAB_DOCKER_HOST"):
        pytest.skip("DOCKER_HOST names another engine: these tests check the local podman")
    if os.geteuid() != 0:
        pytest.skip("the private podman service runs rootful here: run as root")


def _podman(*args: str) -> list[str]:
    from runners.containers.engine import podman_env, write_containers_conf

    out = subprocess.run(["podman", *args], capture_output=True, text=True, timeout=60,
                         env=podman_env(write_containers_conf()))
    return out.stdout.split()


def _left_by(run_id: str) -> list[str]:
    flt = f"label=lab.run={run_id}"
    return _podman("ps", "-a", "-q", "--filter", flt) + \
        _podman("network", "ls", "-q", "--filter", flt)


def _iptables_chains() -> set[str]:
    from runners.containers.engine import iptables_chains

    return {f"{t}:{c}" for t in ("filter", "nat") for c in (iptables_chains(t) or set())}


def _host_state() -> tuple[str, set[str]]:
    return Path("/proc/sys/net/ipv4/ip_forward").read_text().strip(), _iptables_chains()


def _podman_services() -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True)
    rt = os.environ["LAB_RUNTIME"]
    return [ln for ln in out.stdout.splitlines() if "podman system service" in ln and rt in ln]


PLAN = """
experiment "ctr-topology" {
  backend containers
  topology replication { primary db1  replicas db2 }
}
"""


@pytest.mark.host_network
def test_replication_on_containers_kill_start_pause_and_nothing_left() -> None:
    _require_podman()
    from dsl.api import plan_text
    from runners.containers.node import ContainerNode
    from runners.containers.topology import ContainerTopology
    from runners.mysql import connect, execute_all, scalar
    from runners.runtime import Run

    before = _host_state()
    plan = plan_text(PLAN)
    run = Run(experiment="ctr-topology")
    topo = None
    try:
        topo = ContainerTopology.deploy(plan, plan.cells[0], run)
        db1, db2 = topo.nodes["db1"], topo.nodes["db2"]
        assert isinstance(db1, ContainerNode) and isinstance(db2, ContainerNode)
        assert db1.addr.host == "127.0.0.1" and db1.port == run.ports.node(1)
        execute_all(db1.addr, topo.admin, [
            "CREATE DATABASE IF NOT EXISTS t", "CREATE TABLE t.a (id INT PRIMARY KEY)",
            "INSERT INTO t.a VALUES (1)"])

        def rows_on(node: ContainerNode) -> int:
            """The table's rows there; -1 while its CREATE TABLE has not replicated yet (a CI
            run read db2 before the table reached it: 1146)."""
            try:
                return int(scalar(node.addr, topo.admin, "SELECT COUNT(*) FROM t.a"))
            except MySQLdb.ProgrammingError as e:
                if e.args[0] != 1146:
                    raise
                return -1

        deadline = time.monotonic() + 10
        while rows_on(db2) != 1:
            assert time.monotonic() < deadline, "the row never reached the replica"
            time.sleep(0.05)
        # kill: the replica's server dies and stays down until started
        topo.kill("db2")
        assert not db2.is_running()
        time.sleep(1.0)
        assert not db2.is_running(), "a killed node came back by itself"
        execute_all(db1.addr, topo.admin, ["INSERT INTO t.a VALUES (2)"])
        topo.start("db2")
        deadline = time.monotonic() + 15
        while rows_on(db2) != 2:
            assert time.monotonic() < deadline, "the restarted replica did not catch up"
            time.sleep(0.05)
        # pause: a client on the primary hangs (read timeout) until resumed
        conn = connect(db1.addr, topo.admin, timeout=1)
        topo.pause("db1")
        t0 = time.monotonic()
        with pytest.raises(Exception):  # noqa: B017, PT011 - the C client's lost connection
            conn.cursor().execute("SELECT 1")
        assert time.monotonic() - t0 >= 1.5  # it hung until its read timeout
        topo.resume("db1")
        assert rows_on(db1) == 2
        # a partition between db2 and db1 (iptables in db2's namespace): replication stops
        # carrying rows, the lab still reaches both; heal: the row arrives
        cut = topo.cut("db2", "replication", topo.link_peers("db2", "replication"), False)
        assert cut.peers == ("db1",) and len(cut.rules) == 2
        execute_all(db1.addr, topo.admin, ["INSERT INTO t.a VALUES (3)"])
        time.sleep(1.0)
        assert rows_on(db2) == 2, "a row crossed the partition"
        topo.mend(cut)
        deadline = time.monotonic() + 60  # the replica reconnects (slave_net_timeout, retry)
        while rows_on(db2) != 3:
            assert time.monotonic() < deadline, "replication did not resume after the heal"
            time.sleep(0.1)
        assert "lab-cut" not in db2.exec(["iptables", "-S"])[1]
        service = topo.engine.service if topo.engine else None
        assert service is not None
    finally:
        if topo is not None:
            topo.teardown()
        run.close()
    assert _left_by(run.id) == []
    assert _podman_services() == []
    assert _host_state() == before


GALERA = """
experiment "ctr-galera" {
  backend containers
  topology galera { nodes g1, g2, g3 }
  router haproxy { writers g1, g2  check every 500ms }
}
"""


def test_galera_on_containers_partition_heal_and_haproxy_in_front() -> None:
    """Three Galera nodes in containers, HAProxy in a fourth: a write through router.writer
    lands on g1; g3 cut from its group is non-Primary while g1 and g2 stay Primary; healed,
    the three are synced again."""
    _require_podman()
    from dsl.api import plan_text
    from runners.containers.topology import ContainerTopology
    from runners.mysql import query, scalar
    from runners.runtime import Run

    plan = plan_text(GALERA)
    run = Run(experiment="ctr-galera")
    topo = None

    def status(name: str) -> dict[str, str]:
        try:
            rows = query(topo.nodes[name].addr, topo.admin, "SHOW GLOBAL STATUS WHERE "
                         "Variable_name IN ('wsrep_cluster_status', 'wsrep_cluster_size', "
                         "'wsrep_local_state_comment')", timeout=2)
        except Exception:  # noqa: BLE001 - a node busy rejoining
            return {}
        return {r["Variable_name"]: str(r["Value"]) for r in rows}

    def wait_for(cond, what: str, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        while not cond():
            assert time.monotonic() < deadline, what
            time.sleep(0.2)

    try:
        topo = ContainerTopology.deploy(plan, plan.cells[0], run)
        assert [status(n).get("wsrep_local_state_comment") for n in topo.nodes] == \
            ["Synced"] * 3
        writer = topo.address("router.writer")
        assert writer.port == run.ports.router_writer
        assert scalar(writer, topo.app, "SELECT @@wsrep_node_name") == "g1"
        assert topo.router is not None and topo.router.up_servers("writer") == ["g1", "g2"]
        cut = topo.cut("g3", "group", topo.link_peers("g3", "group"), False)
        assert set(cut.peers) == {"g1", "g2"}
        wait_for(lambda: status("g3").get("wsrep_cluster_status") == "non-Primary",
                 "g3 stayed Primary with its group cut")
        assert status("g1").get("wsrep_cluster_status") == "Primary"
        # g1 and g2 install their view without g3 on their own suspect timer, which may come
        # after g3 saw itself alone (CI read g2 at size 3 right then): they get 15 s
        wait_for(lambda: all(status(n).get("wsrep_cluster_status") == "Primary" and
                             status(n).get("wsrep_cluster_size") == "2" for n in ("g1", "g2")),
                 "g1 and g2 did not form a Primary component of 2 without g3", 15.0)
        topo.mend(cut)
        wait_for(lambda: all(status(n).get("wsrep_cluster_size") == "3" and
                             status(n).get("wsrep_local_state_comment") == "Synced"
                             for n in topo.nodes), "the three were not synced after the heal")
    finally:
        if topo is not None:
            topo.teardown()
        run.close()
    assert _left_by(run.id) == []


PAIR = """
experiment "ctr-pair" {
  backend containers
  topology primary_primary { nodes p1, p2 }
  at 1s network latency p2 300ms on replication
}
"""


def test_two_primaries_on_containers_through_toxiproxy_links() -> None:
    """Two primaries on containers, with the links a latency fault asks for (toxiproxy in a
    container of its own): each replicates from the other through its replication link, the
    clients reach a node through its client link; 300 ms of latency on p2's replication link
    delays p1's rows on p2 by at least that much (and not p2's rows on p1); a client link
    taken down refuses the clients that go through it while the node's own port answers; the
    node's data files are found in its container's layers and evicted from the page cache."""
    _require_podman()
    from dsl.api import plan_text
    from fault.cache import evict_files, resident_bytes
    from runners.containers.topology import ContainerTopology
    from runners.mysql import execute_all, scalar
    from runners.runtime import Run

    plan = plan_text(PAIR)
    run = Run(experiment="ctr-pair")
    topo = None

    def arrival(src: str, dst: str, key: int) -> float:
        """Seconds from a row's commit on ``src`` until it is visible on ``dst``."""
        execute_all(topo.nodes[src].addr, topo.admin, [f"INSERT INTO t.a VALUES ({key})"])
        t0 = time.monotonic()
        while scalar(topo.nodes[dst].addr, topo.admin,
                     f"SELECT COUNT(*) FROM t.a WHERE id = {key}") != 1:
            assert time.monotonic() - t0 < 10, f"row {key} never reached {dst}"
            time.sleep(0.01)
        return time.monotonic() - t0

    try:
        topo = ContainerTopology.deploy(plan, plan.cells[0], run)
        assert topo.toxi is not None
        assert sorted(topo.toxi.links) == ["p1.clients", "p1.replication", "p2.clients",
                                           "p2.replication"]
        p1 = topo.address("p1")
        assert p1.port == run.ports.client_proxy(1) and p1 != topo.nodes["p1"].addr
        execute_all(p1, topo.admin, ["CREATE DATABASE t", "CREATE TABLE t.a (id INT PRIMARY KEY)"])
        # the table on p2 before any row is timed (a busy machine's CI once polled p2 before
        # the CREATE TABLE had replicated: error 1146)
        t0 = time.monotonic()
        while scalar(topo.nodes["p2"].addr, topo.admin,
                     "SELECT COUNT(*) FROM information_schema.tables "
                     "WHERE table_schema = 't' AND table_name = 'a'") != 1:
            assert time.monotonic() - t0 < 10, "t.a never reached p2"
            time.sleep(0.01)
        assert arrival("p1", "p2", 1) < 0.3
        assert arrival("p2", "p1", 2) < 0.3
        topo.toxi.add_toxic("p2.replication", "lat", "latency", {"latency": 300, "jitter": 0})
        assert arrival("p1", "p2", 3) >= 0.3  # p2 reads p1's binlog 300 ms late
        assert arrival("p2", "p1", 4) < 0.3  # the other direction is untouched
        topo.toxi.heal("p2.replication")
        assert arrival("p1", "p2", 5) < 0.3
        topo.toxi.set_enabled("p1.clients", False)
        with pytest.raises(Exception):  # noqa: B017, PT011 - the C client's refused connection
            scalar(p1, topo.admin, "SELECT 1", timeout=2)
        assert scalar(topo.nodes["p1"].addr, topo.admin, "SELECT 1") == 1
        topo.toxi.heal("p1.clients")
        assert scalar(p1, topo.admin, "SELECT COUNT(*) FROM t.a") == 5
        # drop caches on p2 / cold restart: its files in its container's layers on this
        # machine are evicted from the page cache
        dirs = topo.nodes["p2"].cache_dirs()
        assert dirs and all(run.id not in str(d) for d in dirs)  # the engine's storage
        before = sum(resident_bytes(d) for d in dirs)
        assert before > 0
        for d in dirs:
            evict_files(d)
        # the server runs on: a page it writes meanwhile (its redo log's) is cached again at
        # once (4,096 bytes seen in CI); every other page is gone
        after = sum(resident_bytes(d) for d in dirs)
        assert after <= min(before // 2, 64 * 1024), (before, after)
    finally:
        if topo is not None:
            topo.teardown()
        run.close()
    assert _left_by(run.id) == []


# About 0.7 s of CPU: under a 10 % quota it needs about 7 s, inside the 11 s before the heal, so
# the heal never cuts the limited run short; and the free run, slowed by another test beside it
# on two cores (2.19 s seen in CI), still leaves the ratio far above 3 (a 20 % quota healed 5 s
# later gave 2.92 there).
BENCH = "SELECT BENCHMARK(1500000, MD5('x'))"
FAULTS = f"""
experiment "ctr-faults" {{
  duration 19s
  backend containers
  topology single {{ node db1 }}
  workload writes: probe {{ target db1  every 5ms }}
  at 1s execute "{BENCH}" on db1
  at 4s cpu limit db1 to 10%
  at 5s execute "{BENCH}" on db1
  at 16s cpu heal db1
  at 16.2s memory limit db1 to 400M
  at 16.6s memory heal db1
  at 17s clock skew db1 by +30s
  at 17.5s clock heal db1
}}
"""


def test_incident_faults_on_a_container(tmp_path: Path) -> None:
    """The incident faults on a node's container, each read back from the history of one
    `lab run`: a cpu limit (the container's cgroup, through the API) caps the container's
    CPU and holds back a cpu-bound query (the kernel's accounting: ``assert_capped``); a
    memory limit is the container's; the server's clock is 30 s ahead under the skew and back
    after the heal (libfaketime in the image). Nothing is left."""
    _require_podman()
    rid, ops = _passing_run(tmp_path, "ctr-faults", FAULTS, 300)
    faults = {o.f: o for o in ops if o.is_fault() and o.type == "ok" and o.f != "sql"}
    started = [o for o in ops if o.is_fault() and o.f == "sql" and o.type == "invoke"]
    done = [o for o in ops if o.is_fault() and o.f == "sql" and o.type == "ok"]
    free, limited = ((d.time - s.time) / 1e9 for s, d in zip(started, done, strict=True))
    assert faults["cpu_limit"].value["quota_us"] == 10_000
    assert_capped(faults["cpu_heal"].value, 0.10, free, limited)
    assert "libpod" in faults["cpu_limit"].value["cgroup"]  # the container's own group
    assert faults["memory_limit"].value["limit_bytes"] == 400 * 1024**2
    assert faults["memory_heal"].value["released"] is True
    assert 28 <= faults["clock_skew"].value["now_minus_host_seconds"] <= 32
    assert abs(faults["clock_heal"].value["now_minus_host_seconds"]) < 2
    assert _left_by(rid) == []


DISK = """
experiment "ctr-disk" {
  backend containers
  topology single { node db1 }
  at 1s disk full db1
}
"""


def test_a_full_data_directory_on_a_container() -> None:
    """`disk full` on a container: the node's data directory is a tmpfs of this machine,
    bind-mounted; filled, the first write that needs a new page fails with 1114 (the table is
    full); freed, a write of a megabyte succeeds. Nothing is mounted after the teardown."""
    _require_podman()
    import MySQLdb

    from dsl.api import plan_text
    from dsl.models import DiskFault, NodeRef
    from fault.context import Context
    from fault.disk import disk_fault
    from runners.containers.topology import ContainerTopology
    from runners.mysql import execute_all
    from runners.runtime import Run

    plan = plan_text(DISK)
    run = Run(experiment="ctr-disk")
    topo = None
    try:
        topo = ContainerTopology.deploy(plan, plan.cells[0], run)
        db1 = topo.nodes["db1"].addr
        execute_all(db1, topo.admin, ["CREATE DATABASE t",
                                      "CREATE TABLE t.big (id INT PRIMARY KEY, b LONGBLOB)"])
        ctx = Context(topo, lambda op: op)  # type: ignore[arg-type]
        full = disk_fault(ctx, DiskFault(verb="full", node=NodeRef(name="db1")))
        assert full is not None and full["free_bytes"] == 0 and full["filled_bytes"] > 0
        assert full["path"] == str(run.dir / "db1" / "data")
        # 1 KB rows until the table needs a page the disk does not have (a row of megabytes
        # would not do: MariaDB 10.11.19 aborts, "Out of disk space in rollback")
        with pytest.raises(MySQLdb.OperationalError) as err:
            for i in range(1, 5000):
                execute_all(db1, topo.admin, [f"INSERT INTO t.big VALUES ({i}, REPEAT('x', 1000))"])
        assert err.value.args[0] == 1114, err.value
        disk_fault(ctx, DiskFault(verb="free", node=NodeRef(name="db1")))
        execute_all(db1, topo.admin, ["INSERT INTO t.big VALUES (0, REPEAT('x', 1000000))"])
    finally:
        if topo is not None:
            topo.teardown()
        run.close()
    assert _left_by(run.id) == []
    assert not [m for m in Path("/proc/self/mounts").read_text().splitlines() if run.id in m]


REMOTE = """
experiment "ctr-remote" {
  duration 12s
  backend containers
  topology replication { primary db1  replicas db2 }
  workload probe: probe { target db1  every 10ms  timeout 5s }
  workload w: unique_writes { target db1  rate 50/s }
  at 2s pause db1 for 2s
  at 5s network latency db2 200ms on replication
  at 6.5s network heal
  at 7s cpu limit db2 to 50%
  at 7.5s cpu heal db2
  at 8s network partition db2 on all
  at 9s network heal
  at 9.5s kill db2
  at 10s start db2
  expect downtime(probe) >= 1.95s
  expect downtime(probe) < 2.5s
  expect lost_writes(w) == 0
  expect lost_writes(w).not_replicated == 0
}
"""


@pytest.mark.host_network
def test_an_engine_named_by_docker_host_through_its_api_only(tmp_path: Path) -> None:
    """The one switch: an engine named by LAB_DOCKER_HOST — podman's TCP API on the loopback,
    started with the plain command the docs give; first as this machine's engine (the host's
    network is put back after the run), then taken as another machine's (LAB_ENGINE_REMOTE=1:
    nothing of it is read from this machine).
    Everything goes through the API: the image, the containers, pause, kill and start, a cut
    inside a node (exec), toxiproxy's container and a cpu limit (podman's update); the pause
    is measured as natively. What needs the engine's machine (the page cache) is refused
    before any container starts. Nothing is left on the engine."""
    _require_podman()
    import socket

    from lab.store.db import Store
    from runners.containers.engine import (
        HostNetState,
        stop_service,
    )
    from runners.runtime import Run

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    before = _host_state()
    holder = Run(experiment="remote-engine")  # the service's record
    log = open(holder.dir / "podman-tcp.log", "ab")
    # the plain command docs/scale-out.md gives: none of the lab's containers.conf
    service = subprocess.Popen(["podman", "system", "service", "--time=0",
                                f"tcp://127.0.0.1:{port}"], stdout=log, stderr=log,
                               start_new_session=True)
    holder.record(service.pid, "podman service (tcp)")
    local = dict(os.environ, LAB_DOCKER_HOST=f"tcp://127.0.0.1:{port}",
                 LAB_HOME=str(tmp_path / "home"))
    local.pop("LAB_ENGINE_REMOTE", None)
    env = dict(local, LAB_ENGINE_REMOTE="1")
    try:
        deadline = time.monotonic() + 30
        while subprocess.run(["curl", "-sf", f"http://127.0.0.1:{port}/_ping"],
                             capture_output=True).returncode != 0:
            assert time.monotonic() < deadline, "podman's TCP service did not answer"
            time.sleep(0.2)
        exp = tmp_path / "ctr-remote.exp"
        exp.write_text(REMOTE)
        # an engine on this machine: its changes to the host's network are put back after
        # the run, as for the lab's own engine (ip_forward, the NETAVARK chains)
        out = subprocess.run([*LAB, "run", str(exp), "--json"], cwd=ROOT, capture_output=True,
                             text=True, timeout=300, env=local)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        _assert_pause_measured(json.loads(out.stdout)["cells"][0])
        assert _host_state() == before
        # taken as another machine's from here: the test holds the host's network for it
        HostNetState.remember(holder.dir)
        out = subprocess.run([*LAB, "run", str(exp), "--json"], cwd=ROOT, capture_output=True,
                             text=True, timeout=300, env=env)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        _assert_pause_measured(json.loads(out.stdout)["cells"][0])
        store = Store(tmp_path / "home" / "results.db")
        rid = store.conn.execute("select id from runs order by rowid desc limit 1").fetchone()[0]
        ops = store.operations(rid, 1)
        faults = {o.f: o for o in ops if o.is_fault() and o.type == "ok"}
        assert faults["cpu_limit"].value["cgroup"].startswith("container ")  # not read here
        assert faults["partition"].value["rules"] == 2  # one peer, both directions
        assert _left_by(rid) == []
        # the page cache is the engine's machine's: refused before anything starts
        exp.write_text(REMOTE.replace("at 2s pause db1 for 2s", "at 2s drop caches on db1"))
        out = subprocess.run([*LAB, "run", str(exp)], cwd=ROOT, capture_output=True,
                             text=True, timeout=120, env=env)
        assert out.returncode == 3, out.stdout[-2000:]
        assert "needs the engine on this machine" in " ".join(out.stdout.split())
    finally:
        stop_service(service.pid)
        log.close()
        holder.forget(service.pid)
        HostNetState.release(holder.dir)
        holder.close()


def _plain_mariadb_image() -> str:
    """A MariaDB image with nothing of the lab's in it: the node image without its data
    directory, its entrypoint and /etc/lab, and an entrypoint that would fail (as an image of
    a user's does not know the lab). Made once per node image (tagged by its hash)."""
    from runners.containers import image as images

    ref = f"localhost/rcl-test-plain-mariadb:{images.inputs_hash()}"
    if subprocess.run(["podman", "image", "exists", ref], capture_output=True,
                      env=_podman_env()).returncode == 0:
        return ref
    node = images.image_tag()
    if subprocess.run(["podman", "image", "exists", node], capture_output=True,
                      env=_podman_env()).returncode != 0:
        build = subprocess.run([*LAB, "image", "build"], cwd=ROOT, capture_output=True,
                               text=True, timeout=1800)
        assert build.returncode == 0, build.stdout[-2000:] + build.stderr[-2000:]
    cid = _podman("create", "--entrypoint", "sh", node, "-c",
                  "rm -rf /var/lib/mysql/* /usr/local/bin/lab-entrypoint /etc/lab")[0]
    try:
        out = subprocess.run(["podman", "start", "-a", cid], capture_output=True, text=True,
                             env=_podman_env(), timeout=60)
        assert out.returncode == 0, out.stderr
        _podman("commit", "--change", 'ENTRYPOINT ["/bin/false"]', cid, ref)
    finally:
        _podman("rm", "-f", cid)
    return ref


def _podman_env() -> dict[str, str]:
    from runners.containers.engine import podman_env, write_containers_conf

    return podman_env(write_containers_conf())


IMAGE = """
experiment "ctr-image" {
  duration 10s
  backend containers
  topology replication {
    primary db1
    replicas db2
    image db2 "%s"
  }
  workload w: unique_writes { target db1  rate 50/s }
  at 3s kill db2
  at 5s start db2
  at 6s wait until db2 caught_up timeout 30s
  expect lost_writes(w) == 0
  expect lost_writes(w).not_replicated == 0
  expect replication_errors(db2) == 0
}
"""


def test_a_replica_on_an_image_of_the_users(tmp_path: Path) -> None:
    """`image db2 "REF"`: db2 runs a MariaDB image that has no data directory and no lab
    entrypoint (made here from the node image, as no registry is reachable): the lab copies
    its entrypoint in, which makes the data directory; db2 replicates every write, is killed
    and started, and catches up. An image the engine neither has nor can pull stops the run
    before any container starts, naming it."""
    _require_podman()
    ref = _plain_mariadb_image()
    listing = subprocess.run(["podman", "run", "--rm", "--entrypoint", "sh", ref, "-c",
                              "ls -A /var/lib/mysql; ls /usr/local/bin/lab-entrypoint"],
                             capture_output=True, text=True, env=_podman_env(), timeout=60)
    assert listing.stdout.strip() == "" and "No such file" in listing.stderr  # nothing of ours
    exp = tmp_path / "ctr-image.exp"
    exp.write_text(IMAGE % ref)
    env = dict(os.environ, LAB_HOME=str(tmp_path / "home"))
    out = subprocess.run([*LAB, "run", str(exp)], cwd=ROOT, capture_output=True, text=True,
                         timeout=300, env=env)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    exp.write_text(IMAGE % "localhost/rcl-no-such-image:1")
    t0 = time.monotonic()
    out = subprocess.run([*LAB, "run", str(exp)], cwd=ROOT, capture_output=True, text=True,
                         timeout=300, env=env)
    text = " ".join(out.stdout.split())
    assert out.returncode == 3, text[-2000:]
    assert "image localhost/rcl-no-such-image:1" in text and "could not pull it" in text
    assert time.monotonic() - t0 < 60


MONGO = """
experiment "ctr-mongo" {
  backend containers
  topology mongodb_replset { engine psmdb 7.0  members m1, m2, m3 }
}
"""


def test_a_mongodb_replica_set_on_containers_elects_and_becomes_standalone() -> None:
    """Percona Server for MongoDB on containers: three members by name, initiated; the
    primary killed, another elected; then the seed's replica set -> standalone procedure on
    a member, its data intact. Needs the image on this machine's podman."""
    _require_podman()
    from dsl.api import plan_text
    from fault.mongo import convert_standalone, primary_elected
    from runners.containers.mongo import default_image
    from runners.containers.topology import ContainerTopology
    from runners.mongo import primary_of
    from runners.runtime import Run

    ref = default_image("psmdb", "7.0")
    if subprocess.run(["podman", "image", "exists", ref], capture_output=True,
                      env=_podman_env()).returncode != 0:
        pytest.skip(f"image {ref} is not on this machine's podman (podman pull {ref} first)")
    plan = plan_text(MONGO)
    run = Run(experiment="ctr-mongo")
    topo = None
    try:
        topo = ContainerTopology.deploy(plan, plan.cells[0], run)
        members = list(topo.nodes.values())
        first = primary_of(members)  # type: ignore[arg-type]
        assert first is not None and first.host == "m1:27017"
        topo.kill(first.name)
        deadline = time.monotonic() + 60
        while not primary_elected(topo):  # type: ignore[arg-type]
            assert time.monotonic() < deadline, "no new primary after the kill"
            time.sleep(0.2)
        topo.start(first.name)
        out = convert_standalone(topo, "m2")  # type: ignore[arg-type]
        assert out["data_intact"] and not out["warning_after_final_restart"]
    finally:
        if topo is not None:
            topo.teardown()
        run.close()
    assert _left_by(run.id) == []


EXP = """
experiment "ctr-pause" {
  duration 8s
  topology replication { primary db1  replicas db2 }
  workload probe: probe { target db1  every 10ms  timeout 5s }
  workload w: unique_writes { target db1  rate 50/s }
  workload r: probe { target db2  operation read  every 50ms }
  at 3s pause db1 for 2s
  expect downtime(probe) >= 1.95s
  expect downtime(probe) < 2.5s
  expect lost_writes(w) == 0
  expect lost_writes(w).not_replicated == 0
}
"""


def _assert_pause_measured(cell: dict[str, Any]) -> None:
    """The probe's longest window (``cell`` from `lab run --json`) is the pause of db1: it has
    begun by the end of the pause's API call (in force by then) and ends between the resume's
    start and end — whatever the engine's latency (a pause call took 140 ms once under the
    suite's load, a resume ran 30 ms late) — within the probe's 10 ms and its answer's time.
    Its start may be earlier: a stall of the busy machine just before the pause joins it (a
    window began 125 ms before the pause's call once, with four tests at a time)."""
    faults = {f["name"]: f for f in cell["faults"]}
    pause, resume = faults["pause"], faults["resume"]
    # `for 2s` counts from when it took effect; the times are in ms (`lab run --json` rounds
    # them), so compared in ms: 5.02 - 3.02 is 1.9999999999999996 in floats (failed once)
    assert round(resume["at"] * 1000) - round(pause["end"] * 1000) >= 2000, (pause, resume)
    windows = cell["measurements"]["downtime"]["subjects"]["probe"]["windows"]
    w = max(windows, key=lambda x: x["duration"])
    assert w["start"] <= pause["end"] + 0.01, (windows, pause)
    assert resume["at"] - 0.01 <= w["end"] <= resume["end"] + 0.02, (windows, resume)


def test_lab_run_backend_containers_measures_a_pause_as_native_does(tmp_path: Path) -> None:
    """The outage calibration's 2 s freeze (experiments/calibration/outage.exp), on containers
    through `lab run --backend containers`: the probe's window of the freeze lies
    between the end of the pause's API call (it is in force by then) and the end of the
    resume's — whatever the engine's latency (a pause call took 140 ms once under the suite's
    load) — within the probe's 10 ms."""
    _require_podman()
    exp = tmp_path / "ctr-pause.exp"
    exp.write_text(EXP)
    out = subprocess.run([*LAB, "run", str(exp), "--backend", "containers", "--json",
                          "--db", str(tmp_path / "r.db")], capture_output=True, text=True,
                         cwd=ROOT, timeout=240)
    assert out.returncode in (0, 1), out.stdout[-3000:] + out.stderr[-3000:]
    cell = json.loads(out.stdout)["cells"][0]
    _assert_pause_measured(cell)
    # the freeze is one window; another is only a stall of the busy machine, away from the
    # pause and short (one of 384 ms, 2 s after the resume, with four tests and the unit
    # tests beside this one), never a second piece of the freeze
    faults = {f["name"]: f for f in cell["faults"]}
    windows = cell["measurements"]["downtime"]["subjects"]["probe"]["windows"]
    freeze = max(windows, key=lambda x: x["duration"])
    for w in windows:
        if w is not freeze:
            assert w["duration"] < 0.5, windows
            assert w["end"] < faults["pause"]["at"] or w["start"] > faults["resume"]["end"], \
                windows
    failed = [e["text"] for e in cell["expectations"] if e["passed"] is not True]
    assert not failed, failed
    # every operation knows the node that answered it (by @@server_id: every container's
    # server reports port 3306, and by port no operation had a node)
    tput = cell["measurements"]["throughput"]["subjects"]
    assert {"probe on db1", "w on db1", "r on db2"} <= set(tput), sorted(tput)
    assert _podman_services() == []


def run_up(proc: subprocess.Popen[bytes], known: set[str], timeout: float) -> str:
    """The id of the run `lab up` (``proc``) started, once that run says it is up (a run not in
    ``known``); the test fails with lab's output, lab killed, when it is not up in ``timeout``
    seconds or lab ends first."""
    from runners.runtime import list_runs

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        for info in list_runs():
            if info.id not in known and info.meta.get("state") == "up":
                return info.id
        time.sleep(0.2)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    out = proc.stdout.read().decode() if proc.stdout else ""
    pytest.fail(f"lab up did not come up:\n{out[-3000:]}")


UP = """
experiment "ctr-up" {
  backend containers
  topology replication { primary db1  replicas db2 }
}
"""


@pytest.mark.host_network
def test_kill_9_of_lab_then_lab_gc_leaves_nothing(tmp_path: Path) -> None:
    _require_podman()
    from runners.runtime import list_runs

    before = _host_state()
    exp = tmp_path / "ctr-up.exp"
    exp.write_text(UP)
    known = {i.id for i in list_runs()}
    proc = subprocess.Popen([*LAB, "up", str(exp)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    monitor: subprocess.Popen[bytes] | None = None
    try:
        run_id = run_up(proc, known, timeout=120)
        assert len(_left_by(run_id)) == 3  # two containers, one network
        monitor = _exec_monitor_left_of(run_id, tmp_path)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the lab, as `kill -9` would
        proc.wait(10)
        assert _left_by(run_id), "kill -9 of the lab should leave its containers to lab gc"
        gc = subprocess.run([*LAB, "gc", "--db", str(tmp_path / "r.db")], capture_output=True,
                            text=True, cwd=ROOT, timeout=120)
        assert gc.returncode == 0, gc.stderr
        assert _left_by(run_id) == []
        # the monitor of a container gc removed: ended too (SIGTERM)
        assert monitor.wait(timeout=5) == -signal.SIGTERM, gc.stdout
        assert f"conmon {monitor.pid} (of removed container" in gc.stdout
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
        if monitor is not None:
            monitor.kill()
    assert _podman_services() == []
    assert _host_state() == before
    assert json.dumps(gc.stdout).count("container") >= 1


def _exec_monitor_left_of(run_id: str, tmp_path: Path) -> subprocess.Popen[bytes]:
    """A process standing for the ``conmon`` of an exec session that a run cut short mid-exec
    left behind (its ``-c`` one of the run's containers, its bundle in the store: what such a
    conmon's command line has), which no removal of the container ends: ``lab gc`` must."""
    cid = _podman("ps", "-a", "-q", "--no-trunc", "--filter", f"label=lab.run={run_id}")[0]
    root = _podman("info", "--format", "{{.Store.GraphRoot}}")[0]
    bundle = f"{root}/overlay-containers/{cid}/userdata/exec-session"
    link = tmp_path / "conmon"  # an interpreter named conmon, its program on its stdin
    link.symlink_to(sys.executable)
    proc = subprocess.Popen([str(link), "-", "-c", cid, "-b", bundle], stdin=subprocess.PIPE,
                            start_new_session=True)
    assert proc.stdin is not None
    proc.stdin.write(b"import time\ntime.sleep(600)\n")  # the program, on its stdin
    proc.stdin.close()
    return proc


def test_divergence_calibration_holds_on_containers(tmp_path: Path) -> None:
    """A calibration file itself, unchanged, on containers (`make validity` runs them all with
    `--backend containers`): 7 rows deleted on the replica are exactly 7 missing rows and one
    errant transaction, as natively (docs/validity.md). About 25 s of servers."""
    _require_podman()
    from dsl.api import backend_errors

    exp = ROOT / "experiments" / "calibration" / "divergence.exp"
    assert backend_errors(exp, "containers") == []
    out = subprocess.run([*LAB, "run", str(exp), "--backend", "containers", "--json",
                          "--db", str(tmp_path / "r.db")], capture_output=True, text=True,
                         cwd=ROOT, timeout=240)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    summary = json.loads(out.stdout)
    (cell,) = summary["cells"]
    got = {e["text"]: e["passed"] for e in cell["expectations"]}
    assert got["expect divergence(writes) == 7"] is True
    assert got["expect errant_gtids(db2) == 1"] is True
    assert len(got) >= 9 and all(v is True for v in got.values()), got
    assert _podman_services() == []


GALERA_CRASH = """
experiment "ctr-galera-crash" {
  duration 24s
  seed 3
  backend containers
  topology galera {
    nodes g1, g2, g3
    config { innodb_flush_log_at_trx_commit = 2 }
  }
  workload w: unique_writes { target g1, g2  clients 2  rate 200/s }
  at 6s kill g1, g2, g3 within 0s
  at 10s start g1, g2, g3
  expect lost_writes(w) == 0
  report downtime(w)
}
"""


def test_a_galera_cluster_killed_at_once_is_recovered_on_containers(tmp_path: Path) -> None:
    """Every node's container killed at once, then `start g1, g2, g3`: each container started
    with --wsrep-recover (its position read from that start's output), the most advanced
    node bootstrapped (the entrypoint's safe_to_bootstrap and gvwstate.dat steps), the
    others joined; nothing acknowledged is lost (a kill keeps the page cache) and nothing is
    left."""
    _require_podman()
    rid, ops = _passing_run(tmp_path, "ctr-galera-crash", GALERA_CRASH, 400)
    done = [(o.f, o.node) for o in ops if o.process == -1 and o.type == "ok"]
    phases = [f for f, _ in done if f in ("recover_position", "bootstrap", "join")]
    assert phases == ["recover_position"] * 3 + ["bootstrap", "join", "join"]
    start = next(o for o in ops if o.f == "start_nodes" and o.type == "ok")
    assert set(start.value["positions"]) == {"g1", "g2", "g3"}
    seqnos = {p["seqno"] for p in start.value["positions"].values()}
    assert min(seqnos) > 0  # recovered from InnoDB, not grastate.dat's -1 after a crash
    assert 0 < start.value["writable_after_seconds"] < 60
    assert _left_by(rid) == []
