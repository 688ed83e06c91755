"""How figures are shown: the end-of-run report (lab.report.measurements), the one number formatter
(lab.figures_format.format_value) and the live view's plain lines."""

from __future__ import annotations

import copy
import io
import re
from typing import Any

import pytest
from rich.console import Console

from lab.figures_format import figure_clause, format_value
from lab.report.measurements import measurement_rows, render_summary
from lab.run.live import LiveView

# --- a canned summary, shaped like lab.run.engine.summary() after a real run ---------------------


def _downtime() -> dict[str, Any]:
    closed = {"longest": 0.0, "longest_open_at_end": False, "total": 0.0, "count": 0,
              "stalls": 0, "open_at_end": False, "from_start": False, "windows": [],
              "windows_truncated": False}  # fmt: skip
    ryw_db2 = {"longest": 4.2031, "longest_open_at_end": True, "total": 4.2031, "count": 1,
               "stalls": 0, "open_at_end": True, "from_start": False,
               "windows": [{"start": 25.8, "end": 30.0031, "duration": 4.2031, "failures": 697,
                            "errors": {"2013": 697}, "from_start": False,
                            "open_at_end": True, "kind": "error"}],
               "windows_truncated": False}  # fmt: skip
    hang = {"longest": 2.032, "longest_open_at_end": False, "total": 4.562, "count": 2,
            "stalls": 1, "open_at_end": False, "from_start": False,
            "windows": [{"start": 5.0, "end": 5.53, "duration": 0.53, "failures": 0,
                         "errors": {}, "from_start": False, "open_at_end": False,
                         "kind": "stall"},
                        {"start": 10.0, "end": 12.032, "duration": 2.032, "failures": 102,
                         "errors": {"2013": 102}, "from_start": False, "open_at_end": False,
                         "kind": "error"}],
            "windows_truncated": False}  # fmt: skip
    return {
        "longest": 4.2031, "longest_open_at_end": True, "total": 8.765, "count": 3,
        "open_at_end": True,
        "subjects": {
            "writes on router.writer": dict(closed), "writes": dict(closed, endpoints=["x"]),
            "ryw on db2": ryw_db2, "ryw on db3": dict(closed),
            "ryw": dict(ryw_db2, endpoints=["db2", "db3"]),
            "hang on db1": hang, "hang": dict(hang, endpoints=["db1"]),
            "ins": dict(closed), "sb": dict(closed),
        },
    }  # fmt: skip


def _visibility(p50: float, p99: float, seen: int, unseen: int, bound: float | None,
                res: float) -> dict[str, Any]:  # fmt: skip
    return {"count": seen + unseen, "mean": p50, "min": 0.0, "p50": p50, "p90": p99,
            "p95": p99, "p99": p99, "p999": p99, "max": p99, "seen": seen, "unseen": unseen,
            "never_seen": unseen, "unseen_min_bound": bound, "resolution": res,
            "resolution_max": res * 3}  # fmt: skip


def _stale(count: int, eligible: int, vis: dict[str, Any]) -> dict[str, Any]:
    return {"count": count, "reads": eligible + 10, "eligible_reads": eligible,
            "rate": count / eligible if eligible else None,
            "ratio": count / eligible if eligible else None,
            "without_prior_write": 10, "incomparable": 0, "versions_behind": {"1": count},
            "time_behind": {"count": count, "p50": 0.0123, "p99": 0.5, "max": 0.9,
                            "mean": 0.02, "min": 0.0, "p90": 0.1, "p95": 0.2, "p999": 0.8},
            "visibility": vis}  # fmt: skip


def _latency(p50: float, p99: float, mx: float, source: str = "ops") -> dict[str, Any]:
    return {"count": 1000, "mean": p50, "min": p50 / 2, "p50": p50, "p90": p99, "p95": p99,
            "p99": p99, "p999": mx, "max": mx, "source": source}  # fmt: skip


