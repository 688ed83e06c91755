"""The ``read_your_writes`` workload: each client writes new versions of its keys on the write
endpoint, and one reader thread per read endpoint reads each acknowledged write at once, then
polls it until it shows (stale reads, the time a write takes to show). Its client and base are
in ``runners.workloads``."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from runners.workloads import Client, Workload, table_name


class _Reader:
    """One read endpoint of one read_your_writes client: a thread that reads each acknowledged
    write's key as soon as the write is posted (the first read, op ``read``), then polls every
    key whose write it has not seen yet every ``poll`` seconds (op ``poll``, value
    ``[[key, version or None], ...]``) until the version shows or ``limit`` seconds have
    passed since the writer finished. When the load ends (``stop``), the writes not seen yet
    go on being polled while the lab settles — a replica 2 s behind shows its last 2 s of
    writes then — as long as the endpoint answered its last operation and the first failed
    poll stops it (an endpoint that was down is not watched coming back); writes posted but
    not read yet are polled without a first read (the load is over: no stale read is
    counted after it). ``abort`` stops everything at once (Ctrl-C, an error)."""

    def __init__(self, client: Client, table: str, stop: threading.Event, poll: float,
                 limit: float, abort: threading.Event | None = None) -> None:
        self.client = client
        self.table = table
        self.stop = stop
        self.abort = abort or threading.Event()
        self.poll = poll
        self.limit = limit
        self.answered = True  # the endpoint answered the last operation
        self.unseen_at_stop: int | None = None  # writes still unseen when the load ended
        self.polled_after_stop = 0.0  # seconds spent polling them
        self._stopped_at = 0.0
        self.cv = threading.Condition()
        self.posted: list[tuple[int, int]] = []  # (key, version) not read yet
        self.pending: dict[int, int] = {}  # key -> the newest version not seen yet
        self.writer_done: float | None = None
        self.posts = 0
        self.first_reads = 0
        self.thread = threading.Thread(target=self._main, daemon=True,
                                       name=f"ryw-read-{client.process}")

    def post(self, key: int, version: int) -> None:
        with self.cv:
            self.posted.append((key, version))
            self.posts += 1
            self.cv.notify_all()

    def wait_first_reads(self) -> None:
        """Until every posted write has had its first read (or the load is stopped)."""
        with self.cv:
            while self.first_reads < self.posts and not self.stop.is_set() \
                    and self.thread.is_alive():
                self.cv.wait(0.05)

    def finish(self) -> None:
        with self.cv:
            self.writer_done = time.monotonic()
            self.cv.notify()

    def _take(self) -> list[tuple[int, int]] | None:
        """The posted writes to read first; [] when it is time to poll; None to stop."""
        with self.cv:
            while True:
                if self.abort.is_set():
                    return None
                if self.stop.is_set():
                    return self._after_stop()
                if self.posted:
                    got, self.posted = self.posted, []
                    return got
                done = self.writer_done
                if done is not None and (not self.pending
                                         or time.monotonic() - done > self.limit):
                    return None
                if self.pending:
                    return []
                self.cv.wait(0.05)

    def _after_stop(self) -> list[tuple[int, int]] | None:
        """The load has ended: poll what is unseen (under ``cv``)."""
        for k, v in self.posted:  # acknowledged, never read: polled from now on
            if self.pending.get(k, -1) < v:
                self.pending[k] = v
        self.posted = []
        now = time.monotonic()
        if self.unseen_at_stop is None:
            self.unseen_at_stop = len(self.pending) if self.answered else 0
            self._stopped_at = now
        self.polled_after_stop = now - self._stopped_at
        done = self.writer_done if self.writer_done is not None else self._stopped_at
        if not self.pending or not self.answered or now - done > self.limit:
            return None
        return []

    def _main(self) -> None:
        c, t = self.client, self.table
        last_poll = 0.0
        try:
            while True:
                batch = self._take()
                if batch is None:
                    return
                for k, v in batch:
                    got = c.op("read", f"SELECT (SELECT v FROM {t} WHERE k = %s)", (k,), key=k,
                               is_write=False, result=_scalar_version)
                    with self.cv:
                        self.first_reads += 1
                        self.answered = got.type == "ok"
                        self.cv.notify_all()
                    seen = got.value if got.type == "ok" else None
                    if seen is None or seen < v:
                        if self.pending.get(k, -1) < v:
                            self.pending[k] = v
                if not batch and self.pending:
                    wait = last_poll + self.poll - time.monotonic()
                    if wait > 0:
                        with self.cv:
                            if not self.posted:
                                self.cv.wait(wait)
                        continue
                    last_poll = time.monotonic()
                    keys = sorted(self.pending)
                    marks = ", ".join(["%s"] * len(keys))
                    got = c.op("poll", f"SELECT k, v FROM {t} WHERE k IN ({marks})",
                               tuple(keys), is_write=False,
                               result=partial(_poll_value, keys))
                    with self.cv:
                        self.answered = got.type == "ok"
                    if got.type == "ok":
                        for k, seen in got.value:
                            if seen is not None and seen >= self.pending.get(k, seen + 1):
                                del self.pending[k]
        finally:
            c.close()


def _scalar_version(rows: Any) -> int | None:
    return None if not rows or rows[0][0] is None else int(rows[0][0])


def _poll_value(keys: list[int], rows: Any) -> list[list[int | None]]:
    found = {int(k): int(v) for k, v in (rows or ())}
    return [[k, found.get(k)] for k in keys]


class ReadYourWritesWorkload(Workload):
    """Each client writes a new version of one of its keys on the write endpoint (at ``rate``
    or ``every``; without either, the next write follows as soon as every reader has made its
    first read of the previous one). Every read endpoint has its own reader thread, woken by
    the acknowledgement at the same moment as the others: it reads the key at once (``read``:
    stale when it misses the version) and then polls the key every ``POLL`` seconds until the
    version shows (``poll``: the time to visibility, resolution one poll interval).

    A write that fails still uses up its version, so a retried write never reuses a failed
    one's value."""

    KEYS_PER_CLIENT = 16
    POLL = 0.01  # seconds between polls of the keys not yet visible on a read endpoint
    VISIBILITY_LIMIT = 30.0  # polling goes on this long after the writer stops, at most

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.abort = threading.Event()  # stop the readers at once (not after the load)
        self.readers: list[_Reader] = []

    def after_load(self) -> str | None:
        """What the readers did after the load ended, for the run's notes (None: nothing)."""
        unseen = sum(r.unseen_at_stop or 0 for r in self.readers)
        if not unseen:
            return None
        secs = max(r.polled_after_stop for r in self.readers)
        left = sum(len(r.pending) for r in self.readers)
        return (f"{self.name}: {unseen} writes not yet seen on a read endpoint when the load "
                f"ended were polled for {secs:.1f} s more while the lab settled (until seen, "
                f"at most {self.VISIBILITY_LIMIT:g} s, only where the endpoint answered); "
                + (f"{left} still unseen" if left else "every one seen"))

    def run_client(self, i: int, client: Client, pace: Callable[[], None]) -> None:
        t = table_name(self.name)
        readers = [
            _Reader(Client(self.env, self.name, client.process + 10000 * (j + 1), ep,
                           self.spec.timeout), t, self.env.stop, self.POLL,
                    self.VISIBILITY_LIMIT, self.abort)
            for j, ep in enumerate(self.spec.reads)
        ]
        self.readers.extend(readers)
        for r in readers:
            r.thread.start()
        paced = self.spec.every is not None or bool(self.spec.rate)
        versions: dict[int, int] = {}
        n = 0
        try:
            while not self._should_stop() and self._take():
                k = client.process * 1000 + (n % self.KEYS_PER_CLIENT)
                n += 1
                v = versions.get(k, 0) + 1
                versions[k] = v  # used up whatever the outcome
                done = client.op("write", f"INSERT INTO {t} (k, v, c) VALUES (%s, %s, %s) "
                                 "ON DUPLICATE KEY UPDATE v = VALUES(v)",
                                 (k, v, client.process), key=k, value=v)
                if done.type == "ok":
                    for r in readers:
                        r.post(k, v)
                    if not paced:
                        for r in readers:
                            r.wait_first_reads()
                pace()
        finally:
            for r in readers:
                r.finish()
            if self.abort.is_set() or not self.env.stop.is_set():
                for r in readers:  # the workload ended on its own: its readers too
                    r.thread.join()
            # else the load ended: the readers poll what is unseen (``join_readers``)

    def join_readers(self, timeout: float) -> None:
        """Wait for the readers (polling the writes unseen when the load ended), at most
        ``timeout`` seconds; then stop them."""
        deadline = time.monotonic() + timeout
        for r in list(self.readers):
            r.thread.join(max(0.0, deadline - time.monotonic()))
        self.abort.set()
