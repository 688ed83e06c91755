"""The readers of the figures the servers, the topology and the final rows show: missing
transactions, relay-log size, failover phases, replication errors, split brain, the router's
failover, errant GTIDs, divergence, and the transactional workloads' lost updates, wrong
totals and anomalies. One function per metric, named by ``dsl.metrics.METRICS``
(``MetricSpec.reader``); ``READERS`` maps the names to them. Shared lookups:
``lab.judge.figures_lookup``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dsl.models import UnitKind
from lab.figures_format import format_count
from lab.judge.checkers.base import CheckResult
from lab.judge.figures_lookup import (
    Inputs,
    Measured,
    Unmeasurable,
    checker_result,
    count_metric,
    get_path,
    known_list,
    known_number,
    no_such_workload,
    stat_of,
    subject_of,
    subjects_of,
)


def _fact_per_node(inp: Inputs, name: str, node: str | None, what: str) -> dict[str, Any]:
    fact = inp.ctx.facts.get(name)
    if not isinstance(fact, dict) or not fact:
        raise Unmeasurable(f"the engine did not measure {what}")
    if node is not None and node not in fact:
        raise Unmeasurable(f"{what} was not measured on '{node}' (measured on: "
                           f"{known_list(fact)})")  # fmt: skip
    return fact


def _missing_transactions(inp: Inputs) -> Measured:
    stat, path, _ = stat_of(inp)
    node = inp.metric.subject or inp.metric.on
    when = {"missing_before_heal": "before healing",
            "missing_at_promote": "when it was promoted"}.get(path, "after settling")
    fact = _fact_per_node(inp, path, node, f"missing transactions {when}")
    settled = inp.ctx.facts.get("settled")
    note = when + ("" if settled is not False or path != "missing_transactions"
                   else " (replication did not settle)")
    if node is None:
        vals = [float(v) for v in fact.values() if isinstance(v, int | float)]
        return Measured(sum(vals), "count", stat, note=f"over {len(vals)} nodes, {note}")
    value = known_number(fact[node], f"no missing-transaction count for '{node}'")
    before = (inp.ctx.facts.get("missing_before_heal") or {}).get(node)
    if path == "missing_transactions" and isinstance(before, int | float) and before != value:
        # the heal at the end changed the answer: say what it was before
        note += (f"; {format_count(before)} before the heal at the end (.before_heal; "
                 "`for good` leaves the fault)")
    return Measured(value, "count", stat, note=note)


def _relay_log_bytes(inp: Inputs) -> Measured:
    stat, key, unit = stat_of(inp)
    node = inp.metric.subject or inp.metric.on
    fact = _fact_per_node(inp, "relay_log_bytes", node, "the relay log size")
    if node is None:
        if len(fact) != 1:
            raise Unmeasurable(f"relay_log_bytes needs a node (measured on: {known_list(fact)})")
        node = next(iter(fact))
    v = fact[node]
    if isinstance(v, int | float) and key == "after":
        return Measured(float(v), unit, stat)
    if not isinstance(v, dict):
        raise Unmeasurable(f"the relay log size of '{node}' is not a before/after pair")
    if key == "growth":
        before = known_number(v.get("before"), f"no relay log size before the start of '{node}'")
        after = known_number(v.get("after"), f"no relay log size after the start of '{node}'")
        return Measured(after - before, unit, stat)
    if key in ("max", "min") and key not in v:
        pair = [x for x in (v.get("before"), v.get("after")) if isinstance(x, int | float)]
        if not pair:
            raise Unmeasurable(f"no relay log size measured on '{node}'")
        agg = max(pair) if key == "max" else min(pair)
        return Measured(float(agg), unit, stat, note="of the sizes before and after its start")
    return Measured(known_number(v.get(key), f"no relay log size ({key}) on '{node}'"), unit, stat)


def _failover(inp: Inputs) -> Measured:
    """The first promote's phases (``lab.judge.checkers.failover``), over every writing endpoint or
    for one workload: ``outage``, ``recovered``, ``first_failure``, ``new_writer_accepts``,
    ``router_switch``, in seconds from the fault on the old primary."""
    r = checker_result(inp, "failover")
    stat, key, unit = stat_of(inp)
    failovers = r.metrics.get("failovers")
    if not isinstance(failovers, list) or not failovers:
        raise Unmeasurable("no promote in the history: failover phases are measured from a "
                           "`promote` action that succeeded")  # fmt: skip
    rec = failovers[0]
    if not isinstance(rec, dict):
        raise Unmeasurable("the failover checker gave no figures")
    new = rec.get("new_primary")
    ref = f"{rec.get('fault')} of {rec.get('fault_node')}" if rec.get("fault") else "the promote"
    note = f"promote {new}, from the {ref}"
    if len(failovers) > 1:
        note += f"; the first of {len(failovers)} failovers"
    scope: dict[str, Any] = rec
    w = inp.metric.subject
    per = rec.get("workloads")
    per = per if isinstance(per, dict) else {}
    if w is not None and w not in per:
        raise Unmeasurable(f"workload '{w}' wrote nothing around the failover (writing "
                           f"workloads: {known_list(per)})")  # fmt: skip
    if w is not None and key in ("outage", "recovered", "first_failure"):
        scope = per[w]
        if not scope.get("endpoints_counted"):
            raise Unmeasurable(f"no endpoint of '{w}' had a successful write before the fault")
    value = scope.get(key)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return Measured(float(value), unit, stat, note=note)
    if key == "outage" and scope.get("open_at_end"):
        bound = known_number(scope.get("outage_lower_bound"), "the outage never ended and no write "
                        "succeeded before it")  # fmt: skip
        return Measured(bound, unit, stat, True, note + "; the writes never recovered")
    if key == "recovered" and scope.get("open_at_end"):
        bound = known_number(scope.get("recovered_lower_bound"), "the writes never recovered")
        return Measured(bound, unit, stat, True, note + "; the writes never recovered")
    why = {
        "outage": "no endpoint had a successful write before the fault",
        "recovered": "no endpoint had a successful write before the fault",
        "first_failure": "no write failed after the fault",
        "new_writer_accepts": f"no write was answered by the new primary {new} after the fault",
        "router_switch": (f"no operation through a router was answered by {new} after the "
                          "fault" if rec.get("router") else "no workload used a router"),
    }[key]  # fmt: skip
    raise Unmeasurable(why)


def _replication_errors(inp: Inputs) -> Measured:
    """Replication threads stopped on an error (``lab.judge.checkers.replication_errors``)."""
    r = checker_result(inp, "replication_errors")
    stat, key, unit = stat_of(inp)
    subjects = subjects_of(r)
    if not subjects:
        raise Unmeasurable(r.details or "no replication status samples were recorded")
    node = inp.metric.subject or inp.metric.on
    if node is None:
        if key != "count":
            raise Unmeasurable(f"replication_errors .{stat} needs a node (sampled: "
                               f"{known_list(subjects)})")  # fmt: skip
        nodes = r.metrics.get("nodes") or []
        return Measured(known_number(r.metrics.get("count"), "no replication error count"), unit,
                        stat, note=f"nodes: {', '.join(nodes) or 'none'}")  # fmt: skip
    if node not in subjects:
        raise Unmeasurable(f"no replication status samples for '{node}' (sampled: "
                           f"{known_list(subjects)})")  # fmt: skip
    subj = subjects[node]
    if not subj.get("samples") or subj.get("samples") == subj.get("unreadable"):
        raise Unmeasurable(f"the replication status of '{node}' could never be read")
    value = subj.get(key)
    if key == "stopped_at" and value is None:
        if subj.get("count"):
            raise Unmeasurable(f"'{node}' was already stopped on an error at the first sample: "
                               "when it stopped is unknown")  # fmt: skip
        raise Unmeasurable(f"no replication thread of '{node}' stopped on an error")
    note = ""
    if key in ("sql_errno", "io_errno", "count") and subj.get("count"):
        msg = subj.get("message")
        errno = subj.get("sql_errno") or subj.get("io_errno")
        note = f"error {errno}" + (f": {str(msg)[:120]}" if msg else "")
    return Measured(known_number(value, f"no {stat} for '{node}'"), unit, stat, note=note)


def _split_brain(inp: Inputs) -> Measured:
    """Split-brain windows (``lab.judge.checkers.split_brain``): topology-wide; ``.writes`` of one
    workload when one is named."""
    r = checker_result(inp, "split_brain")
    stat, key, unit = stat_of(inp)
    m = inp.metric.subject
    if r.metrics.get(key) is None:
        raise Unmeasurable(r.details or r.metrics.get("why") or "split brain was not measured")
    value = float(r.metrics[key])
    if key == "writes" and m is not None:
        err = no_such_workload(inp, r, m)
        if err is not None and m not in (r.metrics.get("writes_by_workload") or {}):
            raise err
        value = float((r.metrics.get("writes_by_workload") or {}).get(m, 0))
    n = int(r.metrics.get("count") or 0)
    note = f"{format_count(n)} window{'s' if n != 1 else ''}; {r.metrics.get('evidence')}"
    lower = bool(r.metrics.get("lower_bound")) and key in ("longest", "total", "count",
                                                           "writes")
    if lower:
        windows = r.metrics.get("windows") or []
        if windows and windows[-1].get("open"):
            note += "; still split when the load stopped"
        else:
            note += "; read_only was not sampled"
    return Measured(value, unit, stat, lower, note)


def _router_failover(inp: Inputs) -> Measured:
    """The router moving the writes off a failed writer on its own
    (``lab.judge.checkers.router_failover``): ``detected``, ``switched``, ``accepted``, in seconds
    from the fault on the old writer; ``accepted`` of one workload when one is named."""
    r = checker_result(inp, "router_failover")
    stat, key, unit = stat_of(inp)
    m = r.metrics
    if not m.get("samples"):
        raise Unmeasurable(r.details or "the router's state was not sampled")
    if m.get("old_writer") is None:
        raise Unmeasurable("no fault hit the router's writer (kill, pause, stop ... of the node "
                           "it sent writes to)")
    note = f"{m.get('fault')} of {m.get('old_writer')} at {m.get('fault_at')} s"
    if m.get("new_writer"):
        note += f"; writes moved to {m.get('new_writer')}"
    value = m.get(key)
    w = inp.metric.subject
    if w is not None and key == "accepted":
        per = m.get("workloads") or {}
        value = per.get(w, {}).get("accepted") if isinstance(per, dict) else None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return Measured(float(value), unit, stat, note=note)
    raise Unmeasurable(f"{key}: not before the end of the load ({note})")


def _per_node(inp: Inputs, checker: str, nothing: str
              ) -> tuple[CheckResult, str, str, UnitKind, str | None, dict[str, Any]]:
    """A per-node checker's result, the metric's statistic (name, path, unit), its node and
    the nodes measured; ``Unmeasurable(nothing)`` when none was."""
    r = checker_result(inp, checker)
    stat, key, unit = stat_of(inp)
    subjects = subjects_of(r)
    if not subjects:
        raise Unmeasurable(r.details or nothing)
    return r, stat, key, unit, inp.metric.subject, subjects


def _errant_gtids(inp: Inputs) -> Measured:
    """Errant transactions of a node (``lab.judge.checkers.errant_gtids``)."""
    r, stat, key, unit, node, subjects = _per_node(inp, "errant_gtids",
                                                   "errant GTIDs were not read")
    if node is None or node not in subjects:
        if node is not None and node == r.metrics.get("authority"):
            return Measured(0.0, unit, stat, note=f"{node} is the primary at the end: the "
                            "reference, errant by definition of nothing")
        raise Unmeasurable(f"errant GTIDs were not read on '{node}' (read on: "
                           f"{known_list(subjects)})")  # fmt: skip
    subj = subjects[node]
    value = subj.get(key)
    if value is None:
        raise Unmeasurable(f"the errant GTIDs of '{node}' could not be counted: "
                           f"{subj.get('error') or 'unknown'} (at least "
                           f"{subj.get('at_least')} source(s) ahead)")  # fmt: skip
    gtids = subj.get("gtids") or []
    note = f"against {r.metrics.get('authority')}"
    if gtids:
        note += ": " + ", ".join(gtids[:3]) + (" ..." if len(gtids) > 3 else "")
    return Measured(known_number(value, f"no errant count for '{node}'"), unit, stat, note=note)


def _divergence(inp: Inputs) -> Measured:
    """Rows that differ between nodes (``lab.judge.checkers.divergence``)."""
    r = checker_result(inp, "divergence")
    stat, key, unit = stat_of(inp)
    m = inp.metric
    subjects = subjects_of(r)
    ref = r.metrics.get("reference")
    if m.subject is None:
        if m.on is not None:
            raise Unmeasurable("divergence on a node needs a workload: divergence(w on node)")
        if key != "rows":
            raise Unmeasurable(f"divergence .{stat} needs a workload")
        value = r.metrics.get("rows")
        if value is None:
            raise Unmeasurable(r.details or r.metrics.get("why") or "rows were not compared")
        return Measured(float(value), unit, stat, note=f"every table, against {ref}")
    subj_key = f"{m.subject} on {m.on}" if m.on else m.subject
    if m.on is not None and m.on == ref:
        return Measured(0.0, unit, stat, note=f"{ref} is the reference")
    if subj_key not in subjects:
        err = no_such_workload(inp, r, m.subject)
        if err is not None:
            raise err
        raise Unmeasurable(f"the tables of '{m.subject}' were not compared"
                           + (f" on '{m.on}'" if m.on else ""))
    value = subjects[subj_key].get(key)
    if value is None:
        raise Unmeasurable(f"the rows of '{m.subject}' could not be compared on every node")
    return Measured(float(value), unit, stat, note=f"against {ref}")


def _lost_updates(inp: Inputs) -> Measured:
    """read_modify_write: the lost_updates checker's count, a bound when some increments have
    an unknown outcome; list_append: the anomaly checker's lost-update (P4) count."""
    m = inp.metric
    stat, path, unit = stat_of(inp)
    if m.subject is not None and inp.ctx.kind(m.subject) == "list_append":
        if path != "count":
            raise Unmeasurable(f"a list_append workload's lost updates have only a count "
                               f"(Elle's lost-update anomalies), not '.{stat}'")
        r = checker_result(inp, "anomalies")
        subj = subjects_of(r).get(m.subject)
        if subj is None or subj.get("lost_update") is None:
            first = (r.details or "no committed transaction to check").splitlines()[0]
            raise Unmeasurable(f"the anomaly checker could not decide for '{m.subject}': "
                               f"{first}")
        return Measured(known_number(subj.get("lost_update"), "no lost-update count"), unit, stat)
    r = checker_result(inp, "lost_updates")
    _, subj = subject_of(inp, r, "read-modify-write transactions", single_default=True)
    raw = get_path(subj, path)
    if path == "count" and raw is None:
        lo, hi = subj.get("at_least"), subj.get("at_most")
        if lo is None or hi is None:
            first = (r.details or "no final state").splitlines()[0]
            raise Unmeasurable(f"lost updates cannot be counted: {first}")
        return Measured(float(lo), unit, stat, lower_bound=True,
                        note=f"{subj.get('unknown')} increments of unknown outcome",
                        upper=float(hi))
    if raw is None:
        raise Unmeasurable(f"lost_updates .{stat} is not known for '{m.subject}' "
                           "(no final state, or nothing acknowledged)")
    return Measured(known_number(raw, f"no lost_updates .{stat}"), unit, stat)


