"""The CLI is documented, and doctor's exit status follows what the defaults need."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from lab.cli import build_parser
from lab.cli.doctor import EXERCISED_LINE, exit_status, kernel_lines, render, sandbox_line
from runners import components
from runners.components import SPEC_BY_NAME, Found, MissingComponent

ROOT = Path(__file__).resolve().parents[2]


def _commands() -> list[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return sorted(sub.choices)  # type: ignore[arg-type]


def test_every_cli_command_is_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    missing = [c for c in _commands() if f"lab {c}" not in readme]
    assert not missing, f"README does not show: {missing}"


def test_doctor_fails_only_for_components_the_defaults_need() -> None:
    ok = [Found(n, "/x", "1", s) for n, s in SPEC_BY_NAME.items()]
    assert exit_status(ok) == 0
    no_mongod = [f if f.name != "mongod" else Found("mongod", None, None, f.spec) for f in ok]
    assert exit_status(no_mongod) == 0
    no_haproxy = [f if f.name != "haproxy" else Found("haproxy", None, None, f.spec)
                  for f in ok]
    assert exit_status(no_haproxy) == 1


# A fact about the machine this project is built and tested on, not about the user's: no
# package of ProxySQL or mongod can be installed there, so their code never ran against the real
# binaries. The README says so; the product (lab doctor, error messages) does not.
NOT_EXERCISED_ON_THE_BUILD_MACHINE = ("mongod",)
# ProxySQL is: the suite runs it (a build of it beside the project, found through LAB_BIN_PATH).
EXERCISED_ON_THE_BUILD_MACHINE = ("proxysql",)
MACHINE_FACTS = ("here", "this machine", "registry", "exercised")


def test_the_readme_says_what_the_build_machine_never_ran() -> None:
    readme = (ROOT / "README.md").read_text()
    for name in NOT_EXERCISED_ON_THE_BUILD_MACHINE:
        row = next(line for line in readme.splitlines() if f"`{name}" in line or
                   f"({name}" in line.lower() or f"`router {name}`" in line)
        assert "not exercised here" in row, name
    for name in EXERCISED_ON_THE_BUILD_MACHINE:
        row = next(line for line in readme.splitlines() if f"`router {name}`" in line)
        assert "exercised by the integration tests" in row, name


def test_doctor_reports_the_users_machine_not_the_build_machine() -> None:
    for name, spec in SPEC_BY_NAME.items():
        for text in (spec.how_to_get, spec.vendor, spec.purpose):
            assert not any(fact in text.lower() for fact in MACHINE_FACTS), (name, text)
            assert "\n" not in text  # one line: tests print it as a skip reason
        assert {Found(name, "/x", "1", spec).status, Found(name, None, None, spec).status} == {
            "ok", "missing"}
        assert "is not installed" in str(MissingComponent(name, spec.how_to_get))
        assert "\n" not in str(MissingComponent(name, spec.how_to_get))


def test_how_to_get_names_the_package_for_the_package_manager_found(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(components.shutil, "which",
                        lambda p: "/usr/bin/dnf" if p == "dnf" else None)
    assert SPEC_BY_NAME["galera"].how_to_get.startswith("dnf install -y galera-4 (")
    assert "mariadb.org" in SPEC_BY_NAME["galera"].how_to_get
    monkeypatch.setattr(components.shutil, "which", lambda p: None)
    assert SPEC_BY_NAME["galera"].how_to_get == SPEC_BY_NAME["galera"].vendor
    assert "repo.proxysql.com" in SPEC_BY_NAME["proxysql"].how_to_get


def _found() -> list[Found]:
    return [Found(n, f"/usr/bin/{n}" if n != "mongod" else None, "1.2.3", s)
            for n, s in SPEC_BY_NAME.items()]


def test_doctor_without_a_terminal_prints_one_plain_line_per_component() -> None:
    out = io.StringIO()
    render(_found(), Console(file=out, width=80), root=True)
    lines = out.getvalue().splitlines()
    # then the kernel's lines (cgroups, /dev/fuse), the MySQL tarballs' line, then root
    kernel = len(kernel_lines())
    assert [line.split()[0] for line in lines[:-3 - kernel]] == list(SPEC_BY_NAME)
    assert lines[-3 - kernel:-3] == kernel_lines()
    assert lines[-3] == sandbox_line() and "not exercised here" in lines[-3]
    assert lines[-2] == EXERCISED_LINE
    proxysql, mongod = lines[-2].split("; topology mongodb_replset")
    assert "exercised by this project's integration tests" in proxysql
    assert "not exercised here" in mongod
    assert lines[-1].startswith("root: yes")
    assert not any(ch in out.getvalue() for ch in "┃│┏━")
    mongod = next(line for line in lines if line.startswith("mongod"))
    assert len(mongod) > 80 and "missing" in mongod  # never wrapped into a column
    assert mongod.endswith(SPEC_BY_NAME["mongod"].how_to_get)


def test_doctor_on_a_terminal_draws_a_table() -> None:
    out = io.StringIO()
    render(_found(), Console(file=out, width=120, force_terminal=True), root=True)
    assert "replica-chaos-lab components" in out.getvalue() and "┃" in out.getvalue()


def test_doctor_lists_the_mysql_tarballs_unpacked(tmp_path: Path) -> None:
    for v, flavor in (("8.0.36", "mysql"), ("8.0.39", "percona"), ("10.6.18", "mariadb")):
        (tmp_path / v).mkdir()
        (tmp_path / v / "FLAVOR").write_text(flavor)
    line = sandbox_line(str(tmp_path))
    assert f"{tmp_path}: mysql 8.0.36, percona 8.0.39 —" in line
    assert "10.6" not in line
