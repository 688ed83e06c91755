"""`lab compare`: runs side by side with ratios, variants over repeats (median, min–max, a
t-interval of the mean), the series over the last N seconds; Markdown, JSON and the CLI. Runs
are stored synthetically through the Store, as `lab run` stores them."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from lab.cli import main
from lab.history import NEMESIS, Op, Sample
from lab.judge.checkers import CheckResult
from lab.judge.expectations import ExpectationOutcome
from lab.report.compare import CompareError, compare_runs, compare_variants, ratio_text
from lab.report.compare_render import runs_markdown, variants_markdown, variants_table_rows
from lab.report.stats import Ratio, median, ratio, spread, t_interval, t_quantile
from lab.store.db import Store

S = 1_000_000_000
T0 = 5 * S  # the load's start (monotonic ns)

# --- statistics ---------------------------------------------------------------------------------


@pytest.mark.parametrize("df, t", [(1, 12.7062), (2, 4.3027), (3, 3.1824), (4, 2.7764),
                                   (9, 2.2622), (29, 2.0452), (120, 1.9799)])  # fmt: skip
def test_t_quantile_matches_the_table(df: int, t: float) -> None:
    assert t_quantile(0.975, df) == pytest.approx(t, abs=1e-4)
    assert t_quantile(0.025, df) == pytest.approx(-t, abs=1e-4)


def test_t_interval_of_a_known_sample() -> None:
    lo, hi = t_interval([100.0, 110.0, 120.0]) or (0, 0)
    half = 4.302653 * 10.0 / math.sqrt(3)  # t(0.975, 2) * s / sqrt(n), s = 10
    assert (lo, hi) == (pytest.approx(110 - half, abs=1e-3), pytest.approx(110 + half, abs=1e-3))
    assert t_interval([5.0]) is None  # one repeat: no interval, never an invented one
    assert t_interval([3.0, 3.0]) == (3.0, 3.0)


def test_spread_median_min_max_and_unknown_repeats() -> None:
    assert median([3.0, 1.0, 2.0]) == 2.0 and median([4.0, 1.0, 2.0, 3.0]) == 2.5
    sp = spread([120.0, None, 100.0, 110.0])
    assert (sp.n, sp.of, sp.median, sp.min, sp.max, sp.mean) == (3, 4, 110.0, 100.0, 120.0, 110.0)
    assert sp.ci is not None and sp.ci[0] == pytest.approx(85.159, abs=1e-3)
    one = spread([7.0])
    assert one.ci is None and one.no_ci == "one repeat: no interval" and one.median == 7.0
    assert spread([None, None]).n == 0 and spread([None]).median is None


def test_a_lower_bound_in_a_repeat_makes_the_statistics_lower_bounds() -> None:
    sp = spread([2.0, 4.0, 3.0], [False, True, False])
    assert sp.lower_bound and sp.median == 3.0 and sp.ci is None
    assert sp.no_ci == "some repeats give only a lower bound"


def test_ratios_of_bounds() -> None:
    assert ratio(3.0, 2.0) == Ratio(1.5)
    assert ratio(3.0, 2.0, value_lower=True) == Ratio(1.5, "≥")
    assert ratio(3.0, 2.0, base_lower=True) == Ratio(1.5, "≤")
    assert ratio(3.0, 2.0, True, True).value is None
    assert ratio(3.0, 0.0).value is None and ratio(None, 2.0).value is None
    assert ratio_text(Ratio(1.5)) == "1.50×" and ratio_text(Ratio(0.25, "≥")) == "≥ 0.250×"
    assert ratio_text(Ratio(2.0)) == "2.00×" and ratio_text(Ratio(12.0)) == "12.0×"
    assert ratio_text(Ratio(1234.5)) == "1,230×"  # 3 significant digits
    assert ratio_text(Ratio(None, why="the base is 0")) == "–"


# --- synthetic stored runs ----------------------------------------------------------------------


def results(tput: float, p99: float, *, w: str = "w", per_second: list[float] | None = None,
            down: float = 0.0, down_open: bool = False, errors: int = 0, ops: int = 1000,
            lag: float | None = None) -> dict[str, CheckResult]:  # fmt: skip
    series = per_second if per_second is not None else [tput] * 10
    out = {
        "throughput": CheckResult("throughput", True, {"load_seconds": float(len(series)),
                                  "subjects": {w: {"mean": tput, "p50": tput, "total": tput * 10,
                                                   "seconds": 10.0, "start": 0.0,
                                                   "end": float(len(series)), "source": "ops",
                                                   "per_second": series}}}),
        "latency": CheckResult("latency", True, {"subjects": {w: {
            "count": ops, "p50": p99 / 2, "p99": p99, "max": p99 * 2, "source": "ops"}}}),
        "downtime": CheckResult("downtime", True, {"longest": down, "subjects": {w: {
            "longest": down, "longest_open_at_end": down_open, "total": down,
            "open_at_end": down_open, "count": 1 if down else 0, "stalls": 0}}}),
        "errors": CheckResult("errors", True, {"total": errors, "load_seconds": 10.0,
                              "subjects": {w: {"total": errors, "ops": ops,
                                               "ratio": errors / ops, "by_code": {}}}}),
    }  # fmt: skip
    if lag is not None:
        out["replication_lag"] = CheckResult("replication_lag", True, {"max": lag, "subjects": {
            "db2": {"max": lag, "mean": lag / 2, "samples": 10, "unreadable": 0}}})
    return out


def store_run(store: Store, cells: list[dict[str, Any]], experiment: str = "bench",
              run_id: str | None = None, context: dict[str, Any] | None = None) -> str:
    """Each cell: ``results`` and optionally ``variant``, ``sweep``, ``repeat``, ``label``,
    ``expectations``, ``samples``, ``ops``. ``context``: the run's identity."""
    rid = store.create_run(experiment, f"experiments/{experiment}.exp", run_id=run_id,
                           context=context)
    for i, c in enumerate(cells, 1):
        store.create_cell(rid, i, c.get("label", f"#{i}"), variant=c.get("variant"),
                          sweep=c.get("sweep"), repeat=c.get("repeat", 1))  # fmt: skip
        store.write_measurements(rid, i, c["results"])
        if c.get("expectations"):
            store.write_expectations(rid, i, c["expectations"])
        if c.get("samples"):
            store.insert_samples(rid, i, c["samples"])
        if c.get("ops"):
            store.insert_operations(rid, i, c["ops"])
        store.finish_cell(rid, i, "passed", load_start_ns=T0, load_end_ns=T0 + 10 * S)
    store.finish_run(rid, "passed", 0)  # no stored summary: rebuilt from the tables
    return rid


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "results.db")