def canned_summary() -> dict[str, Any]:
    ryw_vis = _visibility(2.006, 2.014, 361, 39, 1.2, 0.0101)
    db3_vis = _visibility(0.00521, 0.0133, 400, 0, None, 0.0098)
    cell = {
        "index": 1, "label": "#1", "variant": None, "sweep": {}, "repeat": 1,
        "status": "failed", "error": None, "operations": 120_000,
        "timings": {"topology_ready": 8.214}, "healed": ["kill db2"],
        "notes": ["replication did not settle: SQL thread stopped on p1 (error 1062)"],
        "expectations": [
            {"text": "expect stale_reads(ryw) > 0", "passed": True, "measured": 47185.0,
             "unit": "count", "metric": "stale_reads(ryw).count", "lower_bound": False,
             "explanation": "stale_reads(ryw).count = 47,185 (of 53,486 eligible reads); "
                            "expected > 0: holds"},
            {"text": "expect downtime(ryw) < 10s", "passed": None, "measured": 4.2031,
             "unit": "duration", "metric": "downtime(ryw).max", "lower_bound": True,
             "explanation": "downtime(ryw).max ≥ 4.20 s (still down at end; 1 outage "
                            "window; an outage was still open when the load stopped); "
                            "expected < 10s: undecided (only a lower bound is known)"},
        ],
        "reports": [
            # written by an older lab: "at least", .3g
            {"text": "report downtime(ryw)", "metric": "downtime(ryw).max", "value": 4.2031,
             "unit": "duration", "display": "at least 4.2 s"},
            {"text": "report throughput(ryw)", "metric": "throughput(ryw).mean",
             "value": 11030.4, "unit": "rate", "display": "11030/s"},
        ],
        "measurements": {
            "downtime": _downtime(),
            "stale_reads": {
                "count": 47185, "rate": 0.882, "eligible_reads": 53486,
                "subjects": {
                    "ryw": _stale(47185, 53486, ryw_vis),
                    "ryw on db2": _stale(19058, 20580, ryw_vis),
                    "ryw on db3": _stale(28127, 32906, db3_vis),
                    # a probe that reads SELECT 1: no key, nothing to compare with
                    "calm": _stale(0, 0, _visibility(0, 0, 0, 0, None, 0)),
                    "calm on db2": _stale(0, 0, _visibility(0, 0, 0, 0, None, 0)),
                },
            },
            "duplicate_keys": {"count": 3, "subjects": {
                "writes": {"count": 0, "attempts": 3000, "ratio": 0.0},
                "ryw": {"count": 0, "attempts": 50000, "ratio": 0.0},
                "ryw on db1": {"count": 0, "attempts": 50000, "ratio": 0.0},
                "ins": {"count": 3, "attempts": 3000, "ratio": 0.001},
            }},
            "lost_writes": {"count": 0, "unchecked": 0, "authority": "db1", "subjects": {
                "ryw": {"count": 0, "acknowledged": 53486, "not_replicated": 0,
                        "divergent": 0, "unchecked": 0},
                "ryw on db1": {"count": 0, "missing": 0, "not_replicated": 0,
                               "authoritative": True},
                "ryw on db2": {"count": 0, "missing": 0, "not_replicated": 0,
                               "authoritative": False},
                "ins": {"count": 2, "acknowledged": 3000, "not_replicated": 5,
                        "divergent": 0, "unchecked": 12},
            }},
            "replication_lag": {"max": 10.8, "subjects": {
                "db2": {"max": 10.8, "mean": 1.0, "p50": 0.05, "p95": 10.0, "p99": 10.7,
                        "samples": 200, "unreadable": 97, "series": []},
                "db3": {"max": 0.157, "mean": 0.02, "p50": 0.01, "p95": 0.05, "p99": 0.0624,
                        "samples": 297, "unreadable": 0, "series": []},
            }},
            "throughput": {"load_seconds": 30.0, "subjects": {
                "writes": {"mean": 98.9, "min": 35.0, "max": 101.0, "source": "ops"},
                "ryw": {"mean": 11030.4, "min": 2100.0, "max": 12000.0, "source": "ops"},
                "sb": {"mean": 2054.25, "min": 700.0, "max": 2400.0,
                       "source": "sysbench"},
            }},
            "stalls": {"count": 2, "subjects": {
                "hang": {"count": 2, "longest": 1.0, "runs": [], "seconds_checked": 20},
            }},
            "warmup": {"faults": 1, "mode": "fault", "subjects": {
                "sb": {"warmup": 3.0, "recovered": True, "min_level": 0.75,
                       "dip_beyond_noise": True, "mode": "fault", "faults": []},
            }},
            "latency": {"subjects": {
                "writes": _latency(0.00121, 0.00427, 0.0329),
                "ryw": _latency(0.000519, 0.00232, 0.110),
                "hang": _latency(0.000858, 0.00488, 2.0103),
                "sb": _latency(0.0113, 0.0201, 0.0623, "sysbench per-second p95"),
            }},
            "errors": {"total": 14390, "subjects": {
                "ryw": {"total": 14390, "ops": 67876, "ratio": 0.212, "by_code": {}},
                "writes": {"total": 0, "ops": 3000, "ratio": 0.0, "by_code": {}},
            }},
            "facts": {"subjects": {
                "db2": {"missing_transactions": 0, "applied_since_restart": 24503,
                        "relay_log_bytes": {"before": 1024, "after": 5 * 2**20}},
                "db3": {"missing_transactions": 0},
            }},
        },
    }  # fmt: skip
    return {
        "run_id": "7b0f583d6a55", "experiment": "quickstart",
        "source": "experiments/quickstart.exp", "status": "failed", "exit_code": 1,
        "message": None, "topology": "replication",
        "cells": [dict(cell, workloads={"writes": "probe", "ryw": "read_your_writes",
                                        "hang": "probe", "calm": "probe",
                                        "ins": "unique_insert", "sb": "sysbench"})],
    }  # fmt: skip


