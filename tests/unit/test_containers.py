"""The container back-end without an engine: the language's `backend`, what `lab check` refuses
on containers, the servers' arguments in a container, the image's inputs and apt sources, the
engine switch, the host state put back, and `lab doctor`'s lines."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dsl.api import backend_errors, check_text, plan_text
from dsl.backends import uses_links
from lab.cli import main
from runners.containers import engine, image, status
from runners.containers.node import server_args
from runners.topology import needed_components

REPL = """
experiment "x" {
  %s
  topology replication { primary db1  replicas db2 }
  workload w: probe { target db1 }
  at 2s kill db2
  at 4s start db2 with relay_log_recovery = ON
  at 6s pause db1 for 1s
}
"""


def test_backend_is_native_unless_the_file_says_containers() -> None:
    assert plan_text(REPL % "").backend == "native"
    assert plan_text(REPL % "backend native").backend == "native"
    assert plan_text(REPL % "backend containers").backend == "containers"


def test_backend_may_be_said_once() -> None:
    errors = check_text(REPL % "backend containers\n  backend native")
    assert len(errors) == 1 and "backend" in errors[0].message


def test_containers_run_replication_with_process_faults() -> None:
    assert check_text(REPL % "backend containers") == []


GALERA = """
experiment "g" {
  backend containers
  topology galera { nodes g1, g2, g3 }
  router haproxy { writer g1 }
  workload w: probe { target router.writer }
  at 2s network partition g1 on group
  at 3s network heal
  at 4s drop caches
  at 5s network latency g2 50ms
}
"""


def test_lab_check_refuses_what_containers_cannot_run_yet_with_the_reason() -> None:
    errors = check_text(GALERA, "g.exp")
    messages = [e.message for e in errors]
    # galera, haproxy, a partition, its heal, latency (toxiproxy's container) and a drop of
    # the page cache (the engine on this machine) run on containers now
    assert messages == []
    # promote is SQL, the replicas repointed by name on the run's network
    assert check_text(REPL.replace("at 2s kill db2", "at 2s promote db2") %
                      "backend containers") == []
    # ProxySQL runs from its image (runners.containers.proxysql)
    assert check_text(GALERA.replace("router haproxy", "router proxysql"), "g.exp") == []
    mysql = check_text(REPL.replace("topology replication {",
                                    "topology replication { engine mysql ") % "backend containers")
    assert any("MariaDB only" in e.message for e in mysql)
    assert all(e.hint and "backend native" in e.hint for e in mysql)
    # MongoDB members run from their engine's image (runners.containers.mongo)
    mongo = GALERA.replace("topology galera { nodes g1, g2, g3 }",
                           "topology mongodb_replset { members g1, g2, g3 }")
    assert not [e for e in check_text(mongo, "g.exp") if "containers" in e.message]
    # the same file natively: no back-end error
    assert not [e for e in check_text(GALERA.replace("backend containers", ""), "g.exp")
                if "containers" in e.message]


def test_the_clients_link_on_containers_goes_through_toxiproxy() -> None:
    text = REPL.replace("at 2s kill db2", "at 2s network partition db2 on clients")
    assert check_text(text % "backend containers") == []
    plan = plan_text(text % "backend containers")
    assert uses_links(plan.actions(), "containers")
    # a partition between nodes needs no proxy on containers (iptables in the node)
    cut = plan_text(text.replace("on clients", "on replication") % "backend containers")
    assert not uses_links(cut.actions(), "containers") and uses_links(cut.actions(), "native")


def test_lab_run_backend_containers_checks_the_file_again(tmp_path: Path) -> None:
    path = tmp_path / "g.exp"
    path.write_text(REPL.replace("topology replication {",
                                 "topology replication { engine percona ") % "")
    assert backend_errors(path, "native") == []
    assert any("MariaDB only" in e.message for e in backend_errors(path, "containers"))
    # refused before anything starts: a language error, exit 2
    assert main(["run", str(path), "--backend", "containers",
                 "--db", str(tmp_path / "r.db")]) == 2
    assert not (tmp_path / "r.db").exists()


def test_a_container_run_needs_podman_unless_docker_host(monkeypatch: pytest.MonkeyPatch) -> None:
    plan = plan_text(REPL % "backend containers")
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    monkeypatch.delenv("LAB_DOCKER_HOST", raising=False)
    assert needed_components(plan) == ["podman", "runc", "mmdebstrap"]
    monkeypatch.setenv("DOCKER_HOST", "tcp://10.0.0.5:2376")
    assert needed_components(plan) == []
    assert "dbdeployer" in needed_components(plan_text(REPL % ""))


def test_engine_switch_lab_docker_host_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    monkeypatch.delenv("LAB_DOCKER_HOST", raising=False)
    assert engine.configured_host() is None
    monkeypatch.setenv("DOCKER_HOST", "tcp://a:2376")
    assert engine.configured_host() == "tcp://a:2376"
    monkeypatch.setenv("LAB_DOCKER_HOST", "ssh://b")
    assert engine.configured_host() == "ssh://b"
    assert engine.is_local_url("unix:///tmp/x.sock") and not engine.is_local_url("ssh://b")


def test_server_args_put_the_server_where_the_container_wants_it() -> None:
    plan = plan_text(REPL % "backend containers")
    db2 = next(n for n in plan.cells[0].nodes if n.name == "db2")
    args = server_args(db2)
    opts = dict(a[2:].split("=", 1) for a in args)
    assert opts["port"] == "3306" and opts["bind_address"] == "0.0.0.0"
    assert opts["datadir"] == "/var/lib/mysql" and opts["report_host"] == "db2"
    assert opts["read_only"] == "ON" and opts["innodb_buffer_pool_size"] == "64M"
    assert "server_id" not in opts and "log_error" not in opts  # the entrypoint's, the output
    assert not any(v.startswith("data/") for v in opts.values())


def test_image_tag_is_a_hash_of_its_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    tag = image.image_tag()
    assert tag.startswith("rcl-node:") and tag == image.image_tag()
    monkeypatch.setattr(image, "PACKAGES", (*image.PACKAGES, "strace"))
    assert image.image_tag() != tag


def test_the_suite_and_sources_come_from_the_machine(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAB_IMAGE_SUITE", raising=False)
    d = tmp_path / "sources.list.d"
    d.mkdir()
    (d / "a.sources").write_text(
        "Types: deb-src\nURIs: http://example.invalid/x\nSuites: sid\nComponents: main\n\n"
        "Enabled: no\nTypes: deb\nURIs: http://example.invalid/y\nSuites: trixie\n\n"
        "Types: deb\n# a comment\nURIs: http://example.invalid/debian\n"
        "Suites: bookworm bookworm-updates\nComponents: main\n")
    (d / "b.list.disabled").write_text("deb http://example.invalid/z buster main\n")
    empty = tmp_path / "sources.list"
    empty.write_text("# nothing here\n")
    files = image.source_files(empty, d)
    assert files == [d / "a.sources"]
    assert image.suite_of(files) == "bookworm"
    one = tmp_path / "one.list"
    one.write_text("# x\ndeb [arch=amd64] http://example.invalid/debian bullseye main\n")
    assert image.suite_of([one]) == "bullseye"
    monkeypatch.setenv("LAB_IMAGE_SUITE", "trixie")
    assert image.suite_of([one]) == "trixie"


def test_mmdebstrap_gets_the_source_files_not_a_mirror(monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    monkeypatch.setattr(image.shutil, "which", lambda p: f"/usr/bin/{p}")
    src = tmp_path / "debian.sources"
    cmd = image.mmdebstrap_command(tmp_path / "rootfs.tar", "bookworm", [src])
    assert cmd[-3:] == ["bookworm", str(tmp_path / "rootfs.tar"), str(src)]
    assert "--variant=apt" in cmd and not any("http" in c for c in cmd)
    assert any(c.startswith("--include=mariadb-server,") for c in cmd)


def test_the_imported_image_id_is_read_from_the_answer() -> None:
    answer = '{"status":"sha256:6f39","progress":""}\n'
    assert image.imported_id(answer) == "sha256:6f39"
    assert image.imported_id("not json\n") is None


def test_podman_labels_name_the_run() -> None:
    assert engine._labels_run("map[lab.host:vm lab.run:abc123 org.testcontainers:true]") == [
        "abc123"]
    assert engine._labels_run("map[]") == []


def _a_live_run(root: Path, name: str, owner: int) -> Path:
    d = root / name
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({"owner_pid": owner}))
    return d


def test_the_hosts_forwarding_is_put_back_when_the_last_run_using_it_ends(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two runs of labs with different LAB_RUNTIME: the first one's teardown leaves the host
    alone while the other still runs; the last one puts it back."""
    monkeypatch.setenv("LAB_HOST_NET_DIR", str(tmp_path / "host"))
    fwd = tmp_path / "ip_forward"
    fwd.write_text("0\n")
    monkeypatch.setattr(engine, "IP_FORWARD", fwd)
    monkeypatch.setattr(engine.shutil, "which", lambda p: None)  # no iptables
    a = _a_live_run(tmp_path / "rt-a", "run-a", os.getpid())
    b = _a_live_run(tmp_path / "rt-b", "run-b", os.getpid())
    engine.HostNetState.remember(a)
    assert json.loads(engine.HostNetState.path().read_text())["ip_forward"] == "0"
    fwd.write_text("1\n")  # what podman does
    engine.HostNetState.remember(b)  # a second run keeps the first truth
    assert json.loads(engine.HostNetState.path().read_text())["ip_forward"] == "0"
    assert engine.HostNetState.release(a) == []  # b still uses the host's network
    assert fwd.read_text().strip() == "1"
    assert engine.HostNetState.release(b) == ["ip_forward set back to 0"]
    assert fwd.read_text().strip() == "0"
    assert not engine.HostNetState.path().exists()
    assert engine.HostNetState.release() == []