def _row(cmp: Any, figure: str) -> Any:
    return next(r for r in cmp.rows if r.figure == figure)


# --- runs side by side --------------------------------------------------------------------------


def test_two_runs_side_by_side_with_ratios_against_the_first(store: Store) -> None:
    expect = ExpectationOutcome(True, 0.0, "duration", "expect downtime(w) < 1s",
                                "downtime(w).max = 0 s; expected < 1s: holds",
                                "downtime(w).max")  # fmt: skip
    a = store_run(store, [{"results": results(100.0, 0.004), "expectations": [expect]}],
                  run_id="aaaa00000001")  # fmt: skip
    b_results = results(150.0, 0.002, down=3.0, down_open=True)
    b_results["throughput"].metrics["subjects"]["only_b"] = {"mean": 1.0}  # not in run a
    b = store_run(store, [{"results": b_results, "expectations": [expect]}],
                  run_id="bbbb00000002")  # fmt: skip
    cmp = compare_runs(store, ["aaaa", "bbbb"])
    assert [c.run_id for c in cmp.columns] == [a, b]
    assert cmp.rows[0].figure == "downtime(w).max"  # the expect lines' figures come first
    tput = _row(cmp, "throughput(w).mean")
    assert [v.value for v in tput.values] == [100.0, 150.0]
    assert tput.ratios[0] is None and tput.ratios[1] == Ratio(1.5)
    p99 = _row(cmp, "latency(w).p99")
    assert p99.ratios[1] is not None and p99.ratios[1].value == pytest.approx(0.5)
    assert [v.text("latency(w).p99") for v in p99.values] == ["4.0 ms", "2.0 ms"]
    total = _row(cmp, "downtime(w).total")  # measured again: b's outage was still open
    assert total.values[1].lower_bound and total.values[1].text("downtime(w).total") == \
        "≥ 3.00 s (still down at end)"
    assert ratio_text(total.ratios[1]) == "–"  # against 0 s: no ratio
    assert not any("only_b" in r.figure for r in cmp.rows)  # only figures both runs have
    err = _row(cmp, "errors(w).ratio")
    assert [v.text("errors(w).ratio") for v in err.values] == ["0.0%", "0.0%"]


