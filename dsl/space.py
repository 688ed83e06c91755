"""Fault spaces and concrete schedules.

A fault space (``faults { ... }``, ``dsl.models.FaultSpace``) says which faults may happen;
``draw(exp, seed, index)`` turns it into one concrete schedule, a list of ``Entry`` (``at 6.2s
kill db3 for 2.4s``), the same for the same seed and index on any machine. ``schedule_text``
writes a schedule back into the experiment's text as an ordinary timeline (the fault space and
the timeline statements replaced by the schedule's ``at`` lines): a plain ``.exp`` that ``lab
run`` runs and a user can open. ``timeline_entries`` reads a file's own timeline back as
entries (what ``lab shrink`` takes apart).

Validation: ``space_errors`` (called by ``dsl.validate``) checks the nodes, the window and the
durations; ``probe_errors`` (called by ``dsl.api.parse_text``, which has the text) draws every
fault on every node it may hit and checks the result as a timeline, so a fault the topology
cannot take (``stop replication`` on Galera) is reported at the line of the fault space.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from dsl.errors import LanguageError
from dsl.models import (
    Experiment,
    FaultSpace,
    GaleraTopology,
    MongoReplSetTopology,
    PrimaryPrimaryTopology,
    ReplicationTopology,
    SingleTopology,
    SpaceFault,
    SpaceTarget,
    Span,
)

RESOLUTION = 0.1  # seconds: times and durations are drawn on the timeline's precision
GAP = 1.0  # seconds between two faults drawn on one node (its recovery must end first)
TRIES = 50  # draws of a time before a fault that does not fit is left out


@dataclass(frozen=True)
class Entry:
    """One timeline statement: ``at {at} {action} [for {lasts} | for good]``."""

    at: float
    action: str  # as written: "kill db3", "network latency db2 120ms on replication"
    lasts: float | None = None
    good: bool = False
    node: str | None = None  # the node it hits (drawn entries; None when not known)

    @property
    def text(self) -> str:
        out = f"at {fmt_seconds(self.at)} {self.action}"
        if self.lasts is not None:
            out += f" for {fmt_seconds(self.lasts)}"
        elif self.good:
            out += " for good"
        return out


def fmt_seconds(value: float) -> str:
    """A time or duration as the language writes it: ``6.2s``, ``0.5s``, ``120ms`` (below
    100 ms)."""
    if 0 < value < RESOLUTION:
        return f"{round(value * 1000, 3):g}ms"
    return f"{round(value, 3):g}s"


# --- the nodes a fault may hit -----------------------------------------------------------------


def all_nodes(exp: Experiment) -> list[str]:
    t = exp.topology
    if isinstance(t, ReplicationTopology):
        return [t.primary.name] + [r.name for r in t.replicas]
    if isinstance(t, SingleTopology):
        return [t.node.name]
    if isinstance(t, MongoReplSetTopology):
        return [m.name for m in t.members]
    return [n.name for n in t.nodes]


def replicas(exp: Experiment) -> list[str]:
    t = exp.topology
    return [r.name for r in t.replicas] if isinstance(t, ReplicationTopology) else []


def writer_of(exp: Experiment) -> str | None:
    """``the writer``: the node that takes writes when the load starts (the primary; on
    Galera and two primaries the router's first writer, else the first node)."""
    t = exp.topology
    if isinstance(t, ReplicationTopology):
        return t.primary.name
    if isinstance(t, SingleTopology):
        return t.node.name
    if isinstance(t, GaleraTopology | PrimaryPrimaryTopology) and exp.router and \
            exp.router.writers:
        return exp.router.writers[0].name
    nodes = all_nodes(exp)
    return nodes[0] if nodes else None


def candidates(exp: Experiment, target: SpaceTarget) -> list[str]:
    """The nodes ``target`` may name, in the topology's order."""
    named = [n.name for n in target.nodes]
    if target.kind in ("any_of", "node"):
        return [n for n in all_nodes(exp) if n in named]
    if target.kind == "writer":
        w = writer_of(exp)
        return [w] if w else []
    pool = replicas(exp) if target.kind == "any_replica" else all_nodes(exp)
    return [n for n in pool if n not in named]


def describe_target(t: SpaceTarget) -> str:
    names = ", ".join(n.name for n in t.nodes)
    return {"any_replica": "any replica" + (f" but {names}" if names else ""),
            "any_node": "any node" + (f" but {names}" if names else ""),
            "any_of": f"any of {names}", "writer": "the writer", "node": names}[t.kind]


def action_words(f: SpaceFault, node: str, size: float | None = None) -> str:
    """The timeline's words for a drawn fault: ``network latency db2 120ms on replication``."""
    out = f"{f.verb} {node}"
    if f.verb == "network latency":
        delay = size if size is not None else (f.size.low if f.size else 0.0)
        out += f" {round(delay * 1000, 1):g}ms"
    if f.link != "all":
        out += f" on {f.link}"
    return out


# --- validation ---------------------------------------------------------------------------------


def space_errors(exp: Experiment, path: str) -> list[LanguageError]:
    """The fault space's own errors: unknown nodes, no node to hit, a window or a duration
    that does not fit in the load."""
    space = exp.faults
    if space is None:
        return []
    from dsl.validate_base import did_you_mean, listing

    out: list[LanguageError] = []
    known = all_nodes(exp)
    window = space.window
    if window is not None and window.high > exp.duration:
        end = window.text.split("..")[1]
        out.append(LanguageError(path, window.span, f"the window ends at {end}, after the end "
                                 f"of the load (duration {fmt_seconds(exp.duration)})"))
    start = window.low if window is not None else 0.0
    for f in space.faults:
        bad = False
        for n in f.target.nodes:
            if n.name not in known:
                bad = True
                out.append(LanguageError(path, n.span, f"unknown node '{n.name}' (known: "
                                         f"{listing(known)})", did_you_mean(n.name, known)))
        if bad:
            continue
        if not candidates(exp, f.target):
            why = ("this topology has no replicas" if f.target.kind == "any_replica"
                   and not replicas(exp) else "it leaves out every node")
            hint = "use 'any node' or name the nodes" if f.target.kind == "any_replica" else None
            out.append(LanguageError(path, f.target.span, f"'{describe_target(f.target)}' names "
                                     f"no node: {why}", hint))
        if start + f.lasts.high > exp.duration:
            out.append(LanguageError(
                path, f.lasts.span,
                f"a fault of {fmt_seconds(f.lasts.high)} starting at {fmt_seconds(start)} would "
                f"end after the end of the load (duration {fmt_seconds(exp.duration)})",
                "shorten it, start the window earlier or make the load longer"))
    return out


def probe_errors(text: str, exp: Experiment, path: str) -> list[LanguageError]:
    """Every fault of the space drawn on every node it may hit, checked as a timeline; an
    error there is reported at the fault's line (``drawn as 'stop replication g1': ...``)."""
    space = exp.faults
    if space is None or not space.faults:
        return []
    from dsl.api import check_text

    start = space.window.low if space.window is not None else 0.0
    probes: list[tuple[SpaceFault, Entry]] = []
    for f in space.faults:
        for node in candidates(exp, f.target):
            size = f.size.high if f.size is not None else None
            probes.append((f, Entry(start, action_words(f, node, size), f.lasts.low)))
    if not probes:
        return []
    probe = schedule_text(text, exp, [e for _, e in probes], comment=None)
    first = _insert_line(text, exp)
    out: list[LanguageError] = []
    seen: set[tuple[int, str]] = set()
    for err in check_text(probe, path):
        i = err.span.line - first
        if not 0 <= i < len(probes):
            continue  # the file's own error: reported by its own validation
        fault, entry = probes[i]
        message = f"drawn as '{entry.action}': {err.message}"
        if (fault.span.line, err.message) in seen:
            continue  # the same problem on another node it may hit: said once
        seen.add((fault.span.line, err.message))
        out.append(LanguageError(path, fault.span, message, err.hint))
    return out


# --- drawing ------------------------------------------------------------------------------------


def _round(x: float) -> float:
    return round(round(x / RESOLUTION) * RESOLUTION, 3)


def draw(exp: Experiment, seed: int, index: int) -> list[Entry]:
    """Schedule ``index`` (1-based) of ``seed``: for each fault of the space, in order, how
    many times it happens (``at most N``: 0 to N, uniformly; else N), then for each time a
    node among those it may hit, a duration and a size in their ranges, and a start in the
    window such that it ends before the load does and no two faults on one node are closer
    than ``GAP`` (a fault that cannot be placed after ``TRIES`` draws is left out). Sorted by
    time. The same (seed, index) gives the same schedule in any process."""
    space = exp.faults
    if space is None:
        return []
    rng = random.Random(f"lab-explore:{seed}:{index}")
    lo = space.window.low if space.window is not None else 0.0
    hi = space.window.high if space.window is not None else exp.duration
    busy: dict[str, list[tuple[float, float]]] = {}
    out: list[Entry] = []
    for f in space.faults:
        nodes = candidates(exp, f.target)
        count = rng.randint(0, f.times) if f.at_most else f.times
        for _ in range(count):
            if not nodes:
                break
            node = rng.choice(nodes)
            lasts = max(RESOLUTION, _round(rng.uniform(f.lasts.low, f.lasts.high)))
            size = None
            if f.size is not None:
                size = round(rng.uniform(f.size.low, f.size.high), 3)
            latest = min(hi, exp.duration - lasts)
            for _try in range(TRIES):
                at = _round(rng.uniform(lo, max(lo, latest)))
                if at + lasts > exp.duration:
                    continue
                spans = busy.setdefault(node, [])
                if all(at + lasts + GAP <= s or e + GAP <= at for s, e in spans):
                    spans.append((at, at + lasts))
                    out.append(Entry(at, action_words(f, node, size), lasts, node=node))
                    break
    return sorted(out, key=lambda e: e.at)


# --- schedules as text ------------------------------------------------------------------------


def timeline_entries(text: str, exp: Experiment) -> list[Entry]:
    """The file's own timeline as entries, in the file's order (the action as written)."""
    lines = text.split("\n")
    out: list[Entry] = []
    for t in exp.timeline:
        action = _cut(lines, t.action.span).strip()
        out.append(Entry(t.at, " ".join(action.split()), t.lasts,
                         good=bool(getattr(t.action, "left", False)) and t.lasts is None,
                         node=getattr(getattr(t.action, "node", None), "name", None)))
    return out


def _cut(lines: Sequence[str], span: Span) -> str:
    if span.line == span.end_line:
        return lines[span.line - 1][span.column - 1:span.end_column - 1]
    parts = [lines[span.line - 1][span.column - 1:]]
    parts += lines[span.line:span.end_line - 1]
    parts.append(lines[span.end_line - 1][:span.end_column - 1])
    return "\n".join(parts)


def _spans_to_remove(exp: Experiment) -> list[Span]:
    spans = [t.span for t in exp.timeline]
    if exp.faults is not None:
        spans.append(exp.faults.span)
    return sorted(spans, key=lambda s: (s.line, s.column))


def _insert_line(text: str, exp: Experiment) -> int:
    """The line (1-based) of the first rendered entry in ``schedule_text(text, exp, ...,
    comment=None)``."""
    spans = _spans_to_remove(exp)
    if not spans:
        return _closing_line(text)
    first = exp.faults.span if exp.faults is not None else spans[0]
    return first.line - sum(s.end_line - s.line + 1 for s in spans
                            if s.end_line < first.line and _whole_lines(text, s))


def _whole_lines(text: str, span: Span) -> bool:
    lines = text.split("\n")
    before = lines[span.line - 1][:span.column - 1]
    after = lines[span.end_line - 1][span.end_column - 1:]
    return not before.strip() and (not after.strip() or after.strip().startswith("#"))


def _closing_line(text: str) -> int:
    lines = text.split("\n")
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].strip().startswith("}"):
            return i + 1
    return len(lines) + 1


