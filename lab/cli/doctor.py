"""`lab doctor`: every component the lab can drive, where it is on this machine, its version
and status, and for a missing one how to get it. A table on a terminal; one plain line per
component otherwise (piped or in a log, a table would wrap into a column). Last, whether the
lab runs as root and, when not, which actions it refuses and why (``dsl.actions``'s
``needs_root``, the reasons ``lab check`` notes)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from dsl.actions import root_faults
from runners import cgroups
from runners.components import Found, is_root, survey


def doctor_rows() -> list[Found]:
    return survey()


def note(f: Found) -> str:
    """What the component is for (found), or how to get it (missing): one line."""
    if f.ok:
        return f.spec.purpose
    return ("(optional) " if not f.spec.needed_by_default else "") + f.spec.how_to_get


def plain_lines(found: list[Found]) -> list[str]:
    """``name  status  version  path  note``, aligned, one line each, never wrapped."""
    rows = [(f.name, f.status, f.version or "-", f.path or "-", note(f)) for f in found]
    widths = [max((len(r[i]) for r in rows), default=0) for i in range(4)]
    return ["  ".join([*(c.ljust(w) for c, w in zip(r[:4], widths, strict=True)), r[4]])
            for r in rows]


ROOT_YES = "root: yes — the actions that need root can run"
ROOT_NO = "root: no — refused without root: "


def root_line(root: bool) -> str:
    """One line: root or not, and when not, each action refused without root and why."""
    if root:
        return ROOT_YES
    return ROOT_NO + "; ".join(f.text for f in root_faults())


def kernel_lines(cgroup_root: Path = cgroups.CGROUP_ROOT, fuse: Path = Path("/dev/fuse")
                 ) -> list[str]:
    """What the machine's kernel offers the faults that need it: one line each, present or
    not, and what is refused without it."""
    def state(ok: bool, where: str) -> str:
        return f"yes ({where})" if ok else "no"

    v1 = [c for c in ("cpu", "memory") if cgroups.available(c, cgroup_root)]
    v2 = cgroups.unified_dir(cgroup_root)
    return [
        f"cgroup v1 cpu, memory: {state(len(v1) == 2, ', '.join(v1))} — cpu limit, "
        "memory limit" + ("" if len(v1) == 2 else " are refused"),
        f"cgroup v2: {state(v2 is not None, str(v2))} — a Galera group partition (each "
        "server in a group of its own, so iptables knows its connections)"
        + ("" if v2 is not None else " is refused"),
        f"/dev/fuse: {state(fuse.exists(), str(fuse))} — io delay, io fail (lab-iofs)"
        + ("" if fuse.exists() else " are refused"),
    ]


def sandbox_line(custom: str | None = None) -> str:
    """MySQL and Percona Server for dbdeployer: what ``LAB_SANDBOX_BINARY`` holds."""
    import os

    from runners.sandbox import unpacked

    custom = os.environ.get("LAB_SANDBOX_BINARY") if custom is None else custom
    head = "MySQL / Percona Server 8.0 (engine mysql, percona; replication, single): "
    tail = " — supported, not exercised here (no tarball is obtainable on this project's machine)"
    if not custom:
        return head + "LAB_SANDBOX_BINARY unset (unpack their tarballs with dbdeployer unpack " \
            "into a directory and name it there)" + tail
    from runners.sandbox import unpacked_flavor

    root = Path(custom)
    found = sorted({f"{unpacked_flavor(root / v) or 'mysql or percona'} {v}"
                    for flavor in ("mysql", "percona") for v in unpacked(root, flavor, None)})
    return head + f"{custom}: " + (", ".join(found) or "no MySQL or Percona Server there") + tail


# What this project's own integration tests run against (a fact about the project, like the
# MySQL tarballs' "not exercised here"): ProxySQL is, mongod is not.
EXERCISED_LINE = (
    "router proxysql: exercised by this project's integration tests (ProxySQL 2.7.2 on "
    "MariaDB 10.11: replication, Galera, two primaries, its monitor-driven failover "
    "calibrated; Percona Server behind it: not exercised here); topology mongodb_replset "
    "(mongod): supported, not exercised here (no mongod is obtainable on this project's "
    "machine)")


def render(found: list[Found], console: Console, root: bool | None = None) -> None:
    """The components, then the root line (``root``: whether the lab runs as root; None:
    look)."""
    root = is_root() if root is None else root
    if not console.is_terminal:
        for line in [*plain_lines(found), *kernel_lines(), sandbox_line(), EXERCISED_LINE,
                     root_line(root)]:
            console.print(Text(line), soft_wrap=True)
        return
    table = Table(title="replica-chaos-lab components", show_lines=False)
    for col in ("component", "status", "version", "path", "used for / how to get"):
        table.add_column(col, overflow="fold")
    for f in found:
        style = {"ok": "green", "missing": "red"}.get(f.status, "yellow")
        table.add_row(f.name, f"[{style}]{f.status}[/]", f.version or "-", f.path or "-", note(f))
    console.print(table)
    for line in [*kernel_lines(), sandbox_line(), EXERCISED_LINE]:
        console.print(Text(line), soft_wrap=True)
    if root:
        console.print(Text(ROOT_YES))
        return
    refused = Table(title="root: no — refused without root (run as root to use them)",
                    show_lines=False)
    for col in ("action", "why it needs root"):
        refused.add_column(col, overflow="fold")
    for fault in root_faults():
        refused.add_row(Text(fault.action), Text(fault.reason))
    console.print(refused)


def render_containers(console: Console) -> None:
    """The container back-end: its engine, the node image (``runners.containers.status``)."""
    from runners.containers.status import lines, survey

    for line in lines(survey()):
        console.print(Text(line), soft_wrap=True)


def exit_status(found: list[Found]) -> int:
    """1 only when a component that the default experiments need is missing."""
    return 1 if any(not f.ok and f.spec.needed_by_default for f in found) else 0
