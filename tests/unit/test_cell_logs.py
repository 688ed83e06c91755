"""The servers' logs of a cell that did not pass are kept beside the results database."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from lab.run import cell_logs


def test_every_components_log_is_kept_and_a_huge_one_by_its_tail(tmp_path: Path,
                                                                 monkeypatch) -> None:
    run = tmp_path / "run"
    run.mkdir()
    saved: list[str] = []

    def node(name: str, text: str) -> SimpleNamespace:
        (run / f"{name}.err").write_text(text)
        return SimpleNamespace(name=name, error_log=run / f"{name}.err",
                               save_log=lambda: saved.append(name))

    (run / "haproxy.log").write_text("router says\n")
    topo = SimpleNamespace(nodes={"db1": node("db1", "x" * 100 + "THE END\n"),
                                  "db2": node("db2", "")},
                           router=SimpleNamespace(log=run / "haproxy.log"), toxi=None)
    monkeypatch.setattr(cell_logs, "MAX_BYTES", 20)
    dest = cell_logs.logs_dir(tmp_path / "home" / "results.db", "abc123", 2)
    assert dest == tmp_path / "home" / "logs" / "abc123" / "cell-2"
    kept = cell_logs.keep_logs(topo, dest)
    assert sorted(p.name for p in kept) == ["db1.log", "router.log"]  # db2's is empty
    assert (dest / "db1.log").read_text().endswith("THE END\n")
    assert len((dest / "db1.log").read_bytes()) == 20
    assert saved == ["db1", "db2"]  # a container's output is saved before it is copied


def test_nothing_to_keep_makes_no_directory(tmp_path: Path) -> None:
    topo = SimpleNamespace(nodes={}, router=None, toxi=None)
    assert cell_logs.keep_logs(topo, tmp_path / "logs") == []
    assert not (tmp_path / "logs").exists()
