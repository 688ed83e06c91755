"""lab doctor's kernel lines: cgroup v1 cpu/memory, cgroup v2, /dev/fuse — present or not,
and what is refused without each."""

from __future__ import annotations

from pathlib import Path

from lab.cli.doctor import kernel_lines


def _hybrid(root: Path) -> None:
    for c in ("cpu", "memory"):
        (root / c).mkdir(parents=True)
        (root / c / "cgroup.procs").write_text("")
    (root / "unified").mkdir()
    (root / "unified" / "cgroup.procs").write_text("")
    (root / "unified" / "cgroup.controllers").write_text("")


def test_a_hybrid_machine_with_fuse_refuses_nothing(tmp_path: Path) -> None:
    _hybrid(tmp_path / "cg")
    fuse = tmp_path / "fuse"
    fuse.write_text("")
    lines = kernel_lines(tmp_path / "cg", fuse)
    assert len(lines) == 3
    assert all(": yes (" in line for line in lines), lines
    assert not any("refused" in line for line in lines), lines


def test_without_them_each_line_says_what_is_refused(tmp_path: Path) -> None:
    (tmp_path / "cg").mkdir()
    lines = kernel_lines(tmp_path / "cg", tmp_path / "no-fuse")
    assert [line.split(":")[0] for line in lines] == ["cgroup v1 cpu, memory", "cgroup v2",
                                                      "/dev/fuse"]
    assert all(": no —" in line and "refused" in line for line in lines), lines