def test_a_dead_runs_registration_does_not_hold_the_host(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAB_HOST_NET_DIR", str(tmp_path / "host"))
    fwd = tmp_path / "ip_forward"
    fwd.write_text("0\n")
    monkeypatch.setattr(engine, "IP_FORWARD", fwd)
    monkeypatch.setattr(engine.shutil, "which", lambda p: None)
    dead = _a_live_run(tmp_path / "rt", "killed", 2**22 + 12345)  # no such process
    engine.HostNetState.remember(dead)
    fwd.write_text("1\n")
    assert engine.HostNetState.users() == []  # `lab gc`'s sweep: the dead run is dropped
    assert engine.HostNetState.release() == ["ip_forward set back to 0"]


def test_doctor_lines_say_engine_image_and_what_is_not_exercised() -> None:
    present = status.BackendStatus("podman 4.3.1", "a private podman service per run",
                                   image.ImageStatus("rcl-node:abc", True, 431_000_000), True)
    lines = status.lines(present)
    assert lines[0].startswith("container engine: podman 4.3.1")
    assert lines[1] == "node image: rcl-node:abc present (431 MB)"
    assert "proxysql" in lines[2] and "percona-server-mongodb" in lines[2]
    assert "not exercised here" in lines[2]
    missing = status.BackendStatus("unknown", "tcp://x", image.ImageStatus("rcl-node:abc", False),
                                   False, "does not answer: refused")
    lines = status.lines(missing)
    assert "does not answer" in lines[0] and "lab image build" in lines[1]


def test_a_run_is_gone_by_its_own_directory_whatever_lab_runtime_the_gc_has(tmp_path, monkeypatch):
    """lab gc with another LAB_RUNTIME must not take a live run's containers: the directory
    label names the run's own directory; its owner (this process) is alive."""
    import json as _json
    import os as _os

    from runners.runtime import proc_start_time

    live_dir = tmp_path / "other-runtime" / "run1"
    live_dir.mkdir(parents=True)
    (live_dir / "run.json").write_text(_json.dumps(
        {"owner_pid": _os.getpid(), "owner_start": proc_start_time(_os.getpid())}))
    monkeypatch.setenv("LAB_RUNTIME", str(tmp_path / "mine"))
    labels = engine.run_labels("run1", live_dir)
    assert " " not in labels[engine.LABEL_DIR]
    assert not engine.run_gone("run1", labels[engine.LABEL_DIR], live=set())
    # the same run without its directory label looked dead here (the old rule)
    assert engine.run_gone("run1", None, live=set())
    # its directory removed, or its owner dead: gone
    (live_dir / "run.json").write_text(_json.dumps({"owner_pid": 2**22 + 7, "owner_start": 1}))
    assert engine.run_gone("run1", labels[engine.LABEL_DIR], live=set())
    spaced = tmp_path / "a b" / "run2"
    assert engine._podman_labels(
        "map[lab.run:run2 lab.dir:" + engine.run_labels("run2", spaced)[engine.LABEL_DIR] + "]"
    )[engine.LABEL_DIR] == engine.run_labels("run2", spaced)[engine.LABEL_DIR]
    # podman network ls prints labels as k=v,k=v (ps as map[k:v k:v]): both are read
    assert engine._podman_labels("lab.dir=%2Ftmp,lab.run=xx") == {"lab.dir": "%2Ftmp",
                                                                   "lab.run": "xx"}


def test_remove_labelled_asks_with_the_run_and_its_directory_label() -> None:
    """The teardown's own predicate takes both (a one-argument one raised TypeError, which the
    teardown suppressed, and left the run's containers: measured in make test)."""
    from types import SimpleNamespace

    removed: list[str] = []

    class Thing(SimpleNamespace):
        def remove(self, **_: object) -> None:
            removed.append(self.name)

    host = engine.host_label()
    mine = Thing(name="c1", labels={engine.LABEL_RUN: "r1", engine.LABEL_HOST: host,
                                    engine.LABEL_DIR: "%2Ftmp%2Fr1"})
    other = Thing(name="c2", labels={engine.LABEL_RUN: "r2", engine.LABEL_HOST: host})
    net = Thing(name="n1", attrs={"Labels": {engine.LABEL_RUN: "r1"}})
    client = SimpleNamespace(
        containers=SimpleNamespace(list=lambda **_: [mine, other]),
        networks=SimpleNamespace(list=lambda **_: [net]))
    asked: list[tuple[str, str | None]] = []

    def dead(rid: str, quoted_dir: str | None) -> bool:
        asked.append((rid, quoted_dir))
        return rid == "r1"

    engine.remove_labelled(client, dead)
    assert removed == ["c1", "n1"]
    assert ("r1", "%2Ftmp%2Fr1") in asked and ("r2", None) in asked


def test_an_engine_that_refuses_a_container_says_why_in_one_line() -> None:
    """A plain `podman system service` refused the lab's containers with a traceback ending in
    "error setting rlimit type 7"; an engine's refusal is a ComponentError naming the part and
    the engine, on one line."""
    import docker.errors

    from runners.containers import engine as engines
    from runners.errors import ComponentError

    class Refused:
        def start(self) -> None:
            raise docker.errors.APIError(
                "500 Server Error", explanation="runc create failed:\n error setting rlimit "
                "type 7: operation not permitted: OCI permission denied")

    with pytest.raises(ComponentError) as e:
        engines.start_container(Refused(), "node db1", "tcp://127.0.0.1:2375")
    assert e.value.component == "node db1"
    assert "\n" not in e.value.message
    assert e.value.message == ("the container engine (tcp://127.0.0.1:2375) could not start it: "
                               "runc create failed: error setting rlimit type 7: operation not "
                               "permitted: OCI permission denied")


def test_every_container_asks_for_the_open_file_limit_it_needs() -> None:
    """Given in the create call, not left to the engine's defaults (a plain rootful podman gives
    nofile 1048576, which a host with a lower hard limit refuses)."""
    from runners.containers import engine as engines

    got = {u["Name"]: (u["Soft"], u["Hard"]) for u in engines.limits()["ulimits"]}
    assert got == {"nofile": (20000, 20000), "nproc": (32768, 32768)}
    for f in ("topology.py", "proxysql.py", "router.py", "toxiproxy.py"):
        text = (Path("runners/containers") / f).read_text()
        made = text.count("new_container(")
        assert made >= 1 and made == text.count("**engines.limits()"), f
        assert "tc.start()" not in text, f  # started through engines.start_container


@pytest.mark.parametrize(("remote", "recorded"), [("", True), ("1", False)])
def test_an_engine_on_this_machine_has_the_hosts_network_recorded_and_put_back(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, remote: str, recorded: bool) -> None:
    """An engine the user runs on this machine (podman's TCP API on the loopback) changes the
    host's network as the lab's own does: the run registers it (put back at teardown and by
    lab gc); an engine taken as another machine's does not."""
    from types import SimpleNamespace

    from runners.containers import engine as engines

    class Client:
        def ping(self) -> bool:
            return True

    remembered: list[Path | None] = []
    monkeypatch.setenv("LAB_DOCKER_HOST", "tcp://127.0.0.1:2375")
    monkeypatch.setenv("LAB_ENGINE_REMOTE", remote)
    monkeypatch.setattr(engines, "docker_client", lambda url: Client())
    monkeypatch.setattr(engines.HostNetState, "remember",
                        classmethod(lambda cls, run_dir=None: remembered.append(run_dir)))
    eng = engines.connect(SimpleNamespace(dir=tmp_path))  # type: ignore[arg-type]
    assert eng.host_net is recorded and eng.local is recorded
    assert remembered == ([tmp_path] if recorded else [])
