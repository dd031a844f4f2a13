"""Applying fixes with LibCST. Imported only by `apply`/`diff`, never by `check`.

All the edits of one rule in one file are applied in one pass over the tree: node
replacements where the node of the right type spans the recorded source span; statement
insertions and replacements in the block that holds the anchor statements; then the imports the
fixes need. Edits that overlap are a bug in the rule: the file fails, nothing is written.

`apply_edits_in_regions` does the same without giving LibCST the whole file: only the top-level
statements the edits touch (and the module's import header, for new imports) are parsed,
edited and printed, a few hundred lines at a time; every other byte of the file is kept as it
is. A 5 MB file with one site costs what its one statement costs.
"""

from __future__ import annotations

import ast
import bisect
from collections.abc import Sequence
from typing import Any

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from migrate_fi.editing.edits import (
    AddImport,
    EditError,
    InsertStatements,
    LabeledEdit,
    Replace,
    ReplaceStatements,
    Span,
    check_overlaps,
    moved_up,
)
from migrate_fi.editing.sources import source_lines

__all__ = ["add_imports", "apply_edits", "apply_edits_in_regions", "parse_exact"]

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
            elif isinstance(edit, ReplaceStatements):
                self.statements[edit.first[:2]] = (label, edit)
            else:  # a TextEdit is spliced into the text by the engine, never given here
                raise EditError(f"{label}: a text edit cannot be applied to the syntax tree")
        self.applied: set[int] = set()

    def _pos(self, node: cst.CSTNode) -> CodeRange | None:
        try:
            return self.get_metadata(PositionProvider, node)
        except KeyError:
            return None

    def on_leave(self, original_node: cst.CSTNode, updated_node: Any) -> Any:
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
                _label, replacing = replaced
                new_statements = _statements(replacing.code)
                if new_statements:
                    new_statements[0] = new_statements[0].with_changes(
                        leading_lines=[
                            *getattr(new, "leading_lines", ()),
                            *getattr(new_statements[0], "leading_lines", ()),
                        ]
                    )
                body.extend(new_statements)
                self.applied.add(id(replacing))
                if replacing.last[:2] != start:
                    skip_until = replacing.last[:2]
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


class _BareBlankLines(cst.CSTTransformer):
    """Blank lines of generated code carry no indentation (no trailing whitespace)."""

    def leave_EmptyLine(
        self, original_node: cst.EmptyLine, updated_node: cst.EmptyLine
    ) -> cst.EmptyLine:
        if updated_node.comment is None and updated_node.indent:
            return updated_node.with_changes(indent=False, whitespace=cst.SimpleWhitespace(""))
        return updated_node


def _statements(code: str) -> list[cst.BaseStatement]:
    if not code.strip():
        return []
    try:
        module = cst.parse_module(code)
    except cst.ParserSyntaxError as exc:
        raise EditError(f"a rule produced statements that do not parse: {exc.message}") from None
    if "\n\n" in code:
        module = module.visit(_BareBlankLines())
    return list(module.body)


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


# ---------------------------------------------------------------------------- regions

_GAP = 8  # regions this close (in lines) are edited as one...
_MAX_REGION = 400  # ...while the result stays this short (overlapping ones always are)


def _statement_blocks(tree: ast.Module) -> list[tuple[int, int]]:
    """(first line, last line) of the module's top-level statements, decorators included;
    statements that share a line (``a = 1; b = 2``) are one block."""
    blocks: list[tuple[int, int]] = []
    for node in tree.body:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
        last = node.end_lineno or node.lineno
        if blocks and first <= blocks[-1][1]:
            blocks[-1] = (blocks[-1][0], max(blocks[-1][1], last))
        else:
            blocks.append((first, last))
    return blocks


def _header_end(tree: ast.Module) -> int:
    """The last line before the first statement that is not a docstring, a ``__future__`` or
    other import, or a ``try``/``if`` of imports: where `add_imports` looks and inserts."""
    for i, node in enumerate(tree.body):
        docstring = (
            i == 0
            and isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        )
        guarded = isinstance(node, (ast.Try, ast.If)) and all(
            isinstance(s, (ast.Import, ast.ImportFrom)) for s in node.body
        )
        if not (docstring or guarded or isinstance(node, (ast.Import, ast.ImportFrom))):
            lines: list[int] = [
                node.lineno,
                *(d.lineno for d in getattr(node, "decorator_list", ())),
            ]
            return min(lines) - 1
    return (tree.body[-1].end_lineno or 0) if tree.body else 0


