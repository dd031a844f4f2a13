"""The arguments of a call, as Python's binding rules see them."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from migrate_fi.resolver import NameResolver
from migrate_fi.scopes import Scope
from migrate_fi.values import dict_items

__all__ = ["CallArgs"]


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
        cls, call: ast.Call, resolver: NameResolver | None = None, scope: Scope | None = None
    ) -> CallArgs:
        out = cls()
        for arg in call.args:
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
