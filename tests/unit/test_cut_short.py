"""A run cut short judges nothing as PASS (issue 24 item 7): a claim across cells whose run has
a cell that was interrupted or stopped by an error is unknown, with the reason. The cell's own
expectations: tests/unit/test_store_faults.py (Ctrl-C mid-load, the disk filling mid-run)."""

from __future__ import annotations

import pytest

from dsl.api import plan_text
from lab.judge.claims import Side
from lab.judge.expectations import ExpectationOutcome, not_judged
from lab.run.outcome import CellOutcome, RunOutcome, conclude

SOURCE = """experiment "claims" {
  topology single { node db1 }
  variant durable { sync_binlog = 1 }
  variant relaxed { sync_binlog = 0 }
  workload w: probe { target db1 }
  expect throughput(w) in relaxed >= 1.3 * throughput(w) in durable
}
"""


def outcome(statuses: tuple[str, str]) -> RunOutcome:
    plan = plan_text(SOURCE, "claims.exp")
    durable, relaxed = plan.cells
    sides = ({"0:right": Side(100.0, "rate")}, {"0:left": Side(200.0, "rate")})
    cells = [CellOutcome(cell=c, status=s, claim_sides=sd)
             for c, s, sd in zip((durable, relaxed), statuses, sides, strict=True)]
    return conclude(RunOutcome("r", plan, cells))


def test_a_claim_holds_when_every_cell_ran() -> None:
    [claim] = outcome(("passed", "passed")).claims
    assert claim.passed is True


@pytest.mark.parametrize("status", ["interrupted", "error"])
def test_a_claim_of_a_run_cut_short_is_not_judged(status: str) -> None:
    out = outcome(("passed", status))
    [claim] = out.claims
    assert claim.passed is None
    assert claim.explanation.startswith("not judged: cell 2 was cut short; ")
    assert "ratio 2" in claim.explanation  # the figures stay
    assert out.exit_code == 3


def test_not_judged_keeps_the_figure_and_says_why() -> None:
    o = ExpectationOutcome(True, 0.2, "duration", "expect downtime(w) < 1s",
                           "downtime(w).max = 200 ms: holds", "downtime(w).max")
    [n] = not_judged([o], "the cell was interrupted after 3.0 s of its 30 s load")
    assert (n.passed, n.measured, n.unit, n.text) == (None, 0.2, "duration", o.text)
    assert n.explanation == ("not judged: the cell was interrupted after 3.0 s of its 30 s load; "
                             "on the load until then: downtime(w).max = 200 ms: holds")
