"""Sum what ``RCL_TEST_CPU=FILE make test`` recorded (tests/integration/cpu_account.py): the
integration tests by CPU seconds, most first, with their wall seconds and the totals.

    .venv/bin/python tools/test_cpu.py FILE [N]
"""

from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> int:
    rows = [json.loads(line) for line in open(argv[1]) if line.strip()]
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