def _wrong_totals(inp: Inputs) -> Measured:
    """bank: reads whose total was wrong, negative balances, money created at the end."""
    r = checker_result(inp, "bank")
    stat, path, unit = stat_of(inp)
    _, subj = subject_of(inp, r, "bank reads", single_default=True)
    raw = get_path(subj, path)
    if raw is None:
        first = (r.details or "no final state was read").splitlines()[0]
        raise Unmeasurable(f"wrong_totals .{stat} is not known: {first}")
    return Measured(known_number(raw, f"no wrong_totals .{stat}"), unit, stat)


def _anomalies(inp: Inputs) -> Measured:
    """list_append: the anomaly checker's counts (Elle's kinds); unknown where it could not
    decide (no committed transaction read a key, appends not unique)."""
    r = checker_result(inp, "anomalies")
    stat, path, unit = stat_of(inp)
    m = inp.metric
    if m.subject is None:
        if r.metrics.get(path) is None:
            first = (r.details or "no list_append workload").splitlines()[0]
            raise Unmeasurable(f"anomalies cannot be counted: {first}")
        return count_metric(inp, r, stat, path, unit, absent_is_zero=False)
    subj = subjects_of(r).get(m.subject)
    if subj is None:
        err = no_such_workload(inp, r, m.subject)
        if err is not None:
            raise err
        raise Unmeasurable(f"workload '{m.subject}' is not a list_append workload: the anomaly "
                           "checker did not check it")
    if not subj.get("decided"):
        raise Unmeasurable(f"the anomaly checker could not decide for '{m.subject}': "
                           f"{subj.get('reason') or 'unknown'}")
    got = count_metric(inp, r, stat, path, unit, absent_is_zero=False)
    if subj.get("search_incomplete") and path in ("count", "g0", "g1c", "g_single", "g2_item",
                                                  "stale_read"):
        return Measured(got.value, unit, stat, lower_bound=True,
                        note="the cycle search ran out of budget in a component")
    return got