def test_markdown_and_json_of_runs(store: Store) -> None:
    store_run(store, [{"results": results(100.0, 0.004)}], run_id="aaaa00000001")
    store_run(store, [{"results": results(150.0, 0.002)}], run_id="bbbb00000002")
    cmp = compare_runs(store, ["aaaa00000001", "bbbb"])
    md = runs_markdown(cmp)
    lines = md.splitlines()
    assert lines[0] == "| figure | aaaa0000 bench | bbbb0000 bench | × aaaa0000 |"
    assert lines[1] == "|---|---:|---:|---:|"
    assert "| throughput(w).mean | 100.0/s | 150.0/s | 1.50× |" in lines
    doc = cmp.to_json()
    tput = next(r for r in doc["rows"] if r["figure"] == "throughput(w).mean")
    assert tput["values"][1]["value"] == 150.0 and tput["ratios"][1]["value"] == 1.5
    assert tput["ratios"][1]["text"] == "1.50×" and tput["unit"] == "rate"
    json.dumps(doc)  # serialisable


def test_run_cell_selection_and_errors(store: Store) -> None:
    rid = store_run(store, [{"results": results(100.0, 0.004)},
                            {"results": results(300.0, 0.004)}], run_id="cccc00000003")
    cmp = compare_runs(store, [f"{rid}:2", f"{rid}:1"])
    assert _row(cmp, "throughput(w).mean").ratios[1] == Ratio(100.0 / 300.0)
    assert [c.title for c in cmp.columns] == ["cccc0000 bench #2", "cccc0000 bench #1"]
    assert len(compare_runs(store, [rid]).columns) == 2  # a run names all its cells
    with pytest.raises(CompareError, match="has no cell 7 \\(cells: 1, 2\\)"):
        compare_runs(store, [f"{rid}:7", rid])
    one = store_run(store, [{"results": results(1.0, 0.001)}])
    with pytest.raises(CompareError, match="one cell: name another run"):
        compare_runs(store, [one])


# --- the last N seconds -------------------------------------------------------------------------


def _ops(latencies: list[tuple[float, float]]) -> list[Op]:
    """One client op per (invoke second, latency seconds) of workload ``w``."""
    out: list[Op] = []
    for i, (at, lat) in enumerate(sorted(latencies)):
        t = T0 + round(at * S)
        out.append(Op("invoke", "write", 1, t, "w", "db1", None, i, i, index=2 * i))
        out.append(Op("ok", "write", 1, t + round(lat * S), "w", "db1", "db1", i, i,
                      index=2 * i + 1))  # fmt: skip
    return out


