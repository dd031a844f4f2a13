"""The edits a fix is made of, and the helpers rules build them with.

A fix (`FileContext.fix`) is one or more edits of one file plus the imports it needs:

- `Replace`: the LibCST node of a given type at a source span becomes ``transform(node)``
  (the transforms below: name positional arguments, add a keyword to a call or an entry to a
  dict, drop a keyword, replace an expression);
- `InsertStatements`: statements inserted before or after a statement;
- `ReplaceStatements`: a run of statements of one block replaced (or removed);
- `AddImport`: an import the new code needs, added once at the top of the module, merged into an
  existing ``from m import ...`` and never duplicated (`migrate_fi.editing.cstedit` applies it);
- `TextEdit`: a span of text replaced, for files that are not Python and for comments (the
  engine splices these; a rule's fixes in one file are either all text edits or none).

Everything here is data, so that `check` never imports LibCST: the transforms import it when
they run, which only `diff` and `apply` do. Spans are ``(line, col, end_line, end_col)`` with
1-based lines and 0-based columns counted in characters (`FileContext.span` makes them).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

__all__ = [
    "AddImport",
    "Edit",
    "EditError",
    "InsertStatements",
    "LabeledEdit",
    "Replace",
    "ReplaceStatements",
    "Span",
    "TextEdit",
    "add_dict_entry",
    "add_keyword",
    "change_keyword",
    "check_overlaps",
    "keeps_arguments",
    "keywordize",
    "merge_same_node",
    "moved_up",
    "remove_arguments",
    "remove_imported_names",
    "remove_keyword",
    "rename_keyword",
    "replace_with",
    "set_argument",
    "set_import_module",
    "without_arguments",
]

Span = tuple[int, int, int, int]
Transform = Callable[[Any], Any]


def moved_up(span: Span, lines: int) -> Span:
    """``span`` in a text that starts ``lines`` lines further down (a region of its file)."""
    return (span[0] - lines, span[1], span[2] - lines, span[3])


class EditError(RuntimeError):
    """An edit could not be applied where `find` said it would be: the file is left untouched."""


@dataclass(frozen=True)
class Replace:
    """The LibCST node of type ``node_type`` (a class name, e.g. "Call") spanning ``span``
    becomes ``transform(node)``.

    ``as_text``: the same change as plain text edits, where the rule could say it from the
    source text (naming arguments: ``name=`` inserted where each argument starts). When every
    edit of a rule's fixes in a file has one and none needs an import, the engine splices them
    and LibCST is not used at all (a file with thousands of sites costs milliseconds, not
    minutes); the file is parsed again after, as after any edit."""

    span: Span
    node_type: str
    transform: Transform
    as_text: tuple[TextEdit, ...] | None = None


@dataclass(frozen=True)
class InsertStatements:
    """``code`` (one or more statements, written without indentation) inserted before (or
    after) the statement spanning ``anchor``; the block's indentation is applied."""

    anchor: Span
    code: str
    after: bool = False


@dataclass(frozen=True)
class ReplaceStatements:
    """The statements from the one spanning ``first`` to the one spanning ``last`` (one block)
    become ``code`` (statements written without indentation; empty removes them). Comments
    above ``first`` stay."""

    first: Span
    last: Span
    code: str


@dataclass(frozen=True)
class TextEdit:
    """The text spanning ``span`` becomes ``text`` (an empty span inserts). For files that are
    not Python (pins in `pyproject.toml`, a Dockerfile), and for comments; applied without LibCST."""

    span: Span
    text: str


Edit = Replace | InsertStatements | ReplaceStatements | TextEdit
LabeledEdit = tuple[str, Edit]  # (who asked for it, e.g. "FI004 at 12:5", the edit)
_Pos = tuple[int, int]


def _extent(edit: Edit) -> tuple[_Pos, _Pos]:
    """The source range an edit changes; an insertion is an empty range at its point."""
    if isinstance(edit, Replace):
        return edit.span[:2], edit.span[2:]
    if isinstance(edit, ReplaceStatements):
        return edit.first[:2], edit.last[2:]
    if isinstance(edit, TextEdit):
        return edit.span[:2], edit.span[2:]
    point = edit.anchor[2:] if edit.after else edit.anchor[:2]
    return point, point


