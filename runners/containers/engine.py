"""The container engine the lab talks to: one switch, ``DOCKER_HOST``.

With ``LAB_DOCKER_HOST`` or ``DOCKER_HOST`` set, the lab uses that engine (any Docker-compatible
API: a remote Docker, podman's TCP API). Otherwise it starts a private podman API service for
the run: ``podman system service --time=0 unix://<run dir>/podman.sock`` with a
``containers.conf`` the lab writes (``CONTAINERS_CONF``: open-file and process limits for the
servers, the ``runc`` runtime, cgroupfs and file events: what works on hosts without systemd),
recorded among the run's processes so that teardown and ``lab gc`` stop it.

One service per run, not one per lab state directory: a run's service lives and dies with the
run (no reference counting between runs, a crashed lab leaves one process that ``lab gc``
finds in the run's own record), two runs at once never share a socket, and starting one costs
about a quarter of a second. The image store is podman's and is shared, so the node image is
built once.

Everything the lab creates on an engine carries the labels ``LABEL_RUN`` (the run directory's
id) and ``LABEL_HOST`` (this machine): ``sweep`` removes the containers and networks of runs
that are gone, and only this machine's (several labs may share one remote engine).

Podman changes the host when it makes a bridge network: it turns ``ip_forward`` on and adds
``NETAVARK`` iptables chains it does not remove. ``HostNetState`` records both before the first
container run on this machine starts (``host-net.json`` in a directory of this machine's, not of
one lab's: ``/tmp/rcl-host-net-<uid>``, since labs with different ``LAB_RUNTIME`` share the
host's network) with each run that uses it registered there, and puts them back when the last
registered run is released or found dead.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import re
import shlex
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from runners.containers import conmon
from runners.errors import ComponentError
from runners.runtime import Run, alive, list_runs, read_run, runtime_root

log = logging.getLogger(__name__)

LABEL_RUN = "lab.run"
LABEL_HOST = "lab.host"
LABEL_DIR = "lab.dir"  # the run's directory, URL-quoted (its lab may use another LAB_RUNTIME)
SERVICE_NAME = "podman service"  # the name of its record among the run's processes
REMOTE_ENV = "LAB_ENGINE_REMOTE"  # 1: the engine named by DOCKER_HOST is another machine's
ADDRESS_ENV = "LAB_ENGINE_ADDRESS"  # its address where published ports are reached
SERVICE_READY_TIMEOUT = 30.0
API_TIMEOUT = 120  # seconds for one API call (an image load takes the longest)

# testcontainers reads these once, when it is imported: set before any import of it.
TESTCONTAINERS_ENV = {
    # A `.dockerenv` marker file on some machines makes testcontainers believe it runs inside
    # a container and look for the engine's gateway: talk to DOCKER_HOST as given.
    "TESTCONTAINERS_CONNECTION_MODE": "docker_host",
    # The Ryuk reaper is an image pulled from a registry: the lab reaps by its own labels.
    "TESTCONTAINERS_RYUK_DISABLED": "true",
}

CONTAINERS_CONF = """\
# Written by replica-chaos-lab for its private podman service (CONTAINERS_CONF).
[containers]
# mariadbd wants many open files; the default of some hosts is 1024
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]

[engine]
# crun fails on hosts with a hybrid cgroup layout; runc works on both
runtime = "runc"
# not every host runs systemd: cgroupfs, and events to a file
cgroup_manager = "cgroupfs"
events_logger = "file"
"""


def testcontainers_env() -> None:
    for k, v in TESTCONTAINERS_ENV.items():
        os.environ.setdefault(k, v)


def configured_host() -> str | None:
    """The engine named by the user: ``LAB_DOCKER_HOST``, else ``DOCKER_HOST`` (None: the
    lab starts its own podman service)."""
    return os.environ.get("LAB_DOCKER_HOST") or os.environ.get("DOCKER_HOST") or None


def host_label() -> str:
    return socket.gethostname()


# Every container's open-file and process limits, given in its create call (as the private
# service's containers.conf gives them): an engine started plainly (`podman system service
# tcp://...`) would give rootful containers nofile 1048576, which a host whose hard limit is
# lower refuses ("error setting rlimit type 7: operation not permitted").
ULIMITS = {"nofile": 20000, "nproc": 32768}


def limits() -> dict[str, Any]:
    """The ``ulimits`` argument of a container's create call (``ULIMITS``)."""
    from docker.types import Ulimit

    return {"ulimits": [Ulimit(name=k, soft=v, hard=v) for k, v in ULIMITS.items()]}


