"""MongoDB replica sets from ``mongod`` binaries (MongoDB or Percona Server for MongoDB).

Each member is a ``mongod`` child process of the lab (never ``--fork``) on a loopback port of
the run (``ports.node(i)``), with its data directory, log and Unix socket under the run
directory. The set is called ``rs_<run id>``; the first member is initiated with priority 2
(the preferred primary) and the others with priority 1. Settings from the plan reach
``mongod`` only through a small allow-list of command-line options, as argv elements.

The MongoDB commands of the replica set -> standalone procedure (docs/topologies.md,
"Converting a replica set to a standalone server") are here (``remove_member``,
``restart_member``, ``clean_system_replset`` ...); the procedure itself is a fault,
``fault.mongo.convert_to_standalone``.
"""

from __future__ import annotations

import contextlib
import math
import os
import secrets
import signal
import string
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pymongo import MongoClient
from pymongo.errors import OperationFailure, PyMongoError
from pymongo.write_concern import WriteConcern

from dsl.models import Engine
from runners.components import find, require
from runners.errors import ComponentError
from runners.mysql import Credentials, wait_until
from runners.node import READY_TIMEOUT, Node
from runners.runtime import Run

HOST = "127.0.0.1"
NO_SQL_USER = Credentials("", "")
SYSTEM_DBS = frozenset({"admin", "local", "config"})
MARKER_DB, MARKER_COLL = "lab_convert", "marker"
MARKER_DOCS = 1000
# mongod's startup warning when local.system.replset has documents but --replSet is absent
# (log id 20547 in MongoDB 4.4+'s JSON log; the text is the same in older plain-text logs).
REPLSET_WARNING_ID = 20547
REPLSET_WARNING_TEXT = "Document(s) exist in 'system.replset', but started without --replSet"
TEMP_USER = "lab_tmp_system"

# --- settings -> argv (allow-list) --------------------------------------------------------------

def _positive_float(value: str) -> str:
    v = float(value)
    if not (math.isfinite(v) and v > 0):
        raise ValueError("must be a positive number")
    return value


def _positive_int(value: str) -> str:
    if not value.isdigit() or int(value) <= 0:
        raise ValueError("must be a positive whole number")
    return value


def _whole_number(value: str) -> str:
    if not value.isdigit():
        raise ValueError("must be a whole number")
    return value


# Configuration-file setting -> (mongod option, value check).
ALLOWED_SETTINGS: dict[str, tuple[str, Callable[[str], str]]] = {
    "storage.wiredTiger.engineConfig.cacheSizeGB": ("--wiredTigerCacheSizeGB", _positive_float),
    "replication.oplogSizeMB": ("--oplogSize", _positive_int),
    "operationProfiling.slowOpThresholdMs": ("--slowms", _whole_number),
}


def setting_args(settings: Mapping[str, str]) -> list[str]:
    """Plan settings -> mongod argv. Anything outside the allow-list is refused (ValueError)
    rather than dropped: a setting the experiment asked for must not silently vanish."""
    out: list[str] = []
    for key, value in settings.items():
        if key not in ALLOWED_SETTINGS:
            supported = ", ".join(sorted(ALLOWED_SETTINGS))
            raise ValueError(f"setting {key!r} is not supported for mongod (supported: "
                             f"{supported})")
        option, check = ALLOWED_SETTINGS[key]
        try:
            out += [option, check(str(value).strip())]
        except ValueError as e:
            raise ValueError(f"setting {key} = {value!r}: {e}") from None
    return out


def mongod_argv(binary: str, port: int, node_dir: Path, repl_set: str | None,
                settings: Mapping[str, str]) -> list[str]:
    """argv for one member: loopback only, its own dbpath, log (appended across restarts) and
    Unix socket directory; ``--replSet`` unless it runs standalone."""
    argv = [binary, "--port", str(port), "--bind_ip", HOST,
            "--dbpath", str(node_dir / "data"), "--logpath", str(node_dir / "mongod.log"),
            "--logappend", "--unixSocketPrefix", str(node_dir)]
    if repl_set is not None:
        argv += ["--replSet", repl_set]
    return argv + setting_args(settings)


def replset_name(run_id: str) -> str:
    return f"rs_{run_id}"


def member_host(port: int) -> str:
    return f"{HOST}:{port}"


