"""The records' fields read while the history is recorded (``record_fields``, issue 25 item 3)
give every checker exactly what reading the objects at check time gives: the same digest of
(valid, metrics, details), on random irregular histories (big ints, bools, None keys, text,
floats, incomplete operations, orphans, faults), recorded in memory only and streaming to
SQLite, whole or with records recorded after the last read block."""

from __future__ import annotations

import pickle
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from columnar_histories import digests, random_run

from lab.history import Op
from lab.judge.checkers import CheckContext, run_checkers
from lab.judge.checkers.columns import columns
from lab.judge.checkers.record_fields import BLOCK, RecordedHistory
from lab.run.recorder import Recorder
from lab.store.db import Store

ODD: list[Any] = [2**70, -(2**64), 2**63, True, False, None, 0, -1, 2**63 - 1, "7", 7.0]


def irregular(seed: int) -> tuple[list[Op], CheckContext]:
    """A random run whose keys and values are now and then big ints, bools or None."""
    history, ctx = random_run(seed, ints_only=seed % 2 == 0)
    rnd = random.Random(seed)
    out = []
    for o in history:
        key, value = o.key, o.value
        if rnd.random() < 0.05:
            key = rnd.choice(ODD)
        if rnd.random() < 0.05:
            value = rnd.choice(ODD)
        out.append(Op(o.type, o.f, o.process, o.time, o.workload, o.endpoint, o.node, key,
                      value, o.error, o.error_msg, o.index))  # fmt: skip
    return out, ctx


def fresh(ctx: CheckContext) -> CheckContext:
    return CheckContext(workloads=ctx.workloads, load_start=ctx.load_start,
                        load_end=ctx.load_end, final_state=ctx.final_state,
                        samples=ctx.samples, facts=ctx.facts)  # fmt: skip


def recorded(history: list[Op], rec: Recorder, cut: int | None = None) -> list[Op]:
    """``history`` recorded through ``rec``; ``cut``: the history taken after that many
    records (the rest recorded after, as a run's stragglers)."""
    for o in history[:cut]:
        rec.record(Op(o.type, o.f, o.process, o.time, o.workload, o.endpoint, o.node, o.key,
                      o.value, o.error, o.error_msg))  # fmt: skip
    if cut is None:
        rec.close()
    return rec.history


def streaming(tmp_path: Path) -> Recorder:
    p = tmp_path / "r.db"
    with Store(p) as s:
        rid = s.create_run("e")
        s.create_cell(rid, 1)
    return Recorder(p, rid, 1, batch_interval=0.001, batch_size=300)


@pytest.mark.parametrize("seed", range(12))
def test_recorded_fields_give_what_the_objects_give(seed: int, tmp_path: Path) -> None:
    history, ctx = irregular(seed)
    want = digests(run_checkers(history, fresh(ctx)))
    ref = columns(history)
    for rec in (Recorder(None), streaming(tmp_path)):
        h = recorded(history, rec)
        assert isinstance(h, RecordedHistory) and h.fields is not None
        assert h.fields.n > 0 or len(h) < BLOCK
        assert digests(run_checkers(h, fresh(ctx))) == want
        col = columns(h)
        assert (col.inv.tolist(), col.comp.tolist()) == (ref.inv.tolist(), ref.comp.tolist())
        every = np.arange(col.n)
        assert [list(map(repr, x)) for x in col.keys_values(every)] == \
            [list(map(repr, x)) for x in ref.keys_values(every)]


