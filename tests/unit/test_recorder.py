from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from lab.history import NEMESIS, Op, Sample
from lab.run.recorder import Recorder, RecorderError
from lab.store.db import Store


def make_run(tmp_path: Path) -> tuple[Path, str]:
    p = tmp_path / "r.db"
    with Store(p) as s:
        rid = s.create_run("e")
        s.create_cell(rid, 1)
    return p, rid


def test_in_memory_only() -> None:
    rec = Recorder(None)
    assert not rec.streaming
    a = rec.record(Op("invoke", "write", 1, 10, key=1))
    b = rec.record(Op("ok", "write", 1, 20, key=1))
    assert (a.index, b.index) == (0, 1)
    assert rec.history == [a, b]
    rec.close()
    rec.close()  # idempotent


def test_invoke_complete_stamp_time_in_index_order() -> None:
    t = iter(range(100, 200))
    rec = Recorder(None, clock=lambda: next(t))
    inv = rec.invoke("write", 1, workload="w", endpoint="db1", key=3, value=7)
    done = rec.complete(inv, "ok", node="db1")
    read_inv = rec.invoke("read", 2, workload="w", key=3)
    read = rec.complete(read_inv, "ok", value=None)
    assert (inv.time, done.time) == (100, 101)
    assert (done.key, done.value, done.workload, done.node) == (3, 7, "w", "db1")
    assert read.value is None  # a read records what it read, not the invoke's value
    f = rec.fault_start("kill", "db2")
    e = rec.fault_end(f, ok=False, error_msg="no such process")
    assert (f.process, e.process, e.type, e.f, e.node) == (NEMESIS, NEMESIS, "fail", "kill", "db2")
    assert [o.index for o in rec.history] == list(range(6))


def test_many_threads_indices_unique_and_per_process_order_kept(tmp_path: Path) -> None:
    p, rid = make_run(tmp_path)
    rec = Recorder(p, rid, 1, batch_interval=0.01, batch_size=500)
    n_threads, per_thread = 8, 2000

    def client(proc: int) -> None:
        for i in range(per_thread):
            inv = rec.invoke("write", proc, workload="w", key=proc * 100_000 + i, value=i)
            rec.complete(inv, "ok")

    threads = [threading.Thread(target=client, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    deadline = time.monotonic() + 10
    while rec.written_ops == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert rec.written_ops > 0  # the batch writer writes before close, not only at close
    rec.close()
    h = rec.history
    total = n_threads * per_thread * 2
    assert [o.index for o in h] == list(range(total))
    assert all(a.time <= b.time for a, b in zip(h, h[1:], strict=False))
    for proc in range(n_threads):
        mine = [o for o in h if o.process == proc]
        assert [o.type for o in mine[:4]] == ["invoke", "ok", "invoke", "ok"]
        assert [o.value for o in mine if o.type == "ok"] == list(range(per_thread))
    with Store(p) as s:
        stored = s.operations(rid, 1)
    assert stored == h
    assert rec.written_ops == total


def test_close_flushes_everything_and_writes_faults(tmp_path: Path) -> None:
    p, rid = make_run(tmp_path)
    rec = Recorder(p, rid, 1, batch_interval=60)  # the timer would never fire in this test
    for i in range(10):
        rec.record(Op("invoke", "write", 1, i * 2, key=i))
        rec.record(Op("ok", "write", 1, i * 2 + 1, key=i))
    f = rec.fault_start("pause", "db2", detail={"seconds": 3})
    rec.fault_end(f)
    rec.sample(Sample("lag", "db2", 5, {"lag": 0.1}))
    rec.close()
    with Store(p) as s:
        assert len(s.operations(rid, 1)) == 22
        assert s.samples(rid, 1) == [Sample("lag", "db2", 5, {"lag": 0.1})]
        (fault,) = s.faults(rid, 1)
        assert (fault["name"], fault["node"], fault["ok"]) == ("pause", "db2", 1)
        assert fault["detail"] == {"seconds": 3}
    assert rec.samples == [Sample("lag", "db2", 5, {"lag": 0.1})]


def test_batch_size_wakes_the_writer(tmp_path: Path) -> None:
    p, rid = make_run(tmp_path)
    rec = Recorder(p, rid, 1, batch_interval=60, batch_size=100)
    for i in range(100):
        rec.record(Op("invoke", "write", i, i))
    rec.flush(timeout=10)
    assert rec.written_ops == 100
    rec.close()


def test_ops_after_close_stay_in_memory(tmp_path: Path) -> None:
    p, rid = make_run(tmp_path)
    rec = Recorder(p, rid, 1)
    rec.record(Op("invoke", "write", 1, 1))
    rec.close()
    late = rec.record(Op("ok", "write", 1, 2))
    assert late.index == 1 and len(rec.history) == 2
    with Store(p) as s:
        assert len(s.operations(rid, 1)) == 1


def test_streaming_failure_is_reported_and_history_kept(tmp_path: Path) -> None:
    bad = tmp_path / "not-a-dir"
    bad.write_text("x")
    rec = Recorder(bad / "r.db", "r", 1, batch_interval=0.01)
    rec.record(Op("invoke", "write", 1, 1))
    with pytest.raises(RecorderError, match=r"results database .*r\.db cannot be created: "
                       r".*not-a-dir is not a directory; .*1 operations not stored anywhere"):
        rec.close()
    assert len(rec.history) == 1
    assert rec.error is not None


def test_op_fast_init_matches_the_dataclass() -> None:
    """runners/ops.py replaces Op's frozen __init__ by plain slot stores (cheaper on the
    clients' hot path): same parameters, same defaults, same records."""
    import dataclasses
    import inspect

    params = list(inspect.signature(Op.__init__).parameters.values())[1:]
    fields = dataclasses.fields(Op)
    assert [p.name for p in params] == [f.name for f in fields]
    assert [p.default for p in params] == [
        inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default for f in fields
    ]
    a = Op("ok", "read", 3, 7, "w", "db1", "db2", 4, [1, 2], 1062, "dup", 9)
    assert [getattr(a, f.name) for f in fields] == [
        "ok", "read", 3, 7, "w", "db1", "db2", 4, [1, 2], 1062, "dup", 9
    ]
    b = Op(type="ok", f="read", process=3, time=7, workload="w", endpoint="db1", node="db2",
           key=4, value=[1, 2], error=1062, error_msg="dup", index=9)  # fmt: skip
    assert a == b and a != dataclasses.replace(b, index=8)
    assert hash(Op("ok", "read", 3, 7)) == hash(Op("ok", "read", 3, 7))


def test_streamed_batches_equal_the_history(tmp_path: Path) -> None:
    """The writer takes slices of the history, one transaction a wake, encoded in pieces:
    the database holds exactly the history, in order, values included."""
    p, rid = make_run(tmp_path)
    rec = Recorder(p, rid, 1, batch_interval=0.005, batch_size=700)
    vals: list[object] = [None, 1, "x", [1, "a"], {"k": [2]}, 2.5, "é\n\"q\""]
    for i in range(4321):
        rec.record(Op("invoke", "write", i % 7, i, "w", "db1", None, i, vals[i % len(vals)]))
        if i % 997 == 0:
            time.sleep(0.01)
    rec.close()
    with Store(p) as s:
        stored = s.operations(rid, 1)
    assert stored == rec.history and [o.index for o in stored] == list(range(4321))