def check_overlaps(edits: Sequence[LabeledEdit]) -> None:
    """Raise `EditError` when two edits touch the same source (a bug in the rule). Two
    insertions at one point are fine (they go in in order), as is an insertion at the edge of
    a replaced range; an insertion strictly inside one is not."""
    # by start, and the wider of two ranges that start together first
    ranges = sorted(
        ((*_extent(e), label, e) for label, e in edits),
        key=lambda r: (r[0], (-r[1][0], -r[1][1]), r[2]),
    )
    for i, (start, end, label, edit) in enumerate(ranges):
        for j in range(i + 1, len(ranges)):  # (no copy of the rest: 120,000 edits in one file)
            other_start, other_end, other, other_edit = ranges[j]
            if other_start >= end:
                break  # sorted by start: nothing later reaches back into this range
            if other_start == other_end and not start < other_start:
                continue  # an insertion at this range's first point
            if (
                _keeps_arguments(edit)
                and isinstance(other_edit, Replace)
                and (start, end) != (other_start, other_end)
                and start <= other_start
                and other_end <= end
            ):
                continue  # a call inside an argument of a call whose arguments get named
            raise EditError(f"two edits overlap ({label} and {other}): a bug in the rule")


def merge_same_node(edits: Sequence[LabeledEdit]) -> list[LabeledEdit]:
    """``edits`` with the `Replace` edits of one node (same span and node type) made one, their
    transforms applied in turn: one call that needs two fixes (two keywords added, an argument
    named and a keyword renamed) gets both, never an overlap. The merged edit is made by LibCST
    (each transform returns a node of the type the next one takes); the others are kept as
    they are, in their order."""
    groups: dict[tuple[Span, str], list[int]] = {}
    for i, (_, edit) in enumerate(edits):
        if isinstance(edit, Replace):
            groups.setdefault((edit.span, edit.node_type), []).append(i)
    if all(len(group) == 1 for group in groups.values()):
        return list(edits)
    merged: dict[int, LabeledEdit] = {}
    dropped: set[int] = set()
    for (span, node_type), group in groups.items():
        if len(group) == 1:
            continue
        parts = [edits[i] for i in group]
        transforms = [e.transform for _, e in parts if isinstance(e, Replace)]
        label = " and ".join(label for label, _ in parts)
        merged[group[0]] = (label, Replace(span, node_type, _composed(transforms)))
        dropped.update(group[1:])
    return [merged.get(i, e) for i, e in enumerate(edits) if i not in dropped]


def _composed(transforms: Sequence[Transform]) -> Transform:
    def transform(node: Any) -> Any:
        for each in transforms:
            node = each(node)
        return node

    if all(getattr(t, "keeps_arguments", False) for t in transforms):
        return keeps_arguments(transform)
    return transform


class AddImport(NamedTuple):
    """``import module`` (``name`` None) or ``from module import name`` (``as asname``)."""

    module: str
    name: str | None = None
    asname: str | None = None

    @property
    def bound(self) -> str:
        """The name the import binds."""
        if self.asname:
            return self.asname
        return self.name if self.name else self.module.split(".")[0]

    def statement(self) -> str:
        alias = f" as {self.asname}" if self.asname else ""
        if self.name is None:
            return f"import {self.module}{alias}"
        return f"from {self.module} import {self.name}{alias}"


# ------------------------------------------------------------------------- transforms


def keeps_arguments(transform: Transform) -> Transform:
    """Mark a call transform that changes only how arguments are passed (names them, adds or
    renames a keyword) and keeps every argument's value node as it gets it: an edit inside an
    argument (a nested call) can then be applied first, and survives it."""
    transform.keeps_arguments = True  # type: ignore[attr-defined]
    return transform


def _keeps_arguments(edit: Edit) -> bool:
    return isinstance(edit, Replace) and getattr(edit.transform, "keeps_arguments", False)


