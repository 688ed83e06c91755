"""Issue 24, item 1: what a back-end can do is declared (``runners.capabilities``), what a fault
family needs too (``fault.NEEDS``); ``lab check``, ``lab plan`` and ``lab run --backend``
refuse an action whose back-end lacks it, with the reason; no fault family probes a
topology or imports a back-end's classes."""

from __future__ import annotations

import ast
import dataclasses
import tempfile
from pathlib import Path

import pytest

from dsl.api import backend_errors, check_text, load_experiment, plan_text
from dsl.errors import LanguageErrors
from fault import NEEDS, needs
from runners import capabilities as caps
from runners.containers.topology import ContainerTopology
from runners.topology import NativeTopology

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = (NativeTopology, ContainerTopology)

CLOCK = """experiment "c" {
  backend containers
  duration 20s
  topology replication { primary db1  replicas db2 }
  workload w: unique_writes { target db1  rate 50/s }
  at 5s clock skew db2 by +30s
}
"""


def test_a_family_needing_what_the_backend_lacks_is_refused_with_the_reason(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Containers without ``Clock``: ``clock skew`` is refused where it stands, by lab check,
    lab plan and lab run --backend containers alike, in the words of the other refusals."""
    assert check_text(CLOCK) == []
    monkeypatch.setattr(ContainerTopology, "capabilities",
                        ContainerTopology.capabilities - {caps.Clock})
    want = "clock skew (libfaketime) runs natively only, not on containers yet"
    errors = check_text(CLOCK)
    assert [(e.span.line, e.span.column, e.message, e.hint) for e in errors] == [
        (6, 9, want, "run it with `backend native` (the default) until then")]
    with pytest.raises(LanguageErrors, match=r"clock skew \(libfaketime\) runs natively only"):
        plan_text(CLOCK)  # lab plan shows no plan that promises it
    path = Path(tempfile.mkdtemp()) / "c.exp"
    path.write_text(CLOCK.replace("  backend containers\n", ""))
    assert [e.message for e in backend_errors(path, "containers")] == [want]
    assert backend_errors(path, "native") == []


def test_a_capability_no_back_end_has_is_said_so(monkeypatch: pytest.MonkeyPatch) -> None:
    class Teleport:
        """A capability nobody declares."""

    monkeypatch.setitem(caps.MEANS, Teleport, "a teleporter")
    monkeypatch.setitem(NEEDS, type(load_experiment_action()),
                        lambda a, _: [caps.Need(Teleport, "clock skew")])
    assert [e.message for e in check_text(CLOCK)] == [
        "clock skew (a teleporter) runs on no back-end of the lab yet"]


def load_experiment_action() -> object:
    path = Path(tempfile.mkdtemp()) / "c.exp"
    path.write_text(CLOCK)
    return load_experiment(path).timeline[0].action


def test_io_faults_and_a_group_recovery_run_on_containers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``io delay`` and a kill losing unsynced writes need ``IoFaults`` and ``UnsyncedLoss``,
    a kill of several Galera nodes at once ``GroupRecovery``: both back-ends declare them
    (containers: lab-iofs bind-mounted, the recovery through each node's container). On a
    back-end without ``GroupRecovery`` a native file run with --backend containers is refused
    before anything starts."""
    text = """experiment "r" {
  duration 10s
  topology replication { primary db1  replicas db2 }
  workload w: unique_writes { target db1  rate 50/s }
  at 2s io delay db2 1ms on reads
  at 4s kill db2 losing unsynced writes
}
"""
    assert check_text(text) == []
    path = Path(tempfile.mkdtemp()) / "r.exp"
    path.write_text(text)
    assert backend_errors(path, "containers") == []
    path.write_text("""experiment "g" {
  duration 10s
  topology galera { nodes g1, g2, g3 }
  at 2s io delay g2 1ms on reads
  at 4s kill g1, g2, g3 within 1s
}
""")
    assert backend_errors(path, "containers") == []
    monkeypatch.setattr(ContainerTopology, "capabilities",
                        ContainerTopology.capabilities - {caps.GroupRecovery})
    assert [e.message for e in backend_errors(path, "containers")] == [
        "kill of several Galera nodes at once (the whole-cluster recovery: --wsrep-recover, "
        "bootstrap, joins) runs natively only, not on containers yet"]


def test_a_router_process_fault_runs_on_containers() -> None:
    """``kill router`` needs ``RouterProcess``: ProxySQL's container on containers."""
    text = """experiment "r" {
  duration 10s
  backend containers
  topology replication { primary db1  replicas db2 }
  router proxysql { writer db1  readers db2 }
  workload w: unique_writes { target router.writer  rate 50/s }
  at 2s kill router
  at 4s start router
}
"""
    assert check_text(text) == []


def test_a_router_process_fault_is_refused_where_it_is_not_declared(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """On a back-end without ``RouterProcess`` a ``kill router`` of a native file run with
    --backend containers is refused before anything starts (validate's own check, before the
    declarations, saw only a file that said ``backend containers``)."""
    monkeypatch.setattr(ContainerTopology, "capabilities",
                        ContainerTopology.capabilities - {caps.RouterProcess})
    path = Path(tempfile.mkdtemp()) / "r.exp"
    path.write_text("""experiment "r" {
  duration 10s
  topology replication { primary db1  replicas db2 }
  router proxysql { writer db1  readers db2 }
  workload w: unique_writes { target router.writer  rate 50/s }
  at 2s kill router
}
""")
    assert [e.message for e in backend_errors(path, "containers")] == [
        "kill router (ProxySQL's own process) runs natively only, not on containers yet"]


def _members(proto: type) -> set[str]:
    names = {n for n in vars(proto) if not n.startswith("_")}
    return names | set(getattr(proto, "__annotations__", {}))


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.__name__)
def test_each_backend_has_what_its_declared_protocols_name(backend: type) -> None:
    """A declared capability is a promise: the class has every member of its protocol."""
    have = set(dir(backend)) | {f.name for f in dataclasses.fields(backend)}
    for proto in backend.capabilities:
        assert proto in caps.MEANS, proto
        missing = _members(proto) - have
        assert not missing, f"{backend.__name__} declares {proto.__name__}, lacks {missing}"


def test_the_native_backend_declares_every_capability_an_action_needs() -> None:
    """``dsl.backends`` does not compare a native file (it would import every fault family
    for nothing): that holds while native has all of ``NEEDED``, and every action of the
    catalogue needs only those."""
    assert set(caps.NEEDED) <= NativeTopology.capabilities
    seen: set[type] = set()
    for path in sorted((ROOT / "experiments").rglob("*.exp")):
        exp = load_experiment(path)
        actions = ([t.action for t in exp.timeline] + [t.action for t in exp.triggers]
                   + [a for st in exp.steps for a in st.actions])
        for a in actions:
            seen |= {n.capability for n in needs(a, exp.topology.kind)}
    assert seen <= set(caps.NEEDED)
    assert {caps.Process, caps.LinkCut, caps.IoFaults, caps.GroupRecovery} <= seen


# --- no probing, no back-end classes in fault/ ----------------------------------------------------
BACKEND_CLASSES = {"NativeTopology", "ContainerTopology", "ContainerNode", "ContainerLimit",
                   "ContainerMongoNode", "ContainerProxySQL", "ContainerHAProxy"}


def probes(source: str) -> list[str]:
    """What a fault family must not do: probe an object's attributes (``getattr``,
    ``hasattr``), import a back-end (``runners.containers``, the native topology's class) or
    test an object against a back-end's class."""
    out: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in ("getattr", "hasattr"):
                out.append(f"line {node.lineno}: {node.func.id}(")
            if node.func.id in ("isinstance", "issubclass") and len(node.args) == 2:
                named = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)} | {
                    n.attr for n in ast.walk(node.args[1]) if isinstance(n, ast.Attribute)}
                if named & BACKEND_CLASSES:
                    out.append(f"line {node.lineno}: isinstance against a back-end class")
        if isinstance(node, ast.ImportFrom) and node.module and (
                node.module.startswith("runners.containers")
                or any(a.name in BACKEND_CLASSES for a in node.names)):
            out.append(f"line {node.lineno}: from {node.module} import ...")
        if isinstance(node, ast.Import) and any(
                a.name.startswith("runners.containers") for a in node.names):
            out.append(f"line {node.lineno}: import runners.containers")
    return out


