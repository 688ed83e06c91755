"""`lab up`, `lab down`, `lab status`, `lab gc`: topologies kept up by hand."""

from __future__ import annotations

import signal
import sys
import time
from types import FrameType

from rich.console import Console
from rich.table import Table

from runners import runtime
from runners.components import MissingComponent
from runners.errors import ComponentError

err = Console(stderr=True)


class Terminated(Exception):
    """SIGTERM (from `lab down`) turned into an exception so teardown runs."""


def _on_term(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


def cmd_up(path: str, cell: int = 1) -> int:
    from dsl.api import check_file, format_errors, load_plan
    from runners.topology import Topology

    errors = check_file(path)
    if errors:
        print(format_errors(errors), file=sys.stderr)
        return 2
    plan = load_plan(path)
    if not 1 <= cell <= len(plan.cells):
        err.print(f"Error: --cell must be between 1 and {len(plan.cells)}")
        return 2
    the_cell = plan.cells[cell - 1]
    out = Console()
    signal.signal(signal.SIGTERM, _on_term)
    run = runtime.Run(experiment=plan.name)
    topo = None
    try:
        out.print(f"[bold]run {run.id}[/]: bringing up {plan.topology} "
                  f"({', '.join(n.name for n in the_cell.nodes)}) for {plan.name}")
        topo = Topology.deploy(plan, the_cell, run)
        table = Table(title=f"run {run.id} is up in {topo.timings['ready']:.1f}s")
        table.add_column("endpoint")
        table.add_column("address")
        table.add_column("connect with")
        for name, addr in topo.endpoints().items():
            table.add_row(name, addr, topo.connect_hint(name))
        out.print(table)
        out.print(f"admin user: {topo.admin.user} / {topo.admin.password}   "
                  f"run directory: {run.dir}")
        out.print(f"Stop with Ctrl-C or `lab down {run.id}`.")
        while True:
            time.sleep(3600)
    except (KeyboardInterrupt, Terminated):
        out.print("stopping ...")
        return 0
    except (ComponentError, MissingComponent) as e:
        err.print(f"Error: {e}")
        return 3
    finally:
        if topo is not None:
            topo.teardown()
        run.close()


def _find(prefix: str) -> list[runtime.RunInfo]:
    runs = runtime.list_runs()
    if prefix == "all":
        return runs
    return [r for r in runs if r.id.startswith(prefix)]


def cmd_down(prefix: str) -> int:
    found = _find(prefix)
    if not found:
        err.print(f"Error: no run matches {prefix!r} (see `lab status`)")
        return 2
    if len(found) > 1 and prefix != "all":
        err.print(f"Error: {prefix!r} matches {len(found)} runs: "
                  f"{', '.join(r.id for r in found)}")
        return 2
    for info in found:
        if runtime.signal_owner(info):
            deadline = time.monotonic() + 30
            while info.dir.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        if info.dir.exists():  # the owner is gone or did not clean up: do it here
            runtime.kill_records(info.records)
            import shutil

            shutil.rmtree(info.dir, ignore_errors=True)
        print(f"run {info.id} is down")
    return 0


def cmd_status() -> int:
    runs = runtime.list_runs()
    if not runs:
        print("nothing is up")
        return 0
    table = Table(title="runs on this machine")
    for col in ("run", "experiment", "state", "owner", "processes", "endpoints"):
        table.add_column(col, overflow="fold")
    for info in runs:
        live = sum(1 for r in info.records if runtime.alive(r.pid, r.start_time))
        endpoints = info.meta.get("endpoints") or {}
        eps = ", ".join(f"{k}={v}" for k, v in endpoints.items()) if isinstance(endpoints, dict) else ""
        table.add_row(info.id, str(info.meta.get("experiment", "")), str(info.meta.get("state", "")),
                      "alive" if info.owner_alive else "dead (lab gc removes it)",
                      f"{live}/{len(info.records)}", eps)
    Console().print(table)
    return 0


def cmd_gc() -> int:
    removed = runtime.gc()
    print(f"removed {len(removed)} dead run(s)" + (f": {', '.join(removed)}" if removed else ""))
    return 0
