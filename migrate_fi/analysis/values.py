"""Reading the values bound to names: what a local was assigned, and dicts built in plain sight.

Flow-insensitive, like the scopes it reads: a name assigned twice may hold either value. Anything
the analysis cannot see through (a parameter, an import, a loop variable, a dict changed by an
unknown key) gives None, "unknown", never a guess.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from migrate_fi.analysis.resolver import NameResolver
from migrate_fi.analysis.scopes import DictWrite, Scope

__all__ = [
    "DictSource",
    "assigned_values",
    "bound_values",
    "dict_items",
    "keeps_returns",
    "read_dict",
]

_MAX_DEPTH = 4


def assigned_values(
    resolver: NameResolver, name: str, scope: Scope, only_in: Scope | None = None
) -> list[tuple[ast.expr, Scope]] | None:
    """The value every binding of ``name`` (seen from ``scope``) assigns, with the scope it is
    evaluated in; None when a binding is not a plain assignment of a value (a parameter, an
    import, a loop variable...), or, with ``only_in``, the name lives in another scope."""
    found = resolver.lookup(name, scope)
    if found is None:
        return None
    owner, bindings = found
    if only_in is not None and owner is not only_in:
        return None
    values = [(b.value, b.scope) for b in bindings if b.value is not None and b.scope is not None]
    if not values or len(values) != len(bindings):
        return None
    return values


def bound_values(
    resolver: NameResolver, expr: ast.Name | ast.Attribute, scope: Scope, unpacked: bool = False
) -> list[tuple[ast.expr | tuple[ast.expr, int], Scope]] | None:
    """What a name or a ``self.<attr>`` is assigned, each with the scope it is evaluated in;
    with ``unpacked``, ``a, b = <expr>`` gives (``<expr>``, place). None where a binding is
    anything else (a parameter, an import, a loop variable)."""
    if isinstance(expr, ast.Name):
        found = resolver.lookup(expr.id, scope)
        bindings = found[1] if found is not None else []
    else:
        owner = resolver.self_class(expr, scope)
        if owner is None or expr.attr in owner.bindings:
            return None  # (not `self.`'s, or a class attribute an instance may keep)
        bindings = owner.attributes.get(expr.attr, [])
    out: list[tuple[ast.expr | tuple[ast.expr, int], Scope]] = []
    for binding in bindings:
        if binding.scope is None:
            return None
        if binding.value is not None:
            out.append((binding.value, binding.scope))
        elif unpacked and binding.unpacked is not None:
            out.append((binding.unpacked, binding.scope))
        else:
            return None
    return out or None


@dataclass
class DictSource:
    """A dict whose keys can be read: built by ``{...}`` or ``dict(...)``, then possibly given
    more keys by ``d["k"] = v`` / ``d.update(k=v)`` / ``d.setdefault("k", v)``."""

    keys: dict[str, ast.expr] = field(default_factory=dict)  # every key it may hold
    # where the keys are set when that is one place: the `{...}` literal or the `dict(...)` call
    built: ast.Dict | ast.Call | None = None
    writes: list[DictWrite] = field(default_factory=list)  # later in-place additions


def read_dict(
    resolver: NameResolver, expr: ast.expr, scope: Scope, depth: int = 0
) -> DictSource | None:
    """The keys of the dict ``expr`` evaluates to, or None when they cannot be known."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(expr, ast.Dict):
        out = DictSource(built=expr)
        for key, value in zip(expr.keys, expr.values, strict=True):
            if key is None:  # `{**other}`
                inner = read_dict(resolver, value, scope, depth + 1)
                if inner is None:
                    return None
                out.keys.update(inner.keys)
            elif isinstance(key, ast.Constant) and isinstance(key.value, str):
                out.keys[key.value] = value
            else:
                return None
        return out
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name):
        if expr.func.id != "dict" or resolver.lookup("dict", scope) is not None or expr.args:
            return None  # not the builtin, or built from an iterable
        out = DictSource(built=expr)
        for kw in expr.keywords:
            if kw.arg is None:
                inner = read_dict(resolver, kw.value, scope, depth + 1)
                if inner is None:
                    return None
                out.keys.update(inner.keys)
            else:
                out.keys[kw.arg] = kw.value
        return out
    if isinstance(expr, ast.Name):
        found = resolver.lookup(expr.id, scope)
        assigned = assigned_values(resolver, expr.id, scope)
        if found is None or assigned is None or len(assigned) != 1:
            return None
        value, value_scope = assigned[0]
        inner = read_dict(resolver, value, value_scope, depth + 1)
        if inner is None:
            return None
        writes = resolver.dict_writes(expr.id, found[0])
        if any(w.key is None for w in writes):
            return None  # changed by a key we cannot read
        for w in writes:
            assert w.key is not None and w.value is not None
            inner.keys.setdefault(w.key, w.value)
        inner.writes = [*inner.writes, *writes]
        return inner
    return None


def dict_items(resolver: NameResolver, expr: ast.expr, scope: Scope) -> dict[str, ast.expr] | None:
    """Every key the dict ``expr`` may hold, with its value; None when unknown."""
    source = read_dict(resolver, expr, scope)
    return None if source is None else source.keys


# decorators whose function, called, returns what the function returns (compiled, cached, or
# run without autograd): what a call of it gives is read from its `return`s
_KEEP_RETURNS = frozenset(
    {
        "torch.compile",
        "torch.jit.script",
        "torch.no_grad",
        "torch.inference_mode",
        "torch.enable_grad",
        "functools.cache",
        "functools.lru_cache",
    }
)


def keeps_returns(resolver: NameResolver, decorator: ast.expr, scope: Scope) -> bool:
    """Whether a function decorated so, called, returns what the function returns:
    ``@torch.compile``, ``@torch.compile(dynamic=True)``, ``@lru_cache(maxsize=1)``..."""
    named = decorator.func if isinstance(decorator, ast.Call) else decorator
    found = resolver.resolve(named, scope).qualnames
    return bool(found) and found <= _KEEP_RETURNS
