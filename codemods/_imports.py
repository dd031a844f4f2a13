"""A FlashInfer name a fix writes (`ActivationType`): how to write it where the fix goes."""

from __future__ import annotations

import ast

from migrate_fi.analysis import nodes
from migrate_fi.analysis.scopes import Scope
from migrate_fi.api.paths import is_flashinfer
from migrate_fi.base.messages import Said, say
from migrate_fi.editing.edits import AddImport, Edit
from migrate_fi.framework.rule import FileContext

__all__ = [
    "IMPORT_ERRORS",
    "catches",
    "flashinfer_name",
    "handled_at",
    "import_guards",
    "statement_of",
]


def flashinfer_name(
    ctx: FileContext, scope: Scope, module: str, name: str, at: ast.AST
) -> tuple[str, tuple[AddImport, ...], Said | None, tuple[Edit, ...]]:
    """How a fix of ``at`` (in ``scope``) writes FlashInfer's ``module.name`` (as the target
    release has it): ``(written, imports, why_not, edits)``. The name itself when it is bound
    to it there; else a name the file binds to it (``from flashinfer import RoutingMethodType
    as Routing``); else through a FlashInfer module the file imports (``flashinfer.
    ActivationType`` after ``import flashinfer``); else the name, with its import, when nothing
    else is called that there; else ``why_not`` says what is in the way.

    The import goes where the file imports FlashInfer: at the top of the module when it does so
    there unguarded (``imports``); right after the FlashInfer import of the enclosing function
    when the module imports it only lazily, inside functions or under ``try/except
    ImportError`` (``edits``: a top-level import would make the module fail to import where
    FlashInfer is not installed); nowhere, with ``why_not``, when neither is there."""
    from migrate_fi.api.differ import api_for

    new_api = api_for(str(ctx.options.to_version))
    wanted = f"{module}.{name}"
    target = new_api.canonical(wanted) or wanted

    def means(expr: ast.expr) -> bool:
        found = ctx.resolver.resolve(expr, scope)
        return (
            bool(found.candidates)
            and len(found.qualnames) == len(found.candidates)
            and all((new_api.canonical(q) or q) == target for q in found.qualnames)
        )

    here = ast.Name(id=name, ctx=ast.Load())
    if means(here):
        return name, (), None, ()
    for written in _spellings(ctx, name):
        if means(ast.parse(written, mode="eval").body):
            return written, (), None, ()
    if not ctx.resolver.resolve(here, scope).candidates:
        place = _import_place(ctx, scope, getattr(at, "lineno", 0))
        if place is True:
            return name, (AddImport(module, name),), None, ()
        if isinstance(place, ast.stmt):
            return name, (), None, (ctx.insert_after(place, f"from {module} import {name}"),)
        return (
            name,
            (),
            say(
                "this module imports FlashInfer only where it uses it: import {wanted} there",
                "此模块只在用到 FlashInfer 的地方导入它：请在那里导入 `{wanted}`",
                wanted=wanted,
            ),
            (),
        )
    return (
        name,
        (),
        say(
            "{name} is bound to something else here: import {wanted} under another name and pass"
            " that",
            "`{name}` 在这里绑定的是别的东西：请以另一个名字导入 `{wanted}` 并传入它",
            name=name,
            wanted=wanted,
        ),
        (),
    )


def _import_place(ctx: FileContext, scope: Scope, line: int) -> ast.stmt | bool | None:
    """Where a new FlashInfer import goes (`flashinfer_name`): True at the top of the module;
    the FlashInfer import statement, before ``line``, of the innermost enclosing function that
    has one; None when there is neither."""
    resolver = ctx.resolver
    found = [n for n in resolver.imports if _imports_flashinfer(ctx, n)]
    guarded = import_guards(resolver.tree, found) if found else {}
    for node in found:
        if id(node) not in guarded and resolver.scope_at(node) is resolver.module_scope:
            return True
    s: Scope | None = scope
    while s is not None and s.kind != "module":
        if s.kind == "function":
            mine = [n for n in found if resolver.scope_at(n) is s and n.lineno < line]
            if mine:
                return max(mine, key=lambda n: n.lineno)
        s = s.parent
    return None


def _imports_flashinfer(ctx: FileContext, node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.ImportFrom):
        return is_flashinfer(ctx.resolver.absolute_module(node.module, node.level) or "")
    return any(is_flashinfer(a.name) for a in node.names)


IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def catches(handler: ast.ExceptHandler, errors: frozenset[str]) -> bool:
    """Whether ``handler`` catches one of ``errors`` (named, or as ``mod.Name``; a bare
    ``except:`` catches everything)."""
    caught = handler.type
    kinds = [caught] if caught is None or not isinstance(caught, ast.Tuple) else caught.elts
    return any(
        k is None
        or (isinstance(k, ast.Name | ast.Attribute) and ast.unparse(k).rsplit(".", 1)[-1] in errors)
        for k in kinds
    )


def statement_of(node: ast.AST, parents: dict[int, ast.AST]) -> ast.AST:
    """The statement that holds ``node`` (itself, for a statement)."""
    while not isinstance(node, ast.stmt) and id(node) in parents:
        node = parents[id(node)]
    return node


def handled_at(
    statement: ast.AST, parents: dict[int, ast.AST], errors: frozenset[str]
) -> int | None:
    """The line of the handler of the nearest ``try`` around ``statement``, in its own
    function, that catches one of ``errors``; None where nothing does."""
    child, parent = statement, parents.get(id(statement))
    while parent is not None:
        if isinstance(parent, ast.Try | getattr(ast, "TryStar", ast.Try)) and any(
            child is s for s in parent.body
        ):
            for handler in parent.handlers:
                if catches(handler, errors):
                    return handler.lineno
        if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return None
        child, parent = parent, parents.get(id(parent))
    return None


def import_guards(tree: ast.Module, imports: list[ast.Import | ast.ImportFrom]) -> dict[int, int]:
    """Import statements inside a ``try`` whose handler catches ImportError (or a base of it):
    id of the statement -> the handler's line."""
    out: dict[int, int] = {}
    for node in nodes.blocks(tree):  # (a `try` holds statements; expressions are not walked)
        if not isinstance(node, ast.Try | getattr(ast, "TryStar", ast.Try)) or not node.body:
            continue
        line = next((h.lineno for h in node.handlers if catches(h, IMPORT_ERRORS)), None)
        if line is None:
            continue
        first, last = node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno
        for statement in imports:
            if first <= statement.lineno <= last:
                out.setdefault(id(statement), line)
    return out


def _spellings(ctx: FileContext, name: str) -> list[str]:
    """Other ways the file's imports let it write FlashInfer's ``name``: its aliases, then an
    attribute of an imported FlashInfer module."""
    aliases, modules = [], []
    for node in ctx.resolver.imports:
        if isinstance(node, ast.ImportFrom):
            module = ctx.resolver.absolute_module(node.module, node.level) or ""
            if not is_flashinfer(module):
                continue
            for a in node.names:
                if a.name == name and a.asname:
                    aliases.append(a.asname)
                elif a.name != "*":  # (maybe a submodule: `flashinfer_name` checks each)
                    modules.append(f"{a.asname or a.name}.{name}")
        else:
            for a in node.names:
                if is_flashinfer(a.name):
                    modules.append(f"{a.asname}.{name}" if a.asname else f"{a.name}.{name}")
    return list(dict.fromkeys([*aliases, *sorted(modules, key=len)]))
