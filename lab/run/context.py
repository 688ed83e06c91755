"""A run's identity beside its figures: where the servers ran (back-end), the topology, the
engine asked for, the router, the versions of what ran and the effective server config.

``run_context(plan)`` is stored with the run (``runs.backend``, ``runs.topology``,
``runs.context``: docs/results.md) when it is created, so that ``lab runs``, ``lab show``,
``--json``, ``lab compare`` and the HTML report say on what a figure was measured, and a
comparison across back-ends says so. The versions are those of the components this machine
runs for the plan (the binaries ``lab doctor`` lists, dbdeployer's sandbox binary under
``LAB_SANDBOX_BINARY``) and, on containers, the images the nodes run; a component that cannot
be found is left out rather than guessed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from dsl.plan import Plan
from lab.store.records import lab_version

log = logging.getLogger(__name__)

LAB_IMAGE = "rcl-node (the lab's node image)"


def engine_text(plan: Plan) -> str:
    """``mariadb 10.11``, or ``mariadb`` when the file names no version."""
    e = plan.engine
    return e.flavor + (f" {e.version}" if e.version else "")


def node_configs(plan: Plan, cell_index: int | None = None) -> dict[str, dict[str, str]]:
    """The effective server config of each node of a cell (the first by default): what the
    server is started with (``PlannedNode.config``)."""
    if not plan.cells:
        return {}
    cell = next((c for c in plan.cells if c.index == cell_index), plan.cells[0])
    return {n.name: dict(n.config) for n in cell.nodes}


def _images(plan: Plan) -> dict[str, str]:
    """On containers, the image of each node (the lab's unless the file names one)."""
    if plan.backend != "containers" or not plan.cells:
        return {}
    out: dict[str, str] = {}
    for n in plan.cells[0].nodes:
        ref = n.image
        if ref is None and plan.topology == "mongodb_replset":
            from runners.containers.mongo import default_image

            ref = default_image(plan.engine.flavor, plan.engine.version)
        out[n.name] = ref or LAB_IMAGE
    if plan.router is not None and plan.router.image:
        out["router"] = plan.router.image
    return out


@lru_cache(maxsize=32)
def _component_versions(backend: str, topology: str, flavor: str, version: str | None,
                        router: str | None) -> tuple[tuple[str, str], ...]:
    from runners.components import find

    out: list[tuple[str, str]] = []
    server = "mongod" if topology == "mongodb_replset" else "mariadbd"
    names = [server]
    if topology == "galera":
        names.append("galera")
    elif topology != "mongodb_replset" and backend == "native":
        names.append("dbdeployer")
    if router:
        names.append(router)
    if backend == "containers":
        names.append("podman")
    for name in names:
        try:
            found = find(name)
        except Exception:  # noqa: BLE001 - a version is a courtesy, never a failed run
            log.debug("no version for %s", name, exc_info=True)
            continue
        if found.version:
            out.append((name, found.version))
    if server == "mariadbd" and flavor != "mariadb" and backend == "native":
        try:  # dbdeployer runs the tarball under LAB_SANDBOX_BINARY, not this machine's
            from runners.sandbox import sandbox_binary

            out = [(k, v) for k, v in out if k != "mariadbd"]
            out.insert(0, ("mysqld", sandbox_binary(flavor, version)[1]))
        except Exception:  # noqa: BLE001
            log.debug("no sandbox binary for %s %s", flavor, version, exc_info=True)
    return tuple(out)


def versions(plan: Plan) -> dict[str, str]:
    """``{"lab": ..., "mariadbd": "10.11.19", "galera": ..., "haproxy": ..., "image"...}``."""
    router = plan.router.kind if plan.router is not None else None
    out = {"lab": lab_version()}
    out.update(_component_versions(plan.backend, plan.topology, plan.engine.flavor,
                                   plan.engine.version, router))
    if plan.backend == "containers":
        try:
            from runners.containers.image import image_tag

            out["node image"] = image_tag()
        except Exception:  # noqa: BLE001
            log.debug("no node image tag", exc_info=True)
    return out


def run_context(plan: Plan) -> dict[str, Any]:
    """The run's identity (docs/results.md, ``context``)."""
    router = plan.router
    return {
        "backend": plan.backend,
        "topology": plan.topology,
        "engine": engine_text(plan),
        "router": None if router is None else router.kind,
        "replication": plan.replication_mode,
        "semi_sync": plan.semi_sync,
        "versions": versions(plan),
        "images": _images(plan),
        "config": node_configs(plan),
        "router_settings": {} if router is None else dict(router.settings),
    }


def context_line(ctx: dict[str, Any] | None, *, backend: str | None = None,
                 topology: str | None = None) -> str:
    """One line: ``native · replication · mariadb 10.11 · router haproxy · mariadbd 10.11.19,
    lab 0.1.0``; a run stored before contexts were recorded says what it knows."""
    ctx = ctx or {}
    parts = [str(ctx.get("backend") or backend or "back-end unknown"),
             str(ctx.get("topology") or topology or "topology unknown")]
    if ctx.get("engine"):
        parts.append(str(ctx["engine"]))
    if ctx.get("router"):
        parts.append(f"router {ctx['router']}")
    vers = ctx.get("versions") or {}
    if isinstance(vers, dict) and vers:
        parts.append(", ".join(f"{k} {v}" for k, v in vers.items()))
    return " · ".join(parts)


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def summary_identity(summary: dict[str, Any], key: str) -> str | None:
    """A run summary's ``backend`` / ``topology`` (None: not recorded)."""
    v = summary.get(key) or _dict(summary.get("context")).get(key)
    return str(v) if v else None


def server_version(summary: dict[str, Any]) -> str | None:
    vers = _dict(_dict(summary.get("context")).get("versions"))
    v = vers.get("mariadbd") or vers.get("mysqld") or vers.get("mongod")
    return str(v) if v else None


def run_warnings(runs: Sequence[tuple[str, dict[str, Any]]]) -> list[str]:
    """What differs between runs (``(run id, summary)``) compared beside the experiment: the
    back-end (a figure may be the back-end's, not the experiment's; a run that did not record
    it is ``unknown``), the topology, the server's version (said only when both are known)."""
    out = []
    for key, what, why in (
        ("backend", "back-ends", "a difference may be the back-end's (containers add a network "
         "hop and their own scheduling), not the experiment's"),
        ("topology", "topologies", "their figures measure different systems"),
        ("server", "server versions", "a difference may be the version's"),
    ):
        by: dict[str, list[str]] = {}
        for rid, s in runs:
            v = server_version(s) if key == "server" else summary_identity(s, key)
            if key != "backend" and v is None:
                continue
            ids = by.setdefault(v or "unknown (not recorded)", [])
            if rid[:8] not in ids:
                ids.append(rid[:8])
        if len(by) > 1:
            parts = "; ".join(f"{k}: {', '.join(ids)}" for k, ids in by.items())
            out.append(f"these runs ran on different {what} ({parts}): {why}")
    return out
