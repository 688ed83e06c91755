"""The checkers that work from columns (``lab.judge.checkers.columns``) return exactly what they
returned when they walked ``Completed`` objects: one digest per checker and history, computed
before the change (``tests/unit/data/checkers_golden.json``), over random histories with every
irregularity (``columnar_histories``) and two small bench runs."""

from __future__ import annotations

import pytest
from columnar_histories import digests, golden, runs

from lab.history import pair_ops
from lab.judge.checkers import run_checkers
from lab.judge.checkers.columns import columns

RUNS = runs()
GOLDEN = golden()
# checkers written after the columns: no result from before them to compare with
AFTER_COLUMNS = {"semi_sync"}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_every_checker_returns_what_it_returned_before_columns(name: str) -> None:
    history, ctx = RUNS[name]
    got = digests(run_checkers(history, ctx))
    want = GOLDEN[name]
    assert sorted(got) == sorted([*want, *AFTER_COLUMNS])
    differ = sorted(n for n in want if got[n] != want[n])
    assert not differ, f"{name}: {differ} differ from the golden results"


@pytest.mark.parametrize("name", sorted(RUNS))
def test_columns_pair_the_history_as_pair_ops_does(name: str) -> None:
    history, _ = RUNS[name]
    ref = pair_ops(history)
    col = columns(history)
    assert col.orphans == ref.orphans
    assert [history[i] for i in col.fault_index.tolist()] == ref.faults
    assert [(c.inv.index, c.comp.index if c.comp else -1) for c in ref.ops] == list(
        zip(col.inv.tolist(), col.comp.tolist(), strict=True))
    lazy = col.paired().ops
    for a, b in zip(ref.ops, lazy, strict=True):
        assert (a.inv, a.comp, a.type, a.workload, a.endpoint, a.node, a.key, a.value) == (
            b.inv, b.comp, b.type, b.workload, b.endpoint, b.node, b.key, b.value)


@pytest.mark.parametrize("name", ["random-3", "random-6", "random-18", "ints-100", "ints-101",
                                  "bench-1"])
def test_stale_reads_per_object_path_gives_the_same(name: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A workload whose reads touch very many keys goes the per-object way: same figures."""
    from lab.judge.checkers import stale_columns, stale_reads

    history, ctx = RUNS[name]
    monkeypatch.setattr(stale_columns, "MANY_KEYS", 0)
    got = digests({"stale_reads": stale_reads.check(history, ctx)})
    assert got["stale_reads"] == GOLDEN[name]["stale_reads"]
    # keys that are not all ints: every workload the per-object way
    monkeypatch.setattr(stale_columns, "gather", lambda col, version: None)
    got = digests({"stale_reads": stale_reads.check(history, ctx)})
    assert got["stale_reads"] == GOLDEN[name]["stale_reads"]
