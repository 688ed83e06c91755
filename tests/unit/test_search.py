"""lab search without servers: bisection on a pure noisy predicate, the knobs a file offers,
and the command with the runner replaced."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from dsl.api import check_text, parse_text
from dsl.space import timeline_entries
from lab.cli import main
from lab.explore import schedules as explore_mod
from lab.explore.schedules import Runner, Trial
from lab.explore.search import (
    KnobError,
    NoBoundary,
    Point,
    bisect,
    knob_text,
    render,
    repeated_judge,
    wilson,
)
from lab.store.db import Store


def _noisy(threshold: float, noise: float, seed: int) -> tuple[Runner, list[float]]:
    """A runner over plain numbers: fails when the value is above ``threshold``, wrong with
    probability ``noise``."""
    rng = random.Random(seed)
    seen: list[float] = []

    def run(text: str, label: str) -> Trial:
        v = float(text)
        seen.append(v)
        fails = (v > threshold) != (rng.random() < noise)
        return Trial(f"r{len(seen)}", Path("x"), "failed" if fails else "passed",
                     ("E",) if fails else ())

    return run, seen


def test_bisection_with_repeats_finds_a_noisy_threshold() -> None:
    """10% of the runs wrong; each value judged 3 of 5 (wrong with p < 1%): over 40 searches
    of about 7 values each, the boundary holds the threshold in nearly all."""
    hits = 0
    for seed in range(40):
        runner, seen = _noisy(1.0, noise=0.1, seed=seed)
        b = bisect(0.0, 4.0, repeated_judge(repr, runner, "E", k=3, n=5), resolution=0.1)
        assert b.high - b.low <= 0.1 and b.fails.fails and not b.holds.fails
        assert all(p.runs <= 5 for p in b.points) and len(seen) == sum(p.runs for p in b.points)
        hits += b.low <= 1.0 <= b.high
    assert hits >= 36


def test_without_repeats_noise_misleads_it_sometimes() -> None:
    """Why the repeats: one run per value, 20% noise, misses the threshold in some seeds."""
    missed = 0
    for seed in range(30):
        runner, _ = _noisy(1.0, noise=0.2, seed=seed)
        try:
            b = bisect(0.0, 4.0, repeated_judge(repr, runner, "E", k=1, n=1), 0.1)
        except NoBoundary:
            missed += 1
            continue
        missed += not (b.low <= 1.0 <= b.high)
    assert missed >= 5


def test_no_flip_is_said() -> None:
    runner, _ = _noisy(10.0, noise=0.0, seed=0)
    with pytest.raises(NoBoundary, match="holds at both ends"):
        bisect(0.0, 4.0, repeated_judge(repr, runner, "E", k=1, n=1), 0.1)


def test_integer_knobs_stop_at_one() -> None:
    runner, _ = _noisy(6.5, noise=0.0, seed=0)
    b = bisect(1.0, 32.0, repeated_judge(repr, runner, "E", k=1, n=1), 0.5, integer=True)
    assert (b.holds.value, b.fails.value) == (6.0, 7.0)


def test_wilson_interval() -> None:
    lo, hi = wilson(3, 3)
    assert hi == 1.0 and 0.4 < lo < 0.45
    assert wilson(0, 0) == (0.0, 1.0)
    assert Point(1.0, True, 2).rate_interval() == (0.0, 1.0)


KNOBS = """experiment "knobs" {
  duration 20s
  topology replication {
    primary db1
    replicas db2
    semi_sync on
    config { rpl_semi_sync_master_timeout = 1000 }
  }
  config { innodb_buffer_pool_size = 64M }
  vary clients in 1, 2
  workload w: unique_writes { target db1  clients $clients  rate 100/s }
  at 5s network latency db2 50ms on replication for 3s
  at 12s pause db2 for 2s
  expect latency(w).max < 1s
}
"""


def test_every_kind_of_knob_sets_its_value() -> None:
    exp = parse_text(KNOBS)
    cases = {
        ("clients", "4"): "vary clients in 4",
        ("rpl_semi_sync_master_timeout", "250"): "rpl_semi_sync_master_timeout = 250 }",
        ("w.rate", "50/s"): "rate 50/s }",
        ("13:for", "1.5s"): "at 12s pause db2 for 1.5s",
        ("13:at", "9s"): "at 9s pause db2 for 2s",
        ("12:size", "120ms"): "network latency db2 120ms on replication for 3s",
    }
    for (knob, value), expected in cases.items():
        out = knob_text(KNOBS, exp, knob, value)
        assert expected in out, knob
        assert check_text(out) == [], knob
        assert len(out.splitlines()) == len(KNOBS.splitlines())


def test_a_knob_that_is_not_there_is_refused() -> None:
    exp = parse_text(KNOBS)
    with pytest.raises(KnobError, match="no knob 'nope' in this file: name a vary \\(clients\\)"):
        knob_text(KNOBS, exp, "nope", "1")
    with pytest.raises(KnobError, match="line 3 has no timeline statement"):
        knob_text(KNOBS, exp, "3:for", "1s")
    no_for = KNOBS.replace(" for 3s", "")
    with pytest.raises(KnobError, match="line 12: 'for': nothing to set"):
        knob_text(no_for, parse_text(no_for), "12:for", "1s")


def test_render_writes_the_language() -> None:
    assert render(0.75, "duration") == "750ms"
    assert render(1.5, "duration") == "1.5s"
    assert render(4.0, "count") == "4"
    assert render(50.0, "rate") == "50/s"


PAUSE = """experiment "pause" {
  duration 10s
  topology single { node db1 }
  workload w: probe { target db1  every 10ms }
  at 2s pause db1 for 2s
  expect downtime(w) < 1s
}
"""


@pytest.fixture
def fake_servers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Downtime = the pause: the expectation fails when the pause lasts 1 s or more."""
    def real_runner(store: object, view: object | None = None,
                    backend: str | None = None) -> Runner:
        assert isinstance(store, Store)

        def run(text: str, label: str) -> Trial:
            e = timeline_entries(text, parse_text(text))[0]
            fails = (e.lasts or 0) >= 1.0
            rid = store.create_run("pause", None)
            store.finish_run(rid, "failed" if fails else "passed", int(fails))
            return Trial(rid, Path("x"), "failed" if fails else "passed",
                         ("expect downtime(w) < 1s",) if fails else ())

        return run

    monkeypatch.setattr(explore_mod, "real_runner", real_runner)