def test_the_probe_finder_finds_what_it_looks_for() -> None:
    bad = ("from runners.containers.resources import ContainerLimit\n"
           "import runners.containers.engine\n"
           "from runners.topology import NativeTopology\n"
           "x = getattr(topo, 'iofs', {})\n"
           "y = hasattr(router, 'kill_process')\n"
           "z = isinstance(topo, ContainerTopology)\n")
    assert len(probes(bad)) == 6
    assert probes("ok = ctx.has(Clock)\nz = isinstance(a, NodeAction)\n") == []


@pytest.mark.parametrize("path", sorted((ROOT / "fault").glob("*.py")), ids=lambda p: p.name)
def test_no_fault_family_probes_a_topology_or_imports_a_backend(path: Path) -> None:
    assert probes(path.read_text()) == []


def test_the_doc_table_says_what_the_backends_declare() -> None:
    """docs/faults.md's table of capabilities: a row per needed capability, its native and
    containers columns as the back-ends declare them."""
    rows = {}
    for line in (ROOT / "docs" / "faults.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = (cells[3], cells[4])
    assert set(rows) == {c.__name__ for c in caps.NEEDED}
    for c in caps.NEEDED:
        want = tuple("yes" if c in b.capabilities else "not yet" for b in BACKENDS)
        assert rows[c.__name__] == want, c.__name__
