"""The transactional workloads in the language: their settings, the defaults the compiler
writes in, a sweep over their key space, and the errors a wrong file gets."""

from __future__ import annotations

from dsl.api import check_text, plan_text


def test_settings_and_defaults_are_explicit_in_the_plan() -> None:
    plan = plan_text("""experiment "t" {
      duration 10s
      topology galera { nodes g1, g2, g3 }
      workload la: list_append { target g1, g2  clients 4 }
      workload la2: list_append {
        target g3
        keys 3
        txn_length 2
        read_fraction 25%
        distribution exponential
        isolation read uncommitted
      }
      workload rmw: read_modify_write { target g1  isolation read committed  for update }
      workload b: bank { target g2  isolation serializable }
    }""")
    w = {x.name: x for x in plan.cells[0].workloads}
    assert (w["la"].key_count, w["la"].txn_length, w["la"].read_fraction,
            w["la"].distribution, w["la"].isolation) == (10, 4, 0.5, "uniform", None)
    assert (w["la2"].key_count, w["la2"].txn_length, w["la2"].read_fraction,
            w["la2"].distribution, w["la2"].isolation) == (
        3, 2, 0.25, "exponential", "read uncommitted")
    assert (w["rmw"].key_count, w["rmw"].isolation, w["rmw"].for_update) == (
        4, "read committed", True)
    assert (w["b"].key_count, w["b"].read_fraction, w["b"].isolation, w["b"].for_update) == (
        5, 0.5, "serializable", False)


def test_the_key_space_can_be_swept() -> None:
    plan = plan_text("""experiment "t" {
      duration 5s
      topology single { node db1 }
      vary nkeys in 1, 8
      workload rmw: read_modify_write { target db1  keys $nkeys }
    }""")
    assert [c.workloads[0].key_count for c in plan.cells] == [1, 8]


def _errors(body: str) -> list[tuple[int, int, str]]:
    text = f'experiment "t" {{\n  duration 10s\n{body}\n}}\n'
    return [(e.span.line, e.span.column, e.message) for e in check_text(text, "t.exp")]


def test_wrong_settings_are_refused_where_they_stand() -> None:
    got = _errors("  topology single { node db1 }\n"
                  "  workload a: list_append { target db1  isolation snapshot }\n"
                  "  workload c: bank { target db1  txn_length 3 }\n"
                  "  workload d: read_modify_write { target db1  read_fraction 150% }\n"
                  "  workload e: list_append { target db1  keys 0 }")
    assert (4, 51, "unknown isolation level 'snapshot'") in got
    assert (5, 34, "'txn_length' does not apply to a bank workload") in got
    assert (6, 47, "'read_fraction' does not apply to a read_modify_write workload") in got
    assert (6, 61, "'read_fraction' is at most 100%") in got
    assert (7, 46, "'keys' must be between 1 and 100000, not 0") in got


def test_an_unknown_isolation_level_names_the_levels_and_snapshot_isolation() -> None:
    from dsl.api import check_text

    text = ('experiment "t" {\n  duration 10s\n'
            "  topology replication { primary db1  replicas db2 }\n"
            "  workload a: list_append { target db1  isolation snapshot }\n"
            "  workload p: probe { target db1  rate 20/s }\n"
            "  expect replication_lag(db1).max < 1s\n}\n")
    errors = check_text(text, "t.exp")
    (iso,) = [e for e in errors if e.span.line == 4]
    assert iso.hint is not None and "repeatable read" in iso.hint
    assert "innodb_snapshot_isolation = ON" in iso.hint
    (rate,) = [e for e in errors if e.span.line == 5]
    assert rate.hint == "a probe is paced by its interval: every 10ms"
    # db1 is the topology's, not the blanked line's: the error naming it is not held back
    (lag,) = [e for e in errors if e.span.line == 6]
    assert lag.message == "'db1' is the primary; replication_lag is measured on a replica"