def render(summary: dict[str, Any], width: int = 120) -> str:
    console = Console(record=True, width=width, color_system=None, file=io.StringIO())
    render_summary(summary, console)
    return console.export_text()


def rows(summary: dict[str, Any]) -> dict[str, list[str]]:
    return dict(measurement_rows(summary))


def line_of(text: str, name: str) -> str:
    hits = [ln for ln in text.splitlines() if f" {name} " in ln]
    assert len(hits) == 1, (name, hits)
    return hits[0]


# --- the number formatter --------------------------------------------------------------------


@pytest.mark.parametrize(("value", "unit", "shown"), [
    (0.00052, "duration", "0.52 ms"),
    (0.0049, "duration", "4.9 ms"),
    (0.0462, "duration", "46.2 ms"),
    (0.497, "duration", "497 ms"),
    (0.9996, "duration", "1.00 s"),
    (2.032, "duration", "2.03 s"),
    (10.8, "duration", "10.8 s"),
    (123.4, "duration", "123 s"),
    (11030.0, "duration", "11,030 s"),
    (0.0, "duration", "0 s"),
    (47185, "count", "47,185"),
    (1.103e4, "count", "11,030"),
    (19.99, "rate", "20.0/s"),
    (11030.4, "rate", "11,030/s"),
    (0.872, "percent", "87.2%"),
    (0.005, "percent", "0.5%"),
    (512, "size", "512 B"),
    (1536, "size", "1.50 KiB"),
    (5 * 2**20, "size", "5.00 MiB"),
    (None, "duration", "unknown"),
])  # fmt: skip
def test_format_value(value: float | None, unit: Any, shown: str) -> None:
    assert format_value(value, unit) == shown


@pytest.mark.parametrize("exp", range(-12, 13))
@pytest.mark.parametrize("unit", ["duration", "count", "rate", "percent", "size"])
def test_format_value_never_scientific(exp: int, unit: Any) -> None:
    for mantissa in (1.0, 1.103, 4.7185, 9.9996):
        for sign in (1, -1):
            shown = format_value(sign * mantissa * 10.0**exp, unit)
            assert not re.search(r"\de[+-]?\d", shown), shown


def test_lower_bound_clause() -> None:
    assert figure_clause("downtime(w).max", 4.2031, "duration", True) == \
        "downtime(w).max ≥ 4.20 s (still down at end)"
    assert figure_clause("latency(w).p99", 0.00427, "duration") == "latency(w).p99 = 4.3 ms"


# --- the report --------------------------------------------------------------------------------


def test_no_scientific_notation_anywhere() -> None:
    text = render(canned_summary())
    assert "e+" not in text and not re.search(r"\de-\d", text)
    assert "4.718e" not in text and "47,185" in text
    r = rows(canned_summary())
    assert r["latency(hang).max"] == ["2.01 s"]  # was 2.01e+03 ms
    assert r["throughput(ryw).mean"] == ["11,030/s"]


