"""The value facts rules share (codemods/_values.py): literal strings, WORLD groups,
and names narrowed to "not None" between an assignment and a use."""

from __future__ import annotations

import ast
import textwrap

import pytest

from migrate_fi.analysis.resolver import NameResolver
from migrate_fi.codemods._values import (
    is_none,
    is_world_group,
    literal_string,
    narrowed_not_none,
)


def _parsed(source: str) -> tuple[NameResolver, ast.FunctionDef, ast.Call]:
    tree = ast.parse(textwrap.dedent(source))
    function = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    use = next(
        n
        for n in ast.walk(function)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "use"
    )
    return NameResolver(tree, "m"), function, use


@pytest.mark.parametrize(
    ("body", "narrowed"),
    [
        ("g = None\nassert g is not None\nuse(g)", True),
        ("g = None\nassert g is not None and ok\nuse(g)", True),
        ("g = None\nassert g\nuse(g)", True),
        ("g = None\nif g is None:\n    raise ValueError\nuse(g)", True),
        ("g = None\nif not g:\n    return\nuse(g)", True),
        ("g = None\nif g is not None:\n    use(g)", True),
        ("g = None\nif g is None:\n    pass\nelse:\n    use(g)", True),
        ("g = None\nuse(g)", False),
        ("g = None\nassert g is None\nuse(g)", False),
        ("g = None\nif g is None:\n    log()\nuse(g)", False),  # no exit
        ("assert g is not None\ng = None\nuse(g)", False),  # reassigned after the assert
        ("g = None\nif ok:\n    assert g is not None\nuse(g)", False),  # on one path only
        ("g = None\nassert h is not None\nuse(g)", False),  # another name
        ("g = None\nfor x in xs:\n    assert g is not None\n    use(g)", True),
        ("g = None\ntry:\n    assert g is not None\n    use(g)\nexcept E:\n    pass", True),
    ],
)
def test_narrowed_not_none(body: str, narrowed: bool) -> None:
    source = "def f(g=None, ok=True, xs=(), h=None):\n" + textwrap.indent(body, "    ") + "\n"
    _, function, use = _parsed(source)
    assert narrowed_not_none(function, "g", use) is narrowed


def test_world_groups_through_aliases_and_locals() -> None:
    resolver, function, use = _parsed(
        """
        import torch.distributed as dist
        from torch.distributed import group as groups


        def f(sub):
            world = dist.group.WORLD
            maybe = dist.group.WORLD if sub is None else sub
            use(dist.group.WORLD, groups.WORLD, world, maybe, sub)
        """
    )
    scope = resolver.scope_of(function)
    assert scope is not None
    found = [is_world_group(resolver, arg, scope) for arg in use.args]
    assert found == [True, True, True, False, False]


def test_a_world_attribute_of_something_else_is_not_world() -> None:
    resolver, function, use = _parsed(
        """
        import my_groups


        def f():
            use(my_groups.WORLD)
        """
    )
    scope = resolver.scope_of(function)
    assert scope is not None
    assert not is_world_group(resolver, use.args[0], scope)


def test_literal_strings_through_names() -> None:
    resolver, function, use = _parsed(
        """
        BACKEND = "mnnvl"


        def f(backend, flag):
            other = "trtllm" if flag else "mnnvl"
            use("mnnvl", BACKEND, backend, other)
        """
    )
    scope = resolver.scope_of(function)
    assert scope is not None
    found = [literal_string(resolver, arg, scope) for arg in use.args]
    assert found == ["mnnvl", "mnnvl", None, None]
    assert is_none(ast.parse("None", mode="eval").body)
    assert not is_none(ast.parse("0", mode="eval").body)
