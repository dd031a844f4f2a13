"""Applying codemod edits with LibCST. Imported only by `apply`/`diff`, never by `check`."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from migrate_fi.codemod import Edit, EditError, Span

__all__ = ["apply_edits", "parse_exact"]


class _ApplyEdits(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, edits: Sequence[Edit]) -> None:
        super().__init__()
        self.by_span: dict[Span, list[Edit]] = {}
        for edit in edits:
            self.by_span.setdefault(edit.span, []).append(edit)
        self.applied: set[int] = set()

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):  # type: ignore[override]
        edits = self.by_span.get(self._span(original_node)) if self.by_span else None
        if edits:
            for edit in edits:
                if type(original_node).__name__ == edit.node_type and id(edit) not in self.applied:
                    updated_node = edit.transform(updated_node)
                    self.applied.add(id(edit))
        return updated_node

    def _span(self, node: cst.CSTNode) -> Span | None:
        try:
            pos = self.get_metadata(PositionProvider, node)
        except KeyError:
            return None
        return (pos.start.line, pos.start.column, pos.end.line, pos.end.column)


def apply_edits(module: cst.Module, edits: Sequence[Edit]) -> cst.Module:
    """Apply every edit in one pass. Raises `EditError` if any edit found no node."""
    if not edits:
        return module
    transformer = _ApplyEdits(edits)
    new = MetadataWrapper(module, unsafe_skip_copy=True).visit(transformer)
    missing = [e for e in edits if id(e) not in transformer.applied]
    if missing:
        where = ", ".join(f"{e.codemod} at {e.span[0]}:{e.span[1] + 1}" for e in missing)
        raise EditError(f"could not locate the site to rewrite ({where})")
    return new


def parse_exact(text: str) -> cst.Module:
    """Parse with LibCST and insist that the tree prints back to exactly the same text."""
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        raise EditError(f"LibCST cannot parse it ({exc.message.splitlines()[0]})") from None
    if module.code != text:
        raise EditError("LibCST does not reproduce it exactly (unusual line endings?)")
    return module