def start_container(tc: Any, what: str, url: str) -> Any:
    """Start a testcontainers container; an engine that refuses says why in one line
    (``ComponentError``: what it lacks, e.g. an rlimit or a runtime), never a traceback.
    Returns the engine's container object."""
    import docker.errors

    try:
        tc.start()
    except docker.errors.APIError as e:
        reason = " ".join(str(e.explanation or e).split())
        raise ComponentError(what, f"the container engine ({url}) could not start it: "
                             f"{reason}") from None
    return tc.get_wrapped_container()


def run_labels(run_id: str, run_dir: Path | None = None) -> dict[str, str]:
    labels = {LABEL_RUN: run_id, LABEL_HOST: host_label()}
    if run_dir is not None:
        labels[LABEL_DIR] = quote(str(run_dir), safe="/")
    return labels


def run_gone(run_id: str, quoted_dir: str | None, dead_run_ids: set[str] | None = None,
             live: set[str] | None = None) -> bool:
    """Whether a labelled run is over. With its directory label: that directory's run
    (whatever ``LAB_RUNTIME`` its lab had) is gone or its owner is dead — a ``lab gc`` with
    another runtime directory never takes a live run's containers. Without it (older labels):
    not live here, and named dead or missing from this runtime directory."""
    if not run_id:
        return False
    if dead_run_ids is not None and run_id in dead_run_ids:
        return True
    if quoted_dir:
        info = read_run(Path(unquote(quoted_dir)))
        return info is None or not info.owner_alive
    if run_id in (live_run_ids() if live is None else live):
        return False
    return dead_run_ids is None or not (runtime_root() / run_id).exists()


def write_containers_conf(directory: Path | None = None) -> Path:
    """The lab's ``containers.conf`` (by default in the lab's state directory, where ``lab
    gc`` finds it to remove a dead run's containers with the same runtime)."""
    path = (directory or runtime_root()) / "containers.conf"
    if not path.exists() or path.read_text() != CONTAINERS_CONF:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(CONTAINERS_CONF)
        tmp.replace(path)
    return path


def podman_env(conf: Path) -> dict[str, str]:
    return {**os.environ, "CONTAINERS_CONF": str(conf)}


def docker_client(url: str, timeout: int = API_TIMEOUT) -> Any:
    """A docker SDK client for ``url`` (``unix://...``, ``tcp://...``, ``ssh://...``)."""
    import docker

    return docker.DockerClient(base_url=url, timeout=timeout)


@dataclass
class Engine:
    """A connection to a container engine. ``service``: the private podman service's pid
    (None for an engine the user named)."""

    url: str
    client: Any
    local: bool  # the engine runs on this machine (nsenter, /proc, its files are reachable)
    address: str = "127.0.0.1"  # where containers' ports are published and the lab reaches them
    service: int | None = None
    host_net: bool = False  # the host's network was recorded for this run: put back after it
    socket_path: Path | None = None
    conf: Path | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def client_kw(self) -> dict[str, Any]:
        """For testcontainers' classes (``docker_client_kw``): this engine, not the
        process's DOCKER_HOST."""
        return {"environment": {"DOCKER_HOST": self.url}, "timeout": API_TIMEOUT}

    def version(self) -> str:
        v = self.client.version()
        name = next((c.get("Name", "") for c in v.get("Components", [])), "") or "engine"
        return f"{name} {v.get('Version', '?')} (API {v.get('ApiVersion', '?')})"

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close()
        if self.service is not None:
            stop_service(self.service)
            self.service = None