def test_series_over_the_last_seconds(store: Store) -> None:
    per_second = [100.0] * 7 + [40.0, 50.0, 60.0]  # the last 3 s: mean 50
    lat = [(s + 0.5, 0.001) for s in range(7)] + [(7.5, 0.010), (8.5, 0.020), (9.5, 0.030)]
    lag = [Sample("lag", "db2", T0 + s * S, {"lag": float(s)}) for s in range(11)]
    cell = {"results": results(90.0, 0.030, per_second=per_second, lag=10.0),
            "ops": _ops(lat), "samples": lag}
    store_run(store, [cell], run_id="dddd00000004")
    store_run(store, [dict(cell)], run_id="eeee00000005")
    cmp = compare_runs(store, ["dddd", "eeee"], last=3.0)
    assert _row(cmp, "throughput(w).mean last 3s").values[0].value == pytest.approx(50.0)
    # invoked at 7.5, 8.5, 9.5 s: completed in the last 3 s of the 10 s load
    assert _row(cmp, "latency(w).p50 last 3s").values[0].value == pytest.approx(0.020)
    assert _row(cmp, "latency(w).p99 last 3s").values[0].value == pytest.approx(0.030, abs=1e-3)
    lag_mean = _row(cmp, "replication_lag(db2).mean last 3s")
    assert lag_mean.values[0].value == pytest.approx(8.5)  # samples at 7, 8, 9, 10 s
    assert _row(cmp, "replication_lag(db2).max last 3s").values[0].value == 10.0
    assert _row(cmp, "throughput(w).mean").values[0].value == 90.0  # whole load, unchanged
    assert not any(" last " in r.figure for r in compare_runs(store, ["dddd", "eeee"]).rows)


def test_sysbench_latency_over_the_last_seconds_uses_its_per_second_p95(store: Store) -> None:
    res = results(500.0, 0.050)
    res["latency"].metrics["subjects"]["w"]["source"] = "sysbench per-second p95"
    rows = [Sample("sysbench", "w", T0 + s * S, {"tps": 500.0, "lat_p95": 0.001 * s})
            for s in range(1, 11)]  # fmt: skip
    store_run(store, [{"results": res, "samples": rows}], run_id="ffff00000006")
    store_run(store, [{"results": res, "samples": rows}], run_id="ffff00000007")
    cmp = compare_runs(store, ["ffff00000006", "ffff00000007"], last=3.0)
    # rows at 7..10 s are in the window [7 s, 10 s]: per-second p95 of 7, 8, 9, 10 ms; p50 as
    # every percentile of the checkers (nearest rank): the 2nd of 4
    assert _row(cmp, "latency(w).p50 last 3s").values[0].value == pytest.approx(0.008)
    assert _row(cmp, "latency(w).p99 last 3s").values[0].value == pytest.approx(0.010)


# --- variants over repeats ----------------------------------------------------------------------

TPUT = {  # (variant, threads) -> throughput of the three repeats
    ("base", "1"): [100.0, 120.0, 110.0],
    ("base", "4"): [300.0, 330.0, 360.0],
    ("a2", "1"): [200.0, 240.0, 220.0],
    ("a2", "4"): [330.0, 330.0, 330.0],
}


def variant_run(store: Store, repeats: int = 3) -> str:
    cells = []
    for (variant, threads), values in TPUT.items():
        for r in range(repeats):
            cells.append({"results": results(values[r], 0.002 * (r + 1)), "variant": variant,
                          "sweep": {"threads": threads}, "repeat": r + 1,
                          "label": f"{variant} threads={threads} #{r + 1}"})  # fmt: skip
    return store_run(store, cells, experiment="io-capacity-sweep")


def _group(cmp: Any, figure: str, label: str) -> Any:
    row = _row(cmp, figure)
    i = [g.label for g in cmp.groups].index(label)
    return row.groups[i]


