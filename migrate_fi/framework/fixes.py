"""The fix model: a fix is edits plus imports (`migrate_fi.framework.rule.Fix`). `settle` decides
which of a rule's fixes a run keeps and applies; `apply_fixes` applies them the fastest correct
way: text splicing when every edit says itself as text, LibCST on the touched statements
otherwise. `RunOptions.splice_text = False` forces LibCST, so a test can prove both ways give
the same bytes."""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence

from migrate_fi.analysis.suppression import Suppressions
from migrate_fi.base.results import (
    Diagnostic,
    FixSafety,
    Replacement,
)
from migrate_fi.editing.edits import Edit, EditError, Replace, TextEdit, merge_same_node
from migrate_fi.framework.rule import (
    FileContext,
    Fix,
    Rule,
)

__all__ = ["apply_fixes", "settle", "text_edits"]


def settle(
    ctx: FileContext,
    suppressions: Suppressions,
    unsafe: bool,
    details: Callable[[Fix], tuple[Replacement, ...]] | None = None,
) -> tuple[list[Diagnostic], list[Fix]]:
    """Drop what suppression comments silence (a fix whole), and mark which fixes this run
    applies; with ``details``, give every kept fix's diagnostic its replacements. Returns the
    diagnostics and the fixes to apply."""
    by_diagnostic = {id(f.diagnostic): f for f in ctx.fixes}
    kept: list[Diagnostic] = []
    applied: list[Fix] = []
    for d in ctx.diagnostics:
        if suppressions.comments and suppressions.silences(d):
            continue
        fix = by_diagnostic.get(id(d))
        if fix is not None and details is not None:
            d = d._replace(replacements=details(fix))
        if fix is not None and (d.safety is FixSafety.SAFE or unsafe):
            d = d._replace(applies=True)
            applied.append(Fix(d, fix.edits, fix.imports))
        kept.append(d)
    return kept, applied


def apply_fixes(
    text: str,
    tree: ast.Module | None,
    fixes: Sequence[Fix],
    cls: type[Rule],
    splice: bool = True,
) -> str:
    """The text with ``fixes`` (all of one rule) applied; ``tree``: the `ast` tree of
    ``text`` (None for a text file)."""
    plain = text_edits(fixes, cls, splice)
    if plain is not None:
        from migrate_fi.editing.textedit import apply_text_edits

        return apply_text_edits(text, plain)
    from migrate_fi.editing.cstedit import apply_edits_in_regions

    assert tree is not None, "LibCST edits are for Python files"
    imports = [i for f in fixes for i in f.imports]
    # only the statements the edits touch go through LibCST
    return apply_edits_in_regions(text, tree, _labeled(fixes, cls), imports)


def text_edits(
    fixes: Sequence[Fix], cls: type[Rule], splice: bool = True
) -> list[tuple[str, TextEdit]] | None:
    """The edits of ``fixes`` as text to splice in, without LibCST: a rule's own text edits,
    or (``splice``) Python edits that each say themselves as text too, with no import to add;
    None when LibCST must make them."""
    edits = _labeled(fixes, cls)
    text_edits = [(label, e) for label, e in edits if isinstance(e, TextEdit)]
    if text_edits:
        if len(text_edits) != len(edits) or any(f.imports for f in fixes):
            raise EditError(f"{cls.id} mixed text edits with other edits: a bug in the rule")
        return text_edits
    if (
        splice
        and not any(f.imports for f in fixes)
        and all(isinstance(e, Replace) and e.as_text is not None for _, e in edits)
    ):
        # every edit said as text too: no LibCST (the result is parsed again by the caller)
        return [(label, t) for label, e in edits for t in e.as_text]  # type: ignore[union-attr]
    return None


def _labeled(fixes: Sequence[Fix], cls: type[Rule]) -> list[tuple[str, Edit]]:
    """Every edit of ``fixes``, named by its site; the edits of one node merged into one."""
    return merge_same_node(
        [
            (f"{cls.code} at {f.diagnostic.line}:{f.diagnostic.col}", e)
            for f in fixes
            for e in f.edits
        ]
    )
