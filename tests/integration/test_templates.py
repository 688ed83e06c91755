"""Initialised data directories from the lab's cache (runners.templates) on real servers: a
second deploy copies the template instead of initialising again, a corrupted template is
rebuilt before use, and a Galera cluster comes up with no state transfer while a wiped node
later still gets a real one."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from runners import sandbox, templates
from runners.mysql import execute_all, query, scalar
from runners.runtime import Run
from runners.topology import Topology

from .conftest import eventually, make_plan, node, require


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache of this test's own (LAB_HOME): the first deploy must build."""
    monkeypatch.setenv("LAB_HOME", str(tmp_path))
    monkeypatch.delenv("LAB_TEMPLATES", raising=False)
    return tmp_path / "templates"


def _deploy_single() -> str:
    """One single sandbox up and answering; the name of the template its init_db copied."""
    plan = make_plan("single", [node("db1", "single", 1)])
    with Run(experiment="it") as run:
        topo = Topology.deploy(plan, plan.cells[0], run)
        try:
            db1 = topo.nodes["db1"]
            assert scalar(db1.addr, topo.admin, "SELECT 1") == 1
            # the lab's users are this run's: made after the copy, with its passwords
            assert scalar(db1.addr, topo.app, "SELECT CURRENT_USER()").startswith("lab_app@")
            script = (run.dir / "init_db.template").read_text()
            return next(line for line in script.splitlines() if "templates/" in line)
        finally:
            topo.teardown()


def test_a_second_deploy_uses_the_template_and_a_corrupt_one_is_rebuilt(
        own_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require("mariadbd", "dbdeployer")
    inits: list[Path] = []
    real_init = sandbox._init_by_dbdeployer

    def counted(*args: object) -> Path:
        inits.append(Path(str(args[-1])))
        return real_init(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(sandbox, "_init_by_dbdeployer", counted)
    first = _deploy_single()
    assert len(inits) == 1  # dbdeployer's init_db ran once, to build the template
    entries = [p for p in own_cache.iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert len(entries) == 1 and templates.problem(entries[0]) is None
    entry = entries[0]
    inode = entry.stat().st_ino

    assert _deploy_single() == first
    assert len(inits) == 1  # the second deploy copied the template: no initialisation
    assert entry.stat().st_ino == inode

    (entry / "data" / "ibdata1").write_bytes(b"\0" * 4096)  # a damaged template
    (entry / "planted").write_text("the damaged entry")  # gone once it is replaced (an inode
    assert templates.problem(entry) is not None  # number may be reused: CI saw the same one)
    _deploy_single()
    assert len(inits) == 2  # rebuilt, never used as it was
    assert templates.problem(entry) is None
    assert not (entry / "planted").exists()
    assert (entry / "data" / "ibdata1").stat().st_size > 4096


def _status(topo: Topology, name: str, var: str) -> str:
    return str(query(topo.nodes[name].addr, topo.admin, f"SHOW STATUS LIKE '{var}'")[0]["Value"])


def test_galera_joiners_need_no_state_transfer_and_a_wiped_node_gets_a_real_sst(
        own_cache: Path) -> None:
    require("mariadbd", "galera", "rsync")
    plan = make_plan("galera", [node(f"g{i}", "galera", i) for i in (1, 2, 3)])
    with Run(experiment="it") as run:
        topo = Topology.deploy(plan, plan.cells[0], run)
        try:
            g = topo.nodes
            for name in ("g2", "g3"):
                text = g[name].error_log.read_text(errors="replace")
                assert "state transfer needed: no" in text
                assert "--role 'joiner'" not in text  # no SST script ran, not even for IST
            for name in g:  # the run's users reached every node (replicated from g1)
                assert _status(topo, name, "wsrep_cluster_size") == "3"
                assert scalar(g[name].addr, topo.app, "SELECT CURRENT_USER()").startswith(
                    "lab_app@")
            execute_all(g["g1"].addr, topo.app, ["CREATE DATABASE t", "CREATE TABLE t.a "
                                                 "(id INT PRIMARY KEY)",
                                                 "INSERT INTO t.a VALUES (1)"])
            # a fault that needs a state transfer: g3's files are gone
            g["g3"].kill()
            for p in g["g3"].datadir.iterdir():
                if p.is_dir() and not p.is_symlink():
                    shutil.rmtree(p)
                else:
                    p.unlink()
            execute_all(g["g1"].addr, topo.app, ["INSERT INTO t.a VALUES (2)"])
            before = g["g3"].error_log.read_text(errors="replace")
            g["g3"].start()
            assert eventually(lambda: _status(topo, "g3", "wsrep_local_state") == "4", 60)
            after = g["g3"].error_log.read_text(errors="replace")[len(before):]
            assert "wsrep_sst_rsync --role 'joiner'" in after
            assert "SST succeeded" in after or "SST received" in after
            assert eventually(lambda: [r["id"] for r in query(
                g["g3"].addr, topo.admin, "SELECT id FROM t.a ORDER BY id")] == [1, 2], 20)
        finally:
            topo.teardown()
