"""What every part of the language's builder (``dsl.build.Builder``) shares: the statements'
words and limits, ``Stmt``, ``Text`` and ``Setting`` (what a rule hands its parent), spans of
tokens, and ``Rules``, the base of the builder's parts, with the helpers that check a number, a
whole number, settings and statements given once (each records its errors in ``errors``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from lark import Token, Transformer
from lark.tree import Meta

from dsl.errors import LanguageError
from dsl.models import (
    NO_SPAN,
    IntOrParam,
    ParamRef,
    Quantity,
    Span,
)
from dsl.units import QuantityError, kind_problem, parse_quantity, read_quantity
from dsl.validate_base import PARAM_LIMITS
from dsl.validate_safety import setting_problems

ReplicationMode = Literal["gtid", "file_position"]

LIMITS: dict[str, tuple[int, int]] = {
    "seed": (0, 2**63 - 1),
    "repeat": (1, 1000),
    "code": (1, 65535),
    "operations": PARAM_LIMITS["ops"],
    "keys": PARAM_LIMITS["key_count"],
    **PARAM_LIMITS,
}
DEFAULT_DURATION = 30.0

# Words shown in messages for statements whose rule name differs from what is written.
WORDS = {
    "replication_mode": "replication",
    "leave_faults": "leave faults",
    "start_after": "start after",
    "key_count": "keys N",
    "for_update": "for update",
    "step_before": "before load",
    "fault_space": "faults { }",
}


def word(kind: str) -> str:
    return WORDS.get(kind, kind)


@dataclass(frozen=True, slots=True)
class Stmt:
    """One statement inside a block, before the block is assembled."""

    kind: str
    span: Span
    value: Any = None


@dataclass(frozen=True, slots=True)
class Text:
    """A word or string from the source with its span."""

    value: str
    span: Span


@dataclass(frozen=True, slots=True)
class Setting:
    key: Text
    value: Text


def _disk_target(word: str | None) -> Literal["datadir", "binlog"]:
    """``disk full db1`` fills the data directory's filesystem, ``disk full db1 binlog`` the
    binary logs'."""
    return "binlog" if word == "binlog" else "datadir"


# Span's own validator, called with a dict: the same validated Span as Span(...), a quarter
# faster (the builder makes two thousand of them for a 500-line file)
_span = Span.__pydantic_validator__.validate_python


def token_span(tok: Token) -> Span:
    line = tok.line or 0
    column = tok.column or 0
    return _span(  # type: ignore[no-any-return]
        {"line": line, "column": column, "end_line": tok.end_line or line,
         "end_column": tok.end_column or column}
    )


def meta_span(meta: Meta) -> Span:
    if meta.empty:
        return NO_SPAN
    return _span(  # type: ignore[no-any-return]
        {"line": meta.line, "column": meta.column, "end_line": meta.end_line,
         "end_column": meta.end_column}
    )


def join(first: Span, last: Span) -> Span:
    return Span(
        line=first.line, column=first.column, end_line=last.end_line, end_column=last.end_column
    )


def unquote(raw: str) -> str:
    """The value of a double-quoted string token (``\\"``, ``\\\\``, ``\\n``, ``\\t``)."""
    body = raw[1:-1]
    if "\\" not in body:
        return body
    out: list[str] = []
    it = iter(body)
    for ch in it:
        if ch != "\\":
            out.append(ch)
            continue
        nxt = next(it, "")
        out.append({"n": "\n", "t": "\t"}.get(nxt, nxt))
    return "".join(out)


def text_of(tok: Token) -> Text:
    value = unquote(str(tok)) if tok.type == "STRING" else str(tok)
    return Text(value, token_span(tok))


# a container image reference: [registry[:port]/]path[:tag][@digest], nothing a shell or an
# API path could take for something else
IMAGE_REF = re.compile(r"[a-z0-9][a-z0-9._/:-]*(?:@sha256:[0-9a-f]{64})?", re.IGNORECASE)