def test_variants_medians_intervals_and_ratios_against_the_base_at_the_same_sweep(
        store: Store) -> None:  # fmt: skip
    rid = variant_run(store)
    cmp = compare_variants(store, rid)
    assert [g.label for g in cmp.groups] == ["base threads=1", "base threads=4",
                                             "a2 threads=1", "a2 threads=4"]
    assert [len(g.cells) for g in cmp.groups] == [3, 3, 3, 3]
    b1 = _group(cmp, "throughput(w).mean", "base threads=1")
    assert (b1.spread.median, b1.spread.min, b1.spread.max) == (110.0, 100.0, 120.0)
    half = t_quantile(0.975, 2) * 10.0 / math.sqrt(3)
    assert b1.spread.ci == (pytest.approx(110 - half), pytest.approx(110 + half))
    assert b1.ratio is None  # the base itself
    a1 = _group(cmp, "throughput(w).mean", "a2 threads=1")
    assert a1.spread.median == 220.0 and a1.ratio == Ratio(2.0)
    a4 = _group(cmp, "throughput(w).mean", "a2 threads=4")  # against base threads=4: 330
    assert a4.ratio == Ratio(1.0) and a4.spread.ci == (330.0, 330.0)
    lat = _group(cmp, "latency(w).p99", "a2 threads=1")  # 2, 4, 6 ms in every group
    assert lat.spread.median == pytest.approx(0.004)
    assert lat.ratio is not None and lat.ratio.value == pytest.approx(1.0)


def test_variants_table_markdown_and_json(store: Store) -> None:
    cmp = compare_variants(store, variant_run(store))
    rows = variants_table_rows(cmp)
    tput = [r for r in rows if r[0] == "throughput(w).mean"][0]
    start = rows.index(tput)
    assert tput[1:] == ["base threads=1", "3", "110.0/s", "100.0/s–120.0/s",
                        "85.2/s–134.8/s", "base"]  # fmt: skip
    assert rows[start + 2][1:] == ["a2 threads=1", "3", "220.0/s", "200.0/s–240.0/s",
                                   "170.3/s–269.7/s", "2.00×"]  # fmt: skip
    md = variants_markdown(cmp)
    assert md.splitlines()[0] == ("| figure | group | n | median | min–max | "
                                  "95% CI (mean) | × base |")
    assert "| throughput(w).mean | base threads=1 | 3 | 110.0/s |" in md
    assert "t-interval of the mean" in md
    doc = cmp.to_json()
    g = next(r for r in doc["rows"] if r["figure"] == "throughput(w).mean")["groups"][2]
    assert (g["group"], g["median"], g["ratio"]["value"]) == ("a2 threads=1", 220.0, 2.0)
    assert g["ci"][0] == pytest.approx(220 - 2 * t_quantile(0.975, 2) * 10 / math.sqrt(3))
    assert doc["ci_method"].startswith("95% t-interval of the mean")


def test_base_variant_by_name_and_unknown_base(store: Store) -> None:
    rid = variant_run(store)
    cmp = compare_variants(store, rid, base="a2")
    b1 = _group(cmp, "throughput(w).mean", "base threads=1")
    assert b1.ratio == Ratio(0.5)  # 110 against a2's 220
    with pytest.raises(CompareError, match="no variant or group named 'zz' \\(known: base, a2"):
        compare_variants(store, rid, base="zz")


def test_one_repeat_has_no_interval(store: Store) -> None:
    cmp = compare_variants(store, variant_run(store, repeats=1))
    g = _group(cmp, "throughput(w).mean", "a2 threads=1")
    assert g.spread.n == 1 and g.spread.ci is None and g.ratio == Ratio(2.0)
    rows = variants_table_rows(cmp)
    start = next(i for i, r in enumerate(rows) if r[0] == "throughput(w).mean")
    row = next(r for r in rows[start:] if r[1] == "a2 threads=1")
    assert row[2:] == ["1", "200.0/s", "–", "n/a (1 repeat)", "2.00×"]  # 200 against 100