def is_local_url(url: str) -> bool:
    """Whether an engine URL is this machine's: a unix socket or the loopback, unless
    ``LAB_ENGINE_REMOTE=1`` says otherwise (an SSH tunnel to another machine's engine looks
    like the loopback)."""
    if os.environ.get(REMOTE_ENV, "") not in ("", "0"):
        return False
    return url.startswith("unix://") or url.startswith("tcp://127.") or \
        url.startswith("tcp://localhost")


def publish_address() -> str:
    """The address on the engine's machine where the lab publishes the containers' ports and
    reaches them: ``LAB_ENGINE_ADDRESS``, else 127.0.0.1 (this machine's engine; a remote one
    then needs its ports forwarded, e.g. ``ssh -L``)."""
    return os.environ.get(ADDRESS_ENV) or "127.0.0.1"


def connect(run: Run) -> Engine:
    """The engine for a run: the user's (``DOCKER_HOST``), or a private podman service
    started in the run's directory (recorded: teardown and ``lab gc`` stop it)."""
    testcontainers_env()
    url = configured_host()
    if url is not None:
        client = docker_client(url)
        try:
            client.ping()
        except Exception as e:  # noqa: BLE001 - any failure: the engine is not there
            raise ComponentError("container engine", f"{url} does not answer: {e}") from None
        local = is_local_url(url)
        if local:  # an engine on this machine changes its network as the lab's own does
            HostNetState.remember(run.dir)
        return Engine(url, client, local=local, address=publish_address(), host_net=local)
    HostNetState.remember(run.dir)
    sock = run.dir / "podman.sock"
    conf = write_containers_conf()
    proc = start_service(sock, conf, run.dir / "podman-service.log")
    run.record(proc.pid, SERVICE_NAME)
    url = f"unix://{sock}"
    client = docker_client(url)
    return Engine(url, client, local=True, service=proc.pid, host_net=True, socket_path=sock,
                  conf=conf)


def start_service(sock: Path, conf: Path, log_path: Path) -> subprocess.Popen[bytes]:
    """``podman system service --time=0 unix://SOCK``, answering before this returns."""
    podman = shutil.which("podman")
    if podman is None:
        raise ComponentError("podman", "not installed: Debian's podman and runc packages "
                             "(`make bootstrap`), or set DOCKER_HOST to a Docker engine")
    out = open(log_path, "ab")
    proc = subprocess.Popen([podman, "system", "service", "--time=0", f"unix://{sock}"],
                            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env=podman_env(conf), start_new_session=True)
    out.close()
    deadline = time.monotonic() + SERVICE_READY_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ComponentError("podman service", f"exited with {proc.returncode}", log_path)
        if sock.exists():
            with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as s:
                s.connect(str(sock))
                return proc
        time.sleep(0.02)
    proc.kill()
    raise ComponentError("podman service", f"no socket after {SERVICE_READY_TIMEOUT:.0f}s",
                         log_path)


def stop_service(pid: int, timeout: float = 10.0) -> None:
    """SIGTERM the service (it finishes its requests), SIGKILL after ``timeout``."""
    import signal

    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while alive(pid) and time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.02)
    if alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


# --- inspect ---------------------------------------------------------------------------------

def inspect(client: Any, container_id: str) -> dict[str, Any]:
    """The container's inspect document (IPs and pids are read here: the list endpoint does
    not carry them on every engine)."""
    return dict(client.api.inspect_container(container_id))


def container_ip(doc: dict[str, Any], network: str) -> str | None:
    nets = doc.get("NetworkSettings", {}).get("Networks") or {}
    ip = (nets.get(network) or {}).get("IPAddress")
    return ip or None


def container_pid(doc: dict[str, Any]) -> int | None:
    pid = doc.get("State", {}).get("Pid") or 0
    return int(pid) or None


def published_port(doc: dict[str, Any], port: int) -> int | None:
    bound = (doc.get("NetworkSettings", {}).get("Ports") or {}).get(f"{port}/tcp") or []
    for b in bound:
        with contextlib.suppress(KeyError, ValueError, TypeError):
            return int(b["HostPort"])
    return None


# --- leftovers: containers and networks of dead runs -----------------------------------------

