"""The calls of a file that are certainly FlashInfer's, each with the definition it reaches.

A rule that migrates calls of some FlashInfer APIs asks `flashinfer_calls(ctx, api)`: every
call (resolved through aliases, module attributes, instances and partials, `migrate_fi.calls`)
whose callee can only be one FlashInfer definition, with that definition's key on the release
``api`` is (`Api.key`: the same key for every public path of one definition). A callee that may
also be something else (a project's function of the same name bound on another branch, another
FlashInfer definition) is left out: a rule that rewrites must never guess. (FI002 reports such
ambiguous calls itself, with what else they may be.)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from migrate_fi.api.paths import is_flashinfer
from migrate_fi.calls import CalleeCall, callee_calls
from migrate_fi.codemod import FileContext

if TYPE_CHECKING:
    from migrate_fi.api.differ import Api

__all__ = ["flashinfer_calls"]


def flashinfer_calls(ctx: FileContext, api: Api) -> Iterator[tuple[CalleeCall, str]]:
    """``(call, key)`` for every call of ``ctx``'s file that reaches exactly one FlashInfer
    definition of ``api``'s release."""
    for view in callee_calls(ctx.resolver):
        candidates = ctx.resolver.resolve(view.func, view.func_scope).candidates
        keys = {api.key(c.qualname) if is_flashinfer(c.qualname) else None for c in candidates}
        if len(keys) != 1:
            continue  # maybe another implementation, or two FlashInfer definitions
        (key,) = keys
        if key is not None:
            yield view, key
