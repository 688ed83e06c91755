"""What a valid plan probably does not measure or needs: ``plan_warnings(plan)`` (a fault on
the timeline that no workload is running to observe, one within a second of the end of every
workload that runs then, or one at the very end of the load; see "Warnings" in
docs/language.md), ``root_needs`` and ``root_notes`` (actions that need root).
Computed from a compiled plan (``dsl.compile``)."""

from __future__ import annotations

from dataclasses import dataclass

from dsl.actions import describe, history_name, is_fault, is_left, needs_root, target, undo
from dsl.errors import LanguageError
from dsl.models import (
    NO_SPAN,
    Action,
    NetworkFault,
    NodeAction,
    NodeGroupAction,
    Promote,
    Span,
)
from dsl.plan import (
    Cell,
    Plan,
    PlannedWorkload,
)

# --- warnings: faults that nothing measures -----------------------------------------------------

NEAR_END = 1.0  # seconds: a fault closer than this to the end of every workload is unmeasured


def _s(seconds: float) -> str:
    return f"{seconds:g}s"


@dataclass(frozen=True, slots=True)
class _Window:
    """When a workload runs, in seconds from the start of the load. It starts at 0; ``end``
    is None when unknown at check time (it starts after another workload, or only rows or
    operations bound it); ``exact`` is False when ``end`` is an upper bound (rows or
    operations may end it sooner)."""

    name: str
    end: float | None
    exact: bool
    whole: bool  # runs for the experiment's whole duration

    def describe(self) -> str:
        out = f"{self.name} 0s to {_s(self.end or 0.0)}"
        if not self.exact:
            return out + " at most"
        return out + (" (the whole experiment)" if self.whole else "")


def _window(w: PlannedWorkload, duration: float) -> _Window:
    if w.start_after is not None:
        return _Window(w.name, None, False, False)
    exact = w.rows is None and w.ops is None
    return _Window(w.name, w.duration, exact, exact and w.duration == duration)


Found = tuple[Span, str, str | None]


def _fault_warning(at: float, windows: list[_Window], duration: float) -> tuple[str, str] | None:
    """(message, hint) when a fault at ``at`` is not measured by any workload of ``windows``;
    None when it is, or when that cannot be known before the run."""
    if at >= duration:
        return (
            f"fault at {_s(at)} is at the end of the load (duration {_s(duration)}): "
            "the run stops there, so nothing measures it",
            "move it earlier, or lengthen the experiment: duration ...",
        )
    if any(w.end is None for w in windows):
        return None
    if not windows:
        return (
            f"fault at {_s(at)}: the experiment has no workload, so nothing measures it",
            "add a workload that runs through the fault",
        )
    running = [w for w in windows if w.end is not None and at <= w.end]
    listed = "workloads: " + ", ".join(w.describe() for w in windows)
    if not running:
        return (
            f"fault at {_s(at)} falls outside every workload's window: no workload runs "
            "then, so nothing measures it",
            f"{listed}; lengthen a workload's duration past {_s(at)}",
        )
    if any(not w.exact for w in running):
        return None
    ends = {w.name: w.end for w in running if w.end is not None}
    if any(end - at >= NEAR_END for end in ends.values()):
        return None
    if len(ends) == 1:
        ((name, end),) = ends.items()
        message = (
            f"fault at {_s(at)} falls {_s(end - at)} before the end of workload "
            f"'{name}' ({_s(end)}): nothing after it is measured"
        )
    else:
        each = ", ".join(f"{name} at {_s(end)}" for name, end in ends.items())
        message = (
            f"fault at {_s(at)} falls within {_s(NEAR_END)} of the end of every workload "
            f"running then ({each}): nothing after it is measured"
        )
    what = "the experiment's duration" if any(w.whole for w in running) else "a workload's duration"
    return message, f"{listed}; lengthen {what} well past {_s(at)}"


def _cell_warnings(plan: Plan, cell: Cell) -> list[Found]:
    windows = [_window(w, plan.duration) for w in cell.workloads]
    out: list[Found] = [*_paced_collisions(plan, cell)]
    for timed in plan.timeline:
        if not is_fault(timed.action):
            continue
        found = _fault_warning(timed.at, windows, plan.duration)
        if found is not None:
            out.append((timed.span, *found))
    return out


