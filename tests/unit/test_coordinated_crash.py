"""Issue 21, item 4: several nodes killed within a window in one action, started together, and
a Galera cluster with every node down recovered from the most advanced one (positioned errors,
the seeded moments, the history, the recovery's choices). Each test fails on the code before."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from fakes import FakeTopology, nemesis, ref

from dsl.actions import describe, spread, undo
from dsl.api import check_text, parse_text, plan_text
from dsl.models import NodeGroupAction
from fault import process
from fault.context import Context
from lab.cli.lang import schedule_rows
from runners.galera_recovery import (
    Position,
    grastate_seqno,
    most_advanced,
    parse_recovered,
    set_safe_to_bootstrap,
)

HEAD = """experiment "t" {
  duration 30s
  seed 7
  topology galera { nodes g1, g2, g3 }
  workload w: unique_writes { target g1 }
"""


def exp(*lines: str) -> str:
    return HEAD + "".join(f"  {line}\n" for line in lines) + "}\n"


def errors(text: str) -> list[tuple[int, int, str]]:
    return [(e.span.line, e.span.column, e.message) for e in check_text(text, "t.exp")]


def test_a_group_kill_parses_with_its_window_and_unsynced_loss() -> None:
    e = parse_text(exp("at 10s kill g1, g2, g3 within 2s", "at 20s start g1, g2, g3",
                       "at 25s kill g2, g3 losing unsynced writes"))
    kill, start, lose = (t.action for t in e.timeline)
    assert isinstance(kill, NodeGroupAction) and kill.verb == "kill" and kill.within == 2.0
    assert [r.name for r in kill.nodes] == ["g1", "g2", "g3"] and not kill.lose_unsynced
    assert isinstance(start, NodeGroupAction) and start.verb == "start"
    assert isinstance(lose, NodeGroupAction) and lose.lose_unsynced and lose.within == 0
    assert describe(kill) == "kill g1, g2, g3 within 2s"
    assert describe(lose) == "kill g2, g3 losing unsynced writes"
    assert undo(kill) == NodeGroupAction(verb="start", nodes=kill.nodes, span=kill.span)


def test_a_single_kill_may_lose_unsynced_writes() -> None:
    e = parse_text(exp("at 10s kill g1 losing unsynced writes"))
    a = e.timeline[0].action
    assert a.lose_unsynced and describe(a) == "kill g1 losing unsynced writes"  # type: ignore[union-attr]


def test_positioned_errors_window_unknown_node_named_twice() -> None:
    text = exp("at 29s kill g1, g2 within 2s", "at 5s kill g1, g4", "at 6s kill g2, g3, g2")
    assert errors(text) == [
        (6, 29, "the kills of this action run until 31s (at 29s within 2s), after the end of "
                "the load (duration 30s)"),
        (7, 18, "unknown node 'g4' (known: g1, g2, g3)"),
        (8, 22, "'g2' is named twice in this action"),
    ]


def test_unsynced_loss_and_a_group_kill_of_galera_run_on_containers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    text = exp("at 5s kill g1 losing unsynced writes").replace(
        "topology galera", "backend containers\n  topology galera")
    assert errors(text) == []  # lab-iofs bind-mounted into the node's container
    # lab run --backend containers of a native file (dsl.backends: one place): the group kill
    # needs the whole-cluster recovery, which containers declare
    from dsl.api import backend_errors
    from runners import capabilities as caps
    from runners.containers.topology import ContainerTopology

    path = Path(tempfile.mkdtemp()) / "u.exp"
    path.write_text(exp("at 5s kill g1, g2, g3 losing unsynced writes"))
    assert backend_errors(path, "containers") == []
    monkeypatch.setattr(ContainerTopology, "capabilities",
                        ContainerTopology.capabilities - {caps.GroupRecovery})
    assert [e.message for e in backend_errors(path, "containers")] == [
        "kill of several Galera nodes at once (the whole-cluster recovery: --wsrep-recover, "
        "bootstrap, joins) runs natively only, not on containers yet"]


def test_the_moments_come_from_the_seed_and_stay_in_the_window() -> None:
    a = spread(7, ["g1", "g2", "g3"], 2.0)
    assert a == spread(7, ["g1", "g2", "g3"], 2.0)  # the same file, the same moments
    assert a != spread(8, ["g1", "g2", "g3"], 2.0)
    assert sorted(n for n, _ in a) == ["g1", "g2", "g3"]
    assert all(0 <= t <= 2.0 for _, t in a) and [t for _, t in a] == sorted(t for _, t in a)
    assert spread(7, ["g1", "g2"], 0.0) == [("g1", 0.0), ("g2", 0.0)]


def test_the_plan_shows_each_nodes_moment() -> None:
    plan = plan_text(exp("at 10s kill g1, g2, g3 within 2s"))
    (when, words), = schedule_rows(plan)
    moments = ", ".join(f"{n} at {10 + t:g}s" for n, t in spread(7, ["g1", "g2", "g3"], 2.0))
    assert when == "at 10s" and words == f"kill g1, g2, g3 within 2s ({moments})"


def test_each_kill_of_a_group_is_a_fault_of_its_own(tmp_path: Path) -> None:
    topo = FakeTopology(tmp_path)
    nem, history = nemesis(topo)
    detail = nem.apply(NodeGroupAction(verb="kill", nodes=[ref("db1"), ref("db2"), ref("db3")],
                                       within=0.2))
    assert sorted(topo.log) == ["kill db1", "kill db2", "kill db3"]
    assert nem.down == {"db1", "db2", "db3"}
    assert set(detail["moments"]) == {"db1", "db2", "db3"}
    inner = [(o.type, o.f, o.node) for o in history if o.f == "kill"]
    assert sorted(inner) == sorted([(t, "kill", n) for n in ("db1", "db2", "db3")
                                    for t in ("invoke", "ok")])
    assert (history[0].f, history[-1].f) == ("kill_nodes", "kill_nodes")
    topo.log.clear()
    nem.apply(NodeGroupAction(verb="start", nodes=[ref("db3"), ref("db1"), ref("db2")]))
    assert topo.log == ["start db1", "start db3", "start db2"]  # the primary first
    assert nem.down == set() and nem.heal_all() == []


def test_a_galera_cluster_with_every_node_down_is_recovered(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    topo = FakeTopology(tmp_path, kind="galera")
    nem, _ = nemesis(topo)
    asked: list[list[str]] = []

    def recover(ctx: Context, names: list[str]) -> dict[str, Any]:
        asked.append(names)
        for n in names:
            topo.nodes[n].running = True
        ctx.down.clear()
        return {"note": "recovered"}

    monkeypatch.setattr(process, "recover_galera", recover)
    nem.apply(NodeGroupAction(verb="kill", nodes=[ref("db1"), ref("db2"), ref("db3")]))
    nem.apply(NodeGroupAction(verb="start", nodes=[ref("db1"), ref("db2"), ref("db3")]))
    assert asked == [["db1", "db2", "db3"]]
    nem.apply(NodeGroupAction(verb="kill", nodes=[ref("db1"), ref("db2"), ref("db3")]))
    assert nem.heal_all() == ["recover the Galera cluster: recovered"]
    assert asked[-1] == ["db1", "db2", "db3"]


def test_one_galera_node_down_just_starts(tmp_path: Path) -> None:
    topo = FakeTopology(tmp_path, kind="galera")
    nem, _ = nemesis(topo)
    nem.apply(NodeGroupAction(verb="kill", nodes=[ref("db2"), ref("db3")]))
    assert not process.galera_all_down(nem.ctx)
    assert nem.heal_all() == ["start db2", "start db3"]


def test_the_recovered_position_is_read_from_the_log() -> None:
    log = ("2026-01-01 [Note] InnoDB: Starting crash recovery\n2026-01-01 [Note] WSREP: "
           "Recovered position: 8a0f1e2d-1111-11ef-9c4e-7b5c0d3e4f5a:22849\n")
    assert parse_recovered(log) == Position("8a0f1e2d-1111-11ef-9c4e-7b5c0d3e4f5a", 22849)
    assert parse_recovered("WSREP: Recovered position: 8a0f1e2d-1111-11ef-9c4e-7b5c0d3e4f5a:-1") \
        == Position("8a0f1e2d-1111-11ef-9c4e-7b5c0d3e4f5a", -1)
    assert parse_recovered("nothing here") is None


def test_the_most_advanced_node_bootstraps() -> None:
    u = "8a0f1e2d-1111-11ef-9c4e-7b5c0d3e4f5a"
    assert most_advanced({"g1": Position(u, 5), "g2": Position(u, 9), "g3": Position(u, 7)}) == "g2"
    assert most_advanced({"g1": Position(u, 9), "g2": Position(u, 9)}) == "g1"  # a tie: first
    other = "00000000-2222-11ef-9c4e-7b5c0d3e4f5a"
    assert most_advanced({"g1": Position(u, 3), "g2": Position(other, 99),
                          "g3": Position(u, 4)}) == "g3"


def test_safe_to_bootstrap_is_set_in_grastate(tmp_path: Path) -> None:
    (tmp_path / "grastate.dat").write_text(
        "# GALERA saved state\nversion: 2.1\nuuid:    8a0f1e2d-1111-11ef-9c4e-7b5c0d3e4f5a\n"
        "seqno:   -1\nsafe_to_bootstrap: 0\n")
    assert grastate_seqno((tmp_path / "grastate.dat").read_text()) == -1
    set_safe_to_bootstrap(tmp_path)
    text = (tmp_path / "grastate.dat").read_text()
    assert "safe_to_bootstrap: 1" in text and "safe_to_bootstrap: 0" not in text
    assert grastate_seqno(None) is None and grastate_seqno("version: 2.1\n") is None


class _Container:
    """The parts of a docker-py container a ``ContainerNode`` recovery uses: a log that
    grows at each start, the start options put through the archive API."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files
        self.log = b"2026 [Note] mariadbd: ready for connections.\n"
        self.starts: list[str] = []
        self.name = "lab-r-g1"
        self.recovers = True  # a --wsrep-recover start logs a position

    def put_archive(self, path: str, data: bytes) -> None:
        import io
        import tarfile

        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            for m in tar.getmembers():
                f = tar.extractfile(m)
                self.files["/" + m.name] = f.read() if f else b""

    def get_archive(self, path: str) -> tuple[list[bytes], dict[str, Any]]:
        import io
        import tarfile

        if path not in self.files:
            raise type("NotFound", (Exception,), {})(path)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo(path.rsplit("/", 1)[1])
            info.size = len(self.files[path])
            tar.addfile(info, io.BytesIO(self.files[path]))
        return [buf.getvalue()], {}

    def start(self) -> None:
        opts = self.files.get("/etc/lab/start-options", b"").decode()
        self.starts.append(opts)
        if "--wsrep-recover" in opts and self.recovers:
            self.log += (b"WSREP: Recovered position: "
                         b"8a0f1e2d-1111-11ef-9c4e-7b5c0d3e4f5a:41\n")

    def wait(self, timeout: float) -> dict[str, int]:
        return {"StatusCode": 0}

    def logs(self, stdout: bool, stderr: bool) -> bytes:
        return self.log


def test_a_containers_recovery_runs_through_its_own_starts(tmp_path: Path) -> None:
    """A container node recovers its position by a start with ``--wsrep-recover`` (the
    position read from what that start logged, never an earlier one), reads its Galera files
    through the API, and starts as a recovered member with the entrypoint's steps: the
    bootstrap node with ``--lab-safe-to-bootstrap`` and ``--wsrep-new-cluster``."""
    from types import SimpleNamespace

    from runners.containers.node import ContainerNode
    from runners.errors import ComponentError
    from runners.galera_recovery import recover_position

    container = _Container({"/var/lib/mysql/grastate.dat": b"seqno:   -1\n",
                            "/var/lib/mysql/gvwstate.dat": b"my_uuid: x\n"})
    node = ContainerNode.__new__(ContainerNode)
    node.name, node.container, node.data_path = "g1", container, "/var/lib/mysql"
    node.host_datadir, node.error_log, node.port = None, tmp_path / "g1.log", 13306
    node.engine = SimpleNamespace(local=False)
    container.log += b"WSREP: Recovered position: 8a0f1e2d-1111-11ef-9c4e-7b5c0d3e4f5a:7\n"
    pos = recover_position(node)
    assert (pos.seqno, container.starts) == (41, ["--wsrep-recover\n"])
    container.recovers = False  # a start that logs no position: never an earlier start's
    with pytest.raises(ComponentError, match="no 'Recovered position'"):
        recover_position(node)
    assert grastate_seqno(node.data_file("grastate.dat")) == -1
    assert node.data_file("none.dat") is None
    assert node.start_recovered(str(pos), bootstrap=True) is True
    assert container.starts[-1].splitlines() == [
        f"--wsrep_start_position={pos}", "--lab-forget-view", "--wsrep-new-cluster",
        "--lab-safe-to-bootstrap"]
    del container.files["/var/lib/mysql/gvwstate.dat"]
    assert node.start_recovered(str(pos), bootstrap=False) is False
    assert container.starts[-1].splitlines() == [f"--wsrep_start_position={pos}",
                                                 "--lab-forget-view"]


# the joiner's error log in the two cases, as MariaDB 10.11 and Galera 4 wrote it here
_IST_JOIN = """WSREP: State transfer required:
WSREP: Running: 'wsrep_sst_rsync --role 'joiner' --address '127.0.0.1:30961'
WSREP_SST: [INFO] rsync SST started on joiner (20261128 17:29:52.010)
WSREP: ####### IST uuid:12d4c69e-22f1-43b0-b796-1ce3e069d6a4 f: 624, l: 1436, STRv: 3
WSREP: Prepared IST receiver for 624-1436, listening at: tcp://127.0.0.1:30951
WSREP_SST: [INFO] rsync IST completed on joiner (20261128 17:29:53.364)
WSREP: SST received: 12d4c69e-22f1-43b0-b796-1ce3e069d6a4:623
WSREP: SST succeeded for position 12d4c69e-22f1-43b0-b796-1ce3e069d6a4:623
WSREP: Receiving IST: 813 writesets, seqnos 624-1436
WSREP: IST received: 12d4c69e-22f1-43b0-b796-1ce3e069d6a4:1436
"""
_SST_JOIN = """WSREP: State transfer required:
WSREP_SST: [INFO] rsync SST started on joiner (20261128 16:45:06.763)
WSREP: ####### IST uuid:00000000-0000-0000-0000-000000000000 f: 0, l: 16124, STRv: 3
WSREP: Prepared IST receiver for 0-16124, listening at: tcp://127.0.0.1:25751
WSREP_SST: [INFO] rsync SST completed on joiner (20261128 16:45:09.282)
WSREP: SST received: bdc50b4e-acbd-45af-b9df-bde5a48f1744:16225
WSREP: Receiving IST... 100.0% (119/119 events) complete.
WSREP: IST received: bdc50b4e-acbd-45af-b9df-bde5a48f1744:16124
"""


def test_a_join_is_told_sst_or_ist_from_the_joiners_log() -> None:
    """A full rsync SST followed by an IST of what came meanwhile is an SST; an IST that went
    through the SST script (its bypass logs "SST received") is an IST."""
    from runners.galera_recovery import transfer_kind

    assert transfer_kind(_IST_JOIN) == "IST"
    assert transfer_kind(_SST_JOIN) == "SST"
    assert transfer_kind("WSREP: Synchronized with group, ready for connections\n") == "none"
