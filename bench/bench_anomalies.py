"""How long does the anomalies checker (Elle's list-append) take over a large history?

Builds a synthetic list_append run (default: 100,000 transactions, 10 clients, 100 active keys,
each key replaced by a fresh one after 32 appends as the workload does, 1 to 4 micro-operations
a transaction, half reads) executed by a simulated strictly serializable database: each
transaction takes effect at one instant between its invoke and its completion. 2% of the
transactions fail (not applied), 0.5% end info (not applied either), and ``--lost`` planted
lost updates (two overlapping transactions read the same version of a key and both append to
it) make the only anomalies: each is a lost update and a G-single cycle (T1 -ww-> T2 -rw-> T1).
Then times ``anomalies.check`` (the pairing of invokes and completions included) over
``--rounds`` rounds (else $BENCH_ROUNDS, at least 3): the figure is the median with its
min–max. Target: < 10 s ("100,000 transactions checked in seconds, not minutes"). The checker's
counts are checked against the planted anomalies: a wrong count exits 1 like a missed target.
A second figure, for information: the same history with ``--stale`` (3%) of the committed
transactions reading an older snapshot (stale reads, G-single, G2-item: large components).

    .venv/bin/python bench/bench_anomalies.py [--txns 100000] [--lost 20] [--stale 0.03]
                                              [--rounds 3]
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from typing import Any

from harness import Bench, Target, rounds, run_rounds

from lab.history import Op
from lab.judge.checkers import CheckContext, WorkloadInfo, anomalies

NS = 1_000_000_000
MS = 1_000_000
TARGET_S = 10.0
CLIENTS = 10
KEYS = 100
MAX_WRITES_PER_KEY = 32
W = "la"


def build(n_txns: int, n_lost: int, seed: int = 1) -> tuple[list[Op], CheckContext, int]:
    """The history, its context and the number of lost updates actually planted."""
    rnd = random.Random(seed)
    state: dict[int, list[int]] = {}
    writes: dict[int, int] = {}
    active = list(range(KEYS))
    next_key = KEYS
    next_value = 0
    lost_at = set(rnd.sample(range(100, n_txns - 100), n_lost)) if n_lost else set()
    recs: list[tuple[int, int, Op]] = []
    seq = 0
    planted = 0

    def add(ty: str, p: int, t: int, node: str, value: Any) -> None:
        nonlocal seq
        seq += 1
        recs.append((t, seq, Op(ty, "txn", p, t, W, node, node if ty != "invoke" else None,  # type: ignore[arg-type]
                                None, value)))  # fmt: skip

    def key() -> int:
        return active[rnd.randrange(KEYS)]

    def wrote(k: int) -> None:
        nonlocal next_key
        writes[k] = writes.get(k, 0) + 1
        if writes[k] >= MAX_WRITES_PER_KEY and k in active:
            active[active.index(k)] = next_key
            next_key += 1

    i = 0
    while i < n_txns:
        p = i % CLIENTS
        t_exec = (i + 1) * MS  # one transaction takes effect every millisecond
        node = f"db{p % 3 + 1}"
        if i in lost_at and i + 1 < n_txns:
            # two clients read the same version of k and both append: a lost update
            k = key()
            seen = list(state.get(k, []))
            a, b = next_value, next_value + 1
            next_value += 2
            start = t_exec - rnd.randrange(1, 3 * MS)
            for j, (v, p2) in enumerate(((a, p), (b, (p + 1) % CLIENTS))):
                end = t_exec + (j + 1) * MS + rnd.randrange(0, 2 * MS)
                add("invoke", p2, start, node, [["r", k, None], ["append", k, v]])
                add("ok", p2, end, node, [["r", k, seen], ["append", k, v]])
                state.setdefault(k, []).append(v)
                wrote(k)
            planted += 1
            i += 2
            continue
        mops: list[list[Any]] = []
        local: dict[int, list[int]] = {}
        for _ in range(rnd.randint(1, 4)):
            k = key()
            cur = local.get(k, state.get(k, []))
            if rnd.random() < 0.5:
                mops.append(["r", k, list(cur)])
            else:
                local[k] = [*cur, next_value]
                mops.append(["append", k, next_value])
                next_value += 1
        outcome = "ok"
        r = rnd.random()
        if r < 0.02:
            outcome = "fail"
        elif r < 0.025:
            outcome = "info"
        start = t_exec - rnd.randrange(0, 4 * MS)
        end = t_exec + rnd.randrange(0, 4 * MS)
        invoked = [[f, k, None if f == "r" else v] for f, k, v in mops]
        add("invoke", p, start, node, invoked)
        add(outcome, p, end, node, mops if outcome == "ok" else invoked)
        if outcome == "ok":
            for k, lst in local.items():
                added = len(lst) - len(state.get(k, []))
                state[k] = lst
                for _ in range(added):
                    wrote(k)
        i += 1
    recs.sort()
    history = [
        Op(o.type, o.f, o.process, o.time, o.workload, o.endpoint, o.node, o.key, o.value,
           o.error, o.error_msg, j)
        for j, (_, _, o) in enumerate(recs)
    ]  # fmt: skip
    ctx = CheckContext(workloads={W: WorkloadInfo("list_append", ("router.writer",))},
                       load_start=0, load_end=(n_txns + 10) * MS)  # fmt: skip
    return history, ctx, planted


def with_stale_reads(history: list[Op], share: float, seed: int = 3) -> tuple[list[Op], int]:
    """The history with ``share`` of the committed transactions reading from an older snapshot:
    each read not preceded by the transaction's own append to that key misses its last
    element. Returns the history and how many transactions changed."""
    rnd = random.Random(seed)
    out: list[Op] = []
    changed = 0
    for o in history:
        if o.type == "ok" and rnd.random() < share:
            own: set[int] = set()
            value = []
            for f, k, v in o.value:
                if f == "append":
                    own.add(k)
                elif v and k not in own:
                    v = v[:-1]
                value.append([f, k, v])
            if value != o.value:
                changed += 1
                o = Op(o.type, o.f, o.process, o.time, o.workload, o.endpoint, o.node, o.key,
                       value, o.error, o.error_msg, o.index)  # fmt: skip
        out.append(o)
    return out, changed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--txns", type=int, default=100_000, help="transactions")
    ap.add_argument("--lost", type=int, default=20, help="planted lost updates")
    ap.add_argument("--stale", type=float, default=0.03,
                    help="share of committed transactions reading stale, for the second figure")
    ap.add_argument("--rounds", type=int, default=None, help="rounds (default $BENCH_ROUNDS or 3)")
    args = ap.parse_args(argv)
    n_rounds = rounds(args.rounds)
    t = time.perf_counter()
    history, ctx, planted = build(args.txns, args.lost)
    n = sum(1 for o in history if o.type == "invoke")
    print(f"built {len(history):,} history records ({n:,} transactions, {planted} planted lost "
          f"updates) in {time.perf_counter() - t:.1f} s")  # fmt: skip
    last: dict[str, Any] = {}

    stale, n_stale = with_stale_reads(history, args.stale)

    def timed(h: list[Op], name: str) -> float:
        ctx.cache.clear()
        gc.disable()  # as run_checkers does while the checkers run
        try:
            t = time.perf_counter()
            last[name] = anomalies.check(h, ctx)
            return time.perf_counter() - t
        finally:
            gc.enable()

    s = run_rounds(n_rounds, [("anomalies", lambda: timed(history, "r")),
                              ("with stale reads", lambda: timed(stale, "stale"))])
    st = last["stale"].metrics["subjects"][W]
    print(f"  with {n_stale:,} transactions reading stale: anomalies "
          f"{ {k: st[k] for k in anomalies.KINDS if st[k]} }; components: {st['sccs']}, largest "
          f"{st['largest_scc']}, search out of budget in {st['search_incomplete']}")  # fmt: skip
    r = last["r"]
    subj = r.metrics["subjects"][W]
    counts = {k: subj[k] for k in anomalies.KINDS if subj[k]}
    print(f"  valid={r.valid}; {subj['transactions']:,} committed, {subj['unknown']:,} unknown, "
          f"{subj['aborted']:,} aborted; anomalies: {counts}; components: {subj['sccs']}, "
          f"largest {subj['largest_scc']}")  # fmt: skip
    # each lost update is also a cycle: G-single (T1 -ww-> T2 -rw-> T1) when a read showed
    # both appends, G2-item (T1 -rw-> T2 -rw-> T1) when the key was replaced before any did
    cycles = counts.pop("g_single", 0) + counts.pop("g2_item", 0)
    right = counts == ({"lost_update": planted} if planted else {}) and cycles == planted
    print(f"  counts {'match' if right else 'DO NOT MATCH'} the {planted} planted lost updates "
          f"(each a lost update and a cycle)")
    b = Bench("bench_anomalies")
    b.figure(f"anomalies checker over {n:,} list_append transactions ({len(history):,} records)",
             s["anomalies"], "s",
             target=Target("<", TARGET_S, text=f"< {TARGET_S:g} s"))  # fmt: skip
    b.figure(f"the same with {n_stale:,} transactions reading a stale snapshot (information)",
             s["with stale reads"], "s")
    rc = b.finish()
    return rc if right else 1


if __name__ == "__main__":
    sys.exit(main())
