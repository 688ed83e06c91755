"""The `lab` command (``python -m lab.cli``: ``__main__``): the parser, and the dispatch to the
modules beside this one, one per group of commands: ``run`` (run, runs, show), ``lang`` (check,
plan), ``topology`` (up, down, status, gc), ``explore`` (explore, replay, shrink, search),
``compare``, ``report``, ``image`` (image build), ``doctor``. A thin layer over the library.
Exit codes: 0 all expectations hold, 1 an expectation failed (doctor: a needed component is
missing), 2 usage or language error, 3 the run could not complete."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rich.console import Console

from lab import __version__

BACKENDS = ("native", "containers")  # --backend of run, explore, replay, shrink, search


def _doctor(args: argparse.Namespace) -> int:
    from lab.cli import doctor

    found = doctor.doctor_rows()
    console = Console()
    doctor.render(found, console)
    doctor.render_containers(console)
    return doctor.exit_status(found)


def _image_build(args: argparse.Namespace) -> int:
    from lab.cli.image import cmd_image_build

    return cmd_image_build()


def _check(args: argparse.Namespace) -> int:
    from lab.cli.lang import cmd_check

    return cmd_check(args.files)


def _plan(args: argparse.Namespace) -> int:
    from lab.cli.lang import cmd_plan

    return cmd_plan(args.file, args.json)


def _up(args: argparse.Namespace) -> int:
    from lab.cli.topology import cmd_up

    return cmd_up(args.file, cell=args.cell)


def _down(args: argparse.Namespace) -> int:
    from lab.cli.topology import cmd_down

    return cmd_down(args.run)


def _status(args: argparse.Namespace) -> int:
    from lab.cli.topology import cmd_status

    return cmd_status()


def _gc(args: argparse.Namespace) -> int:
    from lab.cli.topology import cmd_gc

    return cmd_gc(db=args.db)


def _run(args: argparse.Namespace) -> int:
    from lab.cli.run import cmd_run

    return cmd_run(args.file, as_json=args.json, keep=args.keep, db=args.db, step=args.step,
                   step_delay=args.step_delay, backend=args.backend)


def _explore(args: argparse.Namespace) -> int:
    from lab.cli.explore import cmd_explore

    return cmd_explore(args.file, runs=args.runs, seed=args.seed, db=args.db,
                       dry_run=args.dry_run, backend=args.backend)


def _replay(args: argparse.Namespace) -> int:
    from lab.cli.explore import cmd_replay

    return cmd_replay(args.run, db=args.db, backend=args.backend)


def _shrink(args: argparse.Namespace) -> int:
    from lab.cli.explore import cmd_shrink

    return cmd_shrink(args.run, expect=args.expect, k=args.fails, n=args.of,
                      max_candidates=args.max_candidates, out=args.out, db=args.db,
                      backend=args.backend)


def _search(args: argparse.Namespace) -> int:
    from lab.cli.explore import cmd_search

    return cmd_search(args.file, knob=args.knob, low=args.low, high=args.high,
                      expect=args.expect, resolution=args.resolution, k=args.fails, n=args.of,
                      db=args.db, as_json=args.json, backend=args.backend)


def _runs(args: argparse.Namespace) -> int:
    from lab.cli.run import cmd_runs

    return cmd_runs(db=args.db)


def _show(args: argparse.Namespace) -> int:
    from lab.cli.run import cmd_show

    return cmd_show(args.run, db=args.db, as_json=args.json, show_all=args.all)


def _compare(args: argparse.Namespace) -> int:
    from lab.cli.compare import cmd_compare

    return cmd_compare(args.runs, variants=args.variants, base=args.base, last=args.last,
                       as_json=args.json, markdown=args.markdown, db=args.db)


def _report(args: argparse.Namespace) -> int:
    from lab.cli.report import cmd_report

    return cmd_report(args.run, html=args.html, db=args.db)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="lab", description="replica-chaos-lab: break real replication setups, measure."
    )
    p.add_argument("--version", action="version", version=f"lab {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("doctor", help="show every component: path, version, status")
    s.set_defaults(func=_doctor)

    s = sub.add_parser("image", help="the container back-end's node image")
    image_sub = s.add_subparsers(dest="image_command", required=True, metavar="ACTION")
    b = image_sub.add_parser("build", help="build the node image now (or show the cached one)")
    b.set_defaults(func=_image_build)

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
    s.add_argument("--backend", choices=BACKENDS, default=None,
                   help="where the servers run, whatever the file says (backend ...)")
    s.set_defaults(func=_run)

    s = sub.add_parser("explore", help="draw schedules from a file's fault space and run each")
    s.add_argument("file", metavar="FILE")
    s.add_argument("--runs", type=int, default=10, help="how many schedules (default 10)")
    s.add_argument("--seed", type=int, default=None,
                   help="the seed of the draws (default: the file's seed)")
    s.add_argument("--dry-run", action="store_true",
                   help="print the schedules it would run; start nothing")
    s.add_argument("--db", default=None, help=db_help)
    s.add_argument("--backend", choices=BACKENDS, default=None,
                   help="where the servers run, whatever the file says (backend ...)")
    s.set_defaults(func=_explore)

    s = sub.add_parser("replay", help="run a stored run's .exp again (its schedule, exactly)")
    s.add_argument("run", metavar="RUN", help="run id (any unique prefix)")
    s.add_argument("--db", default=None, help=db_help)
    s.add_argument("--backend", choices=BACKENDS, default=None,
                   help="where the servers run (default: where the run ran)")
    s.set_defaults(func=_replay)

    s = sub.add_parser("shrink", help="a failing run's smallest schedule that still fails")
    s.add_argument("run", metavar="RUN", help="run id (any unique prefix)")
    s.add_argument("--expect", default=None, metavar="TEXT",
                   help="the expectation to keep failing (default: the run's first failed)")
    s.add_argument("--fails", type=int, default=2, metavar="K",
                   help="a candidate fails when it fails in K runs ... (default 2)")
    s.add_argument("--of", type=int, default=3, metavar="N", help="... of N (default 3)")
    s.add_argument("--max-candidates", type=int, default=40, metavar="M",
                   help="judge at most M candidates (default 40)")
    s.add_argument("--out", default=None, metavar="FILE",
                   help="where to write the result (default: beside the run's .exp)")
    s.add_argument("--db", default=None, help=db_help)
    s.add_argument("--backend", choices=BACKENDS, default=None,
                   help="where the servers run (default: where the run ran)")
    s.set_defaults(func=_shrink)

    s = sub.add_parser("search", help="bisect one knob of a file for where an expectation flips")
    s.add_argument("file", metavar="FILE")
    s.add_argument("--knob", required=True, metavar="NAME",
                   help="a vary, a setting, WORKLOAD.FIELD, or LINE:for|at|size")
    s.add_argument("--from", dest="low", required=True, metavar="A", help="one end (e.g. 100ms)")
    s.add_argument("--to", dest="high", required=True, metavar="B", help="the other end")
    s.add_argument("--expect", default=None, metavar="TEXT",
                   help="the expectation (default: the file's only one)")
    s.add_argument("--resolution", default=None, metavar="R",
                   help="stop when the interval is this narrow (default: an eighth of A..B)")
    s.add_argument("--fails", type=int, default=2, metavar="K",
                   help="a value fails when it fails in K runs ... (default 2)")
    s.add_argument("--of", type=int, default=3, metavar="N", help="... of N (default 3)")
    s.add_argument("--json", action="store_true",
                   help="print the boundary and every value judged as JSON (progress on stderr)")
    s.add_argument("--db", default=None, help=db_help)
    s.add_argument("--backend", choices=BACKENDS, default=None,
                   help="where the servers run, whatever the file says (backend ...)")
    s.set_defaults(func=_search)

    s = sub.add_parser("runs", help="list stored runs")
    s.add_argument("--db", default=None, help=db_help)
    s.set_defaults(func=_runs)

    s = sub.add_parser("show", help="print one stored run: faults, the matrix, expectations")
    s.add_argument("run", metavar="RUN", help="run id (any unique prefix)")
    s.add_argument("--json", action="store_true")
    s.add_argument("--all", action="store_true", help="every figure, one per line")
    s.add_argument("--db", default=None, help=db_help)
    s.set_defaults(func=_show)

    s = sub.add_parser(
        "compare", help="stored runs side by side with ratios; or a run's variants over repeats"
    )
    s.add_argument("runs", nargs="+", metavar="RUN",
                   help="run ids (any unique prefix); RUN:N is cell N of a run")
    s.add_argument("--variants", action="store_true",
                   help="the cells of one run by variant: median, min-max, 95%% CI, ratio")
    s.add_argument("--base", default=None, metavar="NAME",
                   help="the base variant (default: the first)")
    s.add_argument("--last", default=None, metavar="DURATION",
                   help="also the per-second series over the last DURATION of the load (10s)")
    s.add_argument("--json", action="store_true", help="the comparison as JSON")
    s.add_argument("--markdown", action="store_true", help="a Markdown table for a ticket")
    s.add_argument("--db", default=None, help=db_help)
    s.set_defaults(func=_compare)
    s = sub.add_parser("report", help="a stored run's report; --html FILE: charts, offline")
    s.add_argument("run", metavar="RUN", help="run id (any unique prefix)")
    s.add_argument("--html", metavar="FILE", default=None,
                   help="write the HTML report (one self-contained file) to FILE")
    s.add_argument("--db", default=None, help=db_help)
    s.set_defaults(func=_report)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130

