"""Sum what ``RCL_TEST_CPU=FILE make test`` recorded (tests/integration/cpu_account.py): the
integration tests by CPU seconds, most first, with their wall seconds and the totals.

    .venv/bin/python tools/test_cpu.py FILE [N]
    .venv/bin/python tools/test_cpu.py FILE --costs tests/integration/cpu_costs.json

``--costs OUT`` writes each test's cost for the workers' CPU budget (tests/integration/
cpu_budget.py): the cores it used on average (CPU seconds over wall seconds; the highest of its
runs), at least ``CONTAINER_FLOOR`` for a container test, whose containers are not counted.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.integration.cpu_budget import key_of  # noqa: E402

CONTAINER_FLOOR = 0.8  # a container test's servers run in podman's cgroups, not counted


def costs(rows: list[dict[str, Any]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for r in rows:
        key = key_of(r["test"])
        cores = r["cpu_s"] / max(r["wall_s"], 0.01)
        if "@containers" in r["test"] or "test_containers" in key:
            cores = max(cores, CONTAINER_FLOOR)
        out[key] = round(max(out.get(key, 0.0), cores), 2)
    return dict(sorted(out.items()))


def main(argv: list[str]) -> int:
    rows = [json.loads(line) for line in open(argv[1]) if line.strip()]
    if len(argv) > 3 and argv[2] == "--costs":
        with open(argv[3], "w") as f:
            json.dump(costs(rows), f, indent=0)
            f.write("\n")
        print(f"{argv[3]}: the costs of {len(costs(rows))} tests")
        return 0
    top = int(argv[2]) if len(argv) > 2 else 40
    rows.sort(key=lambda r: -r["cpu_s"])
    cpu, wall = sum(r["cpu_s"] for r in rows), sum(r["wall_s"] for r in rows)
    print(f"{len(rows)} tests: {cpu:.0f} CPU s in {wall:.0f} wall s (containers not counted)")
    print(f"{'cpu_s':>7} {'wall_s':>7} {'cores':>5} {'busy':>5}  test")
    for r in rows[:top]:
        cores = r["cpu_s"] / max(r["wall_s"], 0.01)
        print(f"{r['cpu_s']:7.1f} {r['wall_s']:7.1f} {cores:5.2f} {r['machine_busy']:5.2f}  "
              f"{r['test']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