MAX_APART_RATE = 500.0  # /s: slots 2 ms apart or more, beyond a loopback replication delay


def _paced_collisions(plan: Plan, cell: Cell) -> list[Found]:
    """Two primaries' auto-increment inserts at a ``rate``: the clients take turns at evenly
    spaced slots, so no two inserts are ever sent at the same moment, and the collisions
    wrong offsets cause (measured: none at 200/s; both replication threads stopped on 1062
    within seconds unpaced) cannot show."""
    if plan.topology != "primary_primary":
        return []
    # with a fault (a cut, a stop, a delay, a node down or slowed) their counters can drift
    # apart whatever the pacing: only a steady load is sure not to collide
    if any(is_fault(a) for a in plan.actions()):
        return []
    return [(w.span,
             f"workload '{w.name}' is paced (rate {w.rate:g}/s): its clients take turns at "
             "evenly spaced slots, so the primaries' inserts never meet and an "
             "auto-increment collision cannot show",
             "leave out the rate to let the clients insert side by side (as a busy "
             "application does)")
            for w in cell.workloads
            if w.kind == "unique_insert" and w.keys == "auto_increment" and w.rate is not None
            and w.rate <= MAX_APART_RATE and len(set(w.targets)) > 1 and w.span != NO_SPAN]


def root_needs(plan: Plan) -> list[tuple[Action, str]]:
    """Every action of the plan that needs root, with why (``dsl.actions``'s
    ``needs_root``): ``lab check`` notes them, the runtime refuses them up front."""
    out: list[tuple[Action, str]] = []
    for a in plan.actions():
        if plan.backend == "containers" and isinstance(a, NetworkFault):
            continue  # cuts inside the node's container, not this machine's iptables
        reason = needs_root(a, plan.topology)
        if reason is not None:
            out.append((a, reason))
    return out


def root_notes(plan: Plan, path: str | None = None) -> list[LanguageError]:
    """One note (``severity="note"``) per action that needs root; the caller shows them when
    the current user is not root. The message does not repeat the line: the note's location
    prefix (``file:line:col:``) says it."""
    where = path or plan.source or "<string>"
    return [
        LanguageError(
            where,
            a.span,
            f"`{describe(a)}` needs root: {reason}",
            "run the experiment as root, or leave the action out",
            severity="note",
        )
        for a, reason in root_needs(plan)
    ]


def _promote_warnings(plan: Plan) -> list[Found]:
    """A promote of a node the router's writers do not list: say what the router does."""
    r = plan.router
    if r is None:
        return []
    out: list[Found] = []
    for a in plan.actions():
        if isinstance(a, Promote) and a.node.name not in r.writers:
            out.append((
                a.span,
                f"'{a.node.name}' is not in the router's writers ({', '.join(r.writers)}): the "
                f"lab puts every node of a replication topology in the writer backend behind a "
                f"role check, so after this promote router.writer sends writes to "
                f"{a.node.name} (the first writable node)",
                f"list it to say so: writers {', '.join([*r.writers, a.node.name])}",
            ))
    return out


HEAL_READ = frozenset({"missing_transactions", "lost_writes"})


def _healed_at_end(plan: Plan) -> list[Action]:
    """The faults still in force when the load ends, which the lab heals before it reads
    the final state: a fault with an undo (``dsl.actions.undo``), neither ``for good`` nor
    ``for D``, that no later action of the plan undoes (file order: steps, the timeline by
    time, triggers). None with ``leave faults``."""
    if plan.leave_faults:
        return []
    timed: list[tuple[Action, float | None]] = [(a, None) for s in plan.steps
                                                for a in s.actions]
    timed += [(t.action, t.lasts) for t in sorted(plan.timeline, key=lambda t: t.at)]
    timed += [(t.action, t.lasts) for t in plan.triggers]
    writers = set(plan.router.writers) if plan.router is not None else set()
    in_force: list[Action] = []
    for a, lasts in timed:
        back = undo(a)
        if back is not None and is_fault(a) and not is_left(a) and lasts is None:
            in_force.append(a)
            continue
        in_force = [f for f in in_force if not _undoes(a, f, writers)]
    return in_force


