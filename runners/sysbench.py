"""sysbench as a steady background load. Its ``--report-interval=1`` lines become per-second
samples. sysbench crashes when a connection drops (sysbench#527), so it is never the
instrument for failover: the lab's own workloads are."""

from __future__ import annotations

import math
import re
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from dsl.plan import PlannedWorkload
from runners.components import require
from runners.errors import ComponentError
from runners.mysql import Address, Credentials
from runners.ops import Sample
from runners.runtime import Run

LINE = re.compile(
    r"\[\s*(?P<t>\d+)s\s*\]\s*thds:\s*(?P<thds>\d+)\s*tps:\s*(?P<tps>[\d.]+)\s*"
    r"qps:\s*(?P<qps>[\d.]+).*?lat \(ms,95%\):\s*(?P<lat>[\d.]+)\s*"
    r"err/s:?\s*(?P<err>[\d.]+)\s*reconn/s:\s*(?P<reconn>[\d.]+)"
)


def parse_line(line: str) -> dict[str, float] | None:
    m = LINE.search(line)
    if not m:
        return None
    return {"second": float(m["t"]), "threads": float(m["thds"]), "tps": float(m["tps"]),
            "qps": float(m["qps"]), "lat_p95": float(m["lat"]) / 1000.0,
            "errors": float(m["err"]), "reconnects": float(m["reconn"])}


class SysbenchWorkload:
    def __init__(self, spec: PlannedWorkload, run: Run, address: Callable[[str], Address],
                 creds: Credentials, sample: Callable[[Sample], None], stop: threading.Event,
                 default_duration: float) -> None:
        self.spec = spec
        self.run = run
        self.address = address
        self.creds = creds
        self.sample = sample
        self.stop_event = stop
        self.duration = spec.duration if spec.duration is not None else default_duration
        self.finished = threading.Event()
        self.proc: subprocess.Popen[str] | None = None
        self.log = run.dir / f"sysbench-{spec.name}.log"
        self.exit_code: int | None = None
        # it exited by itself with an error, before the lab stopped it (its target restarted,
        # a connection lost: sysbench gives up): when (monotonic ns) and its last FATAL line
        self.died_at: int | None = None
        self.fatal: str | None = None
        self._thread: threading.Thread | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    def _args(self, command: str, endpoint: str | None = None) -> list[str]:
        addr = self.address(endpoint or self.spec.targets[0])
        s = self.spec
        args = [require("sysbench"), s.script or "oltp_read_write", "--db-driver=mysql",
                f"--mysql-host={addr.host}", f"--mysql-port={addr.port}",
                f"--mysql-user={self.creds.user}", f"--mysql-password={self.creds.password}",
                "--mysql-db=sbtest", f"--tables={s.tables or 1}",
                f"--table-size={s.table_size or 10000}", f"--threads={s.threads or s.clients}"]
        if command == "run":
            # --time=0: no limit of its own (a stepped run's load ends when the lab says)
            limit = 0 if math.isinf(self.duration) else max(1, int(round(self.duration)))
            args += ["--report-interval=1", f"--time={limit}",
                     "--histogram=off"]
            if s.ops is not None:  # `operations N`: its transactions (events), then it stops
                args.append(f"--events={s.ops}")
            if s.rate:
                args.append(f"--rate={int(s.rate)}")
        return [*args, command]

    def prepare(self, on: str | None = None) -> None:
        """Create and fill the tables, on ``on`` (the writer) when the target is read-only."""
        out = subprocess.run(self._args("prepare", on), capture_output=True, text=True,
                             timeout=600)
        Path(self.log).write_text(out.stdout + out.stderr)
        if out.returncode != 0:
            raise ComponentError(f"sysbench {self.spec.script} prepare", "failed", self.log)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._main, daemon=True,
                                        name=f"sysbench-{self.name}")
        self._thread.start()

    def _main(self) -> None:
        try:
            with open(self.log, "a") as logf:
                self.proc = subprocess.Popen(self._args("run"), stdout=subprocess.PIPE,
                                             stderr=subprocess.STDOUT, text=True,
                                             stdin=subprocess.DEVNULL)
                self.run.record(self.proc.pid, f"sysbench {self.name}")
                assert self.proc.stdout is not None
                for line in self.proc.stdout:
                    logf.write(line)
                    if "FATAL" in line:
                        self.fatal = line.strip()[:300]
                    values = parse_line(line)
                    if values is not None:
                        self.sample(Sample("sysbench", self.name, time.monotonic_ns(), values))
                    if self.stop_event.is_set() and self.proc.poll() is None:
                        self.proc.terminate()
                self.exit_code = self.proc.wait()
                if self.exit_code != 0 and not self.stop_event.is_set():
                    self.died_at = time.monotonic_ns()
                self.run.forget(self.proc.pid)
        finally:
            self.finished.set()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)