def initiate_document(name: str, ports: Sequence[int],
                      hosts: Sequence[str] | None = None) -> dict[str, Any]:
    """replSetInitiate's config: members on 127.0.0.1 (or ``hosts``: ``m1:27017`` on a
    container network), the first one preferred as primary."""
    names = list(hosts) if hosts is not None else [member_host(p) for p in ports]
    return {"_id": name, "members": [
        {"_id": i, "host": h, "priority": 2 if i == 0 else 1} for i, h in enumerate(names)]}


def config_without(config: Mapping[str, Any], host: str) -> dict[str, Any]:
    """The replica set config with one member removed and the version bumped: what
    ``rs.remove(host)`` sends with replSetReconfig (MongoDB 4.4+ removes one voting member per
    reconfig)."""
    members = list(config.get("members", []))
    kept = [m for m in members if m.get("host") != host]
    if len(kept) == len(members):
        raise ValueError(f"{host} is not a member of {config.get('_id')}")
    if not kept:
        raise ValueError("cannot remove the last member")
    new = dict(config)
    new["members"] = kept
    new["version"] = int(config.get("version", 1)) + 1
    return new


def warning_in(log_text: str) -> bool:
    """Whether a mongod log excerpt holds the system.replset startup warning."""
    return f'"id":{REPLSET_WARNING_ID},' in log_text or REPLSET_WARNING_TEXT in log_text


def check_version(engine: Engine, found: str | None, path: str) -> None:
    """The plan's engine version (e.g. ``7.0``) must be what the binary reports."""
    if engine.version and found and not found.startswith(engine.version):
        raise ComponentError("mongod", f"the experiment asks for {engine.flavor} "
                             f"{engine.version} but {path} is {found}: put the right bin "
                             "directory first in LAB_BIN_PATH")


# --- one member ---------------------------------------------------------------------------------

class MongoNode(Node):
    """A mongod the lab started itself. Kill, pause and resume are the inherited process
    verbs; ``command`` talks to it through pymongo (direct connection, short timeouts)."""

    def __init__(self, run: Run, name: str, index: int, port: int, node_dir: Path,
                 mongod: str, repl_set: str | None, settings: Mapping[str, str],
                 auth: Credentials | None = None) -> None:
        super().__init__(run, name, "member", index, port, node_dir / "data",
                         node_dir / "mongod.log", NO_SQL_USER)
        self.node_dir = node_dir
        self.mongod = mongod
        self.repl_set = repl_set
        self.settings = dict(settings)
        self.auth = auth
        self.proc: subprocess.Popen[bytes] | None = None
        self.client_host = HOST  # where the lab reaches it

    @property
    def component(self) -> str:
        return f"node {self.name} (mongod on port {self.port})"

    @property
    def host(self) -> str:
        return member_host(self.port)

    def pid(self) -> int | None:
        if self.proc is not None and self.proc.poll() is None:
            return self.proc.pid
        return None

    def _supervisor_pid(self) -> int | None:
        return None

    def argv(self, options: Mapping[str, str] | None = None) -> list[str]:
        return mongod_argv(self.mongod, self.port, self.node_dir, self.repl_set,
                           {**self.settings, **(options or {})})

    # --- process verbs -------------------------------------------------------------------
    def start(self, options: dict[str, str] | None = None, wait: bool = True,
              timeout: float = READY_TIMEOUT) -> None:
        if self.is_running():
            return
        try:
            argv = self.argv(options)
        except ValueError as e:
            raise ComponentError(self.component, str(e)) from None
        self.datadir.mkdir(parents=True, exist_ok=True)
        out = open(self.node_dir / "stdout.log", "ab")
        try:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        finally:
            out.close()
        self.run.record(self.proc.pid, f"mongod {self.name}")
        if wait:
            self.wait_ready(timeout)

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> float:
        proc = self.proc
        return wait_until(self.ping, timeout, "answering ping", self.component, self.error_log,
                          alive=lambda: proc is not None and proc.poll() is None)

    def stop(self, timeout: float = 60.0) -> None:
        """Clean shutdown (SIGTERM), SIGKILL after ``timeout``."""
        if self.proc is None or self.proc.poll() is not None:
            return
        if self.paused:
            self.resume()
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        self.run.forget(self.proc.pid)

    def kill(self) -> None:
        super().kill()
        if self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(5)

    # --- talking to it ---------------------------------------------------------------------
    @contextlib.contextmanager
    def client(self, timeout: float = 2.0, auth: Credentials | None = None
               ) -> Iterator[MongoClient[dict[str, Any]]]:
        ms = max(100, int(timeout * 1000))
        creds = auth or self.auth
        kwargs: dict[str, Any] = {}
        if creds is not None:
            kwargs.update(username=creds.user, password=creds.password, authSource="admin")
        c: MongoClient[dict[str, Any]] = MongoClient(
            self.client_host, self.port, directConnection=True, serverSelectionTimeoutMS=ms,
            connectTimeoutMS=ms, socketTimeoutMS=ms, retryWrites=False,
            appname="replica-chaos-lab", **kwargs)
        try:
            yield c
        finally:
            c.close()

    def command(self, name: str, value: Any = 1, timeout: float = 2.0, db: str = "admin",
                **fields: Any) -> dict[str, Any]:
        with self.client(timeout) as c:
            return dict(c[db].command(name, value, **fields))

    def ping(self) -> bool:
        return bool(self.command("ping", timeout=1.0).get("ok"))

    def hello(self, timeout: float = 1.0) -> dict[str, Any]:
        try:
            return self.command("hello", timeout=timeout)
        except OperationFailure:  # before 4.4.2 / 5.0
            return self.command("isMaster", timeout=timeout)

    def is_primary(self) -> bool:
        h = self.hello()
        return bool(h.get("isWritablePrimary", h.get("ismaster")))

    def sql(self, statement: str, timeout: float = 5.0) -> list[dict[str, Any]]:
        raise ComponentError(self.component, "runs MongoDB: SQL does not apply; use command()")

    def scalar(self, statement: str, timeout: float = 5.0) -> Any:
        raise ComponentError(self.component, "runs MongoDB: SQL does not apply; use command()")

    # --- its log ---------------------------------------------------------------------------
    def log_size(self) -> int:
        try:
            return self.error_log.stat().st_size
        except OSError:
            return 0

    def log_since(self, offset: int) -> str:
        try:
            with open(self.error_log, "rb") as f:
                f.seek(offset)
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""


