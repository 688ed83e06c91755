"""`set NAME = VALUE` in a `router proxysql` block: ProxySQL's own variables, a sweep over one
of them as `$name`, and what the language refuses."""

from __future__ import annotations

import pytest

from dsl import router_settings
from dsl.api import plan_text
from dsl.errors import LanguageErrors

FILE = """
experiment "monitor-sweep" {
  topology galera { nodes g1, g2, g3 }
  router %s {
    writers g1, g2
    %s
  }
  %s
  workload w: probe { target router.writer }
}
"""


def plan(settings: str, vary: str = "", kind: str = "proxysql") -> object:
    return plan_text(FILE % (kind, settings, vary))


def test_settings_reach_the_plan_and_a_sweep_is_one_cell_per_value() -> None:
    p = plan("set mysql-monitor_galera_healthcheck_interval = $iv\n"
             "    set mysql-monitor_galera_healthcheck_timeout = 300",
             "vary iv in 500, 2000")
    assert p.router is not None  # type: ignore[attr-defined]
    settings = p.router.settings  # type: ignore[attr-defined]
    assert settings == {"mysql-monitor_galera_healthcheck_interval": "$iv",
                        "mysql-monitor_galera_healthcheck_timeout": "300"}
    cells = p.cells  # type: ignore[attr-defined]
    assert [router_settings.resolve(settings, c.sweep)[
        "mysql-monitor_galera_healthcheck_interval"] for c in cells] == ["500", "2000"]


@pytest.mark.parametrize(("settings", "vary", "kind", "message"), [
    ("set mysql-interfaces = 1", "", "proxysql", "the lab's own"),
    ("set mysql-monitor_password = x", "", "proxysql", "the lab's own"),
    ("set admin-admin_credentials = a", "", "proxysql", "not a ProxySQL MySQL variable"),
    ('set mysql-monitor_ping_interval = "1 2"', "", "proxysql", "only letters"),
    ("set mysql-monitor_ping_interval = $nope", "", "proxysql", "unknown parameter"),
    ("set mysql-monitor_ping_interval = $iv", 'vary iv in "a b"', "proxysql", "only letters"),
    ("set mysql-monitor_ping_interval = 1\n set mysql-monitor_ping_interval = 2", "",
     "proxysql", "set twice"),
    ("set mysql-monitor_ping_interval = 1", "", "haproxy", "takes no settings"),
])
def test_refused(settings: str, vary: str, kind: str, message: str) -> None:
    with pytest.raises(LanguageErrors, match=message):
        plan(settings, vary, kind)


def test_a_sweep_used_only_by_the_router_is_used() -> None:
    plan("set mysql-monitor_ping_interval = $iv", "vary iv in 500, 1000")  # no "not used"