def keywordize(names: Mapping[int, str]) -> Transform:
    """Turn positional arguments of a call into keywords: ``names`` maps argument index to name.

    Only the argument gains ``name=``: its value, comments and the whitespace around it are kept.
    """

    def transform(call: Any) -> Any:
        import libcst as cst

        args = list(call.args)
        for index, name in names.items():
            arg = args[index]
            if arg.keyword is not None or arg.star:
                raise EditError(f"argument {index + 1} of the call is not a plain positional one")
            value = arg.value
            if isinstance(value, (cst.NamedExpr, cst.GeneratorExp)) and not value.lpar:
                # `f(x := 1)` and `f(x for x in y)` are calls; `f(a=x := 1)` is not
                value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            args[index] = arg.with_changes(
                value=value,
                keyword=cst.Name(name),
                equal=cst.AssignEqual(
                    whitespace_before=cst.SimpleWhitespace(""),
                    whitespace_after=cst.SimpleWhitespace(""),
                ),
            )
        return call.with_changes(args=args)

    return keeps_arguments(transform)


def _append(items: list[Any], new: Any, opening: Any) -> list[Any]:
    """Append ``new`` to a comma-separated sequence of LibCST elements (call arguments, dict
    elements) in the sequence's own layout: one per line stays one per line, a trailing comma
    stays trailing. ``opening`` is the whitespace after the opening bracket."""
    import libcst as cst

    if not items:
        return [new]
    last = items[-1]
    trailing = last.comma if isinstance(last.comma, cst.Comma) else None
    if len(items) >= 2 and isinstance(items[-2].comma, cst.Comma):
        between = items[-2].comma  # the separator the sequence already uses
    elif isinstance(opening, cst.ParenthesizedWhitespace):
        # one element on its own line, `f(\n    a,\n)`: the next one goes on its own line too
        between = cst.Comma(
            whitespace_after=opening.with_changes(
                first_line=cst.TrailingWhitespace(), empty_lines=[]
            )
        )
    else:
        between = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    # One element per line: a comment at the end of a line belongs to the element on it, and
    # comment lines before an element belong to that element. The separator copied from the
    # line before leaves both behind (the comment lines stay before the last element); the
    # last element keeps its own, which the new element (now last) does not take.
    one_per_line = isinstance(between.whitespace_after, cst.ParenthesizedWhitespace)
    if one_per_line:
        between = between.with_changes(
            whitespace_after=between.whitespace_after.with_changes(
                first_line=cst.TrailingWhitespace(), empty_lines=[]
            )
        )
    own: Any = None  # the last element's end-of-line comment, when it has one
    if trailing is not None and isinstance(trailing.whitespace_after, cst.ParenthesizedWhitespace):
        own = trailing.whitespace_after.first_line
        trailing = trailing.with_changes(
            whitespace_after=trailing.whitespace_after.with_changes(
                first_line=cst.TrailingWhitespace()
            )
        )
    if hasattr(last, "whitespace_after_arg"):
        # call arguments keep the whitespace before `)` on the last one: it moves to the new one
        after = last.whitespace_after_arg
        if one_per_line and own is None and isinstance(after, cst.ParenthesizedWhitespace):
            own = after.first_line
            after = after.with_changes(first_line=cst.TrailingWhitespace())
        new = new.with_changes(whitespace_after_arg=after)
        last = last.with_changes(whitespace_after_arg=cst.SimpleWhitespace(""))
    if one_per_line and own is not None:
        between = between.with_changes(
            whitespace_after=between.whitespace_after.with_changes(first_line=own)
        )
    if trailing is not None:
        # `a,\n)` -> `a,<sep>new,\n)`: the trailing comma's layout moves to the new element
        return [*items[:-1], last.with_changes(comma=between), new.with_changes(comma=trailing)]
    return [*items[:-1], last.with_changes(comma=between), new]


