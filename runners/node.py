"""A running database node and what can be done to its process.

Two kinds: ``SandboxNode`` (a dbdeployer sandbox: started by its ``start`` script under
``mysqld_safe``) and ``ProcessNode`` (a bare ``mariadbd`` the lab starts itself: Galera and
two-primary topologies). Both offer the same verbs. A ``kill`` stays a kill: the supervisor
(mysqld_safe) is killed first so it cannot restart the server.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from runners.cgroups import joined
from runners.errors import ComponentError
from runners.mysql import Address, Credentials, query, scalar, sql_ready, wait_until
from runners.runtime import Run, alive, proc_start_time, terminate

READY_TIMEOUT = 60.0


def option_args(options: dict[str, str]) -> list[str]:
    """``{"relay_log_recovery": "ON"}`` -> ``["--relay_log_recovery=ON"]`` (argv, no shell)."""
    return [f"--{k}={v}" for k, v in options.items()]


class Node(ABC):
    def __init__(self, run: Run, name: str, role: str, index: int, port: int,
                 datadir: Path, error_log: Path, admin: Credentials) -> None:
        self.run = run
        self.name = name
        self.role = role
        self.index = index
        self.port = port
        self.datadir = datadir
        self.error_log = error_log
        self.admin = admin
        self.paused = False
        self.pause_retries: list[str] = []  # the last pause's failed attempts (containers)
        self.env: dict[str, str] | None = None  # the server's environment (None: the lab's)

    # --- identity ----------------------------------------------------------------------------
    @property
    def addr(self) -> Address:
        """The server's own port (not through any proxy)."""
        return Address("127.0.0.1", self.port)

    @property
    def component(self) -> str:
        return f"node {self.name} (mariadbd on port {self.port})"

    @property
    def config_file(self) -> Path | None:
        """The server's option file (settings appended there are read at its next start);
        None when the server has none (mongod takes its settings on the command line)."""
        return None

    @abstractmethod
    def pid(self) -> int | None: ...

    def is_running(self) -> bool:
        pid = self.pid()
        return pid is not None and alive(pid)

    def tmpfs_dir(self, target: str) -> Path:
        """Where ``disk full NODE`` (``target`` "datadir") or ``disk full NODE binlog``
        ("binlog") finds the filesystem the lab mounted for it."""
        from runners.disk import binlog_dir

        return binlog_dir(self.datadir) if target == "binlog" else self.datadir

    def cache_dirs(self) -> list[Path]:
        """The directories on this machine whose files hold the node's data (its page cache:
        ``drop caches on NODE``, ``cold restart``)."""
        return [self.datadir]

    def save_log(self) -> Path:
        """The server's error log, up to date in the run directory (a container's output is
        copied there: ``runners.containers.node``)."""
        return self.error_log

    def data_file(self, name: str) -> str | None:
        """The text of a file of the server's data directory (None: there is none)."""
        try:
            return (self.datadir / name).read_text(errors="replace")
        except OSError:
            return None

    # --- a Galera cluster none of whose nodes runs (runners.galera_recovery) -------------------
    def wsrep_recover(self, timeout: float) -> str:
        """Run the stopped server once with ``--wsrep-recover`` (it recovers its storage
        engine, logs ``WSREP: Recovered position`` and exits): the text of what it logged."""
        raise ComponentError(self.component, "--wsrep-recover: not on this kind of node")

    def start_recovered(self, position: str, bootstrap: bool) -> bool:
        """Start the server as a member of a recovered cluster, without waiting: from its
        recovered ``position``, with its ``gvwstate.dat`` removed (the last primary component
        is not waited for) and, when it ``bootstrap``s, ``safe_to_bootstrap: 1`` in its
        ``grastate.dat`` and ``--wsrep-new-cluster``. Whether it had a ``gvwstate.dat``."""
        raise ComponentError(self.component, "recovering a Galera cluster: not on this kind "
                             "of node")

    def sql(self, statement: str, timeout: float = 5.0) -> list[dict[str, Any]]:
        return query(self.addr, self.admin, statement, timeout=timeout)

    def scalar(self, statement: str, timeout: float = 5.0) -> Any:
        return scalar(self.addr, self.admin, statement, timeout=timeout)

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> float:
        return wait_until(sql_ready(self.addr, self.admin), timeout, "answering SQL",
                          self.component, self.error_log)

    # --- verbs ---------------------------------------------------------------------------------
    @abstractmethod
    def start(self, options: dict[str, str] | None = None, wait: bool = True) -> None: ...

    @abstractmethod
    def _supervisor_pid(self) -> int | None: ...

    def kill(self) -> None:
        """SIGKILL the server (and its supervisor first): it stays down."""
        sup = self._supervisor_pid()
        pid = self.pid()
        for p in (sup, pid):
            if p is not None and alive(p):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p, signal.SIGKILL)
        for p in (sup, pid):
            if p is not None:
                self._wait_gone(p, 5.0)
        self.paused = False

    def pause(self) -> None:
        pid = self.pid()
        if pid is None or not alive(pid):
            raise ComponentError(self.component, "cannot pause: not running", self.error_log)
        os.kill(pid, signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        pid = self.pid()
        if pid is not None and alive(pid):
            os.kill(pid, signal.SIGCONT)
        self.paused = False

    @abstractmethod
    def stop(self, timeout: float = 60.0) -> None: ...

    def restart(self, options: dict[str, str] | None = None) -> None:
        self.stop()
        self.start(options)

    def _wait_gone(self, pid: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while alive(pid) and time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)
            time.sleep(0.005)
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _ppid(pid: int) -> int | None:
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(data[data.rindex(")") + 2 :].split()[1])


SLEEP_TIME = "0.1"  # seconds between the sandbox scripts' polls (dbdeployer's SLEEP_TIME)
PID_FILE_WAIT = 5.0  # seconds a started server may take to write its pid in its pid file
START_POLLS = 1800  # the start script's TIMEOUT, in polls: 180 s at SLEEP_TIME, as dbdeployer's


def keep_start_timeout(sandbox_dir: Path) -> None:
    """dbdeployer's ``start`` gives up after ``TIMEOUT=180`` polls, 180 s at its 1 s
    ``SLEEP_TIME``; at the lab's 0.1 s that would be 18 s, and a server recovering a busy redo
    log (or starting on a throttled disk) may take longer before it writes its pid file. The
    script in the run's sandbox gets as many polls as keep its 180 s."""
    start = sandbox_dir / "start"
    try:
        text = start.read_text()
    except OSError:
        return
    if "\nTIMEOUT=180\n" in text:
        start.write_text(text.replace("\nTIMEOUT=180\n", f"\nTIMEOUT={START_POLLS}\n", 1))


class SandboxNode(Node):
    """A dbdeployer sandbox directory (``start``, ``stop`` scripts, mysqld_safe)."""

    def __init__(self, run: Run, name: str, role: str, index: int, port: int,
                 sandbox_dir: Path, admin: Credentials, env: dict[str, str]) -> None:
        datadir = sandbox_dir / "data"
        super().__init__(run, name, role, index, port, datadir, datadir / "msandbox.err", admin)
        self.sandbox_dir = sandbox_dir
        keep_start_timeout(sandbox_dir)  # its scripts poll every SLEEP_TIME (script_env)
        self.env = dict(env)  # its own copy: one node's environment may differ (libfaketime)
        self.pid_file = datadir / f"mysql_sandbox{port}.pid"
        self._safe_pid: int | None = None

    @property
    def config_file(self) -> Path:
        return self.sandbox_dir / "my.sandbox.cnf"

    def pid(self) -> int | None:
        pid = _read_pid(self.pid_file)
        if pid is not None and alive(pid):
            return pid
        return None

    def _supervisor_pid(self) -> int | None:
        pid = self.pid()
        if pid is not None:
            parent = _ppid(pid)
            if parent and parent not in (1, os.getpid()) and alive(parent):
                self._safe_pid = parent
                return parent
        if self._safe_pid is not None and alive(self._safe_pid):
            return self._safe_pid
        return None

    def kill(self) -> None:
        super().kill()
        # Like dbdeployer's `send_kill crash`: a dead server's pid file and socket would make
        # the sandbox's start script believe it still runs.
        self.pid_file.unlink(missing_ok=True)
        for sock in self.datadir.glob("mysql_sandbox*.sock*"):
            sock.unlink(missing_ok=True)

    def script_env(self) -> dict[str, str]:
        """The environment of the sandbox's ``start`` and ``stop`` scripts: the server's, with
        ``SLEEP_TIME`` (dbdeployer's poll interval, 1 s by default) at 0.1 s. With 1 s, ``start``
        looked for the server's pid file once a second and ``stop`` slept a second after the
        shutdown, so a restart kept a replica down 1–2 s longer than the server needed and a
        fault ended up to a second after the server was back. (``stop`` polls with it only when
        ``mysqladmin shutdown`` failed: it then sends SIGTERM and waits 30 polls, 3 s, not 30 s,
        before SIGKILL.)"""
        return {**(self.env if self.env is not None else os.environ), "SLEEP_TIME": SLEEP_TIME}

    def record_processes(self) -> None:
        pid = self.pid()
        if pid is None:
            return
        self.run.record(pid, f"mariadbd {self.name}")
        sup = self._supervisor_pid()
        if sup is not None:
            self.run.record(sup, f"mysqld_safe {self.name}")

    def start(self, options: dict[str, str] | None = None, wait: bool = True) -> None:
        if self.is_running():
            return
        cmd = [str(self.sandbox_dir / "start"), *option_args(options or {})]
        out = subprocess.run(cmd, capture_output=True, text=True, env=self.script_env(),
                             timeout=120)
        if out.returncode == 0:
            # the script is done once the pid file exists; the server creates it and then
            # writes its pid in it, so on a busy machine it can still be empty here (a start
            # read as failed, "sandbox server started" in its output)
            deadline = time.monotonic() + PID_FILE_WAIT
            while not self.is_running() and time.monotonic() < deadline:
                time.sleep(0.05)
        if out.returncode != 0 or not self.is_running():
            raise ComponentError(self.component,
                                 f"start failed: {(out.stdout + out.stderr).strip()[-400:]}",
                                 self.error_log)
        self.record_processes()
        if wait:
            self.wait_ready()

    def stop(self, timeout: float = 60.0) -> None:
        """Clean shutdown through the sandbox's own stop script."""
        if not self.is_running():
            return
        pid = self.pid()
        if self.paused:
            self.resume()
        subprocess.run([str(self.sandbox_dir / "stop")], capture_output=True, text=True,
                       env=self.script_env(), timeout=timeout)
        if pid is not None:
            self._wait_gone(pid, timeout)
        sup = self._safe_pid
        if sup is not None:
            self._wait_gone(sup, 5.0)


class ProcessNode(Node):
    """A bare mariadbd started by the lab with its own my.cnf."""

    def __init__(self, run: Run, name: str, role: str, index: int, port: int, node_dir: Path,
                 admin: Credentials, mariadbd: str, datadir: Path | None = None,
                 error_log: Path | None = None) -> None:
        super().__init__(run, name, role, index, port, datadir or node_dir / "data",
                         error_log or node_dir / "error.log", admin)
        self.node_dir = node_dir
        self.cnf = node_dir / "my.cnf"
        self.mariadbd = mariadbd
        self.proc: subprocess.Popen[bytes] | None = None
        self.extra_args: list[str] = []  # e.g. --wsrep-new-cluster for the first start
        # the cgroup v2 group the server runs in from its first instruction, every start
        # (runners.cgroups.joined): what the Galera group partition's iptables rules match
        self.network_group: Path | None = None

    @property
    def config_file(self) -> Path:
        return self.cnf

    def pid(self) -> int | None:
        if self.proc is not None and self.proc.poll() is None:
            return self.proc.pid
        return None

    def _supervisor_pid(self) -> int | None:
        return None

    def start(self, options: dict[str, str] | None = None, wait: bool = True,
              timeout: float = READY_TIMEOUT) -> None:
        if self.is_running():
            return
        args = [self.mariadbd, f"--defaults-file={self.cnf}", *self.extra_args,
                *option_args(options or {})]
        if self.network_group is not None:
            self.network_group.mkdir(exist_ok=True)  # gone if someone removed it meanwhile
            args = joined(args, self.network_group)
        out = open(self.node_dir / "stdout.log", "ab")
        self.proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True,
                                     env=self.env)
        out.close()
        self.run.record(self.proc.pid, f"mariadbd {self.name}")
        if wait:
            proc = self.proc
            wait_until(sql_ready(self.addr, self.admin), timeout, "answering SQL",
                       self.component, self.error_log, alive=lambda: proc.poll() is None)

    def kill(self) -> None:
        super().kill()
        if self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(5)

    def stop(self, timeout: float = 60.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        if self.paused:
            self.resume()
        terminate(self.proc, timeout)
        self.run.forget(self.proc.pid)

    def started_at(self) -> int | None:
        return proc_start_time(self.proc.pid) if self.proc else None

    def wsrep_recover(self, timeout: float) -> str:
        log = self.node_dir / "wsrep-recover.log"
        log.unlink(missing_ok=True)
        args = [self.mariadbd, f"--defaults-file={self.cnf}", "--wsrep-recover",
                f"--log-error={log}", f"--pid-file={self.node_dir / 'wsrep-recover.pid'}"]
        with open(self.node_dir / "stdout.log", "ab") as out:
            proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True,
                                    env=self.env)
        self.run.record(proc.pid, f"mariadbd --wsrep-recover {self.name}")
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
            raise ComponentError(f"{self.component} --wsrep-recover",
                                 f"did not finish within {timeout:.0f}s", log) from None
        finally:
            self.run.forget(proc.pid)
        text = log.read_text(errors="replace") if log.exists() else ""
        if "Recovered position" not in text:
            raise ComponentError(f"{self.component} --wsrep-recover",
                                 f"no 'Recovered position' in its log (exit {proc.returncode})",
                                 log)
        return text

    def start_recovered(self, position: str, bootstrap: bool) -> bool:
        from runners.galera_recovery import set_safe_to_bootstrap

        if bootstrap:
            set_safe_to_bootstrap(self.datadir)
        view = self.datadir / "gvwstate.dat"
        had_view = view.exists()
        view.unlink(missing_ok=True)
        self.extra_args = [*(["--wsrep-new-cluster"] if bootstrap else []),
                           f"--wsrep_start_position={position}"]
        try:
            self.start(wait=False)
        finally:
            self.extra_args = []
        return had_view