def test_a_sweep_without_variants_compares_with_the_first_group(store: Store) -> None:
    cells = [{"results": results(t, 0.002), "sweep": {"threads": str(n)}, "repeat": 1}
             for n, t in ((1, 100.0), (4, 250.0), (16, 300.0))]  # fmt: skip
    rid = store_run(store, cells)
    cmp = compare_variants(store, rid)
    assert [g.label for g in cmp.groups] == ["threads=1", "threads=4", "threads=16"]
    assert _group(cmp, "throughput(w).mean", "threads=16").ratio == Ratio(3.0)
    cmp = compare_variants(store, rid, base="threads=4")
    assert _group(cmp, "throughput(w).mean", "threads=16").ratio == Ratio(1.2)


def test_a_still_open_outage_in_a_repeat_is_a_lower_bound(store: Store) -> None:
    cells = [{"results": results(100.0, 0.002, down=d, down_open=o), "variant": v,
              "repeat": r}
             for v, r, d, o in (("a", 1, 1.0, False), ("a", 2, 1.0, False),
                                ("b", 1, 2.0, False), ("b", 2, 4.0, True))]  # fmt: skip
    cmp = compare_variants(store, store_run(store, cells))
    b = _group(cmp, "downtime(w).max", "b")
    assert b.spread.lower_bound and b.spread.median == 3.0 and b.spread.ci is None
    assert b.ratio == Ratio(3.0, "≥")
    row = next(r for r in variants_table_rows(cmp) if r[0] == "" and r[1] == "b"
               and r[3].startswith("≥"))  # fmt: skip
    assert row[3] == "≥ 3.00 s (still down at end)" and row[5] == "n/a (lower bounds)"
    assert row[6] == "≥ 3.00×"


# --- the command --------------------------------------------------------------------------------