def test_open_outage_is_a_lower_bound_in_every_table() -> None:
    text = render(canned_summary(), width=200)
    assert "≥ 4.20 s (still down at end)" in line_of(text, "downtime(ryw on db2).longest")
    assert "≥ 4.20 s (still down at end)" in line_of(text, "downtime(ryw).total")
    # the report line of an older run ("at least 4.2 s") is shown the same way
    assert "downtime(ryw).max ≥ 4.20 s (still down at end)" in text
    assert "at least" not in text
    r = rows(canned_summary())
    assert r["downtime(ryw on db3).longest"] == ["0 s"]  # closed: no bound
    assert r["downtime(any workload).total (union, not a sum)"] == ["≥ 8.77 s (still down at end)"]


def test_stall_windows_are_counted() -> None:
    r = rows(canned_summary())
    assert r["downtime(hang).count"] == ["2 windows, 1 a stall"]
    assert r["downtime(ryw).count"] == ["1 window"]
    assert r["downtime(writes).count"] == ["0"]


def test_visibility_has_its_resolution_and_bound() -> None:
    r = rows(canned_summary())
    # 39 writes never seen, the smallest bound (1.2 s) below the p50: only a lower bound
    assert r["stale_reads(ryw).p50 (ack → visible)"] == ["≥ 2.01 s ± 10.1 ms"]
    assert r["stale_reads(ryw on db3).p99 (ack → visible)"] == ["13.3 ms ± 9.8 ms"]
    assert r["stale_reads(ryw).never seen"] == ["39 of 400 writes"]
    assert "± " in render(canned_summary())


def test_visibility_is_exact_when_the_unseen_bound_is_above() -> None:
    s = canned_summary()
    subj = s["cells"][0]["measurements"]["stale_reads"]["subjects"]["ryw"]
    subj["visibility"]["unseen_min_bound"] = 2.5
    assert rows(s)["stale_reads(ryw).p50 (ack → visible)"] == ["2.01 s ± 10.1 ms"]


def test_no_time_behind_and_no_stale_reads_for_a_probe() -> None:
    text = render(canned_summary(), width=200)
    assert "behind" not in text
    assert "stale_reads(calm" not in text
    assert "stale_reads(ryw).rate" in text and "88.2%" in text


def test_lag_is_in_ms_like_latency() -> None:
    r = rows(canned_summary())
    assert r["replication_lag(db3).max"] == ["157 ms"]
    assert r["replication_lag(db3).p99"] == ["62.4 ms"]
    assert r["replication_lag(db2).max"] == ["10.8 s"]
    assert r["latency(ryw).max"] == ["110 ms"]
    assert not any(re.search(r"\b0\.\d+ s\b", v) for vs in r.values() for v in vs)


def test_unreadable_replica_is_an_unknown_period() -> None:
    r = rows(canned_summary())
    assert r["replication_lag(db2).unknown (replica unreadable)"] == ["97 of 297 samples"]
    assert "replication_lag(db3).unknown (replica unreadable)" not in r  # none unknown


def test_notes_are_shown_in_plain_output() -> None:
    text = render(canned_summary())
    assert "replication did not settle: SQL thread stopped on p1 (error 1062)" in text
    # under the tables: after the last row of the measurements table
    assert text.rindex("replication did not settle") > text.rindex("errors(ryw).total")


def test_notes_are_yellow() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system="standard", width=200)
    render_summary(canned_summary(), console)
    line = next(ln for ln in out.getvalue().splitlines() if "did not settle" in ln)
    assert "\x1b[33m" in line or "\x1b[1;33m" in line


def test_no_duplicate_keys_for_an_upsert() -> None:
    text = render(canned_summary(), width=200)
    assert "duplicate_keys(ryw" not in text  # read_your_writes: INSERT ... ON DUPLICATE KEY
    assert "duplicate_keys(writes)" not in text  # a probe: its keys never collide
    assert "3" in line_of(text, "duplicate_keys(ins).count")


def test_kinds_inferred_when_the_summary_has_none() -> None:
    s = canned_summary()
    del s["cells"][0]["workloads"]
    del s["topology"]
    text = render(s, width=200)
    assert "duplicate_keys(ryw" not in text  # eligible reads: read_your_writes
    assert "duplicate_keys(ins).count" in text
    assert "stale_reads(calm" not in text
    assert "facts(db2).missing_transactions" in text  # topology unknown: shown


def test_no_missing_transactions_on_galera() -> None:
    s = canned_summary()
    assert "facts(db2).missing_transactions" in rows(s)
    s["topology"] = "galera"
    assert "facts(db2).missing_transactions" not in rows(s)
    g = canned_summary()
    g["cells"][0]["topology"] = "galera"
    assert not any("missing_transactions" in k for k in rows(g))


