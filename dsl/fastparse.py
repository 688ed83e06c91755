"""Text -> models in one pass, for a text that parses (the common case).

``dsl.parser`` parses with lark (contextual lexer, LALR(1), a parse tree with positions) and
``dsl.build.Builder`` then transforms the tree. On a 500-line file most of the time went into
lark's general machinery: a generator and a method call per token, four wrapper calls and a
``Tree`` per reduction, then a second walk over the tree creating a ``v_args`` wrapper (with
``functools.update_wrapper``) for every node (issue 25: 40 ms for parse + validate + compile).

``FastPath`` drives the *same* lark tables in one loop: each state's scanner of the contextual
lexer, the LALR parse table and each rule's child filter, read from the built ``Lark`` object.
At each reduction it calls the Builder's rule right away with what the tree transform would
have given it: the children lark's child filter keeps (``_rule`` children inlined,
``maybe_placeholders`` Nones) and the ``Meta`` of lark's ``propagate_positions`` (the first
and last child that has a position, anonymous tokens included). Reductions happen in
post-order, left to right, the transform's order, so the Builder sees the same calls in the
same order and returns the same models and errors.

Two shortcuts keep lark's results: the blanks between two tokens on a line (the grammar's
``%ignore /[\t \f]+/``) are matched with the token that follows, one regex match instead of
two (only for a state where no other terminal can start with a blank, checked on the
terminals' parsed patterns by ``_may_start_with``; lark's own scanner otherwise, and
whenever the folded match fails); and a Builder method is found once per Builder class
(``_method``), not through a ``v_args`` wrapper made afresh per rule and per file.

Anything off the happy path returns a sentinel (``failed``) and the caller starts over on the
usual road (``lark.parse``, its errors, the tree transform, a new Builder): a character no
terminal of the state matches, a token the parse table does not expect, an exception in a
rule (the transform wraps it in ``VisitError``), or a parser built with options this module
does not mirror (``FastPath.supported`` is then False). So every syntax error, its message
and position, still comes from the usual road. ``tests/unit/test_fastparse.py`` checks both
roads give the same models and errors on every experiment of the repository and on broken
variants of them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from re import _constants as sre
from re import _parser as sre_parse
from types import FunctionType, MethodType
from typing import Any

from lark import Lark, Token, Transformer, Tree
from lark.lexer import BasicLexer, ContextualLexer, UnlessCallback
from lark.parse_tree_builder import (
    ChildFilter,
    ChildFilterLALR_NoPlaceholders,
    PropagatePositions,
)
from lark.parsers.lalr_analysis import Shift
from lark.tree import Meta
from lark.visitors import _vargs_meta, _VArgsWrapper

# a rule: (children on the stack, origin, callback name, inlined (`_rule`),
#          [(index, inline it, Nones before)] or None to keep all, Nones after,
#          shape: 1 for one child kept as it is, 2 for one child inlined, 3 and 4 for an
#          inlined list and one more child (3: inlined, 4: as it is), 0 otherwise)
_Rule = tuple[int, str, str, bool, list[tuple[int, bool, int]] | None, int, int]
# a state's scanner: (its match with the blanks before a token folded in, or None; its own
# match; the keywords; the ignored and the newline terminals)
_Scan = tuple[Callable[..., Any] | None, Callable[..., Any],
              dict[str, tuple[Callable[[str], str | None], dict[str, str | None]]],
              frozenset[str], frozenset[str]]
# the ignored blanks between two tokens on a line (the grammar's `%ignore /[\t \f]+/`)
_BLANKS = "[\t \x0c]+"
_BLANK_CHARS = frozenset(map(ord, "\t \x0c"))
# a position: the first and the last token (a token's: itself twice)
_Where = tuple[Token, Token]


class _Unsupported(Exception):
    pass


class FastPath:
    """The tables of one ``Lark`` parser (LALR, contextual lexer, ``propagate_positions``,
    no transformer, no lexer callbacks, no post-lexer or one whose ``process`` passes the
    tokens on unchanged, saying so with ``identity = True``), read once."""

    def __init__(self, parser: Lark, start: str = "file") -> None:
        self.supported = True
        try:
            self._read(parser, start)
        except (_Unsupported, AttributeError, KeyError):
            self.supported = False

    def _read(self, parser: Lark, start: str) -> None:
        opts = parser.options
        if (opts.parser != "lalr" or opts.transformer is not None or opts.lexer_callbacks
                or opts.propagate_positions is not True or opts.tree_class not in (None, Tree)):
            raise _Unsupported
        frontend = parser.parser
        lexer = getattr(frontend.lexer, "lexer", frontend.lexer)  # under the post-lexer
        post = getattr(frontend.lexer, "postlexer", None)
        if post is not None and getattr(post, "identity", False) is not True:
            raise _Unsupported  # a post-lexer that changes the tokens: not mirrored here
        if not isinstance(lexer, ContextualLexer):
            raise _Unsupported
        lalr = frontend.parser.parser
        states: dict[int, dict[str, tuple[Any, Any]]] = lalr.parse_table.states
        self.start = lalr.parse_table.start_states[start]
        self.end = lalr.parse_table.end_states[start]
        self.lexers = lexer.lexers
        self.scans: dict[int, _Scan] = {}
        self.memos: dict[int, tuple[Any, dict[str, str | None]]] = {}  # keyword or not
        rules: dict[Any, _Rule] = {}
        for rule, callback in lalr.callbacks.items():
            if type(callback) is not PropagatePositions or callback.node_filter is not None:
                raise _Unsupported
            built = callback.node_builder
            include: list[tuple[int, bool, int]] | None
            tail = 0
            if isinstance(built, ChildFilterLALR_NoPlaceholders):
                include = [(i, expand, 0) for i, expand in built.to_include]
                built = built.node_builder
            elif isinstance(built, ChildFilter):
                include = list(built.to_include)
                tail = built.append_none
                built = built.node_builder
            else:
                include = None
            if not (isinstance(built, partial) and built.func is Tree):
                raise _Unsupported  # e.g. `?rule` (ExpandSingleChild): not mirrored here
            origin = rule.origin.name
            name = rule.alias or rule.options.template_source or origin
            size = len(rule.expansion)
            shape = 0
            if size == 1 and not tail and include in (None, [(0, False, 0)]):
                shape = 1
            elif size == 1 and not tail and include == [(0, True, 0)]:
                shape = 2
            elif size == 2 and not tail and include in ([(0, True, 0), (1, True, 0)],
                                                        [(0, True, 0), (1, False, 0)]):
                shape = 3 if include[1][1] else 4
            # plain str: the grammar's names are Tokens, whose __eq__ is Python code
            rules[rule] = (size, str(origin), name, origin.startswith("_"), include, tail,
                           shape)
        # state -> symbol (a plain str) -> the state to shift to (an int), or the rule to
        # reduce by
        self.table: dict[int, dict[str, int | _Rule]] = {
            state: {str(sym): arg if action is Shift else rules[arg]
                    for sym, (action, arg) in actions.items()}
            for state, actions in states.items()
        }
        if start.startswith("_"):
            raise _Unsupported

    def _scan(self, state: int) -> _Scan:
        lexer = self.lexers[state]
        if not isinstance(lexer, BasicLexer):
            raise _Unsupported
        mres = lexer.scanner._mres  # builds it (and lexer.callback) when not yet built
        if len(mres) != 1:
            raise _Unsupported
        keywords: dict[str, tuple[Callable[[str], str | None], dict[str, str | None]]] = {}
        for kind, callback in lexer.callback.items():
            if type(callback) is not UnlessCallback:
                raise _Unsupported
            memo = self.memos.setdefault(id(callback.scanner), (callback.scanner, {}))[1]
            keywords[kind] = (callback.scanner.fullmatch, memo)
        out = (_folded(lexer, mres[0]), mres[0].match, keywords, lexer.ignore_types,
               lexer.newline_types)
        self.scans[state] = out
        return out

    def run(self, text: str, builder: Transformer[Token, Any]) -> Any:
        """The Builder's value for the start rule; ``_FAIL`` when off the happy path."""
        try:
            return self._run(text, builder)
        except Exception:  # noqa: BLE001 - any: the usual road reproduces it exactly
            return _FAIL

    def _run(self, text: str, builder: Transformer[Token, Any]) -> Any:  # noqa: C901
        table, scans, end_state = self.table, self.scans, self.end
        calls: dict[str, Callable[[Meta, list[Any]], Any]] = {}
        state = self.start
        state_stack = [state]
        value_stack: list[Any] = []  # tokens, the Builder's values, inlined children (lists)
        where_stack: list[_Where | None] = []  # the position of each (None: it has none)
        pos, line, line_start, n = 0, 1, 0, len(text)
        new_str, new_meta = str.__new__, object.__new__
        token: Token | None
        while True:
            # the next token, lexed in the parser's current state (lark's ContextualLexer)
            folded, match, keywords, ignore, newline = scans.get(state) or self._scan(state)
            token = None
            while pos < n:
                # the blanks before a token and the token in one match
                m = None if folded is None else folded(text, pos)
                if m is None:  # none folded, only blanks left, or no terminal: lark's own
                    m = match(text, pos)
                    if m is None:
                        return _FAIL
                    kind = m.lastgroup
                    start = pos
                else:
                    kind = m.lastgroup
                    start = m.start(kind)
                end = m.end()
                if kind in ignore:  # (an UnlessCallback on an ignored token has no effect)
                    if kind in newline:
                        count = text.count("\n", pos, end)
                        if count:
                            line += count
                            line_start = text.rindex("\n", pos, end) + 1
                    pos = end
                    continue
                value = text[start:end]
                start_line, column = line, start - line_start + 1
                if kind in newline:
                    count = value.count("\n")
                    if count:
                        line += count
                        line_start = start + value.rindex("\n") + 1
                if kind in keywords:  # lark's UnlessCallback: a NAME that is a keyword
                    fullmatch, memo = keywords[kind]
                    if value in memo:
                        word = memo[value]
                    else:
                        word = memo[value] = fullmatch(value)
                        if len(memo) > 50_000:
                            memo.clear()
                    if word is not None:
                        kind = word
                end_column = end - line_start + 1
                token = new_str(Token, value)  # what Token(...) does, without two calls
                token.type = kind
                token.start_pos = start
                token.value = value
                token.line = start_line
                token.column = column
                token.end_line = line
                token.end_column = end_column
                token.end_pos = end
                token_where = (token, token)
                pos = end
                break
            else:
                kind = "$END"
            # feed it: reduce as long as the table says so, then shift
            while True:
                action = table[state][kind]
                if type(action) is int:
                    if token is None:
                        return _FAIL
                    state = action
                    state_stack.append(state)
                    value_stack.append(token)
                    where_stack.append(token_where)
                    break
                size, origin, name, inline, include, tail, shape = action  # type: ignore[misc]
                if shape > 2:  # a list and one more: lark's ChildFilterLALR grows it in place
                    del state_stack[-2:]
                    item = value_stack.pop()
                    children = value_stack.pop()
                    if shape == 3:
                        children += item
                    else:
                        children.append(item)
                    last = where_stack.pop()
                    first = where_stack.pop()
                    if first is None or last is None:
                        where = _span([first, last])
                    else:
                        where = (first[0], last[1])
                elif shape:  # one child, kept: as it is (1) or its children inlined (2)
                    del state_stack[-1]
                    children = value_stack.pop()
                    if shape == 1:
                        children = [children]
                    where = where_stack.pop()
                else:
                    if size:
                        raw = value_stack[-size:]
                        wheres = where_stack[-size:]
                        del state_stack[-size:]
                        del value_stack[-size:]
                        del where_stack[-size:]
                        first, last = wheres[0], wheres[-1]
                        if first is None or last is None:
                            where = _span(wheres)
                        elif first is last:
                            where = first
                        else:
                            where = (first[0], last[1])
                    else:
                        raw, where = [], None
                    if include is None:
                        children = raw
                    else:
                        children = []
                        for i, expand, nones in include:
                            if nones:
                                children += [None] * nones
                            if not expand:
                                children.append(raw[i])
                            elif children:
                                children += raw[i]
                            else:  # lark's ChildFilterLALR: a left-recursive list grows in place
                                children = raw[i]
                        if tail:
                            children += [None] * tail
                if inline:
                    result: Any = children
                else:
                    call = calls.get(name)
                    if call is None:
                        call = calls[name] = _call(builder, name)
                    # the Meta lark's PropagatePositions gives the tree (same attributes, same
                    # order; a subtree's container position is its position: no ?rule here)
                    meta = new_meta(Meta)
                    if where is None:
                        meta.__dict__ = {"empty": True}
                    else:
                        f, t = where
                        line_, column_, start_ = f.line, f.column, f.start_pos
                        end_line, end_column, end_ = t.end_line, t.end_column, t.end_pos
                        meta.__dict__ = {
                            "empty": False, "line": line_, "column": column_,
                            "start_pos": start_, "container_line": line_,
                            "container_column": column_, "container_start_pos": start_,
                            "end_line": end_line, "end_column": end_column, "end_pos": end_,
                            "container_end_line": end_line, "container_end_column": end_column,
                            "container_end_pos": end_,
                        }
                    result = call(meta, children)
                state = table[state_stack[-1]][origin]
                state_stack.append(state)
                value_stack.append(result)
                where_stack.append(where)
                if token is None and state == end_state:
                    return result


