"""split_brain on Galera: disjoint primary components from wsrep_cluster_status samples (hand-built
samples), and the watcher that takes them (a fake connection)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from histories import ctx, fault, history, ns, op

from lab.history import Sample
from lab.judge.checkers import galera_split_brain as gsb
from lab.judge.checkers.split_brain import check
from runners import galera_watch
from runners.mysql import Address, Credentials

GALERA = {"topology": "galera"}


def state(node: str, t: float, primary: bool | None, members: tuple[str, ...] = ()) -> Sample:
    if primary is None:
        return Sample("galera", node, ns(t), {"unreadable": 1.0})
    values = {"primary": 1.0 if primary else 0.0, "size": float(len(members)), "conf_id": 3.0,
              "ready": 1.0 if primary else 0.0}
    values.update({f"member:{m}": 1.0 for m in members})
    return Sample("galera", node, ns(t), values)


def series(node: str, pieces: list[tuple[float, float, bool | None, tuple[str, ...]]],
           step: float = 0.2) -> list[Sample]:
    """A sample every ``step`` s: (from, to, primary, members) pieces."""
    out: list[Sample] = []
    for a, b, primary, members in pieces:
        t = a
        while t < b - 1e-9:
            out.append(state(node, round(t, 6), primary, members))
            t += step
    return out


def writes(node: str, times: list[float], process: int) -> list:  # type: ignore[type-arg]
    out = []
    for i, t in enumerate(times):
        out += op(process, "write", t, t + 0.002, "ok", key=process * 10000 + i,  # type: ignore[arg-type]
                  value=i, node=node, endpoint=node, workload=f"w{process}")
    return out


BOTH = ("g1", "g2")


def two_nodes_split() -> list[Sample]:
    """Partitioned at 5 s: each still in the common component until it installs its own view
    (g1 at 7.0, g2 at 7.2), alone and primary (pc.ignore_sb) until they merge again (g1 sees
    it at 12.0, g2 at 12.2)."""
    return (series("g1", [(0, 7.0, True, BOTH), (7.0, 12.0, True, ("g1",)),
                          (12.0, 15, True, BOTH)])
            + series("g2", [(0, 7.2, True, BOTH), (7.2, 12.2, True, ("g2",)),
                            (12.2, 15, True, BOTH)]))


def test_two_primary_components_of_one_node_each_are_a_split() -> None:
    h = history(writes("g1", [i / 100 for i in range(1, 1500)], 1),
                writes("g2", [i / 100 for i in range(1, 1500)], 2))
    r = check(h, ctx(0, 15, samples=two_nodes_split(), facts=GALERA))
    m = r.metrics
    assert r.valid is False and m["count"] == 1
    # from g2's first sample alone (7.2: both components exist) to g1's first merged sample
    assert m["longest"] == pytest.approx(12.0 - 7.2, abs=1e-6)
    w = m["windows"][0]
    assert w["components"] == [["g1"], ["g2"]] and w["nodes"] == ["g1", "g2"]
    assert w["sides_writing"] == 2
    # writes complete at i/100 + 0.002: those in [7.2, 12.0] on each node
    inside = sum(1 for i in range(1, 1500) if 7.2 <= i / 100 + 0.002 <= 12.0)
    assert w["writes"] == {"g1": inside, "g2": inside} and m["writes"] == 2 * inside
    assert m["writes_by_workload"] == {"w1": inside, "w2": inside}  # split_brain(w1).writes
    assert m["resolution"] == 0.2 and m["lower_bound"] is False
    assert m["subjects"]["g2"]["writable"] == pytest.approx(4.8)


def test_a_minority_that_is_not_primary_is_no_split() -> None:
    three = ("g1", "g2", "g3")
    samples = (series("g1", [(0, 7, True, three), (7, 15, True, ("g1", "g2"))])
               + series("g2", [(0, 7, True, three), (7, 15, True, ("g1", "g2"))])
               + series("g3", [(0, 7, True, three), (7, 15, False, ("g3",))]))
    r = check(history(writes("g1", [1.0, 9.0], 1)), ctx(0, 15, samples=samples, facts=GALERA))
    assert r.valid is True and r.metrics["count"] == 0 and r.metrics["longest"] == 0.0


def test_a_view_change_seen_at_different_moments_is_no_split() -> None:
    """g3 leaves: g1 sees the new view before g2 does; the memberships differ but overlap."""
    three = ("g1", "g2", "g3")
    samples = (series("g1", [(0, 5.0, True, three), (5.0, 10, True, ("g1", "g2"))])
               + series("g2", [(0, 5.4, True, three), (5.4, 10, True, ("g1", "g2"))])
               + series("g3", [(0, 5.0, True, three), (5.0, 10, None, ())]))
    r = check(history(), ctx(0, 10, samples=samples, facts=GALERA))
    assert r.metrics["count"] == 0


def test_a_killed_node_leaves_its_component_when_killed() -> None:
    samples = (series("g1", [(0, 10, True, ("g1",))])
               + series("g2", [(0, 4.2, True, ("g2",)), (4.2, 10, None, ())]))
    h = history(fault("kill", 4.1, 4.2, node="g2"))
    r = check(h, ctx(0, 10, samples=samples, facts=GALERA))
    # both alone and primary from 0 until g2 is killed at 4.1 (exact), not its next sample
    assert r.metrics["count"] == 1 and r.metrics["longest"] == pytest.approx(4.1)


def test_no_galera_samples_is_unknown() -> None:
    r = check(history(writes("g1", [1.0], 1)), ctx(0, 3, facts=GALERA))
    assert r.valid is None and r.metrics["longest"] is None


def test_split_windows_joins_touching_windows_and_needs_disjoint_members() -> None:
    a, b, ab = frozenset({"a"}), frozenset({"b"}), frozenset({"a", "b"})
    assert gsb.split_windows([(0, 10, a), (2, 4, b), (4, 6, b)]) == [((2, 6), [a, b])]
    assert gsb.split_windows([(0, 10, a), (2, 4, ab)]) == []


# --- the watcher ------------------------------------------------------------------------------

PORTS = {23001: "g1", 23002: "g2", 23003: "g3"}


def test_members_are_read_from_the_incoming_addresses() -> None:
    assert galera_watch.members("127.0.0.1:23001,127.0.0.1:23003", PORTS) == ["g1", "g3"]
    assert galera_watch.members("AUTO,,10.0.0.1:9999", PORTS) == []
    # on containers each member names itself (wsrep_node_incoming_address = g1:3306)
    assert galera_watch.members("g1:3306,g3:3306,gx:3306", PORTS) == ["g1", "g3"]
    assert galera_watch.MEMBER == gsb.MEMBER  # the checker reads what the watcher writes


def test_status_values() -> None:
    v = galera_watch.status_values({"wsrep_cluster_status": "non-Primary",
                                    "wsrep_cluster_size": "1",
                                    "wsrep_cluster_conf_id": "18446744073709551615",
                                    "wsrep_incoming_addresses": "127.0.0.1:23002",
                                    "wsrep_ready": "OFF"}, PORTS)
    assert v["primary"] == 0.0 and v["size"] == 1.0 and v["ready"] == 0.0
    assert v["member:g2"] == 1.0 and "member:g1" not in v
    assert gsb.membership(v) == frozenset({"g2"})


class FakeCursor:
    description = (("Variable_name",), ("Value",))  # a result set, as SHOW STATUS gives

    def __init__(self, rows: list[tuple[str, str]]) -> None:
        self.rows = rows

    def execute(self, sql: str) -> None:
        assert sql == galera_watch.QUERY

    def fetchall(self) -> list[tuple[str, str]]:
        return self.rows

    def close(self) -> None:
        pass


class FakeConn:
    def cursor(self) -> FakeCursor:
        return FakeCursor([("wsrep_cluster_status", "Primary"), ("wsrep_cluster_size", "2"),
                           ("wsrep_incoming_addresses", "127.0.0.1:23001,127.0.0.1:23002")])

    def close(self) -> None:
        pass


def test_the_watcher_samples_every_node_and_marks_the_unreachable_one() -> None:
    got: list[tuple[str, str, dict[str, float]]] = []
    stop = threading.Event()

    def emit(series: str, node: str, t: int, values: dict[str, float]) -> None:
        got.append((series, node, values))
        if len(got) >= 6:
            stop.set()

    def connect(addr: Address, creds: Credentials) -> Any:
        if addr.port == 23002:
            raise OSError("refused")
        return FakeConn()

    w = galera_watch.GaleraWatcher({"g1": Address("127.0.0.1", 23001),
                                    "g2": Address("127.0.0.1", 23002)},
                                   Credentials("u", "p"), emit, interval=0.01, stop=stop,
                                   connect_fn=connect)
    w.start()
    w.join(timeout=5)
    g1 = [v for s, n, v in got if n == "g1"]
    g2 = [v for s, n, v in got if n == "g2"]
    assert all(s == "galera" for s, _, _ in got)
    assert g1 and g1[0] == {"primary": 1.0, "size": 2.0, "conf_id": 0.0, "ready": 0.0,
                            "member:g1": 1.0, "member:g2": 1.0}
    assert g2 and all(v == {"unreadable": 1.0} for v in g2)
