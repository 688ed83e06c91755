"""`set NAME = VALUE` in a `router proxysql` block: ProxySQL's own variables, a sweep over one
of them as `$name`, and what the language refuses."""

from __future__ import annotations

import pytest

from dsl import router_settings
from dsl.api import plan_text
from dsl.errors import LanguageErrors
from dsl.models import NodeAction
from dsl.plan import Plan

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


def plan(settings: str, vary: str = "", kind: str = "proxysql") -> Plan:
    return plan_text(FILE % (kind, settings, vary))


def test_settings_reach_the_plan_and_a_sweep_is_one_cell_per_value() -> None:
    p = plan("set mysql-monitor_galera_healthcheck_interval = $iv\n"
             "    set mysql-monitor_galera_healthcheck_timeout = 300",
             "vary iv in 500, 2000")
    assert p.router is not None
    settings = p.router.settings
    assert settings == {"mysql-monitor_galera_healthcheck_interval": "$iv",
                        "mysql-monitor_galera_healthcheck_timeout": "300"}
    cells = p.cells
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


# --- faults of the router's own process ----------------------------------------------------------

RF = """
experiment "router-faults" {
  %s
  topology replication { primary db1  replicas db2 }
  router %s { writer db1  reader db2 }
  workload w: probe { target router.writer }
  %s
}
"""


def test_kill_pause_restart_router_are_actions_on_its_process() -> None:
    p = plan_text(RF % ("", "proxysql", "at 2s kill router\n  at 3s start router\n"
                        "  at 5s pause router for 1s\n  at 8s restart router"))
    acts = [a for a in p.actions() if isinstance(a, NodeAction)]
    assert [(a.verb, a.node.name) for a in acts] == [
        ("kill", "router"), ("start", "router"), ("pause", "router"), ("restart", "router")]
    assert any(ta.lasts == 1.0 and isinstance(ta.action, NodeAction)
               and ta.action.verb == "pause" for ta in p.timeline)


@pytest.mark.parametrize(("backend", "kind", "action", "message"), [
    ("", "haproxy", "at 2s kill router", "cannot be faulted yet"),
    ("", "proxysql", "at 2s cold restart router", "not a router fault"),
    ("", "proxysql", "at 2s restart router with innodb_buffer_pool_size = 64M", "no options"),
])
def test_router_faults_refused(backend: str, kind: str, action: str, message: str) -> None:
    with pytest.raises(LanguageErrors, match=message):
        plan_text(RF % (backend, kind, action))