def add_keyword(name: str, value: str, one_per_line: bool = False) -> Transform:
    """Add ``name=value`` as the last argument of a call (``value`` is Python source). With
    ``one_per_line`` (a call on one line that the new argument makes too long), every argument
    goes on its own line with a trailing comma, as black writes a call that does not fit."""

    def transform(call: Any) -> Any:
        import libcst as cst

        if any(a.keyword is not None and a.keyword.value == name for a in call.args):
            raise EditError(f"the call already passes {name}=")
        if one_per_line:
            return _exploded(call, name, value)
        arg = cst.Arg(
            value=cst.parse_expression(value),
            keyword=cst.Name(name),
            equal=cst.AssignEqual(
                whitespace_before=cst.SimpleWhitespace(""),
                whitespace_after=cst.SimpleWhitespace(""),
            ),
        )
        return call.with_changes(args=_append(list(call.args), arg, call.whitespace_before_args))

    return keeps_arguments(transform)


def _exploded(call: Any, name: str, value: str) -> Any:
    """``call`` with ``name=value`` added and one argument per line (one level deeper than the
    line the call starts on; the closing bracket back on that level)."""
    import libcst as cst

    arg = cst.Arg(
        value=cst.parse_expression(value),
        keyword=cst.Name(name),
        equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
        ),
    )
    return _one_per_line(call, [*call.args, arg])


def _one_per_line(call: Any, args: list[Any]) -> Any:
    """``call`` with ``args``, one per line, with a trailing comma (black's layout)."""
    import libcst as cst

    def line(extra: str) -> Any:
        return cst.ParenthesizedWhitespace(
            first_line=cst.TrailingWhitespace(),
            empty_lines=[],
            indent=True,
            last_line=cst.SimpleWhitespace(extra),
        )

    laid = [
        a.with_changes(
            comma=cst.Comma(whitespace_after=line("    " if i < len(args) - 1 else "")),
            whitespace_after_arg=cst.SimpleWhitespace(""),
        )
        for i, a in enumerate(args)
    ]
    return call.with_changes(args=laid, whitespace_before_args=line("    "))


def rename_keyword(old: str, new: str) -> Transform:
    """``old=value`` becomes ``new=value`` in a call; the value and layout are kept."""

    def transform(call: Any) -> Any:
        import libcst as cst

        args = list(call.args)
        for i, a in enumerate(args):
            if a.keyword is not None and a.keyword.value == old:
                args[i] = a.with_changes(keyword=cst.Name(new))
                return call.with_changes(args=args)
        raise EditError(f"the call does not pass {old}=")

    return keeps_arguments(transform)


def change_keyword(old: str, new: str, value: str, one_per_line: bool = False) -> Transform:
    """``old=x`` becomes ``new=value`` (``value`` Python source) in a call, in the same place and
    layout (the value's parentheses kept). With ``one_per_line`` (a call on one line that the
    change makes too long), every argument goes on its own line, as in `add_keyword`."""

    def transform(call: Any) -> Any:
        import libcst as cst

        args = list(call.args)
        for i, a in enumerate(args):
            if a.keyword is not None and a.keyword.value == old:
                args[i] = a.with_changes(keyword=cst.Name(new), value=replace_with(value)(a.value))
                if one_per_line:
                    return _one_per_line(call, args)
                return call.with_changes(args=args)
        raise EditError(f"the call does not pass {old}=")

    return transform


def set_argument(position: int | None, keyword: str | None, value: str) -> Transform:
    """The call's positional argument at ``position`` (or its ``keyword=`` argument) becomes
    ``value`` (Python source), and every argument goes on its own line: for a change that makes
    the call too long for its lines (`replace_with` keeps the layout otherwise)."""

    def transform(call: Any) -> Any:
        args = list(call.args)
        for i, a in enumerate(args):
            if (keyword is None and i == position and a.keyword is None and not a.star) or (
                keyword is not None and a.keyword is not None and a.keyword.value == keyword
            ):
                args[i] = a.with_changes(value=replace_with(value)(a.value))
                return _one_per_line(call, args)
        raise EditError(f"the call has no argument {keyword or position}")

    return transform