@pytest.mark.parametrize("seed", [1, 4])
def test_records_recorded_after_the_last_read_block_are_read_at_check_time(seed: int) -> None:
    history, ctx = irregular(seed)
    want = digests(run_checkers(history, fresh(ctx)))
    rec = Recorder(None)
    h = recorded(history, rec, cut=len(history))  # not closed: the last block unread
    assert h.fields is not None and h.fields.n == len(h) // BLOCK * BLOCK
    assert digests(run_checkers(h, fresh(ctx))) == want
    # a snapshot taken early, the recorder reading more later: the snapshot's first records
    early = rec.history[: len(history) // 2]
    assert type(early) is list
    rec.close()


def test_a_changed_recorded_history_drops_its_fields() -> None:
    history, _ = irregular(3)
    for change in (lambda h: h.append(h[0]), lambda h: h.__setitem__(0, h[1]),
                   lambda h: h.sort(key=lambda o: -o.time), lambda h: h.pop(),
                   lambda h: h.__delitem__(slice(0, 2)), lambda h: h.insert(0, h[0]),
                   lambda h: h.extend([h[0]]), lambda h: h.__iadd__([h[0]]), lambda h: h.reverse(),
                   lambda h: h.clear()):
        h = recorded(history, Recorder(None))
        assert h.fields is not None
        change(h)
        assert h.fields is None
    h = recorded(history, Recorder(None))
    assert type(pickle.loads(pickle.dumps(h))) is list
    assert pickle.loads(pickle.dumps(h)) == list(h)


def _paced(n: int, per_second: float) -> list[Op]:
    """``n`` unique writes, invoke then ok, their records ``per_second`` apart on the ops'
    clock."""
    step = int(1e9 / per_second)
    out = []
    for i in range(n):
        t = 2 * i * step
        out.append(Op("invoke", "write", 1, t, "w", "db1", None, i, i))
        out.append(Op("ok", "write", 1, t + step, "w", "db1", "db1", i, i))
    return out


@pytest.mark.parametrize("streams", [False, True])
def test_fields_are_read_while_recording_only_below_the_rate_that_would_cost_the_clients(
        streams: bool, tmp_path: Path) -> None:
    """Above ``FIELDS_MAX_RATE`` records a second the recorder stops reading fields (reading
    would take the clients' time: bench_recorder at 27 k ops/s); what it read stays, the
    checkers read the rest, and every checker says the same."""
    from lab.run import recorder as recorder_mod

    slow = _paced(3 * BLOCK, recorder_mod.FIELDS_MAX_RATE / 4)
    fast = _paced(3 * BLOCK, recorder_mod.FIELDS_MAX_RATE * 4)
    for history, all_read in ((slow, True), (fast, False)):
        if streams:
            (tmp_path / str(all_read)).mkdir()
        rec = streaming(tmp_path / str(all_read)) if streams else Recorder(None)
        h = recorded(history, rec)
        assert h.fields is not None
        if all_read:
            assert h.fields.n == len(h)
        else:  # at most what came before the recorder could tell the rate
            assert h.fields.n < recorder_mod.FIELDS_RATE_MIN
        ctx = CheckContext(workloads={}, load_start=0, load_end=history[-1].time)
        assert digests(run_checkers(h, ctx)) == digests(run_checkers(list(h), ctx))


@pytest.mark.parametrize("stops", [True, False])
def test_in_memory_the_stop_ends_the_recording_threads_reading(stops: bool) -> None:
    """In memory only, once the rate stops the reading of fields, the recording thread no
    longer takes the records every ``BLOCK`` (``_feed`` is never called again); below the rate
    it goes on reading every block."""
    from lab.run import recorder as recorder_mod

    rate = recorder_mod.FIELDS_MAX_RATE * (4 if stops else 1 / 4)
    history = _paced(4 * BLOCK, rate)
    rec = Recorder(None)
    calls: list[int] = []
    feed = rec._feed

    def counted(ops: list[Op], start: int, *, pause: bool) -> None:
        calls.append(start)
        feed(ops, start, pause=pause)

    rec._feed = counted  # type: ignore[method-assign]
    h = recorded(history, rec, cut=len(history))  # not closed: the recording thread only
    assert h.fields is not None
    if stops:
        assert calls == [0]  # the first block tells the rate; none after it
        assert rec._wake_at == -1
        assert h.fields.n < recorder_mod.FIELDS_RATE_MIN
    else:
        assert calls == list(range(0, len(history), BLOCK))
        assert h.fields.n == len(history)
    rec.close()
