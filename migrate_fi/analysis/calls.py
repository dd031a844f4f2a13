"""The arguments of a call, as Python's binding rules see them, and calls seen through
``functools.partial``.

`callee_calls` yields every call of a file with the expression that names what is really called:
``f(...)`` calls ``f``; ``functools.partial(f, a, k=1)`` binds ``a`` and ``k`` to ``f`` early; and
``p(b)``, where the local ``p`` was assigned ``functools.partial(f, a)``, calls ``f(a, b)``. Rules
that check arguments read the merged arguments (`CalleeCall.args`) and edit the call's own
(`CalleeCall.node_index`).
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from migrate_fi.analysis.resolver import NameResolver
from migrate_fi.analysis.scopes import Scope
from migrate_fi.analysis.values import assigned_values, dict_items

__all__ = ["CallArgs", "CalleeCall", "Via", "callee_calls"]

PARTIAL = frozenset({"functools.partial"})


@dataclass
class CallArgs:
    """The argument structure of a call, as the binding rules see it."""

    positional: list[ast.expr] = field(default_factory=list)  # plain positional arguments, in order
    starred: list[ast.Starred] = field(default_factory=list)  # `*args`
    keywords: dict[str, ast.keyword] = field(default_factory=dict)
    double_starred: list[ast.expr] = field(default_factory=list)  # `**kwargs`
    # keys of `**{...}`, `**dict(...)` or `**kw` (a local dict built in plain sight)
    unpacked: dict[str, ast.expr] = field(default_factory=dict)
    opaque_kwargs: bool = False  # some `**x` whose keys cannot be known

    @classmethod
    def of(
        cls,
        call: ast.Call,
        resolver: NameResolver | None = None,
        scope: Scope | None = None,
        skip: int = 0,
    ) -> CallArgs:
        """The arguments of ``call``, leaving out its first ``skip`` positional ones."""
        out = cls()
        for arg in call.args[skip:]:
            if isinstance(arg, ast.Starred):
                out.starred.append(arg)
            elif not out.starred:
                out.positional.append(arg)
            else:  # a positional argument after *args: its index is unknown too
                out.starred.append(ast.Starred(value=arg, ctx=ast.Load()))
        for kw in call.keywords:
            if kw.arg is None:
                out.double_starred.append(kw.value)
                keys = (
                    dict_items(resolver, kw.value, scope)
                    if resolver is not None and scope is not None
                    else None
                )
                if keys is None:
                    out.opaque_kwargs = True
                else:
                    out.unpacked.update(keys)
            else:
                out.keywords[kw.arg] = kw
        return out

    def passed(self, name: str) -> ast.expr | None:
        """The value passed for ``name`` by keyword, directly or through a readable ``**dict``."""
        if name in self.keywords:
            return self.keywords[name].value
        return self.unpacked.get(name)

    def keyword_names(self) -> set[str]:
        return set(self.keywords) | set(self.unpacked)

    @classmethod
    def merged(cls, early: CallArgs, late: CallArgs) -> CallArgs:
        """What a partial binding ``early`` passes when called with ``late``: the positional
        arguments of both in order, the keywords of ``late`` over those of ``early``."""
        out = cls(
            positional=[*early.positional],
            starred=[*early.starred],
            keywords={**early.keywords, **late.keywords},
            double_starred=[*early.double_starred, *late.double_starred],
            unpacked={**early.unpacked, **late.unpacked},
            opaque_kwargs=early.opaque_kwargs or late.opaque_kwargs,
        )
        if early.starred:  # after `*args` no index is known
            out.starred += [ast.Starred(value=a, ctx=ast.Load()) for a in late.positional]
        else:
            out.positional += late.positional
        out.starred += late.starred
        return out


class Via(enum.Enum):
    """How a call reaches what it calls."""

    DIRECT = "direct"  # f(...)
    PARTIAL = "partial"  # functools.partial(f, ...): binds arguments early, calls nothing yet
    PARTIAL_CALL = "partial call"  # p(...), p = functools.partial(f, ...) in plain sight


@dataclass
class CalleeCall:
    """One call, with what it really calls and the arguments that reach it."""

    node: ast.Call  # the call written in the file (whose own arguments an edit may change)
    scope: Scope  # where ``node`` is evaluated
    func: ast.expr  # the expression naming the callee
    func_scope: Scope  # where ``func`` is evaluated
    via: Via
    own: CallArgs  # the arguments written in ``node`` (after the callee, for a partial)
    bound: CallArgs | None = None  # PARTIAL_CALL: what the partial binds early
    partial: ast.Call | None = None  # PARTIAL_CALL: the `functools.partial(...)` call
    args: CallArgs = field(init=False)  # every argument that reaches the callee

    def __post_init__(self) -> None:
        self.args = self.own if self.bound is None else CallArgs.merged(self.bound, self.own)

    @property
    def bound_count(self) -> int:
        """Positions the partial fills before this call's own positional arguments."""
        return len(self.bound.positional) if self.bound is not None else 0

    def node_index(self, position: int) -> int | None:
        """The index in ``node.args`` of the argument at the callee's ``position``; None when a
        partial binds it elsewhere."""
        if position < self.bound_count:
            return None
        return position - self.bound_count + (1 if self.via is Via.PARTIAL else 0)