def set_import_module(module: str) -> Transform:
    """``from old import a, b`` becomes ``from module import a, b`` (names, aliases and layout
    kept)."""

    def transform(node: Any) -> Any:
        import libcst as cst

        if not isinstance(node, cst.ImportFrom) or node.relative:
            raise EditError("not an absolute from-import")
        new = cst.parse_expression(module)
        return node.with_changes(module=new)

    return transform


def remove_imported_names(names: Collection[str]) -> Transform:
    """``from m import a, b, c`` without the names ``names`` (``b`` also drops ``b as x``),
    the others kept in their layout: a comment on a dropped name's line goes with it; where
    the last goes, the new last keeps a trailing comma only if the dropped one had one, and the
    closing parenthesis keeps its place."""

    def transform(node: Any) -> Any:
        import libcst as cst

        if not isinstance(node, cst.ImportFrom) or isinstance(node.names, cst.ImportStar):
            raise EditError("not a from-import of names")
        aliases = list(node.names)
        drop = {i for i, a in enumerate(aliases) if _alias_name(a) in names}
        if not drop or len(drop) == len(aliases):
            raise EditError("the import does not keep some names and drop others")
        kept = [a for i, a in enumerate(aliases) if i not in drop]
        own = kept[-1].comma
        if len(aliases) - 1 not in drop or not isinstance(own, cst.Comma):
            return node.with_changes(names=kept)
        # (the last goes: the new last takes its place before the closing parenthesis, its own
        # comment kept, with a trailing comma only if the dropped one had one)
        gone, last = aliases[-1], kept[-1]
        after = own.whitespace_after
        if isinstance(gone.comma, cst.Comma):
            between = _joined(after, gone.comma.whitespace_after)
            kept[-1] = last.with_changes(comma=own.with_changes(whitespace_after=between))
            return node.with_changes(names=kept)
        kept[-1] = last.with_changes(comma=cst.MaybeSentinel.DEFAULT)
        if node.rpar is None or not isinstance(after, cst.ParenthesizedWhitespace):
            return node.with_changes(names=kept)
        closing = node.rpar.with_changes(
            whitespace_before=_joined(after, node.rpar.whitespace_before)
        )
        return node.with_changes(names=kept, rpar=closing)

    return transform


def _joined(after: Any, closing: Any) -> Any:
    """The whitespace after an item (an argument, an imported name) that is now the last: its
    own line (and comment) with the dropped one's way to the closing parenthesis."""
    import libcst as cst

    if isinstance(after, cst.ParenthesizedWhitespace) and isinstance(
        closing, cst.ParenthesizedWhitespace
    ):
        return after.with_changes(last_line=closing.last_line)
    return closing


def _alias_name(alias: Any) -> str:
    import libcst as cst

    # (a from-import's names are single names: `from m import a.b` does not parse)
    return alias.name.value if isinstance(alias.name, cst.Name) else ""


def remove_keyword(name: str) -> Transform:
    """Drop the ``name=`` argument of a call, keeping the layout of the others."""

    def transform(call: Any) -> Any:

        args = list(call.args)
        index = next(
            (i for i, a in enumerate(args) if a.keyword is not None and a.keyword.value == name),
            None,
        )
        if index is None:
            raise EditError(f"the call does not pass {name}=")
        return call.with_changes(args=without_arguments(args, {index}))

    return transform


def remove_arguments(indexes: Collection[int]) -> Transform:
    """Drop the arguments at ``indexes`` of a call (positions in its written arguments), keeping
    the layout and the comments of the others (`without_arguments`)."""

    def transform(call: Any) -> Any:
        args = list(call.args)
        if any(i >= len(args) or args[i].star for i in indexes):
            raise EditError("an argument to drop is not a plain one of the call")
        return call.with_changes(args=without_arguments(args, set(indexes)))

    return transform


