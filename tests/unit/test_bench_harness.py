"""bench/harness.py (rounds, medians, ratios, targets) and bench/run_all.py (results.md)."""

from __future__ import annotations

import io
import json
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import harness  # noqa: E402
import run_all  # noqa: E402
from harness import Bench, Spread, Target  # noqa: E402

# --- rounds, spread, ratios ------------------------------------------------------------------


def test_rounds_default_env_and_floor(capsys: pytest.CaptureFixture[str]) -> None:
    assert harness.rounds(env={}) == 3
    assert harness.rounds(env={"BENCH_ROUNDS": "5"}) == 5
    assert harness.rounds(7, env={"BENCH_ROUNDS": "5"}) == 7  # --rounds wins
    assert harness.rounds(env={"BENCH_ROUNDS": "1"}) == 3  # one sample is not a figure
    assert "one sample is not a figure" in capsys.readouterr().err
    assert harness.rounds(2, env={}) == 3
    with pytest.raises(ValueError, match="BENCH_ROUNDS"):
        harness.rounds(env={"BENCH_ROUNDS": "many"})


def test_spread_median_min_max() -> None:
    assert Spread.of([3.0, 1.0, 2.0]) == Spread(2.0, 1.0, 3.0, 3)
    assert Spread.of([4, 1, 3, 2]) == Spread(2.5, 1.0, 4.0, 4)  # even count: mean of the middle
    assert Spread.of([1.08, 1.45, 1.13, 1.40, 1.2]).median == 1.2


@pytest.mark.parametrize("samples", [[], [1.0], [1.0, 2.0]])
def test_spread_needs_three_rounds(samples: list[float]) -> None:
    with pytest.raises(ValueError, match="at least 3"):
        Spread.of(samples)


def test_spread_rejects_nan() -> None:
    with pytest.raises(ValueError, match="NaN"):
        Spread.of([1.0, float("nan"), 2.0])


