"""router_failover: the router moving the writes on its own, in phases, from its sampled
writer backend and the writes through router.writer; and the watcher's samples."""

from __future__ import annotations

import threading

from histories import ctx, fault, history, ns, op

from lab.history import NEMESIS, Op
from lab.judge.checkers.router_failover import check
from runners.ops import Sample
from runners.router_watch import SERIES, SUBJECT, RouterWatcher, sample_values

ORDER = ["g1", "g2", "g3"]


def samples(until: float, states_at: list[tuple[float, dict[str, str]]],
            step: float = 0.05) -> list[Sample]:
    """A sample every ``step`` s from the states in force (the last change at or before)."""
    out: list[Sample] = []
    t = 0.0
    while t < until:
        states = [s for at, s in states_at if at <= t][-1]
        out.append(Sample(SERIES, SUBJECT, ns(t), sample_values(states, ORDER)))
        t = round(t + step, 6)
    return out


def writes(times: list[tuple[float, str, str | None]]) -> list[Op]:
    out: list[Op] = []
    for i, (t, ty, node) in enumerate(times):
        out += op(1, "write", t, t + 0.002, ty, workload="w",
                  endpoint="router.writer", node=node, key=i, value=1,
                  **({"error": 1047} if ty != "ok" else {}))
    return out


GALERA = [(0.0, {"g1": "ONLINE"}),
          (5.3, {"g1": "SHUNNED"}),                     # detected: 5.3 - 5.0
          (6.1, {"g2": "ONLINE", "g1": "OFFLINE_HARD"})]  # switched: 6.1 - 5.0


def probe(kill: float = 5.0, back: float = 6.2) -> list[tuple[float, str, str | None]]:
    out: list[tuple[float, str, str | None]] = []
    for i in range(100):
        t = round(i * 0.1, 6)
        out.append((t, "ok", "g1") if t < kill else
                   (t, "fail", None) if t < back else (t, "ok", "g2"))
    return out


def test_phases_from_the_router_and_the_clients() -> None:
    h = history(fault("kill", 5.0, 5.01, "g1"), writes(probe()))
    r = check(h, ctx(0, 10, workloads={"w": "probe"}, samples=samples(10, GALERA)))
    m = r.metrics
    assert (m["old_writer"], m["new_writer"], m["fault"]) == ("g1", "g2", "kill")
    assert abs(m["detected"] - 0.3) < 0.051
    assert abs(m["switched"] - 1.1) < 0.051
    assert abs(m["accepted"] - 1.202) < 1e-6  # the write at 6.2, completed 2 ms later
    assert m["workloads"] == {"w": {"accepted": m["accepted"], "node": "g2"}}
    assert m["detected"] <= m["switched"] <= m["accepted"]


def test_set_global_on_the_writer_is_a_fault_its_nodes_from_the_completion() -> None:
    h = history([Op("invoke", "set_global", NEMESIS, ns(5.0)),
                 Op("ok", "set_global", NEMESIS, ns(5.01),
                    value={"nodes": ["g1"], "statement": "SET GLOBAL wsrep_reject_queries"})],
                writes(probe()))
    m = check(h, ctx(0, 10, workloads={"w": "probe"}, samples=samples(10, GALERA))).metrics
    assert (m["fault"], m["old_writer"], m["new_writer"]) == ("set_global", "g1", "g2")
    assert abs(m["switched"] - 1.1) < 0.051


def test_a_fault_on_another_node_is_not_the_writers() -> None:
    h = history(fault("kill", 2.0, 2.01, "g3"), writes(probe(kill=99)))
    m = check(h, ctx(0, 10, workloads={"w": "probe"},
                     samples=samples(10, [(0.0, {"g1": "ONLINE", "g3": "SHUNNED"})]))).metrics
    assert m["old_writer"] is None and m["detected"] is None and m["accepted"] is None


def test_recoveries_and_promotes_are_not_faults_and_phases_that_never_came_are_unknown() -> None:
    h = history(fault("resume", 1.0, 1.01, "g1"), fault("promote", 2.0, 2.1, "g1"),
                fault("pause", 5.0, None, "g1"), writes(probe(back=99)))
    m = check(h, ctx(0, 10, workloads={"w": "probe"},
                     samples=samples(10, [(0.0, {"g1": "ONLINE", "g2": "OFFLINE_SOFT"})]))).metrics
    assert m["fault"] == "pause" and m["old_writer"] == "g1"
    assert m["detected"] is None and m["switched"] is None and m["accepted"] is None


def test_haproxy_first_up_server_is_the_writer() -> None:
    states = [(0.0, {"g1": "UP", "g2": "UP"}), (5.8, {"g1": "DOWN", "g2": "UP"})]
    h = history(fault("kill", 5.0, 5.01, "g1"), writes(probe(back=5.9)))
    m = check(h, ctx(0, 10, workloads={"w": "probe"}, samples=samples(10, states))).metrics
    assert m["old_writer"] == "g1" and m["new_writer"] == "g2"
    assert m["detected"] == m["switched"]  # the next server up takes the writes at once


def test_no_router_samples_is_no_figure() -> None:
    r = check(history(writes(probe())), ctx(0, 10, workloads={"w": "probe"}))
    assert r.metrics["samples"] == 0


def test_sample_values_rank_in_topology_order() -> None:
    v = sample_values({"g2": "ONLINE", "g1": "SHUNNED", "g3": "UP 1/2", "x": "DOWN"}, ORDER)
    assert v == {"up:g2": 2.0, "down:g1": 1.0, "up:g3": 3.0, "down:x": 4.0}


def test_the_watcher_emits_until_stopped_and_marks_an_unreadable_router() -> None:
    got: list[tuple[str, str, dict[str, float]]] = []
    calls = {"n": 0}

    def states() -> dict[str, str]:
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError("admin port refused")
        if calls["n"] >= 4:
            stop.set()
        return {"g1": "ONLINE"}

    stop = threading.Event()
    w = RouterWatcher(states, ORDER, lambda s, subj, t, v: got.append((s, subj, v)), 0.001,
                      stop)
    w.start()
    w.join(5)
    assert not w.thread.is_alive()
    assert got[0] == (SERIES, SUBJECT, {"up:g1": 1.0})
    assert got[1][2] == {"unreadable": 1.0}