class _Fail:
    pass


_FAIL: Any = _Fail()


def failed(value: Any) -> bool:
    return value is _FAIL


def _call(builder: Transformer[Token, Any], name: str) -> Callable[[Meta, list[Any]], Any]:
    """The transform's call of rule ``name`` (``Transformer._call_userfunc``), looked up once
    per Builder; a ``v_args(meta=True)`` method found once per Builder class (the lookup
    through the instance makes a new wrapper, with ``functools.update_wrapper``, each time)."""
    if name not in getattr(builder, "__dict__", ()):  # an instance attribute would win
        key = (type(builder), name)
        func = _METHODS.get(key, _FAIL)
        if func is _FAIL:
            func = _METHODS[key] = _method(type(builder), name)
        if func is not None:
            return MethodType(func, builder)
    try:
        f = getattr(builder, name)
    except AttributeError:
        default: Callable[[str, list[Any], Meta], Any] = builder.__default__
        return lambda meta, children: default(name, children, meta)
    wrapper = getattr(f, "visit_wrapper", None)
    if wrapper is _vargs_meta:
        return f.base_func  # type: ignore[no-any-return]  # what _vargs_meta calls
    if wrapper is not None:
        return lambda meta, children: wrapper(f, name, children, meta)
    return lambda meta, children: f(children)