def test_lab_search_prints_the_boundary_and_its_runs(
        tmp_path: Path, fake_servers: None, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "p.exp"
    f.write_text(PAUSE)
    db = str(tmp_path / "r.db")
    assert main(["search", str(f), "--knob", "5:for", "--from", "200ms", "--to", "3s",
                 "--resolution", "100ms", "--db", db]) == 0
    out = capsys.readouterr().out
    assert "each value judged from up to 3 runs, failing when 2 fail; resolution 100ms" in out
    m = re.search(r"boundary of 'expect downtime\(w\) < 1s' over 5:for: between (\S+) and "
                  r"(\S+)\n", out)
    assert m is not None, out
    low, high = (float(x[:-2]) / 1000 if x.endswith("ms") else float(x[:-1]) for x in m.groups())
    assert low < 1.0 <= high and high - low <= 0.1
    assert re.search(r"  holds at \S+: failed 0 of 2 runs \(failure rate 95% CI 0%–66%\)", out)
    assert re.search(r"  fails at \S+: failed 2 of 2 runs \(failure rate 95% CI 34%–100%\)", out)
    runs = int(re.search(r"(\d+) runs, all stored", out).group(1))  # type: ignore[union-attr]
    assert len(Store(db).list_runs()) == runs


def test_lab_search_refuses_bad_ranges(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "p.exp"
    f.write_text(PAUSE)
    assert main(["search", str(f), "--knob", "5:for", "--from", "1", "--to", "3s"]) == 2
    assert "give them in one kind of unit" in capsys.readouterr().err
    assert main(["search", str(f), "--knob", "5:for", "--from", "1s", "--to", "30s"]) == 2
    assert "with 5:for = 30s the file is not a valid experiment" in capsys.readouterr().err


def test_lab_search_json_gives_the_boundary_and_every_value(
        tmp_path: Path, fake_servers: None, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "p.exp"
    f.write_text(PAUSE)
    db = str(tmp_path / "r.db")
    assert main(["search", str(f), "--knob", "5:for", "--from", "200ms", "--to", "3s",
                 "--resolution", "100ms", "--json", "--db", db]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)  # stdout is the JSON alone; progress went to stderr
    assert "5:for = 200ms: holds" in captured.err
    b = out["boundary"]
    assert b["low"] < 1.0 <= b["high"] and b["high"] - b["low"] <= 0.1
    assert b["fails_at"] == b["high"] and b["low_text"].endswith("ms")
    assert (out["knob"], out["fails"], out["of"]) == ("5:for", 2, 3)
    assert [p["text"] for p in out["points"][:2]] == ["200ms", "3s"]
    assert {p["verdict"] for p in out["points"]} == {"holds", "fails"}
    assert out["runs"] == sum(p["runs"] for p in out["points"]) == len(Store(db).list_runs())
    assert all(len(p["run_ids"]) == p["runs"] for p in out["points"])


def test_lab_search_json_without_a_flip_has_no_boundary(
        tmp_path: Path, fake_servers: None, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "p.exp"
    f.write_text(PAUSE)
    assert main(["search", str(f), "--knob", "5:for", "--from", "1s", "--to", "3s", "--json",
                 "--db", str(tmp_path / "r.db")]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["boundary"] is None and "fails at both ends" in out["message"]
    assert [p["verdict"] for p in out["points"]] == ["fails", "fails"]
