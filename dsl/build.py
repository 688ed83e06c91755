"""Parse tree -> ``dsl.models``: a lark ``Transformer`` plus the checks that need the exact
tokens (units of each number, whole numbers, duplicated statements, statements that do not
belong in a block, unsafe config keys and values).

Everything it finds goes into one list of errors; a statement with an error is left out of
the model, so that validation (``dsl.validate``) sees only well-formed pieces and does not
report the same mistake twice. Cross-references (unknown nodes, roles, ``$param`` without
``vary``...) are validation's job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal, cast

from lark import Token, Transformer, Tree, v_args
from lark.tree import Meta

from dsl import router_settings
from dsl.actions import ROUTER_PROCESS, describe, undo
from dsl.errors import LanguageError
from dsl.models import (
    NO_SPAN,
    Action,
    ClockSkew,
    ConfigBlock,
    ConvertStandalone,
    CpuLimit,
    DelaySpec,
    DiskFault,
    DropCaches,
    Endpoint,
    Engine,
    Expectation,
    Experiment,
    GaleraTopology,
    ImageSpec,
    IntOrParam,
    IoFault,
    MemoryLimit,
    Metric,
    MongoReplSetTopology,
    NetworkFault,
    NodeAction,
    NodeGroupAction,
    NodeRef,
    NodeVerb,
    ParamRef,
    PrimaryPrimaryTopology,
    Promote,
    Quantity,
    ReplicationControl,
    ReplicationTopology,
    Report,
    Router,
    RunSql,
    SetGlobal,
    SingleTopology,
    Sleep,
    Span,
    StateCondition,
    Step,
    Sweep,
    TimedAction,
    Trigger,
    Variant,
    WaitUntil,
    Workload,
)
from dsl.space_build import SpaceBuilder
from dsl.units import QuantityError, kind_problem, parse_quantity
from dsl.validate import PARAM_LIMITS, is_safe_name, setting_problems

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


def token_span(tok: Token) -> Span:
    line = tok.line or 0
    column = tok.column or 0
    return Span(
        line=line,
        column=column,
        end_line=tok.end_line or line,
        end_column=tok.end_column or column,
    )


def meta_span(meta: Meta) -> Span:
    if meta.empty:
        return NO_SPAN
    return Span(
        line=meta.line, column=meta.column, end_line=meta.end_line, end_column=meta.end_column
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
}

@v_args(meta=True)
class Builder(SpaceBuilder, Transformer[Token, Any]):
    """Turns the tree into models, collecting errors in ``self.errors``."""

    def __init__(self, text: str, path: str) -> None:
        super().__init__(visit_tokens=False)
        self.text = text
        self.path = path
        self.errors: list[LanguageError] = []

    # --- helpers --------------------------------------------------------------------------

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
                "be varied with $name",
            )
            return None
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
        many = {
            k: [s.value for s in stmts if s.kind == k and s.value is not None] for k in repeatable
        }
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

    # --- topology -------------------------------------------------------------------------

    def topology(self, meta: Meta, children: list[Any]) -> Stmt:
        kind = str(children[0])
        header = join(meta_span(meta), token_span(children[0]))
        stmts: list[Stmt] = [c for c in children[1:] if c is not None]
        allowed = TOPOLOGY_STATEMENTS[kind]
        member_word, member_example = TOPOLOGY_MEMBERS[kind]
        kept: list[Stmt] = []
        for st in stmts:
            if st.kind in allowed:
                kept.append(st)
                continue
            members = {"primary", "replicas", "node", "nodes", "members"}
            owners = [k for k, stmts in TOPOLOGY_STATEMENTS.items() if st.kind in stmts]
            self.error(
                st.span,
                f"'{word(st.kind)}' does not belong in a {kind} topology",
                f"a {kind} topology lists its nodes with: {member_example}"
                if st.kind in members or not owners else
                f"'{word(st.kind)}' belongs in a {' or '.join(owners)} topology",
            )
        one = self.singles(kept, f"this {kind} topology",
                           frozenset({"delay", "config", "image"}))
        configs = [s.value for s in kept if s.kind == "config" and s.value is not None]
        images = [s.value for s in kept if s.kind == "image" and s.value is not None]
        engine = one["engine"].value if "engine" in one else None
        span = meta_span(meta)
        if member_word not in one:
            self.error(
                header, f"the {kind} topology does not say its nodes", f"add: {member_example}"
            )
            return Stmt("topology", span, None)
        members = one[member_word].value
        if members is None:
            return Stmt("topology", span, None)
        base: dict[str, Any] = {"configs": configs, "images": images, "span": span}
        if engine is not None:
            base["engine"] = engine

        def flag(key: str, default: bool) -> bool:
            return bool(one[key].value) if key in one else default

        model: Any
        if kind == "replication":
            replicas = one["replicas"].value if "replicas" in one else []
            delays = [s.value for s in kept if s.kind == "delay" and s.value is not None]
            mode: ReplicationMode = (
                one["replication_mode"].value if "replication_mode" in one else "gtid"
            )
            model = ReplicationTopology(
                primary=members,
                replicas=replicas,
                mode=mode,
                semi_sync=flag("semi_sync", False),
                crash_safe=flag("crash_safe", False),
                delays=delays,
                **base,
            )
        elif kind == "single":
            model = SingleTopology(node=members, **base)
        elif kind == "galera":
            model = GaleraTopology(nodes=members, **base)
        elif kind == "primary_primary":
            model = PrimaryPrimaryTopology(
                nodes=members,
                auto_increment_offsets=flag("auto_increment_offsets", True),
                **base,
            )
        else:
            model = MongoReplSetTopology(members=members, **base)
        return Stmt("topology", span, model)

    def engine(self, meta: Meta, children: list[Token | None]) -> Stmt:
        version = str(children[1]) if children[1] is not None else None
        engine = Engine.model_validate(
            {"flavor": str(children[0]), "version": version, "span": meta_span(meta)}
        )
        return self.stmt(meta, "engine", engine)

    def primary(self, meta: Meta, children: list[Token]) -> Stmt:
        return self.stmt(
            meta, "primary", NodeRef(name=str(children[0]), span=token_span(children[0]))
        )

    def node(self, meta: Meta, children: list[Token]) -> Stmt:
        return self.stmt(meta, "node", NodeRef(name=str(children[0]), span=token_span(children[0])))

    def replicas(self, meta: Meta, children: list[list[NodeRef]]) -> Stmt:
        return self.stmt(meta, "replicas", children[0])

    def nodes(self, meta: Meta, children: list[list[NodeRef]]) -> Stmt:
        return self.stmt(meta, "nodes", children[0])

    def members(self, meta: Meta, children: list[list[NodeRef]]) -> Stmt:
        return self.stmt(meta, "members", children[0])

    def replication_mode(self, meta: Meta, children: list[Token]) -> Stmt:
        return self.stmt(meta, "replication_mode", str(children[0]))

    def semi_sync(self, meta: Meta, children: list[bool]) -> Stmt:
        return self.stmt(meta, "semi_sync", children[0])

    def crash_safe(self, meta: Meta, children: list[bool]) -> Stmt:
        return self.stmt(meta, "crash_safe", children[0])

    def auto_increment_offsets(self, meta: Meta, children: list[bool]) -> Stmt:
        return self.stmt(meta, "auto_increment_offsets", children[0])

    def delay(self, meta: Meta, children: list[Token]) -> Stmt:
        node = NodeRef(name=str(children[0]), span=token_span(children[0]))
        seconds = self.measure(children[1], ("duration",), "delay")
        if seconds is not None and seconds != int(seconds):
            # MASTER_DELAY is whole seconds: refuse rather than round behind the DBA's back
            self.error(
                token_span(children[1]),
                f"'delay' is whole seconds (MASTER_DELAY), not {children[1]}",
                f"write {int(seconds)}s or {int(seconds) + 1}s",
            )
            seconds = None
        value = (
            None if seconds is None else DelaySpec(node=node, seconds=seconds, span=meta_span(meta))
        )
        return self.stmt(meta, "delay", value)

    # --- config, variants, sweeps ---------------------------------------------------------

    def key(self, meta: Meta, children: list[Token]) -> Text:
        return text_of(children[0])

    value = option_value = sweep_value = script = key

    def setting(self, meta: Meta, children: list[Text]) -> Setting:
        return Setting(children[0], children[1])

    option = setting

    def config(self, meta: Meta, children: list[Any]) -> Stmt:
        node_tok: Token | None = children[0]
        node = None if node_tok is None else NodeRef(name=str(node_tok), span=token_span(node_tok))
        settings = self.settings(children[1:], "config")
        return self.stmt(
            meta, "config", ConfigBlock(node=node, settings=settings, span=meta_span(meta))
        )

    def image(self, meta: Meta, children: list[Any]) -> Stmt:
        node_tok: Token | None = children[0]
        node = None if node_tok is None else NodeRef(name=str(node_tok), span=token_span(node_tok))
        ref = text_of(children[1])
        if not IMAGE_REF.fullmatch(ref.value):
            self.error(ref.span, f"'{ref.value}' is not an image reference",
                       'an image is named like "mariadb:11.4" or '
                       '"registry.example.com/team/mariadb@sha256:..."')
            return self.stmt(meta, "image", None)
        return self.stmt(meta, "image", ImageSpec(node=node, ref=ref.value,
                                                  span=meta_span(meta)))

    def variant(self, meta: Meta, children: list[Any]) -> Stmt:
        settings = self.settings(children[1:], "config")
        return self.stmt(
            meta, "variant", Variant(name=str(children[0]), settings=settings, span=meta_span(meta))
        )

    def sweep_values(self, meta: Meta, children: list[Text]) -> list[Text]:
        return children

    def _sweep(
        self, meta: Meta, name: Text, values: list[Text], target: Literal["param", "config"]
    ) -> Stmt:
        out: list[str] = []
        for v in values:
            problems = setting_problems(name.value, v.value, "vary")
            for where, message, hint in problems:
                self.error(name.span if where == "key" else v.span, message, hint)
            if problems:
                if any(where == "key" for where, _, _ in problems):
                    return self.stmt(meta, "vary", None)
                continue
            if v.value in out:
                self.error(v.span, f"'{v.value}' appears twice in this list")
                continue
            out.append(v.value)
        sweep = Sweep(
            name=name.value,
            values=out,
            target=target,
            span=meta_span(meta),
        )
        return self.stmt(meta, "vary", sweep)

    def vary(self, meta: Meta, children: list[Any]) -> Stmt:
        return self._sweep(meta, text_of(children[0]), children[1], "param")

    def vary_config(self, meta: Meta, children: list[Any]) -> Stmt:
        return self._sweep(meta, children[0], children[1], "config")

    # --- router ---------------------------------------------------------------------------

    def router(self, meta: Meta, children: list[Any]) -> Stmt:
        kind = str(children[0])
        header = join(meta_span(meta), token_span(children[0]))
        stmts = [c for c in children[1:] if c is not None]
        sets = [c for c in stmts if c.kind == "router_set"]
        one = self.singles([c for c in stmts if c.kind != "router_set"], "this router",
                           frozenset())
        span = meta_span(meta)
        if "writers" not in one:
            self.error(header, f"the {kind} router does not say where writes go", "add: writer db1")
            return Stmt("router", span, None)
        check = one["check"].value if "check" in one else None
        if check is None:  # not given, or already reported
            check = 0.5
        readers = one["readers"].value if "readers" in one else []
        image = one["image"].value if "image" in one else None
        if image is not None and image.node is not None:
            self.error(image.node.span, "a router's image names no node",
                       f'write: image "{image.ref}"')
            image = None
        router = Router.model_validate(
            {
                "kind": kind,
                "writers": one["writers"].value,
                "readers": readers,
                "check_interval": check,
                "image": image,
                "settings": self.router_settings(kind, sets),
                "span": span,
            }
        )
        return Stmt("router", span, router)

    def router_settings(self, kind: str, sets: list[Stmt]) -> dict[str, str]:
        """``set NAME = VALUE`` of a proxysql router: its own variables, checked here; a
        repeat or an unsafe one is reported and left out."""
        out: dict[str, str] = {}
        for st in sets:
            s: Setting = st.value
            name, value = s.key.value, s.value.value
            if kind != "proxysql":
                self.error(s.key.span, f"the {kind} router takes no settings",
                           "`set` is for router proxysql (its mysql-... variables)")
            elif name in out:
                self.error(s.key.span, f"{name} is set twice in this router", "set it once")
            elif (problem := router_settings.name_problem(name)) is not None:
                self.error(s.key.span, problem, "set mysql-monitor_read_only_interval = 500")
            elif (problem := router_settings.value_problem(name, value)) is not None:
                self.error(s.value.span, problem, f"set {name} = 500")
            else:
                out[name] = value
        return out

    def router_set(self, meta: Meta, children: list[Text]) -> Stmt:
        return self.stmt(meta, "router_set", Setting(children[0], children[1]))

    def writers(self, meta: Meta, children: list[list[NodeRef]]) -> Stmt:
        return self.stmt(meta, "writers", children[0])

    def readers(self, meta: Meta, children: list[list[NodeRef]]) -> Stmt:
        return self.stmt(meta, "readers", children[0])

    def check(self, meta: Meta, children: list[Token]) -> Stmt:
        return self.stmt(meta, "check", self.measure(children[0], ("duration",), "check every"))

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

    # --- measurements ---------------------------------------------------------------------

    def metric_args(self, meta: Meta, children: list[Any]) -> list[Any]:
        return children

    def metric(self, meta: Meta, children: list[Any]) -> Metric | None:
        name_tok, args, stat_tok, last_tok = children
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


def build_experiment(
    tree: Tree[Token], text: str, path: str
) -> tuple[Experiment | None, list[LanguageError]]:
    """The experiment of a parse tree (None when it cannot be built) and the errors found."""
    builder = Builder(text, path)
    experiment = builder.transform(tree)
    return cast(Experiment | None, experiment), builder.errors
