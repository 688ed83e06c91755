"""`lab doctor` says whether the lab runs as root and, when not, which actions it refuses and
why: the reasons are the action table's (``dsl.actions``'s ``needs_root``), the ones `lab
check` notes and the runtime refuses with."""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Iterator
from itertools import product
from typing import get_args

import pytest
from rich.console import Console

from dsl import actions
from dsl.actions import ACTIONS, ANY_NODE, ROOT_FORMS, TOPOLOGY_KINDS, describe, root_faults
from dsl.models import (
    Action,
    CpuLimit,
    DiskFault,
    DropCaches,
    IoFault,
    LinkKind,
    MemoryLimit,
    NetworkFault,
    NodeAction,
    NodeGroupAction,
)
from lab.cli import doctor
from lab.cli.doctor import render, root_line
from runners.components import SPEC_BY_NAME, Found


def _found() -> list[Found]:
    return [Found(n, f"/usr/bin/{n}", "1.2.3", s) for n, s in SPEC_BY_NAME.items()]


def _plain(root: bool | None) -> list[str]:
    out = io.StringIO()
    render(_found(), Console(file=out, width=80), root=root)
    return out.getvalue().splitlines()


def test_piped_doctor_ends_with_what_is_refused_without_root_and_why() -> None:
    last = _plain(root=False)[-1]
    assert last.startswith("root: no — refused without root: drop caches (whole OS): writing "
                           "/proc/sys/vm/drop_caches; disk full NODE: mounting a tmpfs")
    for fault in root_faults():
        assert fault.text in last
    assert "network partition NODE (topology galera): inserting iptables rules" in last
    assert "cpu limit NODE: making a cgroup v1 'cpu' group" in last


def test_piped_doctor_as_root_says_so_and_lists_nothing() -> None:
    lines = _plain(root=True)
    assert lines[-1] == "root: yes — the actions that need root can run"
    assert not any("refused" in line for line in lines)


def test_doctor_on_a_terminal_shows_the_refused_actions_in_a_table() -> None:
    out = io.StringIO()
    render(_found(), Console(file=out, width=160, force_terminal=True, color_system=None),
           root=False)
    text = out.getvalue()
    assert "root: no — refused without root" in text
    rows = [line for line in text.splitlines() if line.startswith("│ drop caches (whole OS)")]
    assert len(rows) == 1 and "writing /proc/sys/vm/drop_caches" in rows[0]
    out = io.StringIO()
    render(_found(), Console(file=out, width=160, force_terminal=True), root=True)
    assert "root: yes" in out.getvalue() and "refused" not in out.getvalue()


def test_doctor_looks_whether_it_runs_as_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(doctor, "is_root", lambda: False)
    assert _plain(root=None)[-1].startswith("root: no")
    monkeypatch.setattr(doctor, "is_root", lambda: True)
    assert _plain(root=None)[-1].startswith("root: yes")


def test_the_reasons_are_the_action_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    row = ACTIONS[DropCaches]
    monkeypatch.setitem(ACTIONS, DropCaches, dataclasses.replace(
        row, needs_root=lambda a, topology: "a reason from the table" if a.node is None else None))
    assert "drop caches (whole OS): a reason from the table;" in root_line(False)
    monkeypatch.setitem(ACTIONS, DropCaches, dataclasses.replace(
        row, needs_root=lambda a, topology: None))
    assert "drop caches" not in root_line(False)


def _every_action() -> Iterator[Action]:
    """Every form of every action the table says may need root (verbs, links, node or not)."""
    for node in (None, ANY_NODE):
        yield DropCaches(node=node)
    for verb, where in product(("full", "free"), ("datadir", "binlog")):
        yield DiskFault(verb=verb, node=ANY_NODE, target=where)  # type: ignore[arg-type]
    for verb in ("limit", "heal"):
        yield CpuLimit(verb=verb, node=ANY_NODE, share=0.5)  # type: ignore[arg-type]
        yield MemoryLimit(verb=verb, node=ANY_NODE, limit=1 << 28)  # type: ignore[arg-type]
    for verb in ("delay", "fail", "heal"):
        yield IoFault(verb=verb, node=ANY_NODE, delay=0.05)  # type: ignore[arg-type]
    for lose in (False, True):
        yield NodeAction(verb="kill", node=ANY_NODE, lose_unsynced=lose)
        yield NodeGroupAction(verb="kill", nodes=[ANY_NODE], lose_unsynced=lose)
    verbs = get_args(NetworkFault.model_fields["verb"].annotation)
    for verb, link, node in product(verbs, get_args(LinkKind), (None, ANY_NODE)):
        yield NetworkFault(verb=verb, link=link, node=node, latency=0.1, bandwidth=1e6)


def test_the_doctors_forms_cover_every_reason_the_table_can_give() -> None:
    enumerated = {type(a) for a in _every_action()}
    may_need_root = {t for t, row in ACTIONS.items() if row.needs_root is not actions._root_never}
    assert may_need_root <= enumerated  # a new action that needs root: enumerate it above
    listed = {(f.form.split()[0], f.reason) for f in root_faults()}
    for a, kind in product(_every_action(), TOPOLOGY_KINDS):
        reason = actions.needs_root(a, kind)
        if reason is not None:
            assert (describe(a).split()[0], reason) in listed, (describe(a), kind)
    for form, a in ROOT_FORMS:
        assert any(actions.needs_root(a, kind) for kind in TOPOLOGY_KINDS), form
        assert describe(a).split()[0] == form.split()[0]
