"""A FlashInfer name a fix writes (`ActivationType`): how to write it where the fix goes."""

from __future__ import annotations

import ast

from migrate_fi.analysis.scopes import Scope
from migrate_fi.api.paths import is_flashinfer
from migrate_fi.editing.edits import AddImport
from migrate_fi.framework.rule import FileContext

__all__ = ["flashinfer_name"]


def flashinfer_name(
    ctx: FileContext, scope: Scope, module: str, name: str
) -> tuple[str, tuple[AddImport, ...], str | None]:
    """How a fix at ``scope`` writes FlashInfer's ``module.name`` (as the target release has it):
    ``(written, imports, why_not)``. The name itself when it is bound to it there; else a name
    the file binds to it (``from flashinfer import RoutingMethodType as Routing``); else through
    a FlashInfer module the file imports (``flashinfer.ActivationType`` after ``import
    flashinfer``); else the name, with its import, when nothing else is called that there; else
    ``why_not`` says what is in the way."""
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
        return name, (), None
    for written in _spellings(ctx, name):
        if means(ast.parse(written, mode="eval").body):
            return written, (), None
    if not ctx.resolver.resolve(here, scope).candidates:
        return name, (AddImport(module, name),), None
    return (
        name,
        (),
        (
            f"{name} is bound to something else here: import {wanted} under another name and pass"
            " that"
        ),
    )


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