TOPOLOGY_STATEMENTS: dict[str, frozenset[str]] = {
    "replication": frozenset(
        {
            "engine",
            "primary",
            "replicas",
            "replication_mode",
            "semi_sync",
            "crash_safe",
            "delay",
            "config",
            "image",
        }
    ),
    "single": frozenset({"engine", "node", "config", "image"}),
    "galera": frozenset({"engine", "nodes", "config", "image"}),
    "primary_primary": frozenset({"engine", "nodes", "auto_increment_offsets", "config",
                                  "image"}),
    "mongodb_replset": frozenset({"engine", "members", "config", "image"}),
}
TOPOLOGY_MEMBERS = {
    "replication": ("primary", "primary db1"),
    "single": ("node", "node db1"),
    "galera": ("nodes", "nodes g1, g2, g3"),
    "primary_primary": ("nodes", "nodes p1, p2"),
    "mongodb_replset": ("members", "members m1, m2, m3"),
}

_ANY_WORKLOAD = {"clients", "duration", "timeout", "start_after"}
WORKLOAD_STATEMENTS: dict[str, frozenset[str]] = {
    "probe": frozenset(_ANY_WORKLOAD | {"target", "every", "operation", "operations"}),
    "unique_writes": frozenset(_ANY_WORKLOAD | {"target", "rate", "rows"}),
    "read_your_writes": frozenset(_ANY_WORKLOAD | {"write", "read", "rate", "operations"}),
    "unique_insert": frozenset(_ANY_WORKLOAD | {"target", "rate", "keys", "rows"}),
    "connect": frozenset(_ANY_WORKLOAD | {"target", "rate", "every", "operations"}),
    "list_append": frozenset(_ANY_WORKLOAD | {"target", "rate", "operations", "key_count",
                                              "txn_length", "read_fraction", "distribution",
                                              "isolation"}),
    "read_modify_write": frozenset(_ANY_WORKLOAD | {"target", "rate", "operations",
                                                    "key_count", "distribution", "isolation",
                                                    "for_update"}),
    "bank": frozenset(_ANY_WORKLOAD | {"target", "rate", "operations", "key_count",
                                       "read_fraction", "distribution", "isolation",
                                       "for_update"}),
    "sysbench": frozenset(
        {
            "target",
            "threads",
            "tables",
            "table_size",
            "rate",
            "duration",
            "operations",
            "start_after",
        }
    ),
}
WORKLOAD_HINTS = {
    "target": "a read_your_writes workload says where it writes and where it reads: "
    "write router.writer  read db2, db3",
    "write": "only read_your_writes has write/read; other workloads use target",
    "read": "only read_your_writes has write/read; other workloads use target",
    "clients": "sysbench counts its clients as threads: threads 4",
    "timeout": "sysbench manages its own timeouts",
    "key_count": "'keys N' sets how many keys a transactional workload (list_append, "
    "read_modify_write, bank) uses; other workloads take keys sequential, auto_increment or "
    "random (unique_insert)",
    "keys": "keys sequential, auto_increment or random is unique_insert's; the transactional "
    "workloads take a number: keys 10",
    "txn_length": "only list_append has transactions of several micro-operations",
    "read_fraction": "only list_append and bank mix reads into their transactions",
    "isolation": "only the transactional workloads (list_append, read_modify_write, bank) set "
    "an isolation level; a server default goes in config: transaction_isolation = ...",
    "for_update": "only read_modify_write and bank lock what they read",
    "distribution": "only the transactional workloads draw keys from a distribution",
    "rate": "a probe is paced by its interval: every 10ms",
    "every": "only probe and connect run at an interval; the others are paced by a rate: "
    "rate 200/s",
}