# (Builder class, rule) -> the plain function a v_args(meta=True) method wraps, or None
_METHODS: dict[tuple[type, str], FunctionType | None] = {}


def _method(cls: type, name: str) -> FunctionType | None:
    """The function ``getattr(builder, name).base_func`` binds when ``name`` is a
    ``v_args(meta=True)`` method of ``cls`` wrapping a plain function, else None."""
    for klass in cls.__mro__:
        if name in vars(klass):
            attr = vars(klass)[name]
            if (isinstance(attr, _VArgsWrapper) and attr.visit_wrapper is _vargs_meta
                    and type(attr.base_func) is FunctionType):
                return attr.base_func
            return None
    return None


def _folded(lexer: BasicLexer, scanner: re.Pattern[str]) -> Callable[..., Any] | None:
    """The state's scanner with the ignored blanks before a token folded into the token's
    match (one regex match a token instead of two), or None when that could change what is
    matched: a terminal other than the blanks may start with a blank (at a blank, lark's
    ordered alternatives would then not necessarily pick the blanks). The blanks are not a
    group: the terminals' groups keep their numbers."""
    blanks = [t.name for t in lexer.terminals
              if t.name in lexer.ignore_types and t.pattern.to_regexp() == _BLANKS]
    if len(blanks) != 1:
        return None
    for terminal in lexer.terminals:
        if terminal.name == blanks[0]:
            continue
        try:
            may, _ = _may_start_with(sre_parse.parse(terminal.pattern.to_regexp()), _BLANK_CHARS)
        except _Unsupported:
            return None
        if may:
            return None
    # possessive: the blanks are all taken, never given back to the alternatives
    return re.compile("[\t \x0c]*+(?:" + scanner.pattern + ")", scanner.flags).match