def live_run_ids() -> set[str]:
    return {info.id for info in list_runs() if info.owner_alive}


def remove_labelled(client: Any, dead: Callable[[str, str | None], bool]) -> list[str]:
    """Remove this machine's containers, then networks, whose labels ``dead(run_id,
    quoted run directory or None)`` says are gone. Returns what was removed (``container
    NAME``, ``network NAME``)."""
    removed: list[str] = []
    mine = f"{LABEL_HOST}={host_label()}"
    for c in client.containers.list(all=True, filters={"label": [LABEL_RUN, mine]}):
        labels = c.labels or {}
        if dead(labels.get(LABEL_RUN, ""), labels.get(LABEL_DIR)):
            # killed first: podman's forced removal stops a running container as `podman stop`
            # does (SIGTERM, then its stop timeout), and a Galera node's clean shutdown leaves
            # its cluster first: a three-node cluster's teardown took 7.0 s, 0.14 s natively,
            # where the lab's servers are killed too. Nothing of a run being removed is kept
            # but its logs, saved before.
            with contextlib.suppress(Exception):
                if c.status in ("running", "paused"):
                    c.kill()
            with contextlib.suppress(Exception):
                c.remove(force=True, v=True)
                removed.append(f"container {c.name}")
    for n in client.networks.list(filters={"label": [LABEL_RUN, mine]}):
        labels = n.attrs.get("Labels") or {}
        if dead(labels.get(LABEL_RUN, ""), labels.get(LABEL_DIR)):
            with contextlib.suppress(Exception):
                n.remove()
                removed.append(f"network {n.name}")
    return removed


def podman_remove_labelled(run_ids: set[str], conf: Path | None = None) -> list[str]:
    """The same through the podman command (no API service needed): what a crashed run
    left on this machine's podman."""
    podman = shutil.which("podman")
    if podman is None or not run_ids:
        return []
    env = podman_env(conf) if conf and conf.exists() else dict(os.environ)
    removed: list[str] = []
    for rid in sorted(run_ids):
        flt = f"label={LABEL_RUN}={rid}"
        out = subprocess.run([podman, "ps", "-a", "-q", "--filter", flt], capture_output=True,
                             text=True, env=env, timeout=60)
        ids = out.stdout.split()
        if ids:
            subprocess.run([podman, "rm", "-f", "-t", "0", *ids], capture_output=True,
                           env=env, timeout=120)
            removed += [f"container {i[:12]}" for i in ids]
        out = subprocess.run([podman, "network", "ls", "-q", "--filter", flt],
                             capture_output=True, text=True, env=env, timeout=60)
        nets = out.stdout.split()
        if nets:
            subprocess.run([podman, "network", "rm", "-f", *nets], capture_output=True,
                           env=env, timeout=60)
            removed += [f"network {n}" for n in nets]
    return removed


def podman_labelled_runs() -> dict[str, str | None]:
    """Run ids on this machine's podman containers and networks (label ``LABEL_RUN``), with
    their directory label (``LABEL_DIR``, quoted) when they have one."""
    podman = shutil.which("podman")
    if podman is None:
        return {}
    found: dict[str, str | None] = {}
    mine = f"label={LABEL_HOST}={host_label()}"
    env = podman_env(write_containers_conf())
    for cmd in (["ps", "-a"], ["network", "ls"]):
        out = subprocess.run([podman, *cmd, "--filter", mine, "--format", "{{.Labels}}"],
                             capture_output=True, text=True, timeout=60, env=env)
        for line in out.stdout.splitlines():
            labels = _podman_labels(line)
            if labels.get(LABEL_RUN):
                found[labels[LABEL_RUN]] = labels.get(LABEL_DIR)
    return found


def _podman_labels(text: str) -> dict[str, str]:
    """podman's ``{{.Labels}}`` output as a dict: ``ps`` prints ``map[lab.run:abc lab.host:h]``,
    ``network ls`` prints ``lab.run=abc,lab.host=h`` (the lab's own values have no spaces,
    commas, colons or equals signs: the directory label is URL-quoted)."""
    out: dict[str, str] = {}
    for part in re.split(r"[\s,]+", text.replace("map[", " ").replace("]", " ")):
        eq, colon = part.find("="), part.find(":")
        cut = eq if eq >= 0 and (colon < 0 or eq < colon) else colon
        if cut > 0:
            out[part[:cut]] = part[cut + 1:]
    return out


