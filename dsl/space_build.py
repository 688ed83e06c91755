"""The builder's part for fault spaces: ``faults { ... }`` -> ``dsl.models.FaultSpace``.

A part of ``dsl.build.Builder`` (its methods are lark transformer callbacks, each wrapped with
``v_args(meta=True)`` here because the Builder's class-level ``v_args`` skips inherited ones).
A range ``1s..5s`` arrives as one QUANTITY token and is split here, each end checked for its
unit like any other number.
"""

from __future__ import annotations

from typing import Any

from lark import Token, v_args
from lark.tree import Meta

from dsl.errors import LanguageError
from dsl.models import (
    FaultSpace,
    NodeRef,
    Quantity,
    SpaceFault,
    SpaceRange,
    SpaceTarget,
    Span,
)
from dsl.units import kind_problem

MAX_TIMES = 100  # `at most N times`: N at most this


def _span(meta: Meta) -> Span:
    if meta.empty:
        return Span(line=0, column=0, end_line=0, end_column=0)
    return Span(line=meta.line, column=meta.column, end_line=meta.end_line,
                end_column=meta.end_column)


def _tok_span(tok: Token) -> Span:
    line, column = tok.line or 0, tok.column or 0
    return Span(line=line, column=column, end_line=tok.end_line or line,
                end_column=tok.end_column or column)