def _containing(
    blocks: list[tuple[int, int]], ends: list[int], first: int, last: int
) -> tuple[int, int] | None:
    """The lines of the top-level blocks that lines ``first``..``last`` fall in (``ends``: the
    blocks' last lines, for a binary search)."""
    i = bisect.bisect_left(ends, first)  # the first block that ends at or after ``first``
    lo = hi = None
    while i < len(blocks) and blocks[i][0] <= last:
        lo = blocks[i][0] if lo is None else lo
        hi = blocks[i][1]
        i += 1
    if lo is None or hi is None or lo > first or hi < last:
        return None  # (outside every statement: not an edit of code)
    return lo, hi


def _shift(edit: Any, lines: int) -> Any:
    if isinstance(edit, Replace):
        # (as_text: unused here)
        return Replace(moved_up(edit.span, lines), edit.node_type, edit.transform)
    if isinstance(edit, InsertStatements):
        return InsertStatements(moved_up(edit.anchor, lines), edit.code, edit.after)
    return ReplaceStatements(moved_up(edit.first, lines), moved_up(edit.last, lines), edit.code)


def _lines_of(edit: Any) -> tuple[int, int]:
    if isinstance(edit, Replace):
        return edit.span[0], edit.span[2]
    if isinstance(edit, InsertStatements):
        return edit.anchor[0], edit.anchor[2]
    return edit.first[0], edit.last[2]


def apply_edits_in_regions(
    text: str,
    tree: ast.Module,
    edits: Sequence[LabeledEdit],
    imports: Sequence[AddImport] = (),
) -> str:
    """`apply_edits` for ``text`` (whose `ast` tree is ``tree``), parsing only the regions the
    edits and imports touch. Raises `EditError` as `apply_edits` does."""
    check_overlaps(edits)
    blocks = _statement_blocks(tree)
    ends = [end for _, end in blocks]
    # (first line, last line, edits); a region may be empty (no lines: the import header of
    # a module that starts with code)
    regions: list[tuple[int, int, list[LabeledEdit]]] = []
    for label, edit in edits:
        where = _containing(blocks, ends, *_lines_of(edit))
        if where is None:
            raise EditError(f"could not locate the site to rewrite ({label})")
        regions.append((*where, [(label, edit)]))
    header = _header_end(tree) if imports else None
    if header is not None:
        regions.append((1, header, []))
    regions.sort(key=lambda r: (r[0], r[1]))
    merged: list[tuple[int, int, list[LabeledEdit]]] = []
    for start, end, own in regions:
        if merged:
            m_start, m_end, m_edits = merged[-1]
            overlaps = start <= m_end
            close = start - m_end <= _GAP and max(end, m_end) - m_start <= _MAX_REGION
            if overlaps or close:
                merged[-1] = (m_start, max(end, m_end), [*m_edits, *own])
                continue
        merged.append((start, end, list(own)))
    lines = source_lines(text)
    out: list[str] = []
    done = 0  # lines of ``text`` already copied or replaced
    for start, end, own in merged:
        out.append("".join(lines[done : start - 1]))
        chunk = "".join(lines[start - 1 : end])
        module = parse_exact(chunk)
        if not chunk:  # the import header of a file that starts with code: nothing yet
            newline = lines[0][len(lines[0].rstrip("\r\n")) :] if lines else "\n"
            module = module.with_changes(has_trailing_newline=True, default_newline=newline or "\n")
        shifted = [(label, _shift(edit, start - 1)) for label, edit in own]
        with_imports = imports if header is not None and start == 1 else ()
        out.append(apply_edits(module, shifted, with_imports).code)
        done = max(done, end)
    out.append("".join(lines[done:]))
    return "".join(out)


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
    body: list[cst.BaseStatement] = list(module.body)
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
            body[i] = statement.with_changes(
                body=[node.with_changes(names=_with_alias(names, alias))]
            )
            return True
    return False


def _import_order(name: str) -> tuple[int, str]:
    """isort's and Ruff's order of imported names: constants, classes, then the rest."""
    kind = 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2
    return kind, name


def _with_alias(names: list[cst.ImportAlias], alias: cst.ImportAlias) -> list[cst.ImportAlias]:
    """``names`` with ``alias`` added: where it sorts when they are sorted, else last; in the
    list's own layout (its separator, its trailing comma when parenthesized)."""
    keys = [_import_order(_dotted(a.name)) for a in names]
    new_key = _import_order(_dotted(alias.name))
    at = len(names)
    if keys == sorted(keys):
        at = next((j for j, k in enumerate(keys) if new_key < k), len(names))
    last = names[-1]
    if len(names) >= 2:
        separator = names[0].comma
    elif isinstance(last.comma, cst.Comma):  # parenthesized, with a trailing comma
        separator = last.comma
    else:
        separator = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    items = [*names[:at], alias, *names[at:]]
    out = []
    for j, a in enumerate(items):
        if j == len(items) - 1:
            out.append(a.with_changes(comma=last.comma))
        elif a is alias or a is last:
            out.append(a.with_changes(comma=separator))
        else:
            out.append(a)
    return out


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
