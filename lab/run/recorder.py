"""The recorder: where every client thread writes its operations as they happen.

``record(op)`` is the hot path: under one lock it assigns the next index and appends the op to
the in-memory history (what the checkers read). A separate writer thread wakes every
``batch_interval`` seconds (or as soon as ``batch_size`` ops are waiting), takes the part of the
history it has not written yet (a slice: the history only grows) and writes it to SQLite
outside of the lock, so clients never wait for the disk. Each wake is one transaction, the
operations encoded 100 at a time with a short sleep in between (``GIL_PAUSE``): the encoding
holds the GIL, and a client whose round trip ends must not wait behind a long batch.
``close()`` flushes what is left, writes the faults table from the history and joins the
writer.

Durability of the history: what the writer has committed survives Ctrl-C, ``kill -9`` of the
lab and any crash of the lab's process (WAL with ``synchronous = normal``: a commit is in the
operating system's hands when it returns); only a crash of the machine itself (power loss) may
lose the last commits. What is lost on a ``kill -9`` is at most the last ``batch_interval``
(0.2 s) of operations, as before; Ctrl-C goes through ``close()`` and loses nothing.

When the database fails (a full disk, a corrupt file), the recorder keeps the whole history in
memory as always, sets ``error``, and writes what the database did not take to the fallback file
next to it (``lab.store.fallback.fallback_path``: operations, samples and faults as JSON
lines) while it can; ``storage_note()`` says where every operation went. The engine stops the
cell and says so.

Ops recorded after ``close()`` (a straggling client) stay in memory and are not written.
With ``db_path=None`` nothing is written anywhere: the in-memory history only (for unit tests
and for the bench that measures what streaming costs).

The recorder also reads every record's fields into arrays as it goes
(``lab.judge.checkers.record_fields``): the writer thread, after each write, ``FIELDS_PIECE``
records at a time with a pause in between (as for the encoding); in memory only, the recording
thread every ``BLOCK`` records. ``history`` hands them out with the history
(``RecordedHistory``), so the checkers do not read two million objects again after the load.
It does so only while the history grows slower than ``FIELDS_MAX_RATE`` records a second:
faster, the reading would take the clients' time, so it stops (in memory only, the recording
thread no longer takes the records every ``BLOCK``), and the checkers read the rest after the
load.

``invoke(...)``/``complete(...)`` build the op and read the clock under the lock, so that index
order is time order; ``record(op)`` keeps the time the caller put in the op.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from lab.history import NEMESIS, Op, OpType, Sample, fault_windows
from lab.judge.checkers.record_fields import BLOCK, RecordedFields, RecordedHistory
from lab.store.db import Store
from lab.store.errors import StoreUnavailable, describe_failure
from lab.store.fallback import (
    append_fallback,
    fallback_faults_record,
    fallback_ops_record,
    fallback_path,
    fallback_samples_record,
)
from lab.store.records import OPS_PER_BATCH, now_iso

log = logging.getLogger(__name__)

DEFAULT_BATCH_INTERVAL = 0.2
DEFAULT_BATCH_SIZE = 5000
# The writer's pause between pieces of its encoding: a real sleep (about 55 µs with Linux's
# default timer slack) hands the GIL to the clients waiting for it; ``time.sleep(0)`` does not
# (the writer takes it back before a waiting thread wakes up).
GIL_PAUSE = 1e-6
# records read into the history's fields at a time by the writer thread (then a pause, as
# for the encoding): a piece holds the GIL about 0.1 ms
FIELDS_PIECE = 256
# The fields are read while the load runs only as long as the history grows slower than this
# (records per second of the ops' own clock, over the batch, or the FIELDS_RATE_MIN records
# up to its end when the batch is shorter; the first FIELDS_RATE_MIN records are always read):
# reading costs about 0.4 µs a record, 0.8 % of the interpreter at this rate, but 2.2 % at
# 27 k ops/s, where it cost the clients 5 % of their rate (bench_recorder: 0.962x -> 0.907x).
# Above it, reading stops for the rest of the run: what was read stays, and the checkers read
# the rest of the objects themselves after the load.
FIELDS_MAX_RATE = 20_000
FIELDS_RATE_MIN = 64


def _pause() -> None:
    time.sleep(GIL_PAUSE)


class RecorderError(Exception):
    """Streaming to SQLite failed; the in-memory history is intact. ``str()`` names the
    database, the cause and where the operations went."""


class Recorder:
    def __init__(
        self,
        db_path: str | Path | None = None,
        run_id: str = "",
        cell: int = 0,
        *,
        batch_interval: float = DEFAULT_BATCH_INTERVAL,
        batch_size: int = DEFAULT_BATCH_SIZE,
        clock: Callable[[], int] = time.monotonic_ns,
        fallback: str | Path | None = None,
    ) -> None:
        """``fallback``: where to write what the database does not take (default
        ``lab.store.fallback.fallback_path(db_path, run_id)``)."""
        self.db_path = Path(db_path) if db_path is not None else None
        self.fallback_path: Path | None = None
        if fallback is not None:
            self.fallback_path = Path(fallback)
        elif self.db_path is not None and str(self.db_path) != ":memory:":
            self.fallback_path = fallback_path(self.db_path, run_id or "run")
        self.run_id = run_id
        self.cell = cell
        self.batch_interval = batch_interval
        self.batch_size = batch_size
        self.clock = clock
        self._lock = threading.Lock()
        self._ops: list[Op] = []
        self._samples: list[Sample] = []
        self._append = self._ops.append
        # The writer takes ``_ops[_taken:end]`` (``end``: ``_end`` once closed, else the
        # length); a client wakes it when ``batch_size`` ops are waiting.
        self._taken = 0
        self._end: int | None = None
        # in memory only, the recording thread reads the fields of every BLOCK records, until
        # reading them stops (``_feed``: the history grew too fast)
        self._wake_at = batch_size - 1 if db_path is not None else BLOCK - 1  # -1: never
        # the fields of the records, read as they are recorded (``record_fields``): the
        # checkers take them from the history (``RecordedHistory``) instead of reading the
        # objects; None once reading them failed (the checkers then read the objects)
        self._fields: RecordedFields | None = RecordedFields()
        self._feeding = threading.Lock()
        self._fields_stopped = False  # the history grew too fast: read after the load
        self._pending_samples: list[Sample] = []
        self._next = 0
        self._closed = False
        self._wake = threading.Event()
        self._stop = False
        self.written_ops = 0
        self.written_samples = 0
        self.batches = 0
        self.writer_cpu_s = 0.0  # CPU time the writer thread spent encoding and writing
        self.error: BaseException | None = None
        self.fallback_ops = 0  # operations written to the fallback file
        self.fallback_samples = 0
        self.fallback_error: BaseException | None = None
        self._fallback_started = False
        self._writer: threading.Thread | None = None
        self._streaming = self.db_path is not None  # False again once closed
        if self.db_path is not None:
            self._writer = threading.Thread(
                target=self._write_loop, name=f"recorder-{run_id or 'run'}-{cell}", daemon=True
            )
            self._writer.start()

    @property
    def streaming(self) -> bool:
        return self._writer is not None

    # --- the hot path ---------------------------------------------------------------------

    def record(self, op: Op) -> Op:
        """Append ``op`` to the history with the next index; returns the indexed op.

        An op without an index yet (``index == -1``, as freshly built) gets the index set on
        itself and becomes the recorded op: building a second record would cost more than the
        rest of this call. An op that already has one is recorded as a copy. One lock, one
        append: the writer takes what is new from the history itself."""
        with self._lock:
            i = self._next
            self._next = i + 1
            if op.index == -1:  # Op is frozen to all but the recorder (runners/ops.py)
                op.index = i  # type: ignore[misc]
            else:
                op = Op(op.type, op.f, op.process, op.time, op.workload, op.endpoint, op.node,
                        op.key, op.value, op.error, op.error_msg, i)  # fmt: skip
            self._append(op)
            full = i - self._taken == self._wake_at
        if full:
            self._full()
        return op

    def invoke(
        self,
        f: str,
        process: int,
        *,
        workload: str = "",
        endpoint: str = "",
        node: str | None = None,
        key: int | None = None,
        value: Any = None,
    ) -> Op:
        """Record the start of an operation, stamped now."""
        return self._stamped("invoke", f, process, workload, endpoint, node, key, value, None, None)

    def complete(
        self,
        invoke: Op,
        type: OpType,
        *,
        node: str | None = None,
        key: int | None = None,
        value: Any = None,
        error: int | None = None,
        error_msg: str | None = None,
    ) -> Op:
        """Record the completion (ok, fail or info) of ``invoke``, stamped now. ``key`` and
        ``value`` default to the invoke's (a read passes the value it read)."""
        return self._stamped(
            type, invoke.f, invoke.process, invoke.workload, invoke.endpoint,
            node if node is not None else invoke.node,
            key if key is not None else invoke.key,
            value if value is not None or invoke.f == "read" else invoke.value,
            error, error_msg,
        )  # fmt: skip

    def fault_start(self, name: str, node: str | None = None, detail: Any = None) -> Op:
        return self._stamped("invoke", name, NEMESIS, "", "", node, None, detail, None, None)

    def fault_end(
        self, start: Op, ok: bool = True, error_msg: str | None = None, detail: Any = None
    ) -> Op:
        return self._stamped(
            "ok" if ok else "fail", start.f, NEMESIS, "", "", start.node, None, detail, None,
            error_msg,
        )  # fmt: skip

    def _stamped(
        self,
        type: OpType,
        f: str,
        process: int,
        workload: str,
        endpoint: str,
        node: str | None,
        key: int | None,
        value: Any,
        error: int | None,
        error_msg: str | None,
    ) -> Op:
        with self._lock:
            i = self._next
            self._next = i + 1
            op = Op(type, f, process, self.clock(), workload, endpoint, node, key, value, error,
                    error_msg, i)  # fmt: skip
            self._append(op)
            full = i - self._taken == self._wake_at
        if full:
            self._full()
        return op

    def _full(self) -> None:
        """``batch_size`` records wait for the writer (streaming), or, in memory only,
        ``BLOCK`` records for their fields to be read (here, in the recording thread)."""
        if self._writer is not None:
            self._wake.set()
            return
        with self._feeding:
            with self._lock:
                start, end = self._taken, self._next
                self._taken = end
            self._feed(self._ops[start:end], start, pause=False)

    def _feed(self, ops: list[Op], start: int, *, pause: bool) -> None:
        """Read the fields of ``ops`` (the history from ``start``), ``FIELDS_PIECE`` at a
        time with a pause in between when ``pause``. A failure leaves the history without
        fields (the checkers read the objects), logged."""
        fields = self._fields
        if fields is None or not ops:
            return
        end = start + len(ops)
        first = end - max(len(ops), FIELDS_RATE_MIN)  # a short batch: the records before it
        if first >= 0 and not self._fields_stopped:
            span = self._ops[end - 1].time - self._ops[first].time  # the history only grows
            if span <= 0 or (end - 1 - first) * 1e9 / span > FIELDS_MAX_RATE:
                self._fields_stopped = True
                if self._writer is None:  # in memory only: never wake to read again
                    with self._lock:
                        self._wake_at = -1
        if self._fields_stopped:
            return
        step = FIELDS_PIECE if pause else len(ops)
        try:
            for k in range(0, len(ops), step or 1):
                if k and pause:
                    _pause()
                fields.feed(ops[k : k + step], start + k)
        except Exception:  # noqa: BLE001 - the history is intact; the checkers read it
            log.exception("recorder could not read the records' fields")
            self._fields = None

    def sample(self, sample: Sample) -> None:
        with self._lock:
            self._samples.append(sample)
            if self._streaming:
                self._pending_samples.append(sample)

    # --- reading --------------------------------------------------------------------------

    @property
    def history(self) -> list[Op]:
        """A snapshot of the history so far, in index order: a ``RecordedHistory`` with the
        fields read while it was recorded (the checkers read the rest)."""
        with self._lock:
            return RecordedHistory(self._ops, self._fields)

    @property
    def samples(self) -> list[Sample]:
        with self._lock:
            return list(self._samples)

    def __len__(self) -> int:
        return self._next

    # --- the writer -----------------------------------------------------------------------

    def _write_loop(self) -> None:
        assert self.db_path is not None
        store: Store | None = None
        try:
            store = Store(self.db_path)
        except Exception as e:  # noqa: BLE001 - reported through self.error / close()
            log.info("recorder could not open %s: %s", self.db_path, e)
            self.error = e
        try:
            while True:
                self._wake.wait(self.batch_interval)
                self._wake.clear()
                with self._lock:
                    start, end = self._taken, self._next if self._end is None else self._end
                    self._taken = end
                    samples, self._pending_samples = self._pending_samples, []
                    stop = self._stop
                # outside the lock: the history only grows, and a slice is one C call
                batch = ops = self._ops[start:end]
                if ops or samples:
                    cpu = time.thread_time()
                    if store is not None and self.error is None:
                        ops, samples = self._write(store, ops, samples)
                    if ops or samples:  # the database failed: what it did not take
                        self._to_fallback(ops, samples)
                    self._feed(batch, start, pause=True)
                    self.writer_cpu_s += time.thread_time() - cpu
                if stop:
                    with self._lock:
                        if self._taken == self._end and not self._pending_samples:
                            break
            faults = fault_windows(self._ops)
            if store is not None and self.error is None:
                try:
                    store.write_faults(self.run_id, self.cell, faults)
                except Exception as e:  # noqa: BLE001
                    log.info("recorder could not write the faults to %s: %s", self.db_path, e)
                    self.error = e
            if self.error is not None:
                if not self._fallback_started:  # the faults were the first thing refused
                    self._to_fallback([], [])
                if self._fallback_started:
                    self._append_fallback([fallback_faults_record(self.run_id, self.cell, faults)])
        except Exception as e:  # noqa: BLE001
            log.exception("recorder writer failed")
            if self.error is None:
                self.error = e
        finally:
            if store is not None:
                store.close()

    def _write(
        self, store: Store, ops: list[Op], samples: list[Sample]
    ) -> tuple[list[Op], list[Sample]]:
        """Write to the database; returns what it did not take (nothing when all went well;
        ``self.error`` is set otherwise)."""
        k = 0  # operations the database took
        try:
            # One transaction for what is pending (one commit per wake), encoded in pieces
            # with a short sleep in between: the GIL is never held long enough to delay a
            # client whose round trip just ended (see ``GIL_PAUSE``).
            store.insert_operations(self.run_id, self.cell, ops, pause=_pause)
            k = len(ops)
            self.written_ops += k
            store.insert_samples(self.run_id, self.cell, samples)
            self.written_samples += len(samples)
            self.batches += 1
            return [], []
        except Exception as e:  # noqa: BLE001
            log.info("recorder could not write to %s: %s", self.db_path, e)
            self.error = e
            return ops[k:], samples

    def _to_fallback(self, ops: list[Op], samples: list[Sample]) -> None:
        records: list[dict[str, Any] | str] = []
        if not self._fallback_started:
            records.append({
                "kind": "store_failed", "run_id": self.run_id, "cell": self.cell,
                "db": str(self.db_path), "at": now_iso(),
                "error": describe_failure(self.db_path or "", self.error or Exception()),
                "first_index": ops[0].index if ops else None,
            })  # fmt: skip
        for k in range(0, len(ops), OPS_PER_BATCH):
            records.append(fallback_ops_record(self.run_id, self.cell, ops[k : k + OPS_PER_BATCH]))
        if samples:
            records.append(fallback_samples_record(self.run_id, self.cell, samples))
        if self._append_fallback(records):
            self._fallback_started = True
            self.fallback_ops += len(ops)
            self.fallback_samples += len(samples)

    def _append_fallback(self, records: list[Any]) -> bool:
        if self.fallback_path is None or self.fallback_error is not None:
            return False
        try:
            append_fallback(self.fallback_path, records)
        except Exception as e:  # noqa: BLE001 - said by storage_note(); history in memory
            log.info("recorder could not write the fallback file %s: %s", self.fallback_path, e)
            self.fallback_error = e
            with contextlib.suppress(OSError):  # an empty file would only mislead
                if self.fallback_path.stat().st_size == 0:
                    self.fallback_path.unlink()
            return False
        return True

    def storage_note(self) -> str:
        """Where the operations went, for the message of a failed store: how many the
        database holds, how many the fallback file, how many only this process's memory."""
        with self._lock:
            total, n_samples = len(self._ops), len(self._samples)
        parts = [f"{self.written_ops} of {total} operations stored in the database"]
        if self.fallback_ops:
            parts.append(f"{self.fallback_ops} in {self.fallback_path}")
        lost = total - self.written_ops - self.fallback_ops
        lost_samples = n_samples - self.written_samples - self.fallback_samples
        if lost > 0 or lost_samples > 0:
            where = "not stored anywhere"
            if self.fallback_error is not None:
                where += f" (the fallback file {self.fallback_path} failed too: " + (
                    describe_failure(self.fallback_path or "", self.fallback_error) + ")"
                )
            what = f"{max(lost, 0)} operations"
            if lost_samples > 0:
                what += f" and {lost_samples} samples"
            parts.append(f"{what} {where}: in this process's memory only")
        return ", ".join(parts)

    def failure(self) -> str | None:
        """One line naming the database and the cause and where the history went, or None
        when streaming went well."""
        if self.error is None:
            return None
        assert self.db_path is not None
        failed = StoreUnavailable.of(self.db_path, self.error, writing=True)
        return f"{failed}; {self.storage_note()}"

    def flush(self, timeout: float = 30.0) -> None:
        """Wait until every op recorded so far is written (no-op when not streaming)."""
        if self._writer is None:
            return
        deadline = time.monotonic() + timeout
        target = self._next
        while self.written_ops < target and self.error is None and self._writer.is_alive():
            self._wake.set()
            if time.monotonic() > deadline:
                raise RecorderError(f"flush timed out after {timeout:g}s")
            time.sleep(0.005)
        if self.error is not None:
            raise RecorderError(self.failure()) from self.error

    def close(self, timeout: float = 60.0) -> None:
        """Stop streaming, write what is pending and the faults, join the writer.
        Raises ``RecorderError`` when streaming failed (the in-memory history stays)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._stop = True
            self._streaming = False
            self._end = self._next  # ops recorded after close() stay in memory only
            self._wake_at = -1
        if self._writer is not None:
            self._wake.set()
            self._writer.join(timeout)
            if self._writer.is_alive():
                raise RecorderError(f"the recorder's writer did not finish in {timeout:g}s")
        if self.error is not None:
            raise RecorderError(self.failure()) from self.error

    def __enter__(self) -> Recorder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