class SpaceBuilder:
    """Transformer callbacks of the fault-space rules (see dsl/grammar.lark)."""

    path: str
    errors: list[LanguageError]

    def error(self, span: Span, message: str, hint: str | None = None) -> None:
        raise NotImplementedError  # dsl.build.Builder's

    def quantity(self, tok: Token) -> Quantity | None:
        raise NotImplementedError  # dsl.build.Builder's

    def checked(self, q: Quantity, kinds: tuple[str, ...], what: str,
                allow_zero: bool = False) -> float | None:
        raise NotImplementedError  # dsl.build.Builder's

    def space_range(self, tok: Token, kinds: tuple[str, ...], what: str,
                    allow_zero: bool = False) -> SpaceRange | None:
        """``1s..5s`` or ``2s``: both ends of the right kind, low <= high."""
        text, span = str(tok), _tok_span(tok)
        parts = text.split("..")
        if len(parts) > 2 or any(not p for p in parts):
            self.error(span, f"'{text}' is not a value or a range",
                       f"a range is two values joined by '..', e.g. {_example(kinds)}")
            return None
        values: list[float] = []
        for i, part in enumerate(parts):
            column = span.column + (0 if i == 0 else len(parts[0]) + 2)
            sub = Token("QUANTITY", part, line=span.line, column=column,
                        end_line=span.end_line, end_column=column + len(part))
            q = self.quantity(sub)
            value = None if q is None else self.checked(q, kinds, what, allow_zero)
            if value is None:
                return None
            values.append(value)
        low, high = values[0], values[-1]
        if low > high:
            self.error(span, f"the range '{text}' goes down: its low end is after its high end",
                       f"write it low first: {parts[-1]}..{parts[0]}")
            return None
        return SpaceRange(low=low, high=high, text=text, span=span)

    @v_args(meta=True)
    def fault_space(self, meta: Meta, children: list[Any]) -> Any:
        from dsl.build_base import Stmt

        windows = [c for c in children if isinstance(c, tuple) and c[0] == "window"]
        faults = [c for c in children if isinstance(c, SpaceFault)]
        for extra in windows[1:]:
            self.error(extra[2], "'between' is given twice in this fault space (first at "
                       f"line {windows[0][2].line})", "keep one")
        window = windows[0][1] if windows else None
        if not faults and not any(c is None for c in children):
            self.error(_span(meta), "this fault space names no fault",
                       "add one, e.g. kill any replica for 1s..5s at most 2 times")
        return Stmt("fault_space", _span(meta),
                    FaultSpace(window=window, faults=faults, span=_span(meta)))

    @v_args(meta=True)
    def space_window(self, meta: Meta, children: list[Token]) -> tuple[str, Any, Span] | None:
        low = self.space_range(children[0], ("duration",), "between", allow_zero=True)
        high = self.space_range(children[1], ("duration",), "and", allow_zero=True)
        if low is None or high is None:
            return None
        span = _span(meta)
        if ".." in low.text or ".." in high.text:
            self.error(span, "'between A and B' takes two times, not ranges")
            return None
        if low.low >= high.low:
            self.error(span, f"the window 'between {low.text} and {high.text}' is empty: its "
                       "end must be after its start")
            return None
        return ("window", SpaceRange(low=low.low, high=high.low,
                                     text=f"{low.text}..{high.text}", span=span), span)

    @v_args(meta=True)
    def space_fault(self, meta: Meta, children: list[Any]) -> SpaceFault | None:
        verb, target, size_tok, link, lasts_tok, count = children
        if target is None:
            return None
        size: SpaceRange | None = None
        span = _span(meta)
        if verb == "network latency":
            if size_tok is None:
                self.error(span, "'network latency' in a fault space needs its delay",
                           "e.g. network latency any replica 50ms..200ms for 2s..4s")
                return None
            size = self.space_range(size_tok, ("duration",), "latency")
            if size is None:
                return None
        elif size_tok is not None:
            self.error(_tok_span(size_tok), f"'{verb}' takes no size, only 'for'")
            return None
        if link is not None and not verb.startswith("network"):
            self.error(span, f"'{verb}' takes no link ('on {link}'): only network faults do")
            return None
        lasts = self.space_range(lasts_tok, ("duration",), "for")
        if lasts is None:
            return None
        times, at_most = 1, False  # no count: exactly once
        if count is not None:
            if count[0] is None:
                return None
            times, at_most = count
        return SpaceFault.model_validate({
            "verb": verb, "target": target, "size": size, "link": link or "all",
            "lasts": lasts, "times": times, "at_most": at_most, "span": span})

    @v_args(meta=True)
    def space_verb(self, meta: Meta, children: list[Token]) -> str:
        return " ".join(str(c) for c in children)

    @v_args(meta=True)
    def space_role(self, meta: Meta, children: list[Token]) -> str:
        return str(children[0])

    @v_args(meta=True)
    def space_but(self, meta: Meta, children: list[list[NodeRef]]) -> list[NodeRef]:
        return children[0]

    @v_args(meta=True)
    def space_target(self, meta: Meta, children: list[Any]) -> SpaceTarget:
        span = _span(meta)
        if not children:
            return SpaceTarget(kind="writer", span=span)
        first = children[0]
        if isinstance(first, list):  # any of N, ...
            return SpaceTarget(kind="any_of", nodes=first, span=span)
        if isinstance(first, Token) and first.type == "NAME":
            return SpaceTarget(kind="node", nodes=[NodeRef(name=str(first),
                                                            span=_tok_span(first))], span=span)
        kind = "any_replica" if first == "replica" else "any_node"
        but = children[1] if len(children) > 1 and children[1] else []
        return SpaceTarget.model_validate({"kind": kind, "nodes": but, "span": span})

    @v_args(meta=True)
    def space_at_most(self, meta: Meta, children: list[Token]) -> bool:
        return True

    @v_args(meta=True)
    def space_times(self, meta: Meta, children: list[Token]) -> str:
        return str(children[0])

    @v_args(meta=True)
    def space_count(self, meta: Meta, children: list[Any]) -> tuple[int | None, bool]:
        at_most, tok, word = children
        q = self.quantity(tok)
        if q is None:
            return None, False
        problem = kind_problem(q, ("count",), "'times'")
        if problem:
            self.error(q.span, *problem)
            return None, False
        n = q.value
        if n != int(n) or not 1 <= n <= MAX_TIMES:
            self.error(q.span, f"a fault may happen 1 to {MAX_TIMES} times, not '{q.text}'")
            return None, False
        if word == "time" and n != 1:
            self.error(q.span, f"'{q.text} time': more than one is 'times'",
                       f"{q.text} times")
        return int(n), at_most is not None


def _example(kinds: tuple[str, ...]) -> str:
    return "1s..5s" if "duration" in kinds else "1..3"
