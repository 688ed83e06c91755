"""Storing a cell's and a run's results, and what happens when the results database fails.

When the database fails mid-run (a full disk), the cell stops as ``error``, is checked from the
history in memory, and the run ends with exit 3; what the database did not take goes to the
fallback file next to it (``lab.store.fallback.fallback_path``), and ``store_error`` is the one line
saying which file, why, and where things went.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from dsl.plan import Plan
from lab.exits import EXIT_INCOMPLETE
from lab.history import fault_windows
from lab.run.outcome import CellOutcome, RunOutcome
from lab.run.recorder import Recorder, RecorderError
from lab.run.summary import summary
from lab.store.db import Store
from lab.store.errors import StoreUnavailable, describe_failure
from lab.store.fallback import append_fallback, fallback_path

log = logging.getLogger(__name__)

STORE_ERRORS = (sqlite3.Error, OSError)
STOPPED_FOR_STORE = "stopped: the results database failed"


class StoreFailed(Exception):
    """The recorder could not write to the results database: the cell stops."""


def check_recorder(rec: Recorder | None, store: Store) -> None:
    """Stop the cell (``StoreFailed``) when the recorder could not write to the database."""
    if rec is not None and rec.error is not None:
        raise StoreFailed(f"{STOPPED_FOR_STORE}: {describe_failure(store.path, rec.error)}")


def store_cell(store: Store, run_id: str, plan: Plan, out: CellOutcome, rec: Recorder | None,
               load_bounds: Sequence[int | None]) -> None:
    """Write the cell's results. When the database failed (the recorder's streaming or
    these writes), the cell ends as ``error`` with ``store_error`` naming the file, the
    cause and where the history went; its figures stay in the run's summary."""
    if rec is None:
        return
    try:
        rec.close()
    except RecorderError:
        pass  # rec.failure() says it
    except Exception:  # noqa: BLE001
        log.exception("closing the recorder")
    st, rid, idx = store, run_id, out.cell.index
    failures: list[BaseException] = []

    def write(fn: Callable[..., Any], *args: Any) -> None:
        try:
            fn(*args)
        except STORE_ERRORS as e:
            failures.append(e)
        except Exception:  # noqa: BLE001 - a bug: logged, the run goes on
            log.exception("storing cell %s", idx)

    if rec.error is None:
        write(st.write_faults, rid, idx, fault_windows(rec.history))
    if out.results:
        write(st.write_measurements, rid, idx, out.results)
    if out.expectations:
        write(st.write_expectations, rid, idx, out.expectations,
              [e.span.line for e in plan.expectations])  # fmt: skip
    if rec.error is not None:
        failed = StoreUnavailable.of(st.path, rec.error, writing=True)
        store_failed(out, f"{failed}; cell {idx}: {rec.storage_note()}")
    elif failures:
        failed = StoreUnavailable.of(st.path, failures[0], writing=True)
        store_failed(out, f"{failed}; cell {idx}: its history is stored, its figures are "
                          "in the run's summary only")  # fmt: skip
    load_start, load_end = load_bounds
    try:
        st.finish_cell(rid, idx, out.status, load_start_ns=load_start, load_end_ns=load_end,
                       error=out.error)  # fmt: skip
    except STORE_ERRORS as e:
        if out.store_error is None:
            failed = StoreUnavailable.of(st.path, e, writing=True)
            store_failed(out, f"{failed}; cell {idx}: its end is in the run's summary only")
    except Exception:  # noqa: BLE001
        log.exception("storing cell %s", idx)


def store_failed(out: CellOutcome, text: str) -> None:
    """The cell ends as ``error`` (``interrupted`` stays) with ``text`` in its error."""
    prior = out.error if out.status in ("error", "interrupted") else None
    if prior is not None and prior.startswith(STOPPED_FOR_STORE):
        text += "; the cell stopped early: its figures cover the load until then"
        prior = None
    out.store_error = text
    out.error = f"{prior}; {text}" if prior else text
    if out.status != "interrupted":
        out.status = "error"


def finish_without_store(outcome: RunOutcome, store: Store, e: BaseException) -> None:
    """The database refused the end of the run: the run is an error (exit 3); its summary goes
    to the fallback file, and ``store_error`` says where it is (or that it is nowhere)."""
    failed = str(StoreUnavailable.of(store.path, e, writing=True))
    if outcome.status != "interrupted":
        outcome.status = "error"
    outcome.exit_code = EXIT_INCOMPLETE
    outcome.message = outcome.store_error or failed
    fb = fallback_path(store.path, outcome.run_id)
    record = {"kind": "run", "run_id": outcome.run_id, "summary": summary(outcome)}
    try:
        append_fallback(fb, [record])
        where = f"the run's summary is in {fb}"
    except Exception as fe:  # noqa: BLE001 - said in the message
        where = (
            f"the run's summary could not be written to {fb} either "
            f"({describe_failure(fb, fe)}): the report printed now is all that remains"
        )
    if outcome.store_error is None:
        outcome.store_error = f"{failed}; {where}"
    else:
        outcome.store_error = f"{outcome.store_error}; {where}"
    log.info("%s", outcome.store_error)