# The readers ``dsl.metrics.METRICS`` names (``MetricSpec.reader``).
def _semi_sync(inp: Inputs) -> Measured:
    """Semi-sync on a node's primary side (``lab.judge.checkers.semi_sync``)."""
    _, stat, key, unit, node, subjects = _per_node(inp, "semi_sync",
                                                   "no semi-sync samples were recorded")
    if node is None or node not in subjects:
        raise Unmeasurable(f"no semi-sync samples of '{node}' (sampled: "
                           f"{known_list(subjects)})")  # fmt: skip
    subj = subjects[node]
    if not subj.get("enabled"):
        raise Unmeasurable(f"semi-sync's primary side is not enabled on '{node}': its commits "
                           "never wait for a replica (a replica, or one a promote made the "
                           "primary: enable it in its config)")
    value = known_number(subj.get(key), f"no semi-sync {stat} for '{node}'")
    notes = []
    if key in ("fallbacks", "off") and subj.get("still_off"):
        notes.append("still asynchronous at the end")
    if key == "fallbacks" and subj.get("unseen_fallbacks"):
        notes.append(f"{subj['unseen_fallbacks']} seen by the counters only")
    bound = key in ("unacknowledged", "acknowledged") and bool(subj.get("lower_bound"))
    if bound:
        notes.append(f"at least: the server restarted {subj.get('restarted')} time(s) or "
                     "could not be read for a while: commits it made unread are not counted")
    if key == "fallbacks" and subj.get("off_from_start"):
        notes.append("asynchronous from the first sample (fell back before the load)")
    if key == "off" and subj.get("off_lower_bound"):
        bound = True
        notes.append("at least: asynchronous from the first sample")
    return Measured(value, unit, stat, lower_bound=bound, note="; ".join(notes))


READERS: dict[str, Callable[[Inputs], Measured]] = {
    f.__name__: f
    for f in (_missing_transactions, _relay_log_bytes, _failover, _replication_errors,
              _split_brain, _errant_gtids, _router_failover, _divergence, _lost_updates,
              _wrong_totals, _anomalies, _semi_sync)
}
