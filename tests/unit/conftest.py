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

import dsl
import fault
import lab
import runners

for _pkg in (dsl, lab, runners, fault):
    for _mod in pkgutil.walk_packages(_pkg.__path__, _pkg.__name__ + "."):
        importlib.import_module(_mod.name)
