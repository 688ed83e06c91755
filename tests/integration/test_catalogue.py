"""The workshop's lessons run as written, and with them the catalogue: every `$ lab ...` line
of docs/workshop/NN-*.md is run in order (RUN is the id of the lesson's last `lab run`; a
lesson's runs are tests of their own, each with the commands that read it), each
must exit with the status the lesson documents (0, unless its line ends with `# exits N`:
tests/lessons.py), and every expectation of each `lab run` must hold. An experiment no lesson
runs (the calibration files) runs on its own here. Experiments that need what this machine lacks
(ProxySQL, mongod, a MySQL tarball) skip with the reason; the long benchmark sweeps run only
with LAB_CATALOGUE_LONG=1. Each experiment runs once in the whole suite. The first lesson (the
quickstart) runs as the user ``nobody`` when the suite runs as root: the lab needs root for a few
faults only."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import pytest

from dsl.api import load_plan
from runners.components import MissingComponent
from runners.disk import any_disk_nodes
from runners.topology import check_components
from tests.lessons import Command, Part, commands, lessons, parts, substitute

from .conftest import ROOT, SESSION_DIR, our_processes

LAB = [sys.executable, "-m", "lab.cli"]
LESSONS = lessons()
TAUGHT = {(ROOT / f).resolve() for p in LESSONS for c in commands(p) if c.sub == "run"
          for f in c.files}
# the calibration experiments (faults of known size, expectations = the physical truth within
# a stated tolerance) run here too: docs/validity.md is generated from the same files
EXPERIMENTS = [p for p in sorted((ROOT / "experiments").glob("*.exp")) + sorted(
    (ROOT / "experiments" / "calibration").glob("*.exp")) if p.resolve() not in TAUGHT]
LONG = {"io-capacity-sweep.exp": "27 cells of 60 s",
        "steps-benchmark.exp": "2 cells of about 2 minutes"}


def _skip_reason(path: Path) -> str | None:
    if path.name in LONG and not os.environ.get("LAB_CATALOGUE_LONG"):
        return f"long benchmark ({LONG[path.name]}): set LAB_CATALOGUE_LONG=1 to run it"
    plan = load_plan(str(path))
    try:
        check_components(plan)
    except MissingComponent as e:
        return str(e)
    if any_disk_nodes(plan.actions()) and os.geteuid() != 0:
        return "disk full mounts a tmpfs: needs root"
    if plan.iofs_nodes and (os.geteuid() != 0 or not os.path.exists("/dev/fuse")):
        return "io delay/io fail mount lab-iofs (FUSE): needs root and /dev/fuse"
    if plan.engine.flavor != "mariadb" and not os.environ.get("LAB_SANDBOX_BINARY"):
        return f"engine {plan.engine.flavor} needs its tarball in LAB_SANDBOX_BINARY"
    for ref in _images(plan):
        if not _local_image(ref):
            return f"image {ref} is not on this machine's podman (podman pull {ref} first)"
    return None


def _images(plan: Any) -> list[str]:
    """The images a container run takes from the engine's registry (not the lab's)."""
    if plan.backend != "containers":
        return []
    refs = [n.image for c in plan.cells for n in c.nodes if n.image]
    if plan.router is not None and plan.router.kind == "proxysql":
        from runners.components import which
        from runners.containers.proxysql import DEFAULT_IMAGE

        if plan.router.image is not None or which("proxysql") is None:  # else: made here
            refs.append(plan.router.image or DEFAULT_IMAGE)
    return list(dict.fromkeys(refs))


def _local_image(ref: str) -> bool:
    from runners.containers.engine import podman_env, write_containers_conf

    out = subprocess.run(["podman", "image", "exists", ref], capture_output=True, timeout=60,
                         env=podman_env(write_containers_conf()))
    return out.returncode == 0


def _last_run(home: Path) -> dict[str, Any]:
    db = sqlite3.connect(home / "results.db")
    try:
        rid, summary = db.execute(
            "select id, summary from runs order by started_at desc, rowid desc limit 1").fetchone()
    finally:
        db.close()
    out: dict[str, Any] = json.loads(summary)
    out["run_id"] = rid
    return out


def _assert_every_expectation_holds(summary: dict[str, Any], where: str) -> None:
    failed = [(c["label"], e["text"], e["explanation"]) for c in summary["cells"]
              for e in c["expectations"] if e["passed"] is not True]
    errors = [(c["label"], c["error"]) for c in summary["cells"] if c.get("error")]
    assert not errors, (where, errors, _kept_logs(summary))
    assert not failed, (where, failed, _kept_logs(summary))


def _kept_logs(summary: dict[str, Any], lines: int = 25) -> str:
    """The tail of each server log a cell that did not pass kept (lab.run.cell_logs): what CI
    shows of a failure it cannot reproduce."""
    out: list[str] = []
    for cell in summary["cells"]:
        for note in cell.get("notes") or []:
            if "logs of this cell are kept in " not in note:
                continue
            for log in sorted(Path(note.rsplit(" ", 1)[-1]).glob("*.log")):
                tail = log.read_text(errors="replace").splitlines()[-lines:]
                out.append(f"--- {log.name} (last {len(tail)} lines)\n" + "\n".join(tail))
    return "\n".join(out)


def _quickstart(summary: dict[str, Any], home: Path) -> None:
    """What the tour promises, beyond its expectations: the measurements behind them."""
    cell = summary["cells"][0]
    # the healthy replica was read right after each write, and each write became visible there
    db3 = cell["measurements"]["stale_reads"]["subjects"]["ryw on db3"]
    assert db3["eligible_reads"] > 100 and db3["visibility"]["unseen"] == 0
    assert 0 < db3["visibility"]["p50"] < 1
    # the killed replica shows up as an outage of the readers that read from it
    assert cell["measurements"]["downtime"]["subjects"]["ryw on db2"]["longest"] > 5
    db = sqlite3.connect(home / "results.db")
    try:
        n_ops = db.execute("select count(*) from operations where run_id = ?",
                           [summary["run_id"]]).fetchone()[0]
        faults = [r[0] for r in db.execute("select name from faults where run_id = ?",
                                            [summary["run_id"]])]
    finally:
        db.close()
    assert n_ops > 1000
    assert "kill" in faults and "start" in faults
    if os.geteuid() == 0:  # lesson 1 ran as nobody: the results and the run were nobody's
        assert (home / "results.db").stat().st_uid == UNPRIVILEGED
    # the summary's fault timeline, in seconds since the load started (`at 10s kill db2`)
    kill = next(f for f in cell["faults"] if f["name"] == "kill")
    assert kill["node"] == "db2" and 9.9 < kill["at"] < 11 and kill["ok"] is True
    # `lab show` prints the compact matrix, `--all` every figure; no server is involved
    env = dict(os.environ, LAB_HOME=str(home))
    rid = summary["run_id"]
    show = subprocess.run([*LAB, "show", rid], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)
    assert show.returncode == 0 and "kill db2" in show.stdout and "lost writes" in show.stdout
    assert "downtime(ryw on db2).longest" not in show.stdout
    show_all = subprocess.run([*LAB, "show", rid, "--all"], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=60)
    assert "downtime(ryw on db2).longest" in show_all.stdout
    # the run against itself: every ratio that is defined is 1
    cmp = subprocess.run([*LAB, "compare", rid, rid, "--last", "10s", "--json"], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=120)
    assert cmp.returncode == 0, cmp.stderr
    rows = {r["figure"]: r for r in json.loads(cmp.stdout)["rows"]}
    tput = rows["throughput(writes).mean last 10s"]
    assert tput["values"][0]["value"] > 0 and tput["ratios"][1]["value"] == 1.0
    # 0 against 0 has no ratio: db3 had every beat whenever it was read in the last 10 s (seen
    # with the run's directory on a tmpfs)
    lag = rows["replication_lag(db3).max"]
    assert lag["ratios"][1]["value"] == (1.0 if lag["values"][0]["value"] else None), lag


def _router_writer_outage(summary: dict[str, Any], home: Path) -> None:
    """`router.writer` resolved when the fault fired, and `for 2s` healed it 2 s later."""
    db = sqlite3.connect(home / "results.db")
    try:
        faults = db.execute("select name, node, start_ns from faults where run_id = ? "
                            "order by start_ns", [summary["run_id"]]).fetchall()
    finally:
        db.close()
    down = next(f for f in faults if f[0] == "link_down")
    heal = next(f for f in faults if f[0] == "heal")
    assert down[1] == "db1" and heal[1] == "db1", faults
    assert 1.9 <= (heal[2] - down[2]) / 1e9 <= 2.3, faults


def _ops(summary: dict[str, Any], home: Path) -> list[Any]:
    from lab.store.db import Store

    return list(Store(home / "results.db").operations(summary["run_id"], 1))


def _cpu_memory(summary: dict[str, Any], home: Path) -> None:
    """The OOM kill is in the history as such, counted by the kernel; no cgroup is left."""
    ops = _ops(summary, home)
    kills = [o for o in ops if o.is_fault() and o.f == "oom_kill" and o.type != "invoke"]
    assert kills and kills[0].node == "db1" and kills[0].type == "ok", \
        [(o.type, o.f) for o in ops if o.is_fault()]
    from runners import cgroups
    left = [d for c in cgroups.CONTROLLERS if (cgroups.CGROUP_ROOT / c).is_dir()
            for d in (cgroups.CGROUP_ROOT / c).iterdir()
            if d.name.startswith(cgroups.PREFIX + summary["run_id"])]
    assert not left, left


def _clock_skew(summary: dict[str, Any], home: Path) -> None:
    """NOW() on the skewed node is ahead by the skew (+30 s), and back after the heal."""
    ops = _ops(summary, home)
    skews = [o for o in ops if o.f == "clock_skew" and o.type == "ok"]
    back = [o for o in ops if o.f == "clock_heal" and o.type == "ok"]
    assert 28 <= skews[0].value["now_minus_host_seconds"] <= 32, skews[0].value
    assert abs(back[-1].value["now_minus_host_seconds"]) <= 2, back[-1].value


def _disk_full_binlog(summary: dict[str, Any], home: Path) -> None:
    """It was the binary logs' own tmpfs that filled (not the data directory's), and no tmpfs
    is left mounted after the run."""
    ops = _ops(summary, home)
    full = [o for o in ops if o.f == "disk_full" and o.type == "ok"]
    assert full and full[0].node == "db1" and full[0].value["path"].endswith("/binlog"), \
        [(o.type, o.f, o.value) for o in ops if o.is_fault()]
    assert full[0].value["free_bytes"] < 1024**2
    runtime = os.environ.get("LAB_RUNTIME") or f"/tmp/rcl-{os.getuid()}"
    assert runtime not in Path("/proc/self/mounts").read_text()


def _io_stall(summary: dict[str, Any], home: Path) -> None:
    """The heal that ends the fsync stall counts the fsyncs lab-iofs delayed (one per commit at
    about 5 commits a second); after the run no lab-iofs mount or daemon is left."""
    ops = _ops(summary, home)
    heal = next(o for o in ops if o.f == "io_heal" and o.type == "ok")
    assert heal.value["since_previous"]["fsyncs"]["delayed"] >= 10, heal.value
    fail = next(o for o in ops if o.f == "io_fail" and o.type == "ok")
    assert fail.value["faults"]["fail"] == ["writes"]
    runtime = os.environ["LAB_RUNTIME"]
    assert not [line for line in Path("/proc/self/mounts").read_text().splitlines()
                if "lab-iofs" in line and runtime in line]


def _failover_report(summary: dict[str, Any], home: Path) -> None:
    """The HTML report of this real failover run opens in headless Chromium with the network off
    and every chart is drawn (DOM and screenshot: tests/browser_check.py)."""
    from tests.browser_check import find_chromium, open_page, problems, read_dom

    assert summary["cells"][0]["measurements"]["failover"]["count"] == 1
    if find_chromium() is None:
        return  # the browser check is skipped with the reason in tests/unit (no chromium)
    page = home.parent / "report.html"
    rid = summary["run_id"]
    rep = subprocess.run([*LAB, "report", rid[:6], "--html", str(page)], cwd=ROOT,
                         env=dict(os.environ, LAB_HOME=str(home)), capture_output=True,
                         text=True, timeout=120)
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout.startswith(f"wrote {page}: run {rid}, 1 cell, ")
    text, img = open_page(page, home.parent / "report.png")
    dom = read_dom(text)
    assert problems(dom, img) == []
    for section in ("throughput", "latency", "downtime", "errors", "lag", "failover"):
        assert f"chart-{section}-1" in dom.charts, section
    assert "kill db1" in dom.charts["chart-throughput-1"].text


UNPRIVILEGED = 65534  # nobody / nogroup on Debian


def _as_nobody(tmp_path: Path) -> tuple[list[str], dict[str, str], Path]:
    """The lab's command, environment and home for the user ``nobody`` (the suite runs as
    root). The project's interpreter lives under /root (pyenv), which nobody cannot enter:
    Debian's python3 of the same minor version runs the lab with the project's installed
    packages instead."""
    base = Path(tempfile.mkdtemp(prefix="nobody-", dir=SESSION_DIR))
    os.chmod(SESSION_DIR, 0o711)  # nobody may pass through to its own directory
    os.chown(base, UNPRIVILEGED, UNPRIVILEGED)
    site = next(Path(sys.prefix).glob("lib/python3*/site-packages"))
    env = dict(os.environ, HOME=str(base), LAB_HOME=str(base / "home"),
               LAB_RUNTIME=str(base / "rt"), PYTHONPATH=f"{ROOT}:{site}")
    cmd = ["setpriv", f"--reuid={UNPRIVILEGED}", f"--regid={UNPRIVILEGED}", "--clear-groups",
           f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}", "-m", "lab.cli"]
    return cmd, env, base / "home"


UNPRIVILEGED_LESSONS = {"01-quickstart.md"}
MORE_CHECKS = {"quickstart.exp": _quickstart, "router-writer-outage.exp": _router_writer_outage,
               "cpu-memory.exp": _cpu_memory, "clock-skew.exp": _clock_skew,
               "semi-sync-failover.exp": _failover_report,
               "disk-full-binlog.exp": _disk_full_binlog,
               "io-stall.exp": _io_stall}


EXIT_EXPECTATION = 1  # lab.exits: an expectation does not hold


def _verdicts(out: subprocess.CompletedProcess[str]) -> list[str]:
    """The lines that say what went wrong: failed or unknown expectations, and a cell's error
    with the component's log tail (exit 3), which the assertion would otherwise cut."""
    lines = out.stdout.splitlines()
    said = [ln for ln in lines if "FAIL" in ln or "UNKNOWN" in ln][:20]
    errors = [i for i, ln in enumerate(lines) if "error:" in ln.lower()
              or "could not complete" in ln][:3]
    return said + [ln for i in errors for ln in lines[i:i + 15]]