# --- the replica set ------------------------------------------------------------------------------

class MongoReplicaSet:
    def __init__(self, run: Run, names: list[str], engine: Engine,
                 configs: dict[str, dict[str, str]]) -> None:
        self.run = run
        self.names = names
        self.engine = engine
        self.configs = configs
        self.mongod = require("mongod")
        check_version(engine, find("mongod").version, self.mongod)
        self.name = replset_name(run.id)
        self.nodes: list[MongoNode] = []

    def _make_nodes(self) -> None:
        for i, name in enumerate(self.names, start=1):
            node_dir = self.run.dir / name
            node_dir.mkdir()
            settings = self.configs.get(name, {})
            try:
                setting_args(settings)  # refuse bad settings before anything starts
            except ValueError as e:
                raise ComponentError(f"node {name}", str(e)) from None
            self.nodes.append(MongoNode(self.run, name, i, self.run.ports.node(i), node_dir,
                                        self.mongod, self.name, settings))

    def deploy(self, timeout: float = 60.0) -> list[MongoNode]:
        self._make_nodes()
        for node in self.nodes:
            node.start(wait=False)
        for node in self.nodes:
            node.wait_ready(timeout)
        initiate(self.nodes, self.name, timeout)
        return self.nodes

    def node(self, name: str) -> MongoNode:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def primary(self) -> MongoNode | None:
        return primary_of(self.nodes)

    def wait_primary(self, timeout: float = 60.0) -> MongoNode:
        return wait_primary(self.nodes, self.name, timeout)

    def member_states(self) -> dict[str, str]:
        return member_states(self.nodes)

    def wait_members(self, timeout: float = 60.0) -> None:
        wait_members(self.nodes, self.name, timeout)


# --- a replica set's members, wherever they run (processes here, or containers) --------------

def initiate(nodes: Sequence[MongoNode], name: str, timeout: float = 60.0) -> None:
    """replSetInitiate on the first member with every member's ``host``, then wait for a
    primary and for every member PRIMARY or SECONDARY."""
    first = nodes[0]
    doc = initiate_document(name, [n.port for n in nodes], [n.host for n in nodes])
    try:
        first.command("replSetInitiate", doc, timeout=30.0)
    except PyMongoError as e:
        raise ComponentError(first.component, f"replSetInitiate failed: {e}",
                             first.error_log) from None
    wait_primary(nodes, name, timeout)
    wait_members(nodes, name, timeout)


