"""The builder's part for the topology, config, variants, sweeps and the router: lark
transformer callbacks of ``dsl.build.Builder`` (see dsl/grammar.lark)."""

from __future__ import annotations

from typing import Any, Literal

from lark import Token, v_args
from lark.tree import Meta

from dsl import router_settings
from dsl.build_base import (
    IMAGE_REF,
    TOPOLOGY_MEMBERS,
    TOPOLOGY_STATEMENTS,
    ReplicationMode,
    Rules,
    Setting,
    Stmt,
    Text,
    join,
    meta_span,
    text_of,
    token_span,
    word,
)
from dsl.models import (
    ConfigBlock,
    DelaySpec,
    Engine,
    GaleraTopology,
    ImageSpec,
    MongoReplSetTopology,
    NodeRef,
    PrimaryPrimaryTopology,
    ReplicationTopology,
    Router,
    SingleTopology,
    Sweep,
    Variant,
)
from dsl.validate_safety import setting_problems


@v_args(meta=True)
class TopologyRules(Rules):
    """Transformer callbacks of the topology, config, variants, sweeps and router rules."""

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
