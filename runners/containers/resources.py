"""CPU and memory limits of a node's container, through the engine's API (``cpu limit NODE to
20%``, ``memory limit NODE to 200M`` on ``backend containers``).

The limit is the container's own cgroup's: every process of the node's container (its init and
the server) is limited, as natively the server's process is. Docker takes it on
``POST /containers/{id}/update``; podman 4 serves that endpoint only in its own API
(``/libpod/containers/{id}/update``, measured: the Docker-compatible path answers 404 on podman
4.3), so the lab tries Docker's first and podman's on a 404. Both work on a remote engine.

A limit is lifted by setting it back to unlimited (CPU quota -1, memory -1; Docker refuses
-1 on update, so there the memory limit becomes the engine's whole memory, which limits
nothing). What the limits
did is read from the container's cgroup when the engine is local (``cpu.cfs_quota_us``,
``memory.limit_in_bytes``, ``memory.usage_in_bytes``, ``memory.oom_control``); on a remote
engine those figures are not known (None) and an OOM kill is known only from the container's
state (``State.OOMKilled``) once it has died.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from runners import cgroups
from runners.errors import ComponentError

LIBPOD_UPDATE = "/v4.0.0/libpod/containers/{}/update"
UNLIMITED = -1


def _status(e: BaseException) -> int | None:
    resp = getattr(e, "response", None)
    return getattr(resp, "status_code", None)


def update(client: Any, container: Any, *, cpu: tuple[int, int] | None = None,
           memory: int | None = None) -> str:
    """Set the container's CPU quota (``cpu``: (quota, period) in µs; quota -1 lifts it) and
    memory limit (bytes, swap included; -1 lifts it). Returns which API took it."""
    import docker

    kw: dict[str, Any] = {}
    if cpu is not None:
        kw.update(cpu_quota=cpu[0], cpu_period=cpu[1])
    if memory is not None and memory != UNLIMITED:
        kw.update(mem_limit=memory, memswap_limit=memory)
    elif memory is not None:
        # Docker takes no "unlimited" on update (it refuses limits under 6 MB, -1 included):
        # a limit of the engine's whole memory, swap unlimited, limits nothing
        kw.update(mem_limit=_engine_memory(client), memswap_limit=-1)
    try:
        container.update(**kw)
        return "docker"
    except docker.errors.APIError as e:
        if _status(e) != 404:
            raise ComponentError(f"container {container.name}", f"update: {e}") from None
    body: dict[str, Any] = {}
    if cpu is not None:
        body["cpu"] = {"quota": cpu[0], "period": cpu[1]}
    if memory is not None:
        body["memory"] = {"limit": memory, "swap": memory}
    api = client.api
    resp = api._post_json(api.base_url + LIBPOD_UPDATE.format(container.id), data=body)
    try:
        api._raise_for_status(resp)
    except docker.errors.APIError as e:
        raise ComponentError(f"container {container.name}", f"update: {e}") from None
    return "podman"


def _engine_memory(client: Any) -> int:
    try:
        return int(client.info().get("MemTotal") or 0) or 2**62
    except Exception:  # noqa: BLE001 - an engine that does not say: far more than any
        return 2**62


def cgroup_dir(pid: int, controller: str) -> Path | None:
    """The cgroup v1 directory of ``controller`` holding ``pid`` on this machine (None when
    the process is gone or the controller is not mounted)."""
    try:
        text = Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        _, names, path = line.split(":", 2)
        if controller in names.split(","):
            d = cgroups.CGROUP_ROOT / controller / path.lstrip("/")
            return d if d.is_dir() else None
    return None


class ContainerLimit:
    """A limit in force on a node's container (the counterpart of ``runners.cgroups.NodeGroup``
    for ``fault.resources``): ``release`` lifts it."""

    def __init__(self, client: Any, node: Any, controller: str, local: bool) -> None:
        self.client = client
        self.node = node  # a runners.containers.node.ContainerNode
        self.controller = controller
        self.local = local
        self.pid: int | None = node.pid()
        self.limit: int | None = None
        self.api = ""
        self.kills_seen = 0

    @property
    def path(self) -> str:
        d = self._dir()
        return str(d) if d is not None else f"container {self.node.container.name}"

    def _dir(self) -> Path | None:
        if not self.local or self.pid is None:
            return None
        return cgroup_dir(self.pid, self.controller)

    def set_cpu(self, share: float, period_us: int = cgroups.CFS_PERIOD_US) -> int:
        quota = cgroups.cpu_quota_us(share, period_us)
        self.api = update(self.client, self.node.container, cpu=(quota, period_us))
        return quota

    def set_memory(self, limit: int) -> dict[str, int | None]:
        self.api = update(self.client, self.node.container, memory=limit)
        self.limit = limit
        return {"limit_bytes": limit, "usage_bytes": self.memory_usage()}

    def memory_usage(self) -> int | None:
        d = self._dir()
        if d is None:
            return None
        with contextlib.suppress(OSError, ValueError):
            return int((d / "memory.usage_in_bytes").read_text().strip())
        return None

    def oom_kills(self) -> int:
        """The kernel's OOM kills in the container's group (local engine), else 1 once the
        container died of one (``State.OOMKilled``), else 0."""
        d = self._dir() if self.controller == "memory" else None
        count = 0
        if d is not None:
            with contextlib.suppress(OSError):
                count = cgroups.oom_kills(d)
        else:
            with contextlib.suppress(Exception):
                count = 1 if self.node.inspect().get("State", {}).get("OOMKilled") else 0
        # the group goes with the container: never count down
        self.kills_seen = max(self.kills_seen, count)
        return self.kills_seen

    def alive(self) -> bool:
        return bool(self.node.is_running())

    def cpu_use(self) -> cgroups.CpuUse:
        """The container's CPU time (its ``cpuacct`` group: every process of the container)
        and its throttling (``cpu.stat``); unknown on a remote engine."""
        acct = cgroup_dir(self.pid, "cpuacct") if self.local and self.pid is not None else None
        ns = None
        if acct is not None:
            with contextlib.suppress(OSError, ValueError):
                ns = int((acct / "cpuacct.usage").read_text().strip())
        return cgroups.cpu_use(self._dir() if self.controller == "cpu" else None,
                               None if ns is None else ns / 1e9)

    def release(self) -> list[int]:
        """Lift the limit (the engine keeps an update in the container's configuration: a
        container killed while limited would start again limited). A container that is gone
        has nothing to lift."""
        try:
            if self.controller == "cpu":
                update(self.client, self.node.container,
                       cpu=(UNLIMITED, cgroups.CFS_PERIOD_US))
            else:
                update(self.client, self.node.container, memory=UNLIMITED)
        except ComponentError:
            if self.node.is_running():
                raise
        return []
