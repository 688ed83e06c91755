"""`lab compare RUN...` and `lab compare --variants RUN`: thin over ``lab.report.compare``.

Exit codes: 0 printed; 2 usage (an unknown or ambiguous run, ``--variants`` with several runs,
an unknown ``--base``, a ``--last`` that is not a duration); 3 the results database cannot be
read.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Sequence

from rich.console import Console

from dsl.units import QuantityError, parse_quantity
from lab.cli.run import ambiguous, store_failed, store_missing
from lab.exits import EXIT_OK, EXIT_USAGE
from lab.report.compare import (
    CompareError,
    RunComparison,
    VariantComparison,
    compare_runs,
    compare_variants,
)
from lab.report.compare_render import render_runs, render_variants, runs_markdown, variants_markdown
from lab.store.db import Store, default_db_path
from lab.store.errors import AmbiguousRun, RunNotFound, StoreError, StoreMissing


class UsageError(Exception):
    pass


def parse_last(text: str | None) -> float | None:
    """``10s``, ``1m``, ``500ms``: a duration with its unit, as in an experiment (a bare
    number is not one: ``3`` could be seconds or minutes)."""
    if text is None:
        return None
    try:
        q = parse_quantity(text.strip())
    except QuantityError as e:
        raise UsageError(f"--last {text}: {e.message} (give a duration: 10s, 1m)") from None
    if q.kind == "count":
        raise UsageError(f"--last {text}: a duration needs its unit (--last {text.strip()}s)")
    if q.kind != "duration" or q.value <= 0:
        raise UsageError(f"--last {text}: give a positive duration (10s, 1m)")
    return float(q.value)


def cmd_compare(runs: Sequence[str], *, variants: bool = False, base: str | None = None,
                last: str | None = None, as_json: bool = False, markdown: bool = False,
                db: str | None = None) -> int:  # fmt: skip
    try:
        if variants and len(runs) != 1:
            raise UsageError("--variants compares the cells of one run: name exactly one RUN")
        if base is not None and not variants:
            raise UsageError("--base names the base variant: it goes with --variants (runs are "
                             "compared with the first one named)")  # fmt: skip
        if as_json and markdown:
            raise UsageError("choose one of --json and --markdown")
        last_s = parse_last(last)
    except UsageError as e:
        print(f"Error: {e}", file=sys.stderr)
        return EXIT_USAGE
    path = db if db else str(default_db_path())
    try:
        store = Store(path, write=False)
    except StoreMissing as e:
        return store_missing(e)
    except (StoreError, sqlite3.Error, OSError) as e:
        return store_failed(db, e)
    try:
        cmp: RunComparison | VariantComparison
        if variants:
            cmp = compare_variants(store, runs[0], base=base, last=last_s)
        else:
            cmp = compare_runs(store, runs, last=last_s)
    except AmbiguousRun as e:
        print(ambiguous(store, e), file=sys.stderr)
        return EXIT_USAGE
    except (RunNotFound, CompareError) as e:
        print(f"Error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except (StoreError, sqlite3.Error, OSError) as e:
        return store_failed(db, e)
    if as_json:
        print(json.dumps(cmp.to_json(), indent=2, ensure_ascii=False))
    elif markdown:
        print(variants_markdown(cmp) if isinstance(cmp, VariantComparison)
              else runs_markdown(cmp), end="")  # fmt: skip
    elif isinstance(cmp, VariantComparison):
        render_variants(cmp, Console())
    else:
        render_runs(cmp, Console())
    if not cmp.rows:
        print("no figure is present in every cell compared", file=sys.stderr)
    return EXIT_OK
