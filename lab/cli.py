"""The `lab` command: a thin layer over the library. Exit codes: 0 all expectations hold,
1 an expectation failed (doctor: a needed component is missing), 2 usage or language error,
3 the run could not complete."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rich.console import Console

from lab import __version__


def _doctor(args: argparse.Namespace) -> int:
    from lab import doctor

    found = doctor.doctor_rows()
    doctor.render(found, Console())
    return doctor.exit_status(found)


def _check(args: argparse.Namespace) -> int:
    from lab.cli_lang import cmd_check

    return cmd_check(args.files)


def _plan(args: argparse.Namespace) -> int:
    from lab.cli_lang import cmd_plan

    return cmd_plan(args.file, args.json)


def _up(args: argparse.Namespace) -> int:
    from lab.cli_topology import cmd_up

    return cmd_up(args.file, cell=args.cell)


def _down(args: argparse.Namespace) -> int:
    from lab.cli_topology import cmd_down

    return cmd_down(args.run)


def _status(args: argparse.Namespace) -> int:
    from lab.cli_topology import cmd_status

    return cmd_status()


def _gc(args: argparse.Namespace) -> int:
    from lab.cli_topology import cmd_gc

    return cmd_gc(db=args.db)


def _run(args: argparse.Namespace) -> int:
    from lab.cli_run import cmd_run

    return cmd_run(args.file, as_json=args.json, keep=args.keep, db=args.db, step=args.step,
                   step_delay=args.step_delay)


def _runs(args: argparse.Namespace) -> int:
    from lab.cli_run import cmd_runs

    return cmd_runs(db=args.db)


def _show(args: argparse.Namespace) -> int:
    from lab.cli_run import cmd_show

    return cmd_show(args.run, db=args.db, as_json=args.json)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="lab", description="replica-chaos-lab: break real replication setups, measure."
    )
    p.add_argument("--version", action="version", version=f"lab {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("doctor", help="show every component: path, version, status")
    s.set_defaults(func=_doctor)

    s = sub.add_parser("check", help="check .exp files; every error at once (exit 2)")
    s.add_argument("files", nargs="+", metavar="FILE")
    s.set_defaults(func=_check)

    s = sub.add_parser("plan", help="print the compiled plan of an experiment")
    s.add_argument("file", metavar="FILE")
    s.add_argument("--json", action="store_true", help="the plan as JSON")
    s.set_defaults(func=_plan)

    s = sub.add_parser("up", help="bring an experiment's topology up and keep it")
    s.add_argument("file", metavar="FILE")
    s.add_argument("--cell", type=int, default=1, help="which matrix cell (default 1)")
    s.set_defaults(func=_up)

    s = sub.add_parser("down", help="tear down a topology started by `lab up`")
    s.add_argument("run", metavar="RUN", help="run id (any unique prefix) or 'all'")
    s.set_defaults(func=_down)

    s = sub.add_parser("status", help="list topologies that are up and their endpoints")
    s.set_defaults(func=_status)

    db_help = "results database (default $LAB_HOME/results.db)"
    s = sub.add_parser(
        "gc", help="stop and remove what dead runs left behind; mark their runs abandoned"
    )
    s.add_argument("--db", default=None, help=db_help)
    s.set_defaults(func=_gc)

    s = sub.add_parser("run", help="run an experiment and report")
    s.add_argument("file", metavar="FILE")
    s.add_argument("--json", action="store_true", help="print the summary as JSON")
    s.add_argument("--keep", action="store_true", help="keep the topology up afterwards")
    s.add_argument("--db", default=None, help=db_help)
    s.add_argument("--step", action="store_true",
                   help="pause before each timeline action; Enter fires it (needs a terminal)")
    s.add_argument("--step-delay", metavar="DURATION", default=None,
                   help="pause this long before each timeline action (e.g. 5s), no keyboard")
    s.set_defaults(func=_run)

    s = sub.add_parser("runs", help="list stored runs")
    s.add_argument("--db", default=None, help=db_help)
    s.set_defaults(func=_runs)

    s = sub.add_parser("show", help="print one stored run")
    s.add_argument("run", metavar="RUN", help="run id (any unique prefix)")
    s.add_argument("--json", action="store_true")
    s.add_argument("--db", default=None, help=db_help)
    s.set_defaults(func=_show)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