def _labels_run(text: str) -> list[str]:
    """Run ids in podman's ``{{.Labels}}`` output."""
    rid = _podman_labels(text).get(LABEL_RUN)
    return [rid] if rid else []


def sweep(dead_run_ids: set[str] | None = None) -> list[str]:
    """``lab gc``'s part for containers: remove this machine's containers and networks of runs
    whose lab is gone, on the user's engine (``DOCKER_HOST``) or on local podman; then, with
    no container run left alive, put the host's forwarding and iptables back."""
    live = live_run_ids()

    def dead(rid: str, quoted_dir: str | None = None) -> bool:
        return run_gone(rid, quoted_dir, dead_run_ids, live)

    removed: list[str] = []
    url = configured_host()
    if url is not None:
        with contextlib.suppress(Exception):
            client = docker_client(url, timeout=30)
            removed += remove_labelled(client, dead)
    labelled: dict[str, str | None] = {}
    if url is None:
        labelled = podman_labelled_runs()
        runs = {rid for rid, d in labelled.items() if dead(rid, d)}
        removed += podman_remove_labelled(runs, write_containers_conf())
        removed += end_orphan_monitors()
    # the host's network goes back once no run registered as using it is alive (whatever the
    # LAB_RUNTIME of its lab)
    removed += HostNetState.release()
    return removed