def without_arguments(args: Sequence[Any], drop: Collection[int]) -> list[Any]:
    """LibCST arguments ``args`` without those at ``drop``. A comment on a dropped argument's
    line goes with it; the comments of the others stay. Where the last argument goes, the new
    last takes its place before the closing parenthesis: it keeps a trailing comma only if the
    dropped one had one, and the closing parenthesis keeps its indentation."""
    import libcst as cst

    kept = _comments_carried(args, drop)
    if not kept or len(args) - 1 not in drop:
        return kept
    gone, last = args[-1], kept[-1]
    own = last.comma if isinstance(last.comma, cst.Comma) else None
    after = own.whitespace_after if own is not None else last.whitespace_after_arg
    if isinstance(gone.comma, cst.Comma):
        closing = gone.comma.whitespace_after
    else:
        closing = gone.whitespace_after_arg
    between: Any
    if isinstance(after, cst.SimpleWhitespace) or (
        isinstance(after, cst.ParenthesizedWhitespace)
        and isinstance(closing, cst.ParenthesizedWhitespace)
    ):
        between = _joined(after, closing)  # (its own comment kept)
    else:  # (a line break that was not there: take the dropped argument's layout whole)
        return [*kept[:-1], last.with_changes(comma=gone.comma, whitespace_after_arg=closing)]
    if isinstance(gone.comma, cst.Comma):
        comma = (own or gone.comma).with_changes(whitespace_after=between)
        return [*kept[:-1], last.with_changes(comma=comma)]
    return [
        *kept[:-1],
        last.with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=between),
    ]


def _comments_carried(args: Sequence[Any], drop: Collection[int]) -> list[Any]:
    """``args`` without those at ``drop``, where the comment lines between a dropped argument
    and the next one kept (they speak of that one: `# Respect the routing method...` above
    `routing_method_type=`) stay above it: they become the lines after the comma of the
    argument kept before (whose own lines above the dropped one go with it)."""
    import libcst as cst

    kept: list[Any] = []
    carried: Any = None  # the comment lines after the last argument dropped, since one kept
    for i, arg in enumerate(args):
        if i in drop:
            after = arg.comma.whitespace_after if isinstance(arg.comma, cst.Comma) else None
            carried = after.empty_lines if isinstance(after, cst.ParenthesizedWhitespace) else ()
            continue
        if carried and kept and isinstance(kept[-1].comma, cst.Comma):
            before = kept[-1].comma.whitespace_after
            if isinstance(before, cst.ParenthesizedWhitespace):
                comma = kept[-1].comma.with_changes(
                    whitespace_after=before.with_changes(empty_lines=carried)
                )
                kept[-1] = kept[-1].with_changes(comma=comma)
        carried = None
        kept.append(arg)
    return kept


def add_dict_entry(key: str, value: str) -> Transform:
    """Add ``key`` with ``value`` (Python source) to a ``{...}`` literal, or ``key=value`` to a
    ``dict(...)`` call, in the container's own layout and quote style."""

    def transform(node: Any) -> Any:
        import libcst as cst

        if isinstance(node, cst.Call):
            return add_keyword(key, value)(node)
        if not isinstance(node, cst.Dict):
            raise EditError(f"cannot add a key to a {type(node).__name__}")
        quote = '"'
        for el in node.elements:
            if isinstance(el, cst.DictElement) and isinstance(el.key, cst.SimpleString):
                if el.key.evaluated_value == key:
                    raise EditError(f"the dict already has the key {key!r}")
                quote = el.key.quote
                break
        element = cst.DictElement(
            key=cst.SimpleString(f"{quote}{key}{quote}"),
            value=cst.parse_expression(value),
            whitespace_before_colon=cst.SimpleWhitespace(""),
            whitespace_after_colon=cst.SimpleWhitespace(" "),
        )
        return node.with_changes(
            elements=_append(list(node.elements), element, node.lbrace.whitespace_after)
        )

    return transform


def replace_with(code: str) -> Transform:
    """Replace an expression with ``code`` (Python source), keeping its parentheses."""

    def transform(node: Any) -> Any:
        import libcst as cst

        new = cst.parse_expression(code)
        if hasattr(node, "lpar") and node.lpar and hasattr(new, "lpar"):
            new = new.with_changes(lpar=node.lpar, rpar=node.rpar)
        return new

    return transform