def _run(argv: list[str], env: dict[str, str], where: str, lab: list[str] = LAB,
         again: bool = False, expected: int = 0) -> subprocess.CompletedProcess[str]:
    """Run one command of a lesson; it must end with ``expected``, the exit status the lesson
    documents (``Command.exit``: an exploration that finds the failure it is about exits 1,
    and must). ``again``: a lesson's ``lab run`` whose expectations did
    not hold runs once more, with a warning that shows what failed. The lessons run two or four at a
    time on a 2-core machine, and their timing figures (a router's switch, a client's
    timeout) are a demonstration's, measured on an idle one; the calibrations, whose figures
    are the lab's claims (docs/validity.md), never run twice: they hold beside another test
    (the one whose tolerance is for an idle machine runs alone: conftest's ``IDLE_ONLY``). A
    broken system fails both runs."""
    def once() -> subprocess.CompletedProcess[str]:
        return subprocess.run([*lab, *argv[1:]], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=600)

    out = once()
    if again and out.returncode == EXIT_EXPECTATION != expected:
        warnings.warn(f"{where}: an expectation did not hold, run once more: {_verdicts(out)}",
                      stacklevel=2)
        out = once()
    assert out.returncode == expected, "\n".join(  # a string: pytest shows it whole
        [where, f"exit {out.returncode}, the lesson documents {expected}", *_verdicts(out),
         out.stderr[-3000:]])
    return out