def _undoes(a: Action, fault: Action, writers: set[str]) -> bool:
    """``a`` is the undo of ``fault``: the same action on the same node, or (``kill
    router.writer`` is recovered by naming its node: ``start g1``) on any of the router's
    writers, the node being known at run time only."""
    u = undo(fault)
    if u is None or history_name(u) != history_name(a):
        return False
    node = target(a)
    return target(u) == node or (target(u) == "router.writer" and node in writers)


def _names(a: Action) -> list[str]:
    """The nodes an action names (``router.writer`` as written: the writer, whichever)."""
    if isinstance(a, NodeAction):
        return [a.node.name]
    if isinstance(a, NodeGroupAction):
        return [r.name for r in a.nodes]
    return []


def _writer_at_the_end(plan: Plan) -> str | None:
    """A replication topology's primary once the timeline is over: the last node promoted,
    else the primary the plan starts with."""
    promoted = [a.node.name for a in plan.actions() if isinstance(a, Promote)]
    if promoted:
        return promoted[-1]
    first = plan.cells[0].nodes if plan.cells else []
    return next((n.name for n in first if n.role == "primary"), None)


def _heal_warnings(plan: Plan) -> list[Found]:
    """An expectation on what a node lacks at the end (``missing_transactions(n)``, or
    ``lost_writes``: judged on the nodes once healed and settled) read after the lab's heal
    undid faults still in force: say so, and point at ``for good`` and ``.before_heal``."""
    healed = _healed_at_end(plan)
    if not healed:
        return []
    def listed(faults: list[Action]) -> str:
        return ", ".join(f"`{describe(a)}` (line {a.span.line})" for a in faults)

    # lost writes are about nodes that went away (killed, stopped, paused) and are judged on
    # the writer at the end: with replication, only the primary (the last promoted, if any)
    # can bring writes back; a replica or a former primary started again cannot (a former
    # primary comes back read-only, its own writes stopping its replication: 1236)
    down: list[Action] = [a for a in healed if isinstance(a, NodeAction | NodeGroupAction)]
    if plan.topology == "replication":
        writer = _writer_at_the_end(plan)
        down = [a for a in down if {writer, "router.writer"} & set(_names(a))]
    out: list[Found] = []
    for e in plan.expectations:
        for m in (e.metric, e.other):
            if m is None or m.name not in HEAL_READ or (m.name == "lost_writes" and not down):
                continue
            faults = listed(healed if m.name == "missing_transactions" else down)
            if m.name == "missing_transactions":
                node = m.subject or m.on
                if node is None or m.stat not in (None, "count", "total"):
                    continue
                what = f"missing_transactions({node})"
                undone = f"a primary started again lets {node} catch up"
                hint = (" after the fault to leave it in place at the end, or expect "
                        f"{what}.before_heal (as the timeline left it)")
            else:  # judged on the nodes' state at the end, once healed and settled
                what = f"lost_writes({m.subject})" if m.subject else "lost_writes"
                undone = "a node started again brings back the writes only it had"
                hint = " after the fault to leave it in place at the end"
            out.append((
                e.span,
                f"{what} is read after the lab heals the faults still in force at the end "
                f"({faults}): the heal may undo what it is about ({undone})",
                "say `for good`" + hint,
            ))
            break
    return out


def plan_warnings(plan: Plan, path: str | None = None) -> list[LanguageError]:
    """Warnings (``severity="warning"``) about a valid plan: every fault on the timeline that
    no workload observes, and every promote of a node the router's writers do not list.
    Computed for every cell; a warning that holds for some cells only names them. (Actions
    that need root are notes: ``root_notes``.)"""
    where = path or plan.source or "<string>"
    cells: dict[Found, list[Cell]] = {}
    for cell in plan.cells:
        for found in _cell_warnings(plan, cell):
            cells.setdefault(found, []).append(cell)
    out: list[LanguageError] = []
    for (span, message, hint), hit in cells.items():
        if len(hit) < len(plan.cells):
            word = "cell" if len(hit) == 1 else "cells"
            labels = ", ".join(f"{c.index} '{c.label}'" for c in hit)
            message += f" (only in {word} {labels})"
        out.append(LanguageError(where, span, message, hint, severity="warning"))
    for span, message, hint in [*_promote_warnings(plan), *_heal_warnings(plan)]:
        out.append(LanguageError(where, span, message, hint, severity="warning"))
    return sorted(out, key=LanguageError.sort_key)