def schedule_text(text: str, exp: Experiment, entries: Iterable[Entry],
                  comment: str | None) -> str:
    """The experiment's text with its fault space and timeline statements replaced by
    ``entries`` (sorted by time, stably), where the fault space was (else the first timeline
    statement, else before the closing brace); ``comment``: a ``#`` line above them."""
    lines = text.split("\n")
    spans = _spans_to_remove(exp)
    anchor = exp.faults.span if exp.faults is not None else (spans[0] if spans else None)
    indent = "  "
    if anchor is not None:
        head = lines[anchor.line - 1]
        indent = head[:len(head) - len(head.lstrip())] or "  "
    rendered = [f"{indent}# {c}" for c in (comment.split("\n") if comment else [])]
    rendered += [indent + e.text for e in sorted(entries, key=lambda e: e.at)]
    drop: set[int] = set()
    for s in sorted(spans, key=lambda s: (s.line, s.column), reverse=True):
        if _whole_lines(text, s):
            drop.update(range(s.line - 1, s.end_line))
        else:  # a statement sharing its line with another: blank out its characters only
            for ln in range(s.line - 1, s.end_line):
                row = lines[ln]
                a = s.column - 1 if ln == s.line - 1 else 0
                b = s.end_column - 1 if ln == s.end_line - 1 else len(row)
                lines[ln] = row[:a] + " " * (b - a) + row[b:]
    at = (anchor.line - 1) if anchor is not None else _closing_line(text) - 1
    out: list[str] = []
    for i, row in enumerate(lines):
        if i == at:
            out.extend(rendered)
        if i not in drop:
            out.append(row)
    if at >= len(lines):
        out.extend(rendered)
    return "\n".join(out)


def summary_line(entries: Sequence[Entry]) -> str:
    """A schedule on one line: ``at 6.2s kill db3 for 2.4s; at 9s ...`` (``no fault``)."""
    return "; ".join(e.text for e in entries) if entries else "no fault"


def has_space(exp: Experiment) -> bool:
    return exp.faults is not None


__all__ = [
    "Entry", "FaultSpace", "action_words", "all_nodes", "candidates", "draw", "fmt_seconds",
    "has_space", "probe_errors", "schedule_text", "space_errors", "summary_line",
    "timeline_entries", "writer_of",
]