class Rules(Transformer[Token, Any]):
    """The helpers of the builder's parts (``dsl.build.Builder`` holds the state)."""

    text: str
    path: str
    errors: list[LanguageError]

    def error(self, span: Span, message: str, hint: str | None = None) -> None:
        self.errors.append(LanguageError(self.path, span, message, hint))

    def quantity(self, tok: Token) -> Quantity | None:
        span = token_span(tok)
        try:
            return parse_quantity(str(tok), span)
        except QuantityError as exc:
            self.error(span, exc.message, exc.hint)
            return None

    def measure(
        self, tok: Token | None, kinds: tuple[str, ...], what: str, allow_zero: bool = False
    ) -> float | None:
        """A quantity of one of ``kinds``, normalised; None (and an error) otherwise."""
        if tok is None:
            return None
        if tok.type == "PARAM":
            self.error(
                token_span(tok),
                f"'{what}' cannot take a parameter",
                "only clients, threads, tables, table_size, rows and operations can "
                "be varied with $name"
                + ("; to try several rates: lab search FILE --knob WORKLOAD.rate --from 50/s "
                   "--to 500/s, or one variant each" if what == "rate" else ""),
            )
            return None
        # the common case first, without a Quantity and its Span: a quantity of the right
        # kind, more than zero (or zero, when allowed); anything else says why below
        read = read_quantity(str(tok))
        if read is not None and read[1] in kinds and (
                read[0] > 0 or (read[0] == 0 and allow_zero)):
            return read[0]
        q = self.quantity(tok)
        return None if q is None else self.checked(q, kinds, what, allow_zero)

    def checked(self, q: Quantity, kinds: tuple[str, ...], what: str,
                allow_zero: bool = False) -> float | None:
        """``q``'s value when it is of one of ``kinds`` and more than zero (or zero, when
        allowed); None, and the error said, otherwise."""
        problem = kind_problem(q, kinds, f"'{what}'")
        if problem:
            self.error(q.span, *problem)
            return None
        if q.value < 0 or (q.value == 0 and not allow_zero):
            self.error(q.span, f"'{what}' must be more than zero")
            return None
        return q.value

    def whole(self, tok: Token, what: str) -> int | None:
        """A whole number within ``LIMITS[what]``."""
        q = self.quantity(tok)
        if q is None:
            return None
        problem = kind_problem(q, ("count",), f"'{what}'")
        if problem:
            self.error(q.span, *problem)
            return None
        low, high = LIMITS[what]
        if q.value != int(q.value):
            self.error(q.span, f"'{what}' needs a whole number, not '{q.text}'")
            return None
        if not low <= int(q.value) <= high:
            self.error(q.span, f"'{what}' must be between {low} and {high}, not {q.text}")
            return None
        return int(q.value)

    def int_or_param(self, tok: Token, what: str) -> IntOrParam | None:
        if tok.type == "PARAM":
            return ParamRef(name=str(tok)[1:], span=token_span(tok))
        return self.whole(tok, what)

    def settings(self, items: list[Setting], context: str) -> dict[str, str]:
        """Safe settings as a dict; unsafe or repeated ones are reported and left out."""
        out: dict[str, str] = {}
        first_line: dict[str, int] = {}
        for s in items:
            problems = setting_problems(s.key.value, s.value.value, context)
            for where, message, hint in problems:
                self.error(s.key.span if where == "key" else s.value.span, message, hint)
            if problems:
                continue
            norm = s.key.value.replace("-", "_")
            if norm in first_line:
                self.error(
                    s.key.span,
                    f"'{s.key.value}' is set twice here (first at line {first_line[norm]})",
                    "keep one",
                )
                continue
            first_line[norm] = s.key.span.line
            out[s.key.value] = s.value.value
        return out

    def singles(self, stmts: list[Stmt], where: str, repeatable: frozenset[str]) -> dict[str, Stmt]:
        """The statements that may appear once, by kind; a second one is an error."""
        seen: dict[str, Stmt] = {}
        for st in stmts:
            if st.kind in repeatable:
                continue
            if st.kind in seen:
                self.error(
                    st.span,
                    f"'{word(st.kind)}' is given twice in {where} (first at line "
                    f"{seen[st.kind].span.line})",
                    "keep one",
                )
                continue
            seen[st.kind] = st
        return seen

    def stmt(self, meta: Meta, kind: str, value: Any = None) -> Stmt:
        return Stmt(kind, meta_span(meta), value)
