"""Applying fixes with LibCST. Imported only by `apply`/`diff`, never by `check`.

All the edits of one codemod in one file are applied in one pass over the tree: node
replacements where the node of the right type spans the recorded source span; statement
insertions and replacements in the block that holds the anchor statements; then the imports the
fixes need. Edits that overlap are a bug in the codemod: the file fails, nothing is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from migrate_fi.edits import (
    AddImport,
    EditError,
    InsertStatements,
    LabeledEdit,
    Replace,
    ReplaceStatements,
    Span,
    check_overlaps,
)

__all__ = ["add_imports", "apply_edits", "parse_exact"]

_Pos = tuple[int, int]


class _ApplyEdits(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, edits: Sequence[LabeledEdit]) -> None:
        super().__init__()
        self.replace: dict[Span, list[tuple[str, Replace]]] = {}
        self.before: dict[_Pos, list[tuple[str, InsertStatements]]] = {}
        self.after: dict[_Pos, list[tuple[str, InsertStatements]]] = {}
        self.statements: dict[_Pos, tuple[str, ReplaceStatements]] = {}
        for label, edit in edits:
            if isinstance(edit, Replace):
                self.replace.setdefault(edit.span, []).append((label, edit))
            elif isinstance(edit, InsertStatements):
                table = self.after if edit.after else self.before
                table.setdefault(edit.anchor[:2], []).append((label, edit))
            else:
                self.statements[edit.first[:2]] = (label, edit)
        self.applied: set[int] = set()

    def _pos(self, node: cst.CSTNode) -> CodeRange | None:
        try:
            return self.get_metadata(PositionProvider, node)
        except KeyError:
            return None

    def on_leave(self, original_node: cst.CSTNode, updated_node: Any) -> Any:  # type: ignore[override]
        if self.replace:
            pos = self._pos(original_node)
            if pos is not None:
                span = (pos.start.line, pos.start.column, pos.end.line, pos.end.column)
                for _label, edit in self.replace.get(span, ()):
                    if (
                        type(original_node).__name__ == edit.node_type
                        and id(edit) not in self.applied
                    ):
                        updated_node = edit.transform(updated_node)
                        self.applied.add(id(edit))
        if (self.before or self.after or self.statements) and isinstance(
            original_node, (cst.Module, cst.IndentedBlock)
        ):
            updated_node = self._edit_block(original_node, updated_node)
        return updated_node

    def _edit_block(self, original: cst.Module | cst.IndentedBlock, updated: Any) -> Any:
        if len(original.body) != len(updated.body):
            return updated  # a replacement removed or split a statement: no anchors here
        body: list[cst.BaseStatement] = []
        skip_until: _Pos | None = None
        for old, new in zip(original.body, updated.body, strict=True):
            pos = self._pos(old)
            start = (pos.start.line, pos.start.column) if pos is not None else None
            if skip_until is not None:
                if start == skip_until:
                    skip_until = None
                continue
            for _label, edit in self.before.get(start, ()) if start else ():
                body.extend(_statements(edit.code))
                self.applied.add(id(edit))
            replaced = self.statements.get(start) if start else None
            if replaced is not None:
                _label, edit = replaced
                new_statements = _statements(edit.code)
                if new_statements:
                    new_statements[0] = new_statements[0].with_changes(
                        leading_lines=[*new.leading_lines, *new_statements[0].leading_lines]
                    )
                body.extend(new_statements)
                self.applied.add(id(edit))
                if edit.last[:2] != start:
                    skip_until = edit.last[:2]
                    continue
            else:
                body.append(new)
            for _label, edit in self.after.get(start, ()) if start else ():
                body.extend(_statements(edit.code))
                self.applied.add(id(edit))
        if skip_until is not None:
            return updated  # the run's last statement is not in this block: left unapplied
        return updated.with_changes(body=body)


# PositionProvider's value type, for annotations only
CodeRange = Any


def _statements(code: str) -> list[cst.BaseStatement]:
    if not code.strip():
        return []
    try:
        return list(cst.parse_module(code).body)
    except cst.ParserSyntaxError as exc:
        raise EditError(f"a rule produced statements that do not parse: {exc.message}") from None


def apply_edits(
    module: cst.Module, edits: Sequence[LabeledEdit], imports: Sequence[AddImport] = ()
) -> cst.Module:
    """Apply every edit in one pass, then add the imports. Raises `EditError` if two edits
    overlap or an edit found no node."""
    if edits:
        check_overlaps(edits)
        transformer = _ApplyEdits(edits)
        module = MetadataWrapper(module, unsafe_skip_copy=True).visit(transformer)
        missing = [(label, e) for label, e in edits if id(e) not in transformer.applied]
        if missing:
            where = ", ".join(label for label, _ in missing)
            raise EditError(f"could not locate the site to rewrite ({where})")
    if imports:
        module = add_imports(module, imports)
    return module


# ---------------------------------------------------------------------------- imports


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def _import_nodes(statement: cst.BaseStatement) -> list[cst.Import | cst.ImportFrom]:
    if not isinstance(statement, cst.SimpleStatementLine):
        return []
    return [s for s in statement.body if isinstance(s, (cst.Import, cst.ImportFrom))]


def _provides(node: cst.Import | cst.ImportFrom, need: AddImport) -> bool:
    if isinstance(node, cst.Import):
        if need.name is not None:
            return False
        for alias in node.names:
            bound = alias.asname.name.value if alias.asname else None  # type: ignore[union-attr]
            if _dotted(alias.name) == need.module and bound == need.asname:
                return True
            if (
                need.asname is None
                and bound is None
                and _dotted(alias.name).split(".")[0] == need.module
            ):
                return True  # `import torch.cuda` binds `torch` too
        return False
    if need.name is None or node.relative or node.module is None:
        return False
    if _dotted(node.module) != need.module or isinstance(node.names, cst.ImportStar):
        return False
    for alias in node.names:
        bound = alias.asname.name.value if alias.asname else None  # type: ignore[union-attr]
        if _dotted(alias.name) == need.name and bound == need.asname:
            return True
    return False


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _is_future(statement: cst.BaseStatement) -> bool:
    nodes = _import_nodes(statement)
    return bool(nodes) and all(
        isinstance(n, cst.ImportFrom) and n.module is not None and _dotted(n.module) == "__future__"
        for n in nodes
    )


def add_imports(module: cst.Module, imports: Sequence[AddImport]) -> cst.Module:
    """Add each import unless the module already has it at top level; ``from m import n`` is
    merged into an existing ``from m import ...``; new statements go after the module's first
    block of imports (after the docstring and ``__future__`` imports when there is none)."""
    body = list(module.body)
    for need in sorted(set(imports)):
        if any(_provides(n, need) for s in body for n in _import_nodes(s)):
            continue
        if need.name is not None and _merge_from(body, need):
            continue
        index, after_docstring = _import_position(body)
        statement = cst.parse_statement(need.statement())
        if after_docstring:
            statement = statement.with_changes(leading_lines=[cst.EmptyLine()])
        body.insert(index, statement)
    return module.with_changes(body=body)


def _merge_from(body: list[cst.BaseStatement], need: AddImport) -> bool:
    for i, statement in enumerate(body):
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            continue
        node = statement.body[0]
        if (
            isinstance(node, cst.ImportFrom)
            and not node.relative
            and node.module is not None
            and _dotted(node.module) == need.module
            and not isinstance(node.names, cst.ImportStar)
        ):
            alias = cst.ImportAlias(
                name=cst.Name(need.name or ""),
                asname=cst.AsName(name=cst.Name(need.asname)) if need.asname else None,
            )
            names = list(node.names)
            last = names[-1]
            if isinstance(last.comma, cst.Comma):  # parenthesized, with a trailing comma
                separator = names[-2].comma if len(names) >= 2 else last.comma
                names = [
                    *names[:-1],
                    last.with_changes(comma=separator),
                    alias.with_changes(comma=last.comma),
                ]
            else:
                names = [
                    *names[:-1],
                    last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                    alias,
                ]
            body[i] = statement.with_changes(body=[node.with_changes(names=names)])
            return True
    return False


def _guarded_import(statement: cst.BaseStatement) -> bool:
    if not isinstance(statement, (cst.Try, cst.If)):
        return False
    body = statement.body.body if isinstance(statement.body, cst.IndentedBlock) else []
    return bool(body) and all(_import_nodes(s) for s in body)


def _import_position(body: Sequence[cst.BaseStatement]) -> tuple[int, bool]:
    """Where a new import goes, and whether it follows the docstring directly."""
    i = 0
    if body and _is_docstring(body[0]):
        i = 1
    while i < len(body) and _is_future(body[i]):
        i += 1
    after_header = i
    last_import = None
    for j in range(i, len(body)):
        if _import_nodes(body[j]) or _guarded_import(body[j]):
            last_import = j  # `try: import x except ImportError: ...` belongs to the block
        elif not _is_docstring(body[j]):
            break
    if last_import is not None:
        return last_import + 1, False
    return after_header, after_header > 0


def parse_exact(text: str) -> cst.Module:
    """Parse with LibCST and insist that the tree prints back to exactly the same text."""
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        raise EditError(f"LibCST cannot parse it ({exc.message.splitlines()[0]})") from None
    if module.code != text:
        raise EditError("LibCST does not reproduce it exactly (unusual line endings?)")
    return module
