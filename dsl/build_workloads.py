"""The builder's part for workloads: lark transformer callbacks of ``dsl.build.Builder`` (see
dsl/grammar.lark)."""

from __future__ import annotations

from typing import Any

from lark import Token, v_args
from lark.tree import Meta

from dsl.build_base import (
    WORKLOAD_HINTS,
    WORKLOAD_STATEMENTS,
    Rules,
    Stmt,
    Text,
    meta_span,
    text_of,
    token_span,
    word,
)
from dsl.models import (
    NO_SPAN,
    Endpoint,
    Workload,
)


@v_args(meta=True)
class WorkloadRules(Rules):
    """Transformer callbacks of the workload rules."""

    # --- workloads ------------------------------------------------------------------------

    def workload(self, meta: Meta, children: list[Any]) -> Stmt:
        name_tok, kind_tok, script = children[0], children[1], children[2]
        name, kind = str(name_tok), str(kind_tok)
        span = meta_span(meta)
        allowed = WORKLOAD_STATEMENTS[kind]
        kept: list[Stmt] = []
        for st in children[3:]:
            if st.kind not in allowed:
                self.error(
                    st.span,
                    f"'{word(st.kind)}' does not apply to a {kind} workload",
                    WORKLOAD_HINTS.get(st.kind),
                )
            else:
                kept.append(st)
        one = self.singles(kept, f"workload '{name}'", frozenset())
        # a statement with an error (already reported) leaves its default in place
        fields: dict[str, Any] = {st.kind: st.value for st in one.values() if st.value is not None}
        if "write" in fields:
            fields["target"] = fields.pop("write")
        renames = {"target": "targets", "read": "reads", "operations": "ops"}
        args = {renames.get(k, k): v for k, v in fields.items()}
        start_after: Text | None = args.pop("start_after", None)
        if start_after is not None:
            args["start_after"] = start_after.value
            args["start_after_span"] = start_after.span
        script_text: Text | None = script
        workload = Workload.model_validate(
            {
                "name": name,
                "kind": kind,
                "script": script_text.value if script_text else None,
                "script_span": script_text.span if script_text else NO_SPAN,
                "span": span,
                **args,
            }
        )
        return Stmt("workload", span, workload)

    def endpoint(self, meta: Meta, children: list[Token]) -> Endpoint:
        tok = children[0]
        name = str(tok) if tok.type == "NAME" else f"router.{tok}"
        return Endpoint(name=name, span=meta_span(meta))

    def endpoints(self, meta: Meta, children: list[Endpoint]) -> list[Endpoint]:
        return children

    def target(self, meta: Meta, children: list[list[Endpoint]]) -> Stmt:
        return self.stmt(meta, "target", children[0])

    def write(self, meta: Meta, children: list[list[Endpoint]]) -> Stmt:
        return self.stmt(meta, "write", children[0])

    def read(self, meta: Meta, children: list[list[Endpoint]]) -> Stmt:
        return self.stmt(meta, "read", children[0])

    def amount(self, meta: Meta, children: list[Token]) -> Token:
        return children[0]

    def _counted(self, meta: Meta, children: list[Token], kind: str) -> Stmt:
        return self.stmt(meta, kind, self.int_or_param(children[0], kind))

    def clients(self, meta: Meta, children: list[Token]) -> Stmt:
        return self._counted(meta, children, "clients")

    def threads(self, meta: Meta, children: list[Token]) -> Stmt:
        return self._counted(meta, children, "threads")

    def tables(self, meta: Meta, children: list[Token]) -> Stmt:
        return self._counted(meta, children, "tables")

    def table_size(self, meta: Meta, children: list[Token]) -> Stmt:
        return self._counted(meta, children, "table_size")

    def rows(self, meta: Meta, children: list[Token]) -> Stmt:
        return self._counted(meta, children, "rows")

    def operations(self, meta: Meta, children: list[Token]) -> Stmt:
        return self._counted(meta, children, "operations")

    def rate(self, meta: Meta, children: list[Token]) -> Stmt:
        return self.stmt(meta, "rate", self.measure(children[0], ("rate",), "rate"))

    def every(self, meta: Meta, children: list[Token]) -> Stmt:
        return self.stmt(meta, "every", self.measure(children[0], ("duration",), "every"))

    def timeout(self, meta: Meta, children: list[Token]) -> Stmt:
        return self.stmt(meta, "timeout", self.measure(children[0], ("duration",), "timeout"))

    def operation(self, meta: Meta, children: list[Token]) -> Stmt:
        return self.stmt(meta, "operation", str(children[0]))

    def keys(self, meta: Meta, children: list[Token]) -> Stmt:
        tok = children[0]
        if tok.type in ("QUANTITY", "PARAM"):  # keys 10: a transactional workload's key space
            return self.stmt(meta, "key_count", self.int_or_param(tok, "keys"))
        return self.stmt(meta, "keys", str(tok))

    def txn_length(self, meta: Meta, children: list[Token]) -> Stmt:
        return self._counted(meta, children, "txn_length")

    def read_fraction(self, meta: Meta, children: list[Token]) -> Stmt:
        value = self.measure(children[0], ("percent",), "read_fraction", allow_zero=True)
        if value is not None and value > 1:
            self.error(token_span(children[0]), "'read_fraction' is at most 100%")
            value = None
        return self.stmt(meta, "read_fraction", value)

    def distribution(self, meta: Meta, children: list[Token]) -> Stmt:
        return self.stmt(meta, "distribution", str(children[0]))

    def isolation(self, meta: Meta, children: list[Token]) -> Stmt:
        return self.stmt(meta, "isolation", children[0])

    def isolation_level(self, meta: Meta, children: list[Token]) -> str:
        return " ".join(str(t) for t in children)

    def for_update(self, meta: Meta, children: list[Token]) -> Stmt:
        return self.stmt(meta, "for_update", True)

    def start_after(self, meta: Meta, children: list[Token]) -> Stmt:
        return self.stmt(meta, "start_after", text_of(children[0]))