def end_orphan_monitors() -> list[str]:
    """End the ``conmon``s of containers this machine's podman no longer has (an exec
    session's, left by a run interrupted mid-exec: ``runners.containers.conmon``)."""
    podman = shutil.which("podman")
    found = conmon.monitors()
    if podman is None or not found:
        return []
    env = podman_env(write_containers_conf())
    try:
        ids = subprocess.run([podman, "ps", "-a", "-q", "--no-trunc", "--external"],
                             capture_output=True, text=True, env=env, timeout=60,
                             check=True).stdout.split()
        root = subprocess.run([podman, "info", "--format", "{{.Store.GraphRoot}}"],
                              capture_output=True, text=True, env=env, timeout=60,
                              check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return []  # what exists is unknown: nothing is an orphan for sure
    if not root:
        return []
    return conmon.end(conmon.orphans(found, set(ids), root))


# --- the host's network state --------------------------------------------------------------

IP_FORWARD = Path("/proc/sys/net/ipv4/ip_forward")
CHAIN_PREFIXES = ("NETAVARK", "CNI-", "PODMAN")


def host_net_dir() -> Path:
    """This machine's record of its network before podman changed it, and of the runs using
    it (``LAB_HOST_NET_DIR`` overrides the place, for tests)."""
    d = Path(os.environ.get("LAB_HOST_NET_DIR") or f"/tmp/rcl-host-net-{os.getuid()}")
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    return d


@contextlib.contextmanager
def _host_lock() -> Iterator[None]:
    path = host_net_dir() / "host-net.lock"
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def iptables_chains(table: str) -> set[str] | None:
    """The chains of an iptables table (None: no iptables or not allowed)."""
    ipt = shutil.which("iptables")
    if ipt is None:
        return None
    out = subprocess.run([ipt, "-w", "-t", table, "-S"], capture_output=True, text=True,
                         timeout=30)
    if out.returncode != 0:
        return None
    return {line.split()[1] for line in out.stdout.splitlines()
            if line.startswith(("-N ", "-P ")) and len(line.split()) > 1}


class HostNetState:
    """``ip_forward`` and the iptables chains as they were before the first container run on
    this machine, and the runs using the host's network since (``users/``: one file per run
    directory). ``release`` undoes what podman added once no registered run is alive — whatever
    ``LAB_RUNTIME`` each run's lab has, so one run's teardown never unplugs another's
    containers."""

    TABLES = ("filter", "nat", "mangle")

    @staticmethod
    def path() -> Path:
        return host_net_dir() / "host-net.json"

    @staticmethod
    def _user(run_dir: Path) -> Path:
        key = hashlib.sha256(str(run_dir.resolve()).encode()).hexdigest()[:20]
        return host_net_dir() / "users" / key

    @classmethod
    def remember(cls, run_dir: Path | None = None) -> None:
        """Record the host's network unless a run alive already did (keep the older truth),
        and register ``run_dir``'s run as a user of it."""
        with _host_lock():
            if not cls.path().exists():
                state: dict[str, Any] = {"chains": {}}
                with contextlib.suppress(OSError):
                    state["ip_forward"] = IP_FORWARD.read_text().strip()
                for t in cls.TABLES:
                    chains = iptables_chains(t)
                    if chains is not None:
                        state["chains"][t] = sorted(chains)
                cls.path().write_text(json.dumps(state))
            if run_dir is not None:
                user = cls._user(run_dir)
                user.parent.mkdir(exist_ok=True)
                user.write_text(str(run_dir.resolve()))

    @classmethod
    def users(cls) -> list[Path]:
        """The run directories registered and still alive (a dead or removed run's entry is
        dropped)."""
        users = host_net_dir() / "users"
        alive_dirs: list[Path] = []
        for entry in sorted(users.glob("*")) if users.is_dir() else []:
            with contextlib.suppress(OSError):
                d = Path(entry.read_text().strip())
                info = read_run(d)
                if info is not None and info.owner_alive:
                    alive_dirs.append(d)
                    continue
            entry.unlink(missing_ok=True)
        return alive_dirs

    @classmethod
    def release(cls, run_dir: Path | None = None) -> list[str]:
        """``run_dir``'s run no longer uses the host's network (None: only drop the dead);
        with no registered run alive, put the host back. Returns what was done."""
        with _host_lock():
            if run_dir is not None:
                cls._user(run_dir).unlink(missing_ok=True)
            if cls.users():
                return []
            return cls._restore()

    @classmethod
    def _restore(cls) -> list[str]:
        """Delete the podman chains that were not there before (and the rules that jump to
        them), and set ``ip_forward`` back (the caller holds the host lock)."""
        try:
            state = json.loads(cls.path().read_text())
        except (OSError, ValueError):
            return []
        done = restore_chains(state.get("chains", {}))
        before = state.get("ip_forward")
        with contextlib.suppress(OSError):
            if before is not None and IP_FORWARD.read_text().strip() != before:
                IP_FORWARD.write_text(before + "\n")
                done.append(f"ip_forward set back to {before}")
        cls.path().unlink(missing_ok=True)
        return done


def restore_chains(before: dict[str, list[str]]) -> list[str]:
    ipt = shutil.which("iptables")
    if ipt is None:
        return []
    done: list[str] = []
    for table, old in before.items():
        now = iptables_chains(table) or set()
        added = {c for c in now - set(old) if c.startswith(CHAIN_PREFIXES)}
        if not added:
            continue
        rules = subprocess.run([ipt, "-w", "-t", table, "-S"], capture_output=True, text=True,
                               timeout=30).stdout.splitlines()
        # rules that jump to an added chain, in chains that stay: deleted one by one
        for line in rules:
            parts = shlex.split(line)  # comments are quoted: --comment "netavark ... rules"
            if parts[:1] == ["-A"] and parts[1] not in added and any(
                    p in added for p in parts[2:]):
                subprocess.run([ipt, "-w", "-t", table, "-D", *parts[1:]],
                               capture_output=True, timeout=30)
        for chain in sorted(added):
            subprocess.run([ipt, "-w", "-t", table, "-F", chain], capture_output=True, timeout=30)
        for chain in sorted(added):
            out = subprocess.run([ipt, "-w", "-t", table, "-X", chain], capture_output=True,
                                 text=True, timeout=30)
            if out.returncode == 0:
                done.append(f"iptables -t {table} -X {chain}")
            else:
                log.warning("could not delete iptables chain %s (%s): %s", chain, table,
                            out.stderr.strip())
    return done