def primary_of(nodes: Sequence[MongoNode]) -> MongoNode | None:
    for n in nodes:
        if n.is_running():
            with contextlib.suppress(PyMongoError):
                if n.is_primary():
                    return n
    return None


def wait_primary(nodes: Sequence[MongoNode], name: str, timeout: float = 60.0) -> MongoNode:
    wait_until(lambda: primary_of(nodes) is not None, timeout, "electing a primary",
               f"replica set {name}", nodes[0].error_log, interval=0.1)
    p = primary_of(nodes)
    assert p is not None
    return p


def member_states(nodes: Sequence[MongoNode]) -> dict[str, str]:
    """{host: stateStr} as the primary sees it."""
    p = primary_of(nodes)
    if p is None:
        return {}
    st = p.command("replSetGetStatus")
    return {m["name"]: m["stateStr"] for m in st.get("members", [])}


def wait_members(nodes: Sequence[MongoNode], name: str, timeout: float = 60.0) -> None:
    hosts = {n.host for n in nodes}

    def healthy() -> bool:
        states = member_states(nodes)
        return all(states.get(h) in ("PRIMARY", "SECONDARY") for h in hosts)

    wait_until(healthy, timeout, "all members PRIMARY or SECONDARY",
               f"replica set {name}", nodes[0].error_log, interval=0.1)


# --- replica set -> standalone (docs/topologies.md) ------------------------------------------

def collection_counts(node: MongoNode, timeout: float = 10.0) -> dict[str, int]:
    """Document counts of every user collection (not admin/local/config)."""
    out: dict[str, int] = {}
    with node.client(timeout) as c:
        for db_name in c.list_database_names():
            if db_name in SYSTEM_DBS:
                continue
            db = c[db_name]
            for coll in db.list_collection_names():
                if not coll.startswith("system."):
                    out[f"{db_name}.{coll}"] = db[coll].count_documents({})
    return out


def write_marker(node: MongoNode) -> None:
    with node.client(30.0) as c:
        coll = c[MARKER_DB].get_collection(MARKER_COLL,
                                           write_concern=WriteConcern("majority"))
        coll.drop()
        coll.insert_many([{"_id": i} for i in range(MARKER_DOCS)])


def ensure_primary(node: MongoNode, timeout: float = 30.0) -> None:
    if node.is_primary():
        return
    with contextlib.suppress(PyMongoError):
        node.command("replSetStepUp", timeout=timeout)
    wait_until(node.is_primary, timeout, "primary after replSetStepUp", node.component,
               node.error_log, interval=0.1)


def remove_member(primary: MongoNode, host: str) -> None:
    config = primary.command("replSetGetConfig")["config"]
    primary.command("replSetReconfig", config_without(config, host), timeout=60.0,
                    maxTimeMS=60000)


def majority_caught_up(node: MongoNode) -> bool:
    optimes = node.command("replSetGetStatus").get("optimes", {})
    committed, applied = optimes.get("lastCommittedOpTime"), optimes.get("appliedOpTime")
    return committed is None or applied is None or committed == applied


def restart_member(node: MongoNode, repl_set: str | None) -> int:
    """Stop, then start with or without --replSet; returns the log offset of this start."""
    node.stop()
    node.repl_set = repl_set
    offset = node.log_size()
    node.start()
    return offset


def clean_system_replset(node: MongoNode) -> int:
    """Delete local.system.replset. With auth on, through a temporary user holding __system
    (created, used, dropped), as in the procedure; with auth off, directly."""
    if node.auth is None:
        with node.client(10.0) as c:
            return int(c["local"]["system.replset"].delete_many({}).deleted_count)
    pw = "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(24))
    node.command("createUser", TEMP_USER, timeout=10.0, pwd=pw,
                 roles=[{"role": "__system", "db": "admin"}])
    try:
        with node.client(10.0, auth=Credentials(TEMP_USER, pw)) as c:
            return int(c["local"]["system.replset"].delete_many({}).deleted_count)
    finally:
        node.command("dropUser", TEMP_USER, timeout=10.0)


def saw_warning(node: MongoNode, offset: int, wait: float) -> bool:
    deadline = time.monotonic() + wait
    while True:
        if warning_in(node.log_since(offset)):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
