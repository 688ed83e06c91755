"""The integration workers' CPU budget (tests/integration/cpu_budget.py): what fits is taken at
once, what does not waits for a give-back, a test larger than the budget waits until nothing is
held, and a holder whose process is gone loses its share."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.integration.cpu_budget import Budget, BudgetPlugin, key_of, load_costs
from tools.test_cpu import costs


def test_what_fits_is_taken_at_once_and_what_does_not_waits_for_a_give_back(
        tmp_path: Path) -> None:
    b = Budget(tmp_path, 1.5)
    assert b.take("1:gw0", 1.0) == 0.0
    assert b.take("2:gw1", 0.4) == 0.0
    took: list[float] = []
    t = threading.Thread(target=lambda: took.append(b.take("3:gw2", 0.5)))
    t.start()
    time.sleep(0.4)
    assert not took, "0.5 more than the 1.4 held does not fit in 1.5"
    b.give_back("1:gw0")
    t.join(5)
    assert took and took[0] >= 0.3
    assert abs(b.held() - 0.9) < 1e-9


def test_a_test_larger_than_the_budget_runs_when_nothing_else_does(tmp_path: Path) -> None:
    b = Budget(tmp_path, 1.5)
    assert b.take("1:gw0", 2.5) == 0.0  # nothing held: it may run, alone
    assert abs(b.held() - 1.05) < 1e-9  # counted for 70 % of the budget
    done = threading.Event()
    threading.Thread(target=lambda: (b.take("2:gw1", 0.5), done.set())).start()
    assert not done.wait(0.3)
    b.give_back("1:gw0")
    assert done.wait(5)


def test_a_small_test_arriving_later_does_not_overtake_a_waiting_large_one(
        tmp_path: Path) -> None:
    b = Budget(tmp_path, 1.5)
    b.take("1:gw0", 0.6)
    b.take("2:gw1", 0.6)
    order: list[str] = []
    large = threading.Thread(target=lambda: (b.take("3:gw2", 0.8), order.append("large")))
    large.start()
    time.sleep(0.3)  # the large one waits (1.2 held; 0.8 more does not fit)
    small = threading.Thread(target=lambda: (b.take("4:gw3", 0.1), order.append("small")))
    small.start()
    time.sleep(0.3)
    assert order == [], "0.1 fits beside 1.2 but must wait behind the large one"
    b.give_back("1:gw0")
    large.join(5)
    small.join(5)
    assert order == ["large", "small"]


def test_a_dead_holder_loses_its_share(tmp_path: Path) -> None:
    b = Budget(tmp_path, 1.5)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    (tmp_path / "held.json").write_text(json.dumps({f"{gone.pid}:gw0": 1.5}))
    assert b.take("1:gw1", 1.0) == 0.0
    assert abs(b.held() - 1.0) < 1e-9


def test_a_test_costs_what_it_was_measured_to_use_and_an_unmeasured_one_the_default(
        tmp_path: Path) -> None:
    rows = [{"test": "t.py::a@heavy", "cpu_s": 30.0, "wall_s": 20.0},
            {"test": "t.py::a@heavy", "cpu_s": 10.0, "wall_s": 20.0},
            {"test": "test_containers.py::c@containers", "cpu_s": 4.0, "wall_s": 40.0}]
    table = costs(rows)
    assert table == {"t.py::a": 1.5, "test_containers.py::c": 0.8}
    (tmp_path / "costs.json").write_text(json.dumps(table))
    plugin = BudgetPlugin(Budget(tmp_path / "b", 1.5), load_costs(tmp_path / "costs.json"))
    assert plugin.cost("t.py::a@heavy") == 1.5
    assert plugin.cost("t.py::b") == 0.5
    assert key_of("t.py::x[a@b]@grp") == "t.py::x[a@b]"
    assert key_of("t.py::x[a@b]") == "t.py::x[a@b]"


def test_the_checked_in_costs_name_tests_that_exist() -> None:
    """Every key of cpu_costs.json is a test id without an ``@group``; ids are checked against
    the files they name (a renamed test's cost would silently become the default)."""
    table = load_costs()
    assert table, "tests/integration/cpu_costs.json is missing or empty"
    root = Path(__file__).resolve().parents[2]
    for key in table:
        assert "@" not in key
        path, _, name = key.partition("::")
        func = name.split("[", 1)[0]
        assert func in (root / path).read_text(), key
