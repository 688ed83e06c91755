"""Parse tree -> ``dsl.models``: a lark ``Transformer`` plus the checks that need the exact
tokens (units of each number, whole numbers, duplicated statements, statements that do not
belong in a block, unsafe config keys and values).

Everything it finds goes into one list of errors; a statement with an error is left out of
the model, so that validation (``dsl.validate``) sees only well-formed pieces and does not
report the same mistake twice. Cross-references (unknown nodes, roles, ``$param`` without
``vary``...) are validation's job.

``Builder`` is made of parts, one module each: ``dsl.build_base`` (shared helpers and words),
``dsl.build_topology`` (topology, config, variants, sweeps, router), ``dsl.build_workloads``,
``dsl.build_steps`` (steps, timeline, actions), ``dsl.build_measurements`` (metrics,
expectations, reports) and ``dsl.space_build`` (fault spaces); this module holds the file and
experiment rules.
"""

from __future__ import annotations

from typing import Any, cast

from lark import Token, Tree, v_args
from lark.tree import Meta

from dsl.build_base import (
    DEFAULT_DURATION,
    Stmt,
    Text,
    join,
    meta_span,
    text_of,
    token_span,
)
from dsl.build_measurements import MeasurementRules
from dsl.build_steps import StepRules
from dsl.build_topology import TopologyRules
from dsl.build_workloads import WorkloadRules
from dsl.errors import LanguageError
from dsl.models import (
    NO_SPAN,
    Experiment,
    NodeRef,
    Workload,
)
from dsl.space_build import SpaceBuilder
from dsl.validate_safety import is_safe_name


@v_args(meta=True)
class Builder(TopologyRules, WorkloadRules, StepRules, MeasurementRules, SpaceBuilder):
    """Turns the tree into models, collecting errors in ``self.errors``."""

    def __init__(self, text: str, path: str) -> None:
        super().__init__(visit_tokens=False)
        self.text = text
        self.path = path
        self.errors: list[LanguageError] = []

    # --- file and experiment --------------------------------------------------------------

    def file(self, meta: Meta, children: list[Any]) -> Experiment | None:
        return cast(Experiment | None, children[0])

    def exp_name(self, meta: Meta, children: list[Token]) -> Text:
        return text_of(children[0])

    def experiment(self, meta: Meta, children: list[Any]) -> Experiment | None:
        name: Text = children[0]
        stmts: list[Stmt] = [c for c in children[1:] if c is not None]
        header = join(meta_span(meta), name.span)
        if not is_safe_name(name.value):
            self.error(
                name.span,
                f"experiment name '{name.value}' is not usable as a file name",
                "use letters, digits, '.', '-' and '_', starting with a letter or digit",
            )
        repeatable = frozenset(
            {"config", "variant", "vary", "workload", "step", "timed", "trigger", "expect",
             "report"}
        )
        one = self.singles(stmts, "this experiment", repeatable)
        many: dict[str, list[Any]] = {k: [] for k in repeatable}
        for s in stmts:
            if s.kind in many and s.value is not None:
                many[s.kind].append(s.value)
        if "topology" not in one:
            self.error(
                header,
                f"experiment '{name.value}' has no topology",
                "add one, e.g. topology replication { primary db1  replicas db2 }",
            )
            return None
        topology = one["topology"].value
        if topology is None:
            return None

        def get(kind: str, default: Any) -> Any:
            st = one.get(kind)
            return default if st is None or st.value is None else st.value

        workloads: list[Workload] = many["workload"]
        bounded = [w.duration for w in workloads if w.duration is not None]
        # without a duration, the load lasts as long as the longest timed workload
        duration = get("duration", max(bounded, default=DEFAULT_DURATION))
        if "duration" in one and one["duration"].value is None:
            # already reported; an unbounded duration keeps validation from adding
            # "after the end of the load" errors that only repeat the first one
            duration = float("inf")

        return Experiment(
            name=name.value,
            title=get("title", None),
            description=get("description", None),
            tags=get("tags", []),
            seed=get("seed", 0),
            duration=duration,
            topology=topology,
            router=get("router", None),
            configs=many["config"],
            variants=many["variant"],
            sweeps=many["vary"],
            repeat=get("repeat", 1),
            workloads=many["workload"],
            steps=many["step"],
            timeline=many["timed"],
            triggers=many["trigger"],
            expectations=many["expect"],
            reports=many["report"],
            faults=get("fault_space", None),
            leave_faults=get("leave_faults", False),
            backend=get("backend", "native"),
            backend_span=one["backend"].span if "backend" in one else NO_SPAN,
            source=self.path,
            span=meta_span(meta),
        )

    def title(self, meta: Meta, children: list[Token]) -> Stmt:
        return self.stmt(meta, "title", text_of(children[0]).value)

    def description(self, meta: Meta, children: list[Token]) -> Stmt:
        return self.stmt(meta, "description", text_of(children[0]).value)

    def tags(self, meta: Meta, children: list[Token]) -> Stmt:
        return self.stmt(meta, "tags", [str(t) for t in children])

    def seed(self, meta: Meta, children: list[Token]) -> Stmt:
        return self.stmt(meta, "seed", self.whole(children[0], "seed"))

    def duration(self, meta: Meta, children: list[Token]) -> Stmt:
        return self.stmt(meta, "duration", self.measure(children[0], ("duration",), "duration"))

    def repeat(self, meta: Meta, children: list[Token]) -> Stmt:
        return self.stmt(meta, "repeat", self.whole(children[0], "repeat"))

    def leave_faults(self, meta: Meta, children: list[Any]) -> Stmt:
        return self.stmt(meta, "leave_faults", True)

    def backend(self, meta: Meta, children: list[Token]) -> Stmt:
        return self.stmt(meta, "backend", str(children[0]))

    def names(self, meta: Meta, children: list[Token]) -> list[NodeRef]:
        return [NodeRef(name=str(t), span=token_span(t)) for t in children]

    def onoff(self, meta: Meta, children: list[Token]) -> bool:
        return str(children[0]) == "on"

    def _token(self, meta: Meta, children: list[Token]) -> Token:
        return children[0]

    topology_kind = flavor = mode = router_kind = workload_kind = router_end = _token
    op_kind = key_order = repl_threads = link_kind = condition = metric_name = _token
    backend_kind = io_op_kind = key_distribution = _token


def build_experiment(
    tree: Tree[Token], text: str, path: str
) -> tuple[Experiment | None, list[LanguageError]]:
    """The experiment of a parse tree (None when it cannot be built) and the errors found."""
    builder = Builder(text, path)
    experiment = builder.transform(tree)
    return cast(Experiment | None, experiment), builder.errors
