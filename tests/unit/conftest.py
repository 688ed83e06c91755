"""Every module of the project imported before any test runs.

pytester's in-process runs (tests of the pytest plugin) put ``sys.modules`` back as it was when
they began: a module first imported during one is dropped from ``sys.modules`` afterwards while
its package keeps the old module as an attribute. A later ``monkeypatch.setattr("pkg.mod.f",
...)`` then patches the old module and the code under test, importing ``pkg.mod`` again, runs
the unpatched one: the test passes or fails by which tests ran before it (found by running the
suite in a random order, `make test-random`). Imported here once, no module is ever new to a
pytester run, so there is one of each.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import Any

import pytest

import dsl
import fault
import lab
import runners

for _pkg in (dsl, lab, runners, fault):
    for _mod in pkgutil.walk_packages(_pkg.__path__, _pkg.__name__ + "."):
        importlib.import_module(_mod.name)


@pytest.fixture
def lab_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lab's runtime and home under the test's own directory (the store tests use it on
    every test: ``pytestmark = pytest.mark.usefixtures("lab_dirs")``)."""
    monkeypatch.setenv("LAB_RUNTIME", str(tmp_path / "rt"))
    monkeypatch.setenv("LAB_HOME", str(tmp_path / "home"))


@pytest.fixture
def no_servers(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Fails the test if `lab run` gets as far as checking components or deploying; the list
    says whether it was reached."""
    reached: list[str] = []

    def components(plan: Any) -> None:
        reached.append("check_components")
        raise AssertionError("the results database must be checked before anything else")

    monkeypatch.setattr("runners.topology.check_components", components)
    return reached
