"""What does recording cost the clients?

1. ``record()`` cost per operation: T threads each record invoke + completion M times, with
   SQLite streaming on (a temporary results database) and off (in-memory history only, the
   peer), interleaved round by round. Figures for information: no target.
2. A simulated workload: C client threads, each operation waits ``--io-us`` microseconds
   (releasing the GIL, as a network round trip does) and is recorded as invoke + completion
   the way runners/workloads.py does; throughput streaming to SQLite, in-memory only, and with
   no recording at all (the peer), interleaved round by round. Target (issue 25): recording
   keeps >= 95 % of the throughput measured with recording off, in the same round, at 27 k
   ops/s (8 clients, 200 µs a round trip: ~28 k ops/s unrecorded on this machine kind), and
   at the slower 1 ms (about a durable write's round trip to a local server; 200 µs is a read's).
   Every mode runs under ``lab.run.gc_guard``, as the engine records a load.

Every figure is the median of ``--rounds`` rounds (else $BENCH_ROUNDS, at least 3) with its
min–max. Exit status 1 when a target is missed.

    .venv/bin/python bench/bench_recorder.py [--threads 8] [--ops 50000] [--seconds 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from harness import Bench, Target, rounds, run_rounds

from lab.history import Op
from lab.run.gc_guard import history_frozen
from lab.run.recorder import Recorder
from lab.store.db import Store


def new_recorder(stream: bool, tmp: Path, tag: str) -> Recorder:
    if not stream:
        return Recorder(None)
    path = tmp / f"bench-{tag}.db"
    with Store(path) as s:
        rid = s.create_run("bench")
        s.create_cell(rid, 1)
    return Recorder(path, rid, 1)


def record_cost(stream: bool, threads: int, ops: int, tmp: Path) -> tuple[float, float, float]:
    """(µs per record() in one thread, µs per Op(...) built by the caller, records/s with
    ``threads`` threads recording at once, close() included)."""
    rec = new_recorder(stream, tmp, f"cost1-{stream}")
    n = ops
    t = time.perf_counter()
    built = [Op("ok", "write", 1, k, "w", "db1", "db1", k, k) for k in range(n)]
    t_build = (time.perf_counter() - t) / n * 1e6
    t = time.perf_counter()
    for op in built:
        rec.record(op)
    t_record = (time.perf_counter() - t) / n * 1e6
    rec.close()

    rec = new_recorder(stream, tmp, f"costn-{stream}")
    barrier = threading.Barrier(threads + 1)

    def client(i: int) -> None:
        barrier.wait()
        for k in range(ops):
            rec.record(Op("invoke", "write", i, time.monotonic_ns(), "w", "db1", None, k, k))
            rec.record(Op("ok", "write", i, time.monotonic_ns(), "w", "db1", "db1", k, k))

    ts = [threading.Thread(target=client, args=(i,)) for i in range(threads)]
    for th in ts:
        th.start()
    barrier.wait()
    t = time.perf_counter()
    for th in ts:
        th.join()
    rec.close()
    total = time.perf_counter() - t
    assert len(rec.history) == threads * ops * 2
    return t_record, t_build, threads * ops * 2 / total


def workload(mode: str, clients: int, seconds: float, io_us: float, tmp: Path) -> float:
    """Operations per second of ``clients`` threads, each op sleeping ``io_us``. Streaming to
    SQLite also leaves the writer thread's CPU per recorded op in ``WRITER_CPU[mode]``."""
    rec = None if mode == "none" else new_recorder(mode == "sqlite", tmp, f"wl-{mode}")
    stop = threading.Event()
    done = [0] * clients
    io = io_us / 1e6

    def client(i: int) -> None:
        n = 0
        sleep: Callable[[float], None] = time.sleep
        if rec is None:
            while not stop.is_set():
                sleep(io)
                n += 1
        else:
            record = rec.record
            while not stop.is_set():  # as runners/workloads.py records
                record(Op("invoke", "write", i, time.monotonic_ns(), "w", "db1", None, n, n))
                sleep(io)
                record(Op("ok", "write", i, time.monotonic_ns(), "w", "db1", "db1", n, n))
                n += 1
        done[i] = n

    ts = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    with history_frozen():  # as the engine records a load (every mode alike)
        t = time.perf_counter()
        for th in ts:
            th.start()
        time.sleep(seconds)
        stop.set()
        for th in ts:
            th.join()
        elapsed = time.perf_counter() - t
    if rec is not None:
        rec.close()
        if rec.streaming and rec.written_ops:
            WRITER_CPU[mode] = rec.writer_cpu_s / rec.written_ops * 1e6
    return sum(done) / elapsed