def _may_start_with(items: Any, chars: frozenset[int]) -> tuple[bool, bool]:
    """(whether a match of the parsed regex ``items`` may start with one of ``chars``,
    whether it may be empty); ``_Unsupported`` for what this does not read."""
    for op, arg in items:
        if op is sre.AT:
            continue
        if op is sre.LITERAL:
            return arg in chars, False
        if op is sre.NOT_LITERAL:
            return bool(chars - {arg}), False
        if op is sre.ANY:
            return True, False
        if op is sre.IN:
            return _in_set(arg, chars), False
        if op is sre.BRANCH:
            results = [_may_start_with(branch, chars) for branch in arg[1]]
            may, empty = any(r[0] for r in results), any(r[1] for r in results)
        elif op is sre.SUBPATTERN:
            may, empty = _may_start_with(arg[3], chars)
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            may, empty = _may_start_with(arg[2], chars)
            empty = empty or arg[0] == 0
        else:
            raise _Unsupported  # group references, lookarounds, conditionals, ...
        if may:
            return True, False
        if not empty:
            return False, False
    return False, True


def _in_set(items: Any, chars: frozenset[int]) -> bool:
    """Whether the character set ``[...]`` (parsed) matches one of ``chars``."""
    negate = False
    hits: set[int] = set()
    for op, arg in items:
        if op is sre.NEGATE:
            negate = True
        elif op is sre.LITERAL:
            hits |= chars & {arg}
        elif op is sre.RANGE:
            hits |= {c for c in chars if arg[0] <= c <= arg[1]}
        elif op is sre.CATEGORY and arg in (sre.CATEGORY_SPACE, sre.CATEGORY_NOT_SPACE):
            # the blanks (tab, space, form feed) are all whitespace
            if arg is sre.CATEGORY_SPACE:
                hits |= chars & {9, 32, 12}
            else:
                hits |= chars - {9, 32, 12}
        elif op is sre.CATEGORY and arg in (sre.CATEGORY_DIGIT, sre.CATEGORY_WORD):
            continue  # no blank is a digit or a word character
        else:
            raise _Unsupported
    return bool(chars - hits) if negate else bool(hits)


def _span(wheres: list[_Where | None]) -> _Where | None:
    """lark's ``PropagatePositions``: a node runs from the first of its children that has a
    position (a token, or a subtree whose meta is not empty) to the last one; a subtree's
    container position is its position (no ``?rule`` here: ``FastPath`` refuses them)."""
    for first in wheres:
        if first is not None:
            break
    else:
        return None
    for last in reversed(wheres):
        if last is not None:
            break
    if first is last:
        return first
    return (first[0], last[1])  # type: ignore[index]
