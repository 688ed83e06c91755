"""MongoDB replica sets on containers (``topology mongodb_replset`` on ``backend containers``):
each member a container of Percona Server for MongoDB (``engine psmdb``:
``percona/percona-server-mongodb``) or MongoDB (``engine mongodb``: ``mongo``), with the
engine's version as the tag when the file gives one (``engine psmdb 7.0`` ->
``percona/percona-server-mongodb:7.0``), or the image the file names (``image``).

A member is ``ContainerMongoNode``: the native ``runners.mongo.MongoNode`` (pymongo, the
replica set commands and the replica set -> standalone procedure of ``fault.mongo`` are
unchanged) whose process verbs are its container's (``runners.containers.node
.ContainerNode``). The members find each other by name (``m1:27017``); the lab reaches each
through its published port with a direct connection. ``mongod``'s arguments are a file in the
container (``/etc/lab/mongod-args``, written through the API before each start) read by a
small start script the lab copies in (``/lab-mongod``), so that a member can be started again
without ``--replSet`` (``convert NODE to standalone``) in the same container, with its data.

Not exercised on the machine this project is built on: no MongoDB image can be pulled there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runners.containers import engine as engines
from runners.containers.node import ContainerNode
from runners.errors import ComponentError
from runners.mongo import NO_SQL_USER, MongoNode, setting_args
from runners.mysql import wait_until
from runners.node import READY_TIMEOUT
from runners.runtime import Run

MONGO_PORT = 27017  # in every member's container
DBPATH = "/data/db"  # the official images' data volume
ARGS_PATH = "/etc/lab/mongod-args"
START_SCRIPT = "/lab-mongod"
START_SCRIPT_TEXT = """#!/bin/sh
# The lab's start script for a MongoDB member: mongod with the arguments the lab wrote
# (one per line; values from a checked allow-list, never a shell's).
set -eu
set --
while IFS= read -r arg; do
  [ -n "$arg" ] && set -- "$@" "$arg"
done < /etc/lab/mongod-args
exec mongod "$@"
"""
IMAGES = {"psmdb": "percona/percona-server-mongodb", "mongodb": "mongo"}


def default_image(flavor: str, version: str | None) -> str:
    """The image of an engine flavor: its official repository, the version as the tag."""
    repo = IMAGES.get(flavor)
    if repo is None:
        raise ComponentError("containers", f"no MongoDB image for engine {flavor}")
    return f"{repo}:{version}" if version else repo


def mongod_args(repl_set: str | None, settings: Mapping[str, str]) -> list[str]:
    """A member's ``mongod`` arguments in its container: every address of the container (its
    port is published on the engine's address), the image's data volume; ``--replSet``
    unless it runs standalone; the plan's settings through the native allow-list."""
    args = ["--port", str(MONGO_PORT), "--bind_ip_all", "--dbpath", DBPATH]
    if repl_set is not None:
        args += ["--replSet", repl_set]
    return args + setting_args(settings)


class ContainerMongoNode(ContainerNode, MongoNode):
    """A replica set member in a container: ``ContainerNode``'s process verbs, ``MongoNode``'s
    conversation."""

    def __init__(self, run: Run, planned: Any, container: Any, eng: engines.Engine,
                 repl_set: str | None, settings: Mapping[str, str]) -> None:
        ContainerNode.__init__(self, run, planned, NO_SQL_USER, container, eng)
        self.role = "member"
        self.node_dir = run.dir / planned.name
        self.mongod = "mongod"
        self.repl_set = repl_set
        self.settings = dict(settings)
        self.auth = None
        self.proc = None
        self.client_host = eng.address
        self.data_path = DBPATH

    @property
    def component(self) -> str:
        return f"node {self.name} (mongod in container {self.container.name}, port {self.port})"

    @property
    def host(self) -> str:
        return f"{self.name}:{MONGO_PORT}"

    def write_args(self) -> None:
        text = "".join(f"{a}\n" for a in mongod_args(self.repl_set, self.settings))
        self.put_file(ARGS_PATH, text.encode())

    def start(self, options: dict[str, str] | None = None, wait: bool = True,
              timeout: float = READY_TIMEOUT) -> None:
        """Start the container with the arguments of this start (``--replSet`` or not; a
        ``start ... with`` option is a setting of the allow-list)."""
        if self.is_running():
            return
        settings, self.settings = self.settings, {**self.settings, **(options or {})}
        try:
            self.write_args()
        except ValueError as e:
            raise ComponentError(self.component, str(e)) from None
        finally:
            self.settings = settings
        self.container.start()
        if wait:
            self.wait_ready(timeout)

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> float:
        try:
            return wait_until(self.ping, timeout, "answering ping", self.component, None,
                              alive=self.is_running)
        except ComponentError as e:
            raise ComponentError(self.component, e.message, self.save_log()) from None

    def log_size(self) -> int:
        self.save_log()  # mongod logs to the container's output
        return MongoNode.log_size(self)

    def log_since(self, offset: int) -> str:
        self.save_log()
        return MongoNode.log_since(self, offset)

    def sql(self, statement: str, timeout: float = 5.0) -> list[dict[str, Any]]:
        return MongoNode.sql(self, statement, timeout)

    def scalar(self, statement: str, timeout: float = 5.0) -> Any:
        return MongoNode.scalar(self, statement, timeout)