def _is_partial(resolver: NameResolver, call: ast.expr, scope: Scope) -> bool:
    return (
        isinstance(call, ast.Call)
        and bool(call.args)
        and not isinstance(call.args[0], ast.Starred)
        and resolver.resolve(call.func, scope).qualnames == PARTIAL
        and all(c.qualname is not None for c in resolver.resolve(call.func, scope).candidates)
    )


def callee_calls(resolver: NameResolver, through_partials: bool = True) -> Iterator[CalleeCall]:
    """Every call of the file as a `CalleeCall`. ``functools.partial(f, ...)`` is given as a
    call of ``f`` (`Via.PARTIAL`); with ``through_partials``, so is ``p(...)`` where ``p`` is a
    local whose one assignment is such a partial (`Via.PARTIAL_CALL`).

    Computed once per resolver (every rule asks it of the same file); treat the views as
    read-only."""
    key = ("callee_calls", through_partials)
    views = resolver.derived.get(key)
    if not isinstance(views, list):
        views = list(_callee_calls(resolver, through_partials))
        resolver.derived[key] = views
    return iter(views)


def _callee_calls(resolver: NameResolver, through_partials: bool) -> Iterator[CalleeCall]:
    for call, scope in resolver.iter_calls():
        if _is_partial(resolver, call, scope):
            own = CallArgs.of(call, resolver, scope, skip=1)
            yield CalleeCall(call, scope, call.args[0], scope, Via.PARTIAL, own)
            continue
        yield CalleeCall(
            call, scope, call.func, scope, Via.DIRECT, CallArgs.of(call, resolver, scope)
        )
        if through_partials and isinstance(call.func, ast.Name):
            partial = _partial_assigned(resolver, call.func.id, scope)
            if partial is not None:
                made, made_in = partial
                yield CalleeCall(
                    call,
                    scope,
                    made.args[0],
                    made_in,
                    Via.PARTIAL_CALL,
                    CallArgs.of(call, resolver, scope),
                    bound=CallArgs.of(made, resolver, made_in, skip=1),
                    partial=made,
                )


def _partial_assigned(
    resolver: NameResolver, name: str, scope: Scope
) -> tuple[ast.Call, Scope] | None:
    values: Sequence[tuple[ast.expr, Scope]] | None = assigned_values(resolver, name, scope)
    if values is None or len(values) != 1:
        return None
    ((value, value_scope),) = values
    if isinstance(value, ast.Call) and _is_partial(resolver, value, value_scope):
        return value, value_scope
    return None
