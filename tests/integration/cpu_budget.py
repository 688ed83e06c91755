"""A CPU budget shared by the xdist workers of one integration session, so that more tests run
at once where most of them wait (a fault's timeline, a search, a container's start) without
two or three loads that keep a core busy each running together and starving the timing
figures of the tests beside them.

Each test costs the cores it used on average when it was last measured (``cpu_costs.json``:
its CPU seconds over its wall seconds, servers and loads included, from ``RCL_TEST_CPU=FILE
make test`` and ``tools/test_cpu.py FILE --costs tests/integration/cpu_costs.json``); one not
measured costs ``DEFAULT_COST``. Before a test starts (its fixtures' servers included) its
worker takes the test's cost from the budget (``RCL_TEST_BUDGET`` cores, default ``BUDGET``)
and gives it back when the test has ended; a test that does not fit waits until enough is
given back. A test is counted for at most ``LARGEST_SHARE`` of the budget, and one is always
let in when nothing is held. The waiting is first come, first served: every taker passes a turnstile
(flock) and the one that waits holds it, so small tests arriving later cannot keep a large one
waiting for ever.

The budget's state is a file of holders (worker pid: cores) under an flock; a holder whose
process is gone (a worker killed) is dropped, so a crash cannot keep its share. Off outside
xdist (one test at a time needs no budget) and with ``RCL_TEST_BUDGET=0``.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

COSTS = Path(__file__).with_name("cpu_costs.json")
BUDGET = 1.7       # cores of this 2-core machine that the tests' own work may keep busy
LARGEST_SHARE = 0.7  # of the budget, the most one test is counted for
DEFAULT_COST = 0.5  # a test not measured yet
POLL = 0.1          # seconds between looks at the budget while waiting for it


def key_of(nodeid: str) -> str:
    """A test's id without xdist's ``@group`` suffix (the group is where it ran, not what); an
    ``@`` inside a parameter stays."""
    head, at, group = nodeid.rpartition("@")
    return head if at and re.fullmatch(r"[\w-]+", group) else nodeid


def load_costs(path: Path = COSTS) -> dict[str, float]:
    try:
        return {k: float(v) for k, v in json.loads(path.read_text()).items()}
    except FileNotFoundError:
        return {}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Budget:
    """The budget of ``total`` cores, its state kept in ``directory`` (shared by the workers)."""

    def __init__(self, directory: Path, total: float) -> None:
        self.dir = directory
        self.total = total
        # a test costs at most this much: the largest (1.4 cores) would otherwise wait for the
        # budget to empty while the workers idle behind it
        self.largest = LARGEST_SHARE * total
        directory.mkdir(parents=True, exist_ok=True)
        self.state = directory / "held.json"

    @contextmanager
    def _locked(self, name: str) -> Iterator[None]:
        with open(self.dir / name, "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def _read(self) -> dict[str, float]:
        try:
            held = {k: float(v) for k, v in json.loads(self.state.read_text()).items()}
        except (FileNotFoundError, ValueError):
            return {}
        return {k: v for k, v in held.items() if _alive(int(k.split(":")[0]))}

    def _write(self, held: dict[str, float]) -> None:
        tmp = self.state.with_suffix(".tmp")
        tmp.write_text(json.dumps(held))
        tmp.replace(self.state)

    def held(self) -> float:
        with self._locked("lock"):
            return sum(self._read().values())

    def _try_take(self, holder: str, cores: float) -> bool:
        with self._locked("lock"):
            held = self._read()
            used = sum(held.values())
            if used and used + cores > self.total + 1e-9:
                self._write(held)  # the dead holders dropped
                return False
            held[holder] = held.get(holder, 0.0) + cores
            self._write(held)
            return True

    def take(self, holder: str, cores: float) -> float:
        """Wait until ``cores`` fit (or nothing is held), take them; the seconds waited. Every
        taker passes the turnstile, one at a time: first come, first served (a taker that
        went straight to the budget when it fitted kept a larger test waiting for ever: the
        small ones always fitted, the large one never)."""
        t0, cost = time.monotonic(), min(cores, self.largest)
        with self._locked("turn"):
            if self._try_take(holder, cost):
                return 0.0
            while not self._try_take(holder, cost):
                time.sleep(POLL)
        return time.monotonic() - t0

    def give_back(self, holder: str) -> None:
        with self._locked("lock"):
            held = self._read()
            held.pop(holder, None)
            self._write(held)


class BudgetPlugin:
    def __init__(self, budget: Budget, costs: dict[str, float]) -> None:
        self.budget = budget
        self.costs = costs
        self.holder = f"{os.getpid()}:{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"

    def cost(self, nodeid: str) -> float:
        return self.costs.get(key_of(nodeid), DEFAULT_COST)

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        waited = self.budget.take(self.holder, self.cost(item.nodeid))
        if waited >= 1.0:
            item.user_properties.append(("cpu_budget_wait_s", round(waited, 1)))
        try:
            yield
        finally:
            self.budget.give_back(self.holder)


def budget_dir(uid: str) -> Path:
    return Path("/tmp") / f"rcl-it-budget-{uid}"


def register(config: pytest.Config) -> None:
    """In an xdist worker: the session's budget, unless ``RCL_TEST_BUDGET=0``. In the
    controller of an xdist session: the session's id chosen here (xdist's ``--testrunuid``,
    which the workers get), so that the controller can remove the budget's state at the end."""
    if not hasattr(config, "workerinput"):
        if getattr(config.option, "numprocesses", None) and config.option.testrunuid is None:
            config.option.testrunuid = uuid.uuid4().hex
        return
    uid = config.workerinput["testrunuid"]
    total = float(os.environ.get("RCL_TEST_BUDGET", BUDGET))
    if total <= 0:
        return
    config.pluginmanager.register(BudgetPlugin(Budget(budget_dir(uid), total), load_costs()),
                                  "rcl-cpu-budget")


def remove(config: pytest.Config) -> None:
    """The controller removes the session's budget state at the end."""
    uid = getattr(config.option, "testrunuid", None)
    if not hasattr(config, "workerinput") and uid:
        shutil.rmtree(budget_dir(uid), ignore_errors=True)