def test_cli_compare(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(store.path)
    store_run(store, [{"results": results(100.0, 0.004)}], run_id="aaaa00000001")
    store_run(store, [{"results": results(150.0, 0.002)}], run_id="bbbb00000002")
    assert main(["compare", "aaaa", "bbbb", "--db", db, "--markdown"]) == 0
    assert "| throughput(w).mean | 100.0/s | 150.0/s | 1.50× |" in capsys.readouterr().out
    assert main(["compare", "aaaa", "bbbb", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["mode"] == "runs"
    assert main(["compare", "aaaa", "bbbb", "--db", db]) == 0
    out = capsys.readouterr().out
    assert "throughput(w).mean" in out and "1.50×" in out
    rid = variant_run(store)
    assert main(["compare", "--variants", rid[:8], "--db", db, "--last", "5s"]) == 0
    out = capsys.readouterr().out
    assert "a2 threads=1" in out and "throughput(w).mean last 5s" in out


@pytest.mark.parametrize("argv, message", [
    (["compare", "aaaa", "bbbb", "--variants"], "--variants compares the cells of one run"),
    (["compare", "aaaa", "--variants", "--base", "nope"], "no variant or group named 'nope'"),
    (["compare", "aaaa", "bbbb", "--base", "x"], "--base names the base variant"),
    (["compare", "aaaa", "bbbb", "--last", "soon"], "--last soon"),
    (["compare", "aaaa", "bbbb", "--last", "3"], "--last 3: a duration needs its unit (--last 3s)"),
    (["compare", "aaaa", "zzzz"], "no run 'zzzz'"),
    (["compare", "aaaa", "bbbb", "--json", "--markdown"], "choose one of --json and --markdown"),
])  # fmt: skip
def test_cli_compare_usage_errors_exit_2(store: Store, capsys: pytest.CaptureFixture[str],
                                         argv: list[str], message: str) -> None:
    store_run(store, [{"results": results(100.0, 0.004)}], run_id="aaaa00000001")
    store_run(store, [{"results": results(150.0, 0.002)}], run_id="bbbb00000002")
    assert main([*argv, "--db", str(store.path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Error: ") and message in err


def test_faults_are_not_figures(store: Store) -> None:
    """The nemesis's operations are in the history; they are never a workload's figures."""
    ops = _ops([(1.0, 0.001), (9.5, 0.004)]) + [
        Op("invoke", "kill", NEMESIS, T0 + 2 * S, "", None, "db2", None, None, index=4)]
    store_run(store, [{"results": results(1.0, 0.001), "ops": ops}], run_id="abab00000001")
    store_run(store, [{"results": results(1.0, 0.001), "ops": ops}], run_id="abab00000002")
    cmp = compare_runs(store, ["abab00000001", "abab00000002"], last=5.0)
    # w's last 5 s hold its write at 9.5 s only (the one at 1 s is before them); the kill,
    # never completed, is no operation of w's
    assert _row(cmp, "latency(w).p50 last 5s").values[0].value == 0.004
    assert not any(r.figure.startswith(("latency(kill)", "throughput(kill)"))
                   for r in cmp.rows)


def test_the_last_seconds_of_a_workload_that_stopped_before_the_load_ended(store: Store) -> None:
    """``last N`` of a workload is the last N seconds of its own run: writes that stopped at
    10 s of a load that went on to 20 s (a timeline still waiting: lesson 1 on a busy machine
    read 0.0/s over the seconds after the writes had stopped) are measured over 0..10 s."""
    ops = _ops([(s + 0.5, 0.002) for s in range(10)])
    ops += [Op("invoke", "read", 2, T0 + 19 * S + S // 2, "r", "db1", None, 99, None, index=40),
            Op("ok", "read", 2, T0 + 19 * S + S // 2 + 1000, "r", "db1", "db1", 99, None,
               index=41)]  # another workload runs to the end of the load
    res = results(1.0, 0.002, per_second=[1.0] * 10 + [0.0] * 10)
    res["throughput"].metrics["subjects"]["w"]["end"] = 10.002  # w's own run: 0..10 s
    store_run(store, [{"results": res, "ops": ops}], run_id="acac00000001")
    store_run(store, [{"results": res, "ops": ops}], run_id="acac00000002")
    cmp = compare_runs(store, ["acac00000001", "acac00000002"], last=5.0)
    assert _row(cmp, "throughput(w).mean last 5s").values[0].value == 1.0  # not 0.0
    assert _row(cmp, "latency(w).p50 last 5s").values[0].value == 0.002  # its last 5 writes


# --- identity, claims, 80 columns (issue 24) ----------------------------------------------------


def _ctx(backend: str, mariadbd: str = "10.11.19") -> dict[str, Any]:
    return {"backend": backend, "topology": "replication", "engine": "mariadb",
            "versions": {"lab": "0.1.0", "mariadbd": mariadbd}}


def test_comparing_across_back_ends_warns_and_names_each_columns_back_end(
        store: Store, capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    store_run(store, [{"results": results(100.0, 0.004)}], run_id="aaaa00000001",
              context=_ctx("native"))
    store_run(store, [{"results": results(150.0, 0.002)}], run_id="bbbb00000002",
              context=_ctx("containers"))
    cmp = compare_runs(store, ["aaaa", "bbbb"])
    assert len(cmp.warnings) == 1
    assert cmp.warnings[0].startswith("these runs ran on different back-ends (native: aaaa0000; "
                                      "containers: bbbb0000)")
    assert [c.title for c in cmp.columns] == ["aaaa0000 bench [native]",
                                              "bbbb0000 bench [containers]"]
    db = str(store.path)
    assert main(["compare", "aaaa", "bbbb", "--db", db]) == 0
    assert "warning: these runs ran on different back-ends" in capsys.readouterr().out
    assert main(["compare", "aaaa", "bbbb", "--db", db, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [c["backend"] for c in doc["columns"]] == ["native", "containers"]
    assert "different back-ends" in doc["warnings"][0]
    assert main(["compare", "aaaa", "bbbb", "--db", db, "--markdown"]) == 0
    assert "different back-ends" in capsys.readouterr().out


def test_same_back_end_no_warning_but_a_server_version_that_differs_is_said(store: Store) -> None:
    store_run(store, [{"results": results(100.0, 0.004)}], run_id="aaaa00000001",
              context=_ctx("native"))
    store_run(store, [{"results": results(100.0, 0.004)}], run_id="cccc00000003",
              context=_ctx("native"))
    assert compare_runs(store, ["aaaa", "cccc"]).warnings == []
    store_run(store, [{"results": results(100.0, 0.004)}], run_id="dddd00000004",
              context=_ctx("native", "11.4.2"))
    (w,) = compare_runs(store, ["aaaa", "dddd"]).warnings
    assert "different server versions (10.11.19: aaaa0000; 11.4.2: dddd0000)" in w
    # a run stored before its back-end was recorded is "unknown", never taken for the other
    store_run(store, [{"results": results(100.0, 0.004)}], run_id="eeee00000005")
    (w,) = compare_runs(store, ["aaaa", "eeee"]).warnings
    assert "unknown (not recorded): eeee0000" in w


CLAIM = {"text": "expect throughput(w) in a2 >= 1.5 × throughput(w) in base", "passed": True,
         "explanation": "220.0/s against 110.0/s: 2.00×", "group": {"threads": "1"}}


def test_variants_repeat_the_runs_claims(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    rid = variant_run(store)
    s = store.summary(rid)
    store.finish_run(rid, "passed", 0, summary={**s, "claims": [CLAIM]})
    cmp = compare_variants(store, rid)
    line = f"PASS {CLAIM['text']} (threads=1): {CLAIM['explanation']}"
    assert cmp.claims == [line]
    assert cmp.to_json()["claims"] == [line]
    assert line in variants_markdown(cmp)
    assert main(["compare", "--variants", rid[:8], "--db", str(store.path)]) == 0
    out = capsys.readouterr().out
    assert "claims across cells" in out and "(threads=1): 220.0/s against 110.0/s" in out


def _render(fn: Any, cmp: Any, width: int) -> list[str]:
    import io

    from rich.console import Console

    buf = io.StringIO()  # not a terminal: what a pipe gets
    fn(cmp, Console(file=buf, width=width))
    return buf.getvalue().splitlines()


def test_at_80_columns_and_piped_no_figure_is_broken(store: Store) -> None:
    """Today's fold gave ``11,638/ s–14,50 7/s``: every figure stays whole on its line, and no
    line is wider than the terminal, in the variants table and the runs side by side."""
    from lab.report.compare_render import render_runs, render_variants

    cells = []
    for v, vals in (("base", [11638.0, 14507.0, 12000.0]),
                    ("a_long_variant_name", [21638.0, 24507.0, 22000.0])):
        for thr in ("1", "16"):
            for r, x in enumerate(vals):
                cells.append({"results": results(x, 0.0123 * (r + 1), w="writes_long"),
                              "variant": v, "sweep": {"threads": thr}, "repeat": r + 1,
                              "label": f"{v} threads={thr} #{r + 1}"})
    rid = store_run(store, cells, experiment="io-capacity-sweep")
    other = store_run(store, cells[:1], experiment="other")
    for width in (80, 120):
        lines = _render(render_variants, compare_variants(store, rid), width)
        text = "\n".join(lines)
        assert all(len(x) <= width for x in lines[1:]), width  # the title is one soft line
        for fig in ("11,638/s–14,507/s", "21,638/s–24,507/s", "12,000/s", "12.3 ms",
                    "6.2 ms–18.5 ms"):
            assert fig in text, (width, fig)
        lines = _render(render_runs, compare_runs(store, [rid, other]), width)
        text = "\n".join(lines)
        for fig in ("11,638/s", "14,507/s", "24,507/s", "36.9 ms", "3.00×"):
            assert fig in text, (width, fig)
