"""The builder's part for measurements: metrics, expectations and reports, lark transformer
callbacks of ``dsl.build.Builder`` (see dsl/grammar.lark)."""

from __future__ import annotations

from typing import Any

from lark import Token, v_args
from lark.tree import Meta

from dsl.build_base import (
    Rules,
    Stmt,
    Text,
    meta_span,
    text_of,
    token_span,
)
from dsl.models import (
    NO_SPAN,
    Expectation,
    Metric,
    Quantity,
    Report,
)


@v_args(meta=True)
class MeasurementRules(Rules):
    """Transformer callbacks of the metric, expect and report rules."""

    # --- measurements ---------------------------------------------------------------------

    def metric_args(self, meta: Meta, children: list[Any]) -> list[Any]:
        return children

    def metric(self, meta: Meta, children: list[Any]) -> Metric | None:
        name_tok, args, stat_tok, last_tok, from_tok, to_tok = children
        subject = on = None
        code: int | None = None
        subject_span = on_span = NO_SPAN
        ok = True
        if args is not None:
            subject, subject_span = str(args[0]), token_span(args[0])
            if args[1] is not None:  # an Endpoint: a node, or router.writer/reader
                on, on_span = args[1].name, args[1].span
            if args[2] is not None:
                code = self.whole(args[2], "code")
                ok = code is not None
        last = None
        if last_tok is not None:
            last = self.measure(last_tok, ("duration",), "last")
            ok = ok and last is not None
        window = None
        if from_tok is not None and to_tok is not None:
            a = self.measure(from_tok, ("duration",), "from", allow_zero=True)
            b = self.measure(to_tok, ("duration",), "to")
            ok = ok and a is not None and b is not None
            window = (a, b) if a is not None and b is not None else None
        if not ok:
            return None
        return Metric.model_validate(
            {
                "name": str(name_tok),
                "subject": subject,
                "on": on,
                "code": code,
                "stat": None if stat_tok is None else str(stat_tok),
                "last": last,
                "window": window,
                "subject_span": subject_span,
                "on_span": on_span,
                "span": meta_span(meta),
            }
        )

    def _source(self, meta: Meta) -> str:
        if meta.empty:
            return ""
        return self.text[meta.start_pos : meta.end_pos]

    def scope(self, meta: Meta, children: list[Token]) -> Text:
        return text_of(children[0])

    def compared(self, meta: Meta, children: list[Token]) -> tuple[str, Any]:
        return "compared", (str(children[0]), self.quantity(children[1]))

    def between(self, meta: Meta, children: list[Token]) -> tuple[str, Any]:
        low, high = self.quantity(children[0]), self.quantity(children[1])
        if low is not None and high is not None:
            if low.kind != high.kind:
                self.error(
                    high.span,
                    f"both ends of 'between' need the same kind of number: '{low.text}' is "
                    f"a {low.kind}, '{high.text}' a {high.kind}",
                )
                return "between", None
            if high.value < low.value:
                self.error(
                    meta_span(meta),
                    f"'between {low.text} and {high.text}': the low end comes first",
                    f"between {high.text} and {low.text}",
                )
                return "between", None
        return "between", (low, high)

    def factor(self, meta: Meta, children: list[Token]) -> tuple[Quantity | None]:
        tok = children[0]
        text = str(tok)
        number = text[:-1] if text.endswith("x") else text
        span = token_span(tok)
        try:
            value = float(number)
        except ValueError:
            self.error(
                span,
                f"a claim across cells multiplies by a plain number, not '{text}'",
                "expect throughput(w) in a >= 1.3 * throughput(w) in b",
            )
            return (None,)
        if value <= 0:
            self.error(span, f"the factor must be more than zero, not '{text}'")
            return (None,)
        return (Quantity(value=value, kind="count", text=number, span=span),)

    def relative(self, meta: Meta, children: list[Any]) -> tuple[str, Any]:
        op, factor, metric = children
        if factor is not None and factor[0] is None:  # already reported
            return "relative", None
        return "relative", (str(op), factor[0] if factor else None, metric)

    def expect(self, meta: Meta, children: list[Any]) -> Stmt:
        metric, before, (form, body), after = children
        span = meta_span(meta)
        fields: dict[str, Any] = {"text": self._source(meta), "span": span}
        if metric is None or body is None:
            return self.stmt(meta, "expect", None)
        if form == "relative":
            op, factor, other = body
            if other is None:
                return self.stmt(meta, "expect", None)
            if before is None or after is None:
                self.error(
                    span,
                    "a claim across cells names the variant of each side",
                    "expect throughput(w) in relaxed >= 1.3 * throughput(w) in durable",
                )
                return self.stmt(meta, "expect", None)
            fields.update(
                metric=metric,
                op=op,
                value=factor or Quantity(value=1.0, kind="count", text="1", span=NO_SPAN),
                variant=before.value,
                variant_span=before.span,
                other=other,
                other_variant=after.value,
                other_variant_span=after.span,
            )
            return self.stmt(meta, "expect", Expectation.model_validate(fields))
        if before is not None and after is not None:
            self.error(
                after.span,
                f"'in {after.value}': this expectation already says 'in {before.value}'",
                "keep one",
            )
            return self.stmt(meta, "expect", None)
        scope = before or after
        if scope is not None:
            fields.update(variant=scope.value, variant_span=scope.span)
        if form == "between":
            low, high = body
            if low is None or high is None:
                return self.stmt(meta, "expect", None)
            fields.update(metric=metric, op="between", value=low, high=high)
        else:
            op, value = body
            if value is None:
                return self.stmt(meta, "expect", None)
            fields.update(metric=metric, op=op, value=value)
        return self.stmt(meta, "expect", Expectation.model_validate(fields))

    def report(self, meta: Meta, children: list[Any]) -> Stmt:
        metric = children[0]
        if metric is None:
            return self.stmt(meta, "report", None)
        return self.stmt(
            meta, "report", Report(metric=metric, text=self._source(meta), span=meta_span(meta))
        )
