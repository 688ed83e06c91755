"""A sysbench that gives up before its end (its target restarted: sysbench does not
reconnect) no longer passes for a healthy one: a docs-only trial's `expect stalls(rd).max <
5s` held 'of 11 seconds' while sysbench had been dead for 18 s of a 30 s load."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace

from histories import ctx, ns

from lab.history import Sample
from lab.judge.checkers import run_checkers


def rows(seconds: int) -> list[Sample]:
    return [Sample("sysbench", "rd", ns(i + 1), {"tps": 900.0, "errors": 0.0, "reconnects": 0.0})
            for i in range(seconds)]


def test_the_seconds_after_it_gave_up_are_stalled_and_its_exit_an_error() -> None:
    alive = run_checkers([], ctx(0, 30, workloads={"rd": "sysbench"}, samples=rows(12)))
    assert alive["stalls"].metrics["subjects"]["rd"]["longest"] == 0  # type: ignore[index]
    dead = run_checkers([], ctx(0, 30, workloads={"rd": "sysbench"}, samples=rows(12),
                                facts={"workload_exits": {"rd": {"at": 12.1, "code": 1}}}))
    stalls = dead["stalls"].metrics["subjects"]["rd"]  # type: ignore[index]
    assert stalls["longest"] == 18 and stalls["count"] == 18
    errors = dead["errors"].metrics["subjects"]["rd"]  # type: ignore[index]
    assert errors["total"] == 1 and errors["by_code"] == {"exit": 1}


def test_a_sysbench_that_exits_with_an_error_by_itself_is_marked_dead(tmp_path: Path) -> None:
    from runners.sysbench import SysbenchWorkload

    script = tmp_path / "fake-sysbench"
    script.write_text("#!/bin/sh\necho '[ 1s ] thds: 2 tps: 10.00 qps: 10.00 (r/w/o: 10.00/0.00"
                      "/0.00) lat (ms,95%): 1.00 err/s: 0.00 reconn/s: 0.00'\n"
                      "echo 'FATAL: mysql_drv_query() returned error 2013 (Lost connection)'\n"
                      "exit 1\n")
    script.chmod(0o755)
    wl = SysbenchWorkload.__new__(SysbenchWorkload)
    wl.spec = SimpleNamespace(name="rd")  # type: ignore[assignment]
    wl.run = SimpleNamespace(record=lambda *_: None, forget=lambda *_: None)  # type: ignore[assignment]
    wl.sample, wl.stop_event, wl.log = (lambda _s: None), threading.Event(), tmp_path / "sb.log"
    wl.finished, wl.proc, wl.exit_code = threading.Event(), None, None
    wl.died_at = wl.fatal = None
    wl._args = lambda _c, _e=None: [str(script)]  # type: ignore[method-assign]
    wl._main()
    assert wl.exit_code == 1 and wl.died_at is not None
    assert wl.fatal == "FATAL: mysql_drv_query() returned error 2013 (Lost connection)"
    wl.stop_event.set()  # stopped by the lab: not a death
    wl.died_at = None
    wl._main()
    assert wl.died_at is None


def test_a_sysbench_with_its_own_duration_is_stalled_only_until_its_end() -> None:
    dead = run_checkers([], ctx(0, 30, workloads={"rd": "sysbench"}, samples=rows(8),
                                facts={"workload_exits": {"rd": {"at": 8.1, "code": 1,
                                                                 "duration": 10.0}}}))
    stalls = dead["stalls"].metrics["subjects"]["rd"]  # type: ignore[index]
    assert stalls["longest"] == 2  # seconds 8 and 9 of its own 10, not 22 of the load


def test_operations_n_is_sysbenchs_events() -> None:
    from runners.mysql import Address, Credentials
    from runners.sysbench import SysbenchWorkload

    wl = SysbenchWorkload.__new__(SysbenchWorkload)
    wl.spec = SimpleNamespace(script="oltp_insert", targets=["db1"], tables=1,  # type: ignore[assignment]
                              table_size=100, threads=2, clients=1, rate=None, ops=500)
    wl.address = lambda _e: Address("127.0.0.1", 3306)  # type: ignore[assignment]
    wl.creds, wl.duration = Credentials("u", "p"), 30.0
    assert "--events=500" in wl._args("run")
    wl.spec.ops = None  # type: ignore[attr-defined]
    assert not [a for a in wl._args("run") if a.startswith("--events")]
