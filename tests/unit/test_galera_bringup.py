"""A Galera cluster's bring-up options (runners.bare.bringup_config): faster EVS joins only
while the nodes join, the plan's own value never overridden, nothing added elsewhere."""

from __future__ import annotations

from runners.bare import BRINGUP_PROVIDER, GALERA_DEFAULTS, bringup_config


def test_a_galera_node_joins_faster_and_gets_galera_s_default_back() -> None:
    cfg = {"port": "1", "wsrep_provider_options": "gcache.size=64M; evs.suspect_timeout=PT3S"}
    up, restore = bringup_config(cfg)
    assert up["wsrep_provider_options"] == ("gcache.size=64M; evs.suspect_timeout=PT3S; "
                                            "evs.join_retrans_period=PT0.1S")
    assert restore == "evs.join_retrans_period=PT1S"
    assert cfg["wsrep_provider_options"].endswith("PT3S")  # the plan's config is not changed
    assert up["port"] == "1"
    assert set(BRINGUP_PROVIDER) == set(GALERA_DEFAULTS)


def test_the_plan_s_own_value_is_in_force_from_the_start() -> None:
    cfg = {"wsrep_provider_options": "evs.join_retrans_period=PT2S; gcache.size=64M;"}
    assert bringup_config(cfg) == (cfg, "")


def test_a_node_without_galera_options_is_left_alone() -> None:
    cfg = {"port": "1", "log_bin": "binlog"}
    assert bringup_config(cfg) == (cfg, "")
