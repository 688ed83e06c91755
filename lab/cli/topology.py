"""`lab up`, `lab down`, `lab status`, `lab gc`: topologies kept up by hand.

A run has one id everywhere (12 hex digits): `lab runs`, `lab status`, `lab down` and its run
directory. A `lab run` of several cells has one directory per cell (``<id>``, ``<id>-2`` ...);
`lab down` takes down every cell of the run a prefix names.
"""

from __future__ import annotations

import signal
import sqlite3
import sys
import time
from pathlib import Path
from types import FrameType

from rich.console import Console
from rich.table import Table

from lab.exits import EXIT_INCOMPLETE, EXIT_LANGUAGE, EXIT_OK, EXIT_USAGE
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
    from runners.topology import deploy

    errors = check_file(path)
    if errors:
        print(format_errors(errors), file=sys.stderr)
        return EXIT_LANGUAGE
    plan = load_plan(path)
    if not 1 <= cell <= len(plan.cells):
        err.print(f"Error: --cell must be between 1 and {len(plan.cells)}")
        return EXIT_USAGE
    the_cell = plan.cells[cell - 1]
    out = Console()
    signal.signal(signal.SIGTERM, _on_term)
    run = runtime.Run(experiment=plan.name)
    topo = None
    try:
        out.print(f"[bold]run {run.id}[/]: bringing up {plan.topology} "
                  f"({', '.join(n.name for n in the_cell.nodes)}) for {plan.name}")
        topo = deploy(plan, the_cell, run)
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
        return EXIT_OK
    except (ComponentError, MissingComponent) as e:
        err.print(f"Error: {e}")
        return EXIT_INCOMPLETE
    finally:
        if topo is not None:
            topo.teardown()
        run.close()


def find_runs(prefix: str) -> list[runtime.RunInfo]:
    """Run directories whose run id (or directory name) starts with ``prefix``; ``all``: every
    one."""
    runs = runtime.list_runs()
    if prefix == "all":
        return runs
    prefix = prefix.strip()
    if not prefix:
        return []
    return [r for r in runs if r.run.startswith(prefix) or r.id.startswith(prefix)]


def cmd_down(prefix: str) -> int:
    found = find_runs(prefix)
    if not found:
        print(f"Error: no run that is up matches {prefix!r} (see `lab status`)", file=sys.stderr)
        return EXIT_USAGE
    runs = sorted({r.run for r in found})
    if len(runs) > 1 and prefix != "all":
        lines = [f"Error: run id {prefix!r} is ambiguous: it matches {len(runs)} runs "
                 "(give more characters):"]  # fmt: skip
        for rid in runs:
            infos = [i for i in found if i.run == rid]
            exp = infos[0].meta.get("experiment", "")
            cells = ", ".join(i.id for i in infos)
            lines.append(f"  {rid}  {exp}  ({cells})")
        print("\n".join(lines), file=sys.stderr)
        return EXIT_USAGE
    for info in found:
        if runtime.signal_owner(info):
            deadline = time.monotonic() + 30
            while info.dir.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        if info.dir.exists():  # the owner is gone or did not clean up: do it here
            runtime.remove_run(info)
        print(f"run {info.id} is down")
    return EXIT_OK


def cmd_status() -> int:
    runs = runtime.list_runs()
    if not runs:
        print("nothing is up")
        return EXIT_OK
    table = Table(title="runs on this machine")
    for col in ("run", "cell", "experiment", "state", "owner", "processes", "endpoints"):
        table.add_column(col, overflow="fold")
    for info in runs:
        live = sum(1 for r in info.records if runtime.alive(r.pid, r.start_time))
        endpoints = info.meta.get("endpoints") or {}
        eps = ""
        if isinstance(endpoints, dict):
            eps = ", ".join(f"{k}={v}" for k, v in endpoints.items())
        table.add_row(info.run, str(info.meta.get("cell", "")),
                      str(info.meta.get("experiment", "")), str(info.meta.get("state", "")),
                      "alive" if info.owner_alive else "dead (lab gc removes it)",
                      f"{live}/{len(info.records)}", eps)
    Console().print(table)
    return EXIT_OK


def cmd_gc(db: str | None = None) -> int:
    """Stop and remove what dead runs left; then mark ``abandoned`` the runs whose lab process
    is gone, in the default results database (or ``db``) and in the database each removed run
    directory names."""
    from lab.store.db import Store, default_db_path
    from lab.store.errors import StoreError, StoreUnavailable

    removed = runtime.gc_runs()
    ids = [i.id for i in removed]
    print(f"removed {len(ids)} dead run(s)" + (f": {', '.join(ids)}" if ids else ""))
    from runners.containers.engine import sweep

    left = sweep(set(ids))  # their containers, networks; the host's iptables and forwarding
    if left:
        print(f"removed what dead container runs left: {', '.join(left)}")
    dbs = [Path(db) if db else default_db_path()]
    for info in removed:
        named = info.meta.get("db")
        if isinstance(named, str) and named and Path(named) not in dbs:
            dbs.append(Path(named))
    for p in dbs:
        try:
            store = Store.open_existing(p)
            if store is None:
                continue
            with store:
                marked = store.mark_abandoned()
        except (StoreError, sqlite3.Error, OSError) as e:
            print(f"warning: {StoreUnavailable.of(p, e, writing=True)}; runs in it whose lab "
                  "process is gone are not marked abandoned", file=sys.stderr)  # fmt: skip
            continue
        if marked:
            print(f"marked {len(marked)} run(s) abandoned in {p}: {', '.join(marked)}")
    return EXIT_OK