def _part_param(part: Part) -> Any:
    """A lesson's part as a test: marked ``containers`` when its run is on containers."""
    containers = any(load_plan(str(ROOT / f)).backend == "containers" for f in part.run_files)
    return pytest.param(part, id=part.id, marks=[pytest.mark.containers] if containers else [])


@pytest.mark.parametrize("part", [_part_param(x) for p in LESSONS for x in parts(p)])
def test_lesson_runs_as_written(part: Part, tmp_path: Path) -> None:
    """A lesson's part (tests/lessons.py ``Part``: one ``lab run`` and the commands that read
    it), so that a lesson's runs may run at once, as its readers' would on their machines."""
    lesson = part.lesson
    home = tmp_path / "home"
    env = dict(os.environ, LAB_HOME=str(home))
    lab = LAB
    if lesson.name in UNPRIVILEGED_LESSONS and os.geteuid() == 0:
        lab, env, home = _as_nobody(tmp_path)
    run_id: str | None = None
    skipped: list[str] = []
    ran = 0
    for cmd in part.commands:
        where = f"{cmd.lesson}:{cmd.line}: $ {cmd.text}"
        if cmd.sub == "run":
            path = ROOT / cmd.files[0]
            reason = _skip_reason(path)
            if reason:
                skipped.append(f"{cmd.text}: {reason}")
                run_id = None
                continue
            _run(cmd.argv, env, where, lab, again=True, expected=cmd.exit)
            summary = _last_run(home)
            assert summary["source"] and Path(summary["source"]).name == path.name, where
            _assert_every_expectation_holds(summary, where)
            if path.name in MORE_CHECKS:
                MORE_CHECKS[path.name](summary, home)
            run_id = summary["run_id"]
            if os.environ.get("LAB_LESSON_RESULTS"):  # the figures, for refreshing the lessons
                keep = Path(os.environ["LAB_LESSON_RESULTS"])
                keep.mkdir(parents=True, exist_ok=True)
                (keep / f"{path.stem}.json").write_text(json.dumps(summary, default=str))
            ran += 1
            assert not our_processes()
        elif _needs_a_run(cmd) and run_id is None:
            skipped.append(f"{cmd.text}: its run did not run here")
        else:
            out = _run(substitute(cmd, run_id), env, where, lab, expected=cmd.exit)
            assert out.stdout.strip(), where
            ran += 1
    if not ran:
        pytest.skip("; ".join(skipped))


def _needs_a_run(cmd: Command) -> bool:
    return "RUN" in cmd.argv or cmd.sub in ("runs", "show")


@pytest.mark.parametrize("path", EXPERIMENTS,
                         ids=[str(p.relative_to(ROOT / "experiments"))[:-4] for p in EXPERIMENTS])
def test_experiment_no_lesson_runs_holds(path: Path, tmp_path: Path) -> None:
    reason = _skip_reason(path)
    if reason:
        pytest.skip(reason)
    env = dict(os.environ, LAB_HOME=str(tmp_path / "home"))
    out = subprocess.run([*LAB, "run", str(path), "--json"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.stdout, out.stderr[-3000:]
    _assert_every_expectation_holds(json.loads(out.stdout), path.name)
    assert out.returncode == 0
    assert not our_processes()
