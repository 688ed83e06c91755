"""The CLI is documented, and doctor's exit status follows what the defaults need."""

from __future__ import annotations

from pathlib import Path

from lab.cli import build_parser
from lab.doctor import exit_status
from runners.components import SPEC_BY_NAME, Found

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


def test_proxysql_and_mongod_are_marked_not_exercised_here() -> None:
    for name in ("proxysql", "mongod"):
        f = Found(name, "/opt/x", "1", SPEC_BY_NAME[name])
        assert f.status == "found (not exercised here)"
