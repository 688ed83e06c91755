"""The builder's part for steps, the timeline, triggers and every action (faults, waits, SQL):
lark transformer callbacks of ``dsl.build.Builder`` (see dsl/grammar.lark)."""

from __future__ import annotations

from typing import Any, Literal

from lark import Token, v_args
from lark.tree import Meta

from dsl.actions import ROUTER_PROCESS, describe, undo
from dsl.build_base import (
    Rules,
    Setting,
    Stmt,
    _disk_target,
    meta_span,
    text_of,
    token_span,
)
from dsl.models import (
    NO_SPAN,
    Action,
    ClockSkew,
    ConvertStandalone,
    CpuLimit,
    DiskFault,
    DropCaches,
    IoFault,
    MemoryLimit,
    NetworkFault,
    NodeAction,
    NodeGroupAction,
    NodeRef,
    NodeVerb,
    Promote,
    ReplicationControl,
    RunSql,
    SetGlobal,
    Sleep,
    Span,
    StateCondition,
    Step,
    TimedAction,
    Trigger,
    WaitUntil,
)
from dsl.validate_safety import setting_problems


@v_args(meta=True)
class StepRules(Rules):
    """Transformer callbacks of the step, timeline, trigger and action rules."""

    # --- steps, timeline and actions ------------------------------------------------------

    def step_before(self, meta: Meta, children: list[Any]) -> Stmt:
        actions = [a for a in children if a is not None]
        return self.stmt(
            meta, "step", Step(when="before_load", actions=actions, span=meta_span(meta))
        )

    def step_after(self, meta: Meta, children: list[Any]) -> Stmt:
        name = text_of(children[0])
        actions = [a for a in children[1:] if a is not None]
        return self.stmt(
            meta,
            "step",
            Step(
                when="after",
                workload=name.value,
                workload_span=name.span,
                actions=actions,
                span=meta_span(meta),
            ),
        )

    def lasting(self, meta: Meta, children: list[Token]) -> tuple[str, Token, Span]:
        """``for 2s`` / ``for good``: (``"good"`` or ``"for"``, the token, the span)."""
        tok = children[1]
        kind = "good" if tok.type != "QUANTITY" else "for"
        return kind, tok, meta_span(meta)

    def _lasting(
        self, action: Action | None, lasting: tuple[str, Token, Span] | None, in_step: bool
    ) -> tuple[Action | None, float | None]:
        """The action with ``for good`` applied, and how long it lasts (``for 2s``)."""
        if action is None or lasting is None:
            return action, None
        kind, tok, span = lasting
        if undo(action) is None:
            self.error(
                span,
                f"'{describe(action)}' has nothing that undoes it, so it takes no 'for'",
                "'for' applies to a fault with an opposite: kill, stop, pause (start, resume), "
                "stop replication, network latency/bandwidth/partition/link_down (network "
                "heal), disk full (disk free), cpu/memory limit, clock skew, io delay/fail "
                "(their heal)",
            )
            return None, None
        if kind == "good":
            return action.model_copy(update={"left": True}), None
        if in_step:
            self.error(
                span,
                f"in a step, 'for' takes only 'good', not '{tok}'",
                f"put a fault that lasts on the timeline: at 10s {describe(action)} for {tok}",
            )
            return None, None
        seconds = self.measure(tok, ("duration",), "for")
        return (None, None) if seconds is None else (action, seconds)

    def step_action(self, meta: Meta, children: list[Any]) -> Action | None:
        action, _ = self._lasting(children[0], children[1], in_step=True)
        return action

    def timed(self, meta: Meta, children: list[Any]) -> Stmt:
        at = self.measure(children[0], ("duration",), "at", allow_zero=True)
        action, lasts = self._lasting(children[1], children[2], in_step=False)
        if at is None or action is None or (children[2] is not None and
                                             children[2][0] == "for" and lasts is None):
            return self.stmt(meta, "timed", None)
        return self.stmt(
            meta, "timed", TimedAction(at=at, action=action, lasts=lasts, span=meta_span(meta))
        )

    def trigger(self, meta: Meta, children: list[Any]) -> Stmt:
        cond, action, lasting, within_tok = children
        action, lasts = self._lasting(action, lasting, in_step=False)
        within = None
        if within_tok is not None:
            within = self.measure(within_tok, ("duration",), "within")
            if within is None:
                return self.stmt(meta, "trigger", None)
        if cond is None or action is None or (lasting is not None and lasting[0] == "for"
                                              and lasts is None):
            return self.stmt(meta, "trigger", None)
        return self.stmt(meta, "trigger", Trigger(condition=cond, action=action, lasts=lasts,
                                                  within=within, span=meta_span(meta)))

    def within(self, meta: Meta, children: list[Token]) -> Token:
        return children[0]

    def state_metric(self, meta: Meta, children: list[Token]) -> Token:
        return children[0]

    def state_condition(self, meta: Meta, children: list[Token]) -> StateCondition | None:
        metric, node, op, tok = children
        kinds = ("duration",) if str(metric) == "replication_lag" else ("count",)
        value = self.measure(tok, kinds, f"{metric}(...)", allow_zero=True)
        if value is None:
            return None
        return StateCondition.model_validate({
            "metric": str(metric), "node": self._node(node), "op": str(op), "value": value,
            "text": f"{metric}({node}) {op} {tok}", "span": meta_span(meta)})

    def fault_target(self, meta: Meta, children: list[Token | NodeRef]) -> NodeRef:
        tok = children[0]
        if isinstance(tok, NodeRef):  # the router itself
            return tok
        name = str(tok) if tok.type == "NAME" else f"router.{tok}"
        return NodeRef(name=name, span=meta_span(meta))

    def router_itself(self, meta: Meta, children: list[Token]) -> NodeRef:
        return NodeRef(name=ROUTER_PROCESS, span=meta_span(meta))

    def _ref(self, tok: Token | NodeRef | None) -> NodeRef | None:
        if tok is None or isinstance(tok, NodeRef):
            return tok
        return NodeRef(name=str(tok), span=token_span(tok))

    def _node(self, tok: Token | NodeRef) -> NodeRef:
        if isinstance(tok, NodeRef):
            return tok
        return NodeRef(name=str(tok), span=token_span(tok))

    def _node_action(self, meta: Meta, verb: NodeVerb, children: list[Any]) -> NodeAction:
        options: dict[str, str] = children[1] if len(children) > 1 and children[1] else {}
        return NodeAction(
            verb=verb, node=self._node(children[0]), options=options, span=meta_span(meta)
        )

    def kill(self, meta: Meta, children: list[Any]) -> NodeAction:
        return NodeAction(verb="kill", node=self._node(children[0]),
                          lose_unsynced=bool(children[1]), span=meta_span(meta))

    def losing_unsynced(self, meta: Meta, children: list[Any]) -> bool:
        return True

    def kill_nodes(self, meta: Meta, children: list[Any]) -> NodeGroupAction | None:
        """``kill g1, g2, g3 [within 2s] [losing unsynced writes]``."""
        *names, within_tok, losing = children
        nodes = self._group_nodes(names)
        within = 0.0
        if within_tok is not None:
            got = self.measure(within_tok, ("duration",), "within", allow_zero=True)
            if got is None:
                return None
            within = got
        return NodeGroupAction(
            verb="kill", nodes=nodes, within=within, lose_unsynced=bool(losing),
            within_span=token_span(within_tok) if within_tok is not None else NO_SPAN,
            span=meta_span(meta))

    def start_nodes(self, meta: Meta, children: list[Token]) -> NodeGroupAction:
        """``start g1, g2, g3``."""
        return NodeGroupAction(verb="start", nodes=self._group_nodes(children),
                               span=meta_span(meta))

    def _group_nodes(self, names: list[Token]) -> list[NodeRef]:
        """The nodes of a group action; a node named twice is an error at its second place."""
        seen: set[str] = set()
        out: list[NodeRef] = []
        for tok in names:
            if str(tok) in seen:
                self.error(token_span(tok), f"'{tok}' is named twice in this action",
                           "name each node once")
                continue
            seen.add(str(tok))
            out.append(self._node(tok))
        return out

    def pause(self, meta: Meta, children: list[Any]) -> NodeAction:
        return self._node_action(meta, "pause", children)

    def resume(self, meta: Meta, children: list[Any]) -> NodeAction:
        return self._node_action(meta, "resume", children)

    def stop(self, meta: Meta, children: list[Any]) -> NodeAction:
        return self._node_action(meta, "stop", children)

    def start(self, meta: Meta, children: list[Any]) -> NodeAction:
        return self._node_action(meta, "start", children)

    def restart(self, meta: Meta, children: list[Any]) -> NodeAction:
        return self._node_action(meta, "restart", children)

    def cold_restart(self, meta: Meta, children: list[Any]) -> NodeAction:
        return self._node_action(meta, "cold_restart", children)

    def with_options(self, meta: Meta, children: list[Setting]) -> dict[str, str]:
        return self.settings(children, "option")

    def drop_caches(self, meta: Meta, children: list[Token | None]) -> DropCaches:
        return DropCaches(node=self._ref(children[0]), span=meta_span(meta))

    def promote(self, meta: Meta, children: list[Token]) -> Promote:
        return Promote(
            node=NodeRef(name=str(children[0]), span=token_span(children[0])), span=meta_span(meta)
        )

    def _replication(
        self, meta: Meta, verb: Literal["stop", "start"], children: list[Any]
    ) -> ReplicationControl:
        threads: Literal["both", "io", "sql"] = "both"
        if children[1] is not None:
            threads = "io" if str(children[1]) == "io_only" else "sql"
        return ReplicationControl(
            verb=verb, node=self._node(children[0]), threads=threads, span=meta_span(meta)
        )

    def stop_replication(self, meta: Meta, children: list[Any]) -> ReplicationControl:
        return self._replication(meta, "stop", children)

    def start_replication(self, meta: Meta, children: list[Any]) -> ReplicationControl:
        return self._replication(meta, "start", children)

    def link(self, meta: Meta, children: list[Token]) -> str:
        return str(children[0])

    def net_latency(self, meta: Meta, children: list[Any]) -> NetworkFault | None:
        latency = self.measure(children[1], ("duration",), "latency")
        jitter = self.measure(children[2], ("duration",), "jitter", allow_zero=True)
        if latency is None or (children[2] is not None and jitter is None):
            return None
        return NetworkFault(
            verb="latency",
            node=self._ref(children[0]),
            latency=latency,
            jitter=jitter,
            link=children[3] or "all",
            span=meta_span(meta),
        )

    def net_bandwidth(self, meta: Meta, children: list[Any]) -> NetworkFault | None:
        bandwidth = self.measure(children[1], ("bandwidth",), "bandwidth")
        if bandwidth is None:
            return None
        return NetworkFault(
            verb="bandwidth",
            node=self._ref(children[0]),
            bandwidth=bandwidth,
            link=children[2] or "all",
            span=meta_span(meta),
        )

    def net_partition(self, meta: Meta, children: list[Any]) -> NetworkFault:
        return NetworkFault(
            verb="partition",
            node=self._ref(children[0]),
            link=children[1] or "all",
            span=meta_span(meta),
        )

    def net_link_down(self, meta: Meta, children: list[Any]) -> NetworkFault:
        return NetworkFault(
            verb="link_down",
            node=self._ref(children[0]),
            link=children[1] or "all",
            span=meta_span(meta),
        )

    def net_heal(self, meta: Meta, children: list[Any]) -> NetworkFault:
        return NetworkFault(
            verb="heal",
            node=self._ref(children[0]),
            link=children[1] or "all",
            span=meta_span(meta),
        )

    def disk_full(self, meta: Meta, children: list[Any]) -> DiskFault:
        return DiskFault(verb="full", node=self._node(children[0]),
                         target=_disk_target(children[1]), span=meta_span(meta))

    def disk_free(self, meta: Meta, children: list[Any]) -> DiskFault:
        return DiskFault(verb="free", node=self._node(children[0]),
                         target=_disk_target(children[1]), span=meta_span(meta))

    def disk_target(self, meta: Meta, children: list[Token]) -> str:
        return str(children[0])

    def cpu_limit(self, meta: Meta, children: list[Token]) -> CpuLimit | None:
        share = self.measure(children[1], ("percent",), "cpu limit ... to")
        if share is None:
            return None
        return CpuLimit(verb="limit", node=self._node(children[0]), share=share,
                        span=meta_span(meta))

    def cpu_heal(self, meta: Meta, children: list[Token]) -> CpuLimit:
        return CpuLimit(verb="heal", node=self._node(children[0]), span=meta_span(meta))

    def memory_limit(self, meta: Meta, children: list[Token]) -> MemoryLimit | None:
        limit = self.measure(children[1], ("size",), "memory limit ... to")
        if limit is None:
            return None
        return MemoryLimit(verb="limit", node=self._node(children[0]), limit=int(limit),
                           span=meta_span(meta))

    def memory_heal(self, meta: Meta, children: list[Token]) -> MemoryLimit:
        return MemoryLimit(verb="heal", node=self._node(children[0]), span=meta_span(meta))

    def clock_skew(self, meta: Meta, children: list[Token | None]) -> ClockSkew | None:
        node, sign, tok = children
        assert node is not None
        offset = self.measure(tok, ("duration",), "clock skew ... by", allow_zero=True)
        if offset is None:
            return None
        if sign is not None and str(sign) == "-":
            offset = -offset
        return ClockSkew(verb="skew", node=self._node(node), offset=offset,
                         span=meta_span(meta))

    def clock_heal(self, meta: Meta, children: list[Token]) -> ClockSkew:
        return ClockSkew(verb="heal", node=self._node(children[0]), span=meta_span(meta))

    def io_ops(self, meta: Meta, children: list[Token]) -> str:
        return str(children[0])

    def io_delay(self, meta: Meta, children: list[Any]) -> IoFault | None:
        node, tok, ops = children
        delay = self.measure(tok, ("duration",), "io delay")
        if delay is None:
            return None
        return IoFault(verb="delay", node=self._node(node), delay=delay, ops=ops or "all",
                       span=meta_span(meta))

    def io_fail(self, meta: Meta, children: list[Any]) -> IoFault:
        return IoFault(verb="fail", node=self._node(children[0]), ops=children[1] or "all",
                       span=meta_span(meta))

    def io_heal(self, meta: Meta, children: list[Any]) -> IoFault:
        return IoFault(verb="heal", node=self._node(children[0]), ops=children[1] or "all",
                       span=meta_span(meta))

    def set_global(self, meta: Meta, children: list[Any]) -> SetGlobal | None:
        key, value, nodes = children[0], children[1], children[2] or []
        problems = setting_problems(key.value, value.value, "set global")
        for where, message, hint in problems:
            self.error(key.span if where == "key" else value.span, message, hint)
        if problems:
            return None
        return SetGlobal(nodes=nodes, name=key.value, value=value.value, span=meta_span(meta))

    def convert(self, meta: Meta, children: list[Token]) -> ConvertStandalone:
        return ConvertStandalone(
            node=NodeRef(name=str(children[0]), span=token_span(children[0])), span=meta_span(meta)
        )

    def wait_until(self, meta: Meta, children: list[Any]) -> WaitUntil | None:
        timeout = 30.0
        if children[2] is not None:
            measured = self.measure(children[2], ("duration",), "timeout")
            if measured is None:
                return None
            timeout = measured
        return WaitUntil.model_validate(
            {
                "node": self._ref(children[0]),
                "condition": str(children[1]),
                "timeout": timeout,
                "span": meta_span(meta),
            }
        )

    def wait_for(self, meta: Meta, children: list[Token]) -> Sleep | None:
        seconds = self.measure(children[0], ("duration",), "wait")
        return None if seconds is None else Sleep(seconds=seconds, span=meta_span(meta))

    def execute(self, meta: Meta, children: list[Any]) -> RunSql | None:
        statement = text_of(children[0])
        if not statement.value.strip():
            self.error(
                statement.span,
                "'execute' needs an SQL statement",
                'execute "CREATE INDEX k ON t (c)" on db1',
            )
            return None
        if "\x00" in statement.value:
            self.error(statement.span, "the SQL statement contains a NUL character")
            return None
        return RunSql(node=children[1], statement=statement.value, span=meta_span(meta))
