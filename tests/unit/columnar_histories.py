"""Random histories with every irregularity the recorder can leave, for the columnar checkers'
equivalence test (``test_checkers_columnar``): incomplete invokes, completions without an
invoke, completions out of time order, equal times, an invoke without its workload or node,
``info`` and ``fail`` with and without codes, keys and values of every type the workloads
write (int, text, None, polls' lists), faults, samples and final states.

``golden()`` is what the checkers returned for these histories before they worked from
columns (``tests/unit/data/checkers_golden.json``, one digest per checker, as ``digests``
(``lab.judge.checkers.digest``, imported here for the tests) takes it): the new ones must
return the same.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from lab.history import NEMESIS, Op, Sample
from lab.judge.checkers import CheckContext, WorkloadInfo
from lab.judge.checkers.digest import digests as digests  # the tests take it from here

NS = 1_000_000_000
GOLDEN = Path(__file__).parent / "data" / "checkers_golden.json"
SEEDS = range(24)
INT_SEEDS = range(100, 112)

WORKLOADS = {
    "probe_w": WorkloadInfo("probe", ("router.writer",)),
    "uw": WorkloadInfo("unique_writes", ("router.writer",)),
    "ryw": WorkloadInfo("read_your_writes", ("router.writer",), ("db2", "db3")),
    "ins": WorkloadInfo("unique_insert", ("db1", "db2")),
    "conn": WorkloadInfo("connect", ("router.writer",)),
    "sb": WorkloadInfo("sysbench", ("db1",)),
}
KIND_F = {"probe_w": ["write", "read"], "uw": ["write"], "ryw": ["write", "read", "poll"],
          "ins": ["insert"], "conn": ["connect"]}  # fmt: skip
NODES = ["db1", "db2", "db3"]
ERRORS = [None, 1062, 2013, 2003, 1213, 11000, -2003, 1205]


def random_run(seed: int, ints_only: bool = False) -> tuple[list[Op], CheckContext]:
    """A random run; ``ints_only``: every key and written value an int (the checkers' arrays
    take that case whole)."""
    rnd = random.Random(seed)
    load_s = rnd.choice([5, 12, 30])
    n_proc = rnd.randint(2, 9)
    ops: list[tuple[int, int, Op]] = []
    seq = 0

    def put(op: Op) -> None:
        nonlocal seq
        seq += 1
        ops.append((op.time, seq, op))

    versions: dict[tuple[str, int], int] = {}
    final: dict[str, dict[str, dict[int, Any]]] = {}
    for p in range(n_proc):
        w = rnd.choice(list(KIND_F))
        t = rnd.uniform(0, 1.5)
        while t < load_s:
            f = rnd.choice(KIND_F[w])
            ep = rnd.choice(["router.writer", "db1", "db2", "db3", "router.reader"])
            node = rnd.choice([None, None, "db1", "db2", "db3", ""])
            key = rnd.choice([None] + [rnd.randint(0, 12)] * 6)
            value: Any = None
            if f in ("write", "insert") and key is not None:
                v = versions.get((w, key), 0) + 1
                versions[(w, key)] = v
                value = v if ints_only else rnd.choice([v, v, v, str(v), None, float(v)])
            elif f == "poll":
                value = [[rnd.randint(0, 12), rnd.choice([None, rnd.randint(0, 6)])]
                         for _ in range(rnd.randint(0, 3))]  # fmt: skip
            elif f == "read":
                value = rnd.choice([None, rnd.randint(0, 6)] if ints_only else
                                   [None, rnd.randint(0, 6), str(rnd.randint(0, 6)), "x"])
            ti = round(t * NS) if rnd.random() > 0.05 else round(round(t, 1) * NS)
            inv_w = w if rnd.random() > 0.03 else ""
            put(Op("invoke", f, p, ti, inv_w, ep, node if rnd.random() < 0.3 else None, key,
                   None if f in ("read", "poll") else value))  # fmt: skip
            r = rnd.random()
            lat = rnd.choice([0.001, 0.004, 0.02, 0.3, 1.2]) * rnd.random()
            if r < 0.03:  # never completed: the next invoke displaces it
                t += lat + rnd.uniform(0.001, 0.3)
                continue
            typ = "ok" if r < 0.8 else ("fail" if r < 0.9 else "info")
            err = None if typ == "ok" else rnd.choice(ERRORS)
            msg = None if typ == "ok" else rnd.choice([None, "not sent: refused", "gone"])
            te = ti + round(lat * NS) if rnd.random() > 0.05 else ti
            put(Op(typ, f, p, te, w, ep if rnd.random() > 0.1 else "", node,  # type: ignore[arg-type]
                   key if rnd.random() > 0.05 else None, value, err, msg))  # fmt: skip
            if typ == "ok" and f in ("write", "insert") and key is not None:
                for n in NODES:
                    if rnd.random() < 0.97:
                        final.setdefault(w, {}).setdefault(n, {})[key] = value
            if rnd.random() < 0.01:  # a completion without an invoke
                put(Op("ok", f, p, te + 1, w, ep, node, key, value))
            t = te / NS + rnd.uniform(0.0005, 0.2)
    for f in ("kill", "pause", "drop_caches", "promote"):
        if rnd.random() < 0.5:
            a = rnd.uniform(0, load_s)
            node = rnd.choice(NODES)
            put(Op("invoke", f, NEMESIS, round(a * NS), "", "", node, None, None))
            if rnd.random() < 0.8:
                val = {"old_primary": "db1", "new_primary": "db2"} if f == "promote" else None
                put(Op(rnd.choice(["ok", "ok", "fail"]), f, NEMESIS,  # type: ignore[arg-type]
                       round((a + rnd.uniform(0, 3)) * NS), "", "", node, None, val))
    # completion order differs from recording order now and then: the recorder's lock
    ops.sort(key=lambda x: (x[0] + (rnd.randint(-3, 3) if rnd.random() < 0.05 else 0), x[1]))
    history = [Op(o.type, o.f, o.process, o.time, o.workload, o.endpoint, o.node, o.key,
                  o.value, o.error, o.error_msg, i) for i, (_, _, o) in enumerate(ops)]  # fmt: skip
    samples = [Sample("lag", n, round(i * NS / 5), {"lag": rnd.random()})
               for i in range(load_s * 5) for n in ("db2", "db3")]  # fmt: skip
    if rnd.random() < 0.5:
        samples += [Sample("sysbench", "sb", (i + 1) * NS, {"tps": rnd.choice([0.0, 900.0]),
                    "qps": 1.0, "lat_p95": 0.004, "errors": 1.0, "reconnects": 0.0})
                    for i in range(load_s)]  # fmt: skip
    if rnd.random() < 0.6:
        samples += [Sample("replication", n, round(i * NS / 5),
                           {"read_only": float(rnd.random() < 0.8 if n != "db1" else 0)})
                    for i in range(load_s * 5) for n in NODES]  # fmt: skip
    facts: dict[str, Any] = {"missing_transactions": {"db2": 0, "db3": 1}}
    facts["topology"] = rnd.choice(["replication", "replication", "primary_primary", None])
    if rnd.random() < 0.5:
        facts["authority"] = "db1"
    elif rnd.random() < 0.3:
        facts["survivors"] = ["db2"]
    bounds = rnd.random() < 0.7
    ctx = CheckContext(workloads=dict(WORKLOADS), load_start=0 if bounds else None,
                       load_end=load_s * NS if bounds else None, final_state=final,
                       samples=samples, facts=facts)  # fmt: skip
    return history, ctx


def golden() -> dict[str, dict[str, str]]:
    """history name -> checker -> digest, as the checkers computed them before columns."""
    return json.loads(GOLDEN.read_text())  # type: ignore[no-any-return]


def runs() -> dict[str, tuple[list[Op], CheckContext]]:
    """The histories of the golden file, by name: the random ones and two small bench runs."""
    import sys

    bench = str(Path(__file__).resolve().parents[2] / "bench")
    if bench not in sys.path:
        sys.path.insert(0, bench)
    from bench_checkers import build  # type: ignore[import-not-found]

    out = {f"random-{s}": random_run(s) for s in SEEDS}
    out.update({f"ints-{s}": random_run(s, ints_only=True) for s in INT_SEEDS})
    out.update({f"bench-{s}": build(3000, seed=s) for s in (1, 2)})
    return out