def test_missing_transactions_before_the_heal_in_every_figure() -> None:
    s = canned_summary()
    facts = s["cells"][0]["measurements"]["facts"]
    facts["missing_before_heal"] = {"db2": 5000, "db3": 0}
    r = rows(s)
    assert r["facts(db2).missing_transactions"] == ["0 (5,000 before the heal)"]
    assert r["facts(db2).missing_transactions.before_heal"] == ["5,000"]
    assert r["facts(db3).missing_transactions"] == ["0"]


def test_no_relay_log_figures_on_galera() -> None:
    s = canned_summary()
    s["topology"] = "galera"
    assert not any("relay_log_bytes" in k for k in rows(s))  # 0 B → 0 B meant nothing


def test_lag_of_a_replica_that_was_up_is_not_never_read() -> None:
    s = canned_summary()
    s["cells"][0]["measurements"]["replication_lag"]["subjects"]["r1"] = {
        "max": None, "p99": None, "samples": 0, "unreadable": 0, "no_heartbeat": 40}
    r = rows(s)
    assert r["replication_lag(r1).max"] == \
        ["unknown (up, but the primary's heartbeat never reached it)"]
    s["cells"][0]["measurements"]["replication_lag"]["subjects"]["r1"] = {
        "max": None, "p99": None, "samples": 0, "unreadable": 12}
    assert rows(s)["replication_lag(r1).max"] == ["unknown (unreadable: 12 samples)"]


def test_labels_say_what_was_measured() -> None:
    r = rows(canned_summary())
    assert r["latency(sb).max of per-second p95"] == ["62.3 ms"]
    assert "latency(sb).max" not in r
    assert r["facts(db2).relay_log_bytes (before → after the replica's start)"] == \
        ["1.00 KiB → 5.00 MiB"]
    # one minimum only: warmup's, relative to the level before the fault
    assert r["warmup(sb).min_level (lowest 1 s after the fault, vs before)"] == ["75.0%"]
    assert r["warmup(sb).time (back to 90% of the level)"] == ["3.00 s"]
    assert not any(".min" in k and "min_level" not in k for k in r)
    assert r["stalls(hang).count (whole seconds at 0/s)"] == ["2 s of 20 s"]


def test_lost_writes_unchecked_and_per_node() -> None:
    r = rows(canned_summary())
    assert r["lost_writes(ins).count"] == ["2 (+ 12 unchecked)"]
    assert r["lost_writes(ins).not_replicated"] == ["5"]
    assert "lost_writes(ryw).divergent" not in r  # zero everywhere
    assert r["lost_writes(ryw on db1).missing at end"] == ["0 (authority)"]


def test_expectations_show_the_explanation_not_a_raw_float() -> None:
    text = render(canned_summary(), width=200)
    line = line_of(text, "expect stale_reads(ryw) > 0")
    assert "PASS stale_reads(ryw).count = 47,185" in line
    assert "47185" not in text


def test_several_cells() -> None:
    s = canned_summary()
    other = copy.deepcopy(s["cells"][0])
    other.update(index=2, label="#2", notes=[])
    other["measurements"]["downtime"]["subjects"]["ryw on db2"]["longest_open_at_end"] = False
    other["measurements"]["downtime"]["subjects"]["ryw on db2"]["open_at_end"] = False
    s["cells"].append(other)
    r = rows(s)
    assert r["downtime(ryw on db2).longest"] == ["≥ 4.20 s (still down at end)", "4.20 s"]
    text = render(s, width=200)
    assert text.count("did not settle") == 1 and "cell 1 (#1)" in text


# --- the live view ---------------------------------------------------------------------------


def test_live_plain_lines_use_the_formatter(capsys: pytest.CaptureFixture[str]) -> None:
    view = LiveView(Console(file=io.StringIO()), plain=True)
    view.cell_label = "quickstart [1/1] #1"
    view.tick(11.2, 30.0, {"writes": {"ops": 100.0, "errors": 0.0},
                           "ryw": {"ops": 12554.0, "errors": 697.0}}, [], None)  # fmt: skip
    err = capsys.readouterr().err
    assert "writes=100.0/s err=0.0/s" in err
    assert "ryw=12,554/s err=697.0/s" in err