WRITER_CPU: dict[str, float] = {}
TARGET_KEEP = 0.95  # issue 25's goal, never lowered to what is measured


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--ops", type=int, default=50_000, help="operations per thread (cost)")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=None, help="rounds (default $BENCH_ROUNDS or 3)")
    ap.add_argument("--io-us", type=float, nargs="+", default=[1000.0, 200.0],
                    help="simulated round trips to try, µs")  # fmt: skip
    args = ap.parse_args(argv)
    n_rounds = rounds(args.rounds)
    b = Bench("bench_recorder")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        print(f"1. record() cost ({args.ops:,} ops in one thread; then {args.threads} threads "
              f"x {args.ops:,} invoke + ok), {n_rounds} interleaved rounds:")  # fmt: skip

        def cost(stream: bool) -> dict[str, float]:
            us, us_build, rate = record_cost(stream, args.threads, args.ops, tmp)
            tag = "sqlite" if stream else "memory"
            return {f"{tag} us": us, f"{tag} build": us_build, f"{tag} rate": rate}

        s = run_rounds(n_rounds, [("streaming to SQLite", lambda: cost(True)),
                                  ("in memory only", lambda: cost(False))])  # fmt: skip
        b.figure("record() cost, streaming to SQLite", s["sqlite us"], "µs/op",
                 peer="record() in memory only", peer_samples=s["memory us"])  # fmt: skip
        b.figure("building the Op (caller's side)", s["memory build"], "µs/op")
        b.figure(f"{args.threads} threads recording at once, streaming to SQLite "
                 "(close() included)", s["sqlite rate"], "records/s",
                 peer="in memory only", peer_samples=s["memory rate"])  # fmt: skip
        for io_us in args.io_us:
            print(f"2. simulated workload: {args.clients} clients, {io_us:g} µs per operation; "
                  f"{n_rounds} interleaved rounds of {args.seconds:g} s per mode:")  # fmt: skip
            cpu: list[float] = []

            def mode(m: str, io_us: float = io_us, cpu: list[float] = cpu) -> float:
                WRITER_CPU.pop(m, None)
                rate = workload(m, args.clients, args.seconds, io_us, tmp)
                if m in WRITER_CPU:
                    cpu.append(WRITER_CPU[m])
                return rate

            s = run_rounds(n_rounds, [("sqlite", lambda: mode("sqlite")),
                                      ("memory", lambda: mode("memory")),
                                      ("none", lambda: mode("none"))])  # fmt: skip
            what = f"{args.clients} clients, {io_us:g} µs per op"
            b.figure(f"throughput recording to SQLite ({what})", s["sqlite"], "ops/s",
                     peer="no recording", peer_samples=s["none"],
                     target=Target(">=", TARGET_KEEP, on="ratio",
                                   text=f"ratio >= {TARGET_KEEP:g} (keeps >= "
                                        f"{TARGET_KEEP * 100:g} %)"))  # fmt: skip
            b.figure(f"throughput recording in memory only ({what})", s["memory"], "ops/s",
                     peer="no recording", peer_samples=s["none"])  # fmt: skip
            if len(cpu) >= n_rounds:
                b.figure(f"SQLite writer thread CPU per recorded op ({what})", cpu, "µs/op")
    return b.finish()


if __name__ == "__main__":
    sys.exit(main())