def test_ratios_are_round_by_round() -> None:
    assert harness.round_ratios([2.0, 3.0, 8.0], [1.0, 3.0, 2.0]) == [2.0, 1.0, 4.0]
    with pytest.raises(ValueError, match="round by round"):
        harness.round_ratios([1.0, 2.0, 3.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="round 2"):
        harness.round_ratios([1.0, 2.0, 3.0], [1.0, 0.0, 1.0])


# --- targets and the result record -----------------------------------------------------------


@pytest.mark.parametrize(
    "op,limit,x,met",
    [
        ("<", 200, 199.9, True),
        ("<", 200, 200, False),
        ("<=", 1.2, 1.2, True),
        ("<=", 1.2, 1.2001, False),
        (">", 10, 10, False),
        (">=", 0.9, 0.9, True),
        (">=", 0.9, 0.8999, False),
    ],
)
def test_target_comparisons(op: Any, limit: float, x: float, met: bool) -> None:
    assert Target(op, limit).met(x) is met


def test_target_rejects_unknown_op_and_side() -> None:
    with pytest.raises(ValueError):
        Target("~", 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Target("<", 1, on="peer")  # type: ignore[arg-type]


def test_result_on_value() -> None:
    rec = harness.result(
        "bench_x", "parse", [90.0, 250.0, 120.0], "ms", target=Target("<", 200, text="< 200 ms")
    )
    assert (rec["value"], rec["min"], rec["max"], rec["rounds"]) == (120.0, 90.0, 250.0, 3)
    assert rec["met"] is True  # the median, not the worst round, is checked
    assert rec["target"] == "< 200 ms" and rec["target_on"] == "value"
    assert rec["peer"] is None and rec["ratio"] is None
    missed = harness.result(
        "bench_x", "parse", [190.0, 210.0, 220.0], "ms", target=Target("<", 200)
    )
    assert missed["met"] is False
    assert missed["target"] == "< 200 ms"  # described from the target when no text


def test_result_ratio_is_median_of_round_ratios_not_ratio_of_medians() -> None:
    lab = [1.0, 10.0, 3.0]
    peer = [1.0, 5.0, 1.0]  # per-round ratios 1, 2, 3 -> median 2; medians' ratio would be 3 / 1
    rec = harness.result(
        "bench_t",
        "ready",
        lab,
        "s",
        peer="dbdeployer",
        peer_samples=peer,
        target=Target("<=", 1.2, on="ratio"),
    )
    assert (rec["ratio"], rec["ratio_min"], rec["ratio_max"]) == (2.0, 1.0, 3.0)
    assert (rec["peer_value"], rec["peer_min"], rec["peer_max"]) == (1.0, 1.0, 5.0)
    assert rec["peer_unit"] == "s"
    assert rec["met"] is False
    ok = harness.result(
        "bench_t",
        "ready",
        [1.1, 1.0, 1.3],
        "s",
        peer="dd",
        peer_samples=[1.0, 1.0, 1.0],
        target=Target("<=", 1.2, on="ratio"),
    )
    assert ok["ratio"] == pytest.approx(1.1) and ok["met"] is True


def test_result_informational_and_errors() -> None:
    rec = harness.result("b", "cost", [1.0, 2.0, 3.0], "µs/op")
    assert rec["met"] is None and rec["target"] is None
    with pytest.raises(ValueError, match="needs a peer"):
        harness.result("b", "x", [1.0, 2.0, 3.0], "s", target=Target(">=", 0.9, on="ratio"))
    with pytest.raises(ValueError, match="peer needs"):
        harness.result("b", "x", [1.0, 2.0, 3.0], "s", peer="p")
    with pytest.raises(ValueError, match="at least 3"):
        harness.result("b", "x", [1.0, 2.0, 3.0], "s", peer="p", peer_samples=[1.0, 1.0])


def test_run_rounds_interleaves_lab_then_peer() -> None:
    calls: list[str] = []

    def lab() -> float:
        calls.append("lab")
        return float(len(calls))

    def peer() -> dict[str, float]:
        calls.append("peer")
        return {"peer ready": 10.0 * len(calls), "peer teardown": 1.0}

    logs: list[str] = []
    s = harness.run_rounds(3, [("lab", lab), ("peer", peer)], log=logs.append)
    assert calls == ["lab", "peer"] * 3
    assert s == {
        "lab": [1.0, 3.0, 5.0],
        "peer ready": [20.0, 40.0, 60.0],
        "peer teardown": [1.0, 1.0, 1.0],
    }
    assert len(logs) == 3 and logs[0].startswith("  round 1/3")
    with pytest.raises(ValueError):
        harness.run_rounds(1, [("lab", lab)])


def test_bench_prints_parseable_lines_and_exit_status() -> None:
    out = io.StringIO()
    b = Bench("bench_x", out=out)
    b.figure("fast", [1.0, 2.0, 3.0], "ms", target=Target("<", 5))
    b.figure("info", [1.0, 2.0, 3.0], "ms")
    assert b.finish() == 0
    lines = out.getvalue().splitlines()
    recs = [json.loads(ln[len(harness.PREFIX) :]) for ln in lines if ln.startswith(harness.PREFIX)]
    assert [r["figure"] for r in recs] == ["fast", "info"]
    assert lines[-1].startswith(harness.DONE_PREFIX)
    assert any("fast: 2.00 ms (1.00–3.00) median of 3" in ln for ln in lines)

    out = io.StringIO()
    b = Bench("bench_y", out=out)
    b.figure("slow", [6.0, 7.0, 8.0], "ms", target=Target("<", 5))
    b.figure("fast", [1.0, 2.0, 3.0], "ms", target=Target("<", 5))
    assert b.finish() == 1
    assert "1 of 2 target(s) MISSED: slow (< 5 ms) MISSED by 2.00 ms (7.00 ms, 1.40× the limit)" \
        in out.getvalue()
    assert "target < 5 ms: MISSED by 2.00 ms" in out.getvalue()


def test_a_miss_says_by_how_much() -> None:
    up = harness.result("b", "checkers", [4.0, 4.06, 4.4], "s", target=Target("<", 1))
    assert up["met"] is False and (up["target_op"], up["target_limit"]) == ("<", 1.0)
    assert up["missed_by"] == "by 3.06 s (4.06 s, 4.06× the limit)"
    assert harness.verdict(up) == "MISSED by 3.06 s (4.06 s, 4.06× the limit)"
    low = harness.result("b", "w", [9.0, 9.2, 9.5], "ops/s", peer="sb",
                         peer_samples=[10.0, 10.0, 10.0],
                         target=Target(">=", 1.0, on="ratio"))  # fmt: skip
    assert low["missed_by"] == "by 0.0800× (0.920×, 8.00 % short)"
    ok = harness.result("b", "x", [1.0, 2.0, 3.0], "s", target=Target("<", 5))
    assert ok["missed_by"] is None and harness.verdict(ok) == "met"


def test_fmt() -> None:
    assert harness.fmt(None) == "—"
    assert harness.fmt(12345.6) == "12,346"
    assert harness.fmt(0.566) == "0.566"
    assert harness.fmt(0.56, like=0.566) == "0.560"
    assert harness.spread_text(1.08, 0.95, 1.45, None, "×") == "1.08× (0.95–1.45×)"
    assert harness.spread_text(None, None, None) == "—"


# --- run_all: canned output -> results.md, exit status ---------------------------------------


def canned(script: str, *figures: dict[str, Any], done: bool = True) -> list[str]:
    lines = [f"{script} says hello\n"]
    missed = 0
    for f in figures:
        rec = harness.result(
            script,
            f["figure"],
            f["samples"],
            f.get("unit", "s"),
            peer=f.get("peer"),
            peer_samples=f.get("peer_samples"),
            target=f.get("target"),
        )
        missed += rec["met"] is False
        lines.append(harness.PREFIX + json.dumps(rec) + "\n")
    if done:
        lines.append(harness.DONE_PREFIX + json.dumps({"script": script, "missed": missed}) + "\n")
    return lines


META = {
    "date": "2025-01-02T03:04:05+00:00",
    "hostname": "box",
    "nproc": "2",
    "memory": "23.5 GiB",
    "kernel": "Linux 6.1.0 x86_64",
    "commit": "abc1234+dirty",
}

TOPO = {
    "figure": "replication 1+2 ready",
    "samples": [5.5, 6.0, 7.0],
    "peer": "dbdeployer",
    "peer_samples": [5.0, 5.0, 5.0],
    "target": Target("<=", 1.2, on="ratio", text="ratio <= 1.2"),
}


def test_render_all_met() -> None:
    run = run_all.parse_output(
        "bench_parse",
        canned(
            "bench_parse",
            {
                "figure": "parse",
                "samples": [32.1, 32.5, 32.3],
                "unit": "ms",
                "target": Target("<", 200, text="< 200 ms"),
            },
        ),
        0,
    )
    assert not run.crashed and not run.missed
    topo = run_all.parse_output("bench_topology", canned("bench_topology", TOPO), 0)
    assert not topo.crashed and not topo.missed  # 1.2 median ratio: on the limit, met
    md = run_all.render([run, topo], META, "make bench")
    assert run_all.exit_code([run, topo]) == 0
    assert "Generated by `make bench`" in md
    for v in META.values():
        assert v in md
    assert "| `bench_parse` | parse | 32.3 ms (32.1–32.5) | 3 | — | — | — | < 200 ms | met |" in md
    assert (
        "| `bench_topology` | replication 1+2 ready | 6.00 s (5.50–7.00) | 3 | dbdeployer "
        "| 5.00 s (5.00–5.00) | 1.20× (1.10–1.40×) | ratio <= 1.2 | met |"
    ) in md
    assert "all 2 targets met" in md and "**missed**" not in md and "crashed" not in md


def test_missed_target_makes_a_row_and_fails() -> None:
    slow = dict(TOPO, samples=[6.5, 7.0, 8.0])
    topo = run_all.parse_output("bench_topology", canned("bench_topology", slow), 1)
    assert topo.missed and not topo.crashed
    md = run_all.render([topo], META, "make bench")
    assert run_all.exit_code([topo]) == 1
    # a miss says by how much: the median ratio 1.40 against <= 1.2
    assert "| ratio <= 1.2 | **MISSED by 0.200× (1.40×, 1.17× the limit)** |" in md
    assert "**1 of 1 targets missed**" in md


def test_crashed_script_gets_a_row_and_fails() -> None:
    ok = run_all.parse_output(
        "bench_parse",
        canned(
            "bench_parse",
            {"figure": "parse", "samples": [1.0, 2.0, 3.0], "target": Target("<", 200)},
        ),
        0,
    )
    # printed one figure, then a traceback: exit status 1 with no missed target, no DONE line
    crash = run_all.parse_output(
        "bench_topology",
        canned("bench_topology", dict(TOPO, figure="replication 1+2 ready"), done=False),
        1,
    )
    crash.tail = ["Traceback (most recent call last):\n", "RuntimeError: mariadbd did not start\n"]
    assert crash.crashed and not ok.crashed
    assert run_all.exit_code([ok]) == 0
    assert run_all.exit_code([ok, crash]) == 1
    md = run_all.render([ok, crash], META, "make bench")
    row = next(ln for ln in md.splitlines() if "**crashed**:" in ln)
    assert row.startswith("| `bench_topology` | **crashed**: exit status 1; no BENCH-DONE line")
    assert "RuntimeError: mariadbd did not start" in row and row.endswith("| **crashed** |")
    assert "replication 1+2 ready" in md  # the figure it printed before crashing is kept
    assert "crashed: bench_topology" in md


@pytest.mark.parametrize(
    "lines,rc,reason",
    [
        ([], -9, "killed by signal 9"),
        ([], 0, "no figures"),
        (["BENCH-RESULT {not json\n"], 0, "unreadable result line"),
        (canned("bench_x", {"figure": "f", "samples": [1, 2, 3]}), 2, "exit status 2"),
        # status 1 is a missed target only when a target was missed; else a traceback
        (canned("bench_x", {"figure": "f", "samples": [1, 2, 3]}), 1, "exit status 1"),
        (canned("bench_x", {"figure": "f", "samples": [1, 2, 3]}, done=False), 0, "no BENCH-DONE"),
    ],
)
def test_other_crashes(lines: list[str], rc: int, reason: str) -> None:
    run = run_all.parse_output("bench_x", lines, rc)
    assert run.crashed
    assert reason in run.crash_reason()
    assert run_all.exit_code([run]) == 1
    assert "| **crashed** |" in run_all.render([run], META, "x")


def test_select_scripts() -> None:
    scripts = [Path(f"bench/bench_{n}.py") for n in ("checkers", "parse", "recorder")]
    assert run_all.select(scripts, None) == scripts
    picked = run_all.select(scripts, "parse, bench_checkers,parse,recorder.py")
    assert [p.stem for p in picked] == ["bench_parse", "bench_checkers", "bench_recorder"]
    with pytest.raises(ValueError, match="no bench script 'nope'"):
        run_all.select(scripts, "parse,nope")


def test_discover_finds_every_bench_script_but_not_the_harness() -> None:
    names = {p.stem for p in run_all.discover()}
    assert {
        "bench_parse",
        "bench_checkers",
        "bench_recorder",
        "bench_topology",
        "bench_workload",
        "bench_anomalies",
    } <= names
    assert "harness" not in names and "run_all" not in names


def test_machine_facts() -> None:
    meta = run_all.machine("3 (default)", ["bench_parse"])
    assert int(meta["nproc"]) >= 1
    assert re.fullmatch(r"([0-9a-f]{4,}|unknown)(\+dirty)?", meta["commit"])
    assert meta["memory"].endswith("GiB")
    assert meta["hostname"] and meta["kernel"] and meta["date"]


FAKE = {
    "bench_a_ok": """
        b = Bench("bench_a_ok")
        b.figure("quick", [1.0, 2.0, 3.0], "ms", target=Target("<", 10))
        sys.exit(b.finish())
    """,
    "bench_b_miss": """
        b = Bench("bench_b_miss")
        b.figure("ratio", [2.0, 2.0, 2.0], "s", peer="peer", peer_samples=[1.0, 1.0, 1.0],
                 target=Target("<=", 1.2, on="ratio"))
        sys.exit(b.finish())
    """,
    "bench_c_crash": """
        print("starting")
        raise RuntimeError("no server for you")
    """,
}


def test_run_all_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every script runs although one misses and one crashes; results.md has all; exit 1."""
    for name, body in FAKE.items():
        (tmp_path / f"{name}.py").write_text(
            f"import sys\nsys.path.insert(0, {str(BENCH)!r})\n"
            "from harness import Bench, Target\n" + textwrap.dedent(body)
        )
    monkeypatch.setattr(run_all, "BENCH", tmp_path)
    out = tmp_path / "results.md"
    assert run_all.main(["--out", str(out)]) == 1
    md = out.read_text()
    assert "| `bench_a_ok` | quick | 2.00 ms (1.00–3.00) | 3 |" in md
    assert "| `bench_b_miss` | ratio |" in md and "**MISSED by 0.800× (2.00×, " in md
    assert "| `bench_c_crash` | **crashed**:" in md and "RuntimeError: no server for you" in md
    assert "Partial run" not in md

    out2 = tmp_path / "only.md"
    assert run_all.main(["--only", "a_ok", "--out", str(out2)]) == 0
    md2 = out2.read_text()
    assert "`python bench/run_all.py --only a_ok --out" in md2 and "Partial run" in md2
    assert "bench_b_miss" not in md2
    assert run_all.main(["--only", "zzz", "--out", str(out2)]) == 2


# --- bench_workload: every measure from a settled server ---------------------------------------


class FakeServer:
    """What ``bench_workload.settle`` asks a server: its dirty pages fall by ``step`` a poll,
    its undo is purged after ``purge_polls`` polls; every SET GLOBAL recorded."""

    def __init__(self, dirty: int, step: int, purge_polls: int = 0) -> None:
        self.dirty, self.step, self.purge_polls = dirty, step, purge_polls
        self.polls = 0
        self.sets: list[str] = []

    def query(self, _addr: Any, _creds: Any, sql: str) -> list[dict[str, Any]]:
        if sql.startswith("SELECT @@GLOBAL.innodb_max_dirty_pages_pct"):
            return [{"pct": 90.0}]
        self.polls += 1
        dirty, self.dirty = self.dirty, max(0, self.dirty - self.step)
        purge = 5 if self.polls <= self.purge_polls else 0
        return [{"Variable_name": "Innodb_buffer_pool_pages_dirty", "Value": str(dirty)},
                {"Variable_name": "Innodb_buffer_pool_pages_total", "Value": "4000"},
                {"Variable_name": "Innodb_history_list_length", "Value": str(purge)}]

    def execute_all(self, _addr: Any, _creds: Any, statements: list[str]) -> None:
        self.sets += statements


@pytest.fixture
def workload_bench() -> Any:
    import bench_workload

    return bench_workload


def _no_sleep(_s: float) -> None:
    pass


def _topo() -> Any:
    node = type("N", (), {"addr": None})()
    return type("T", (), {"nodes": {"db1": node}, "admin": None})()


def test_settle_waits_for_the_dirty_pages_and_the_purge_and_puts_the_setting_back(
        workload_bench: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    srv = FakeServer(dirty=2034, step=500, purge_polls=6)
    monkeypatch.setattr(workload_bench, "query", srv.query)
    monkeypatch.setattr(workload_bench, "execute_all", srv.execute_all)
    workload_bench.settle(_topo(), sleep=_no_sleep)
    # 2034 -> 1534 -> 1034 -> 534 -> 34 (<= 5 % of 4000 from the 5th poll), purged after the 6th
    assert srv.polls == 7
    assert srv.sets == ["SET GLOBAL innodb_max_dirty_pages_pct = 0",
                        "SET GLOBAL innodb_max_dirty_pages_pct = 90.0"]


def test_settle_that_does_not_come_says_how_far_it_got(workload_bench: Any,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    srv = FakeServer(dirty=3000, step=0)
    monkeypatch.setattr(workload_bench, "query", srv.query)
    monkeypatch.setattr(workload_bench, "execute_all", srv.execute_all)
    clock = iter(range(0, 10_000, 7))
    with pytest.raises(RuntimeError, match=r"did not settle in 60 s: 3000 of 4000 pages dirty, "
                                           r"0 undo logs to purge"):
        workload_bench.settle(_topo(), clock=lambda: float(next(clock)), sleep=_no_sleep)
    assert srv.sets[-1] == "SET GLOBAL innodb_max_dirty_pages_pct = 90.0"  # put back
