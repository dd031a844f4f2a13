"""Constructors Python writes itself: ``@dataclass``, ``NamedTuple`` and ``attrs`` classes.

Their ``__init__`` is not in the source, so a field inserted in the middle of such a class changes
how positional construction binds just as an inserted parameter does. The signature is rebuilt
from the class body the way the standard library does:

- dataclasses: annotated fields in order, base dataclasses' fields first (a field redeclared keeps
  its first position), ``ClassVar`` excluded, ``InitVar`` included, ``field(init=False)``
  excluded, a default from ``= value``, ``field(default=...)`` or ``field(default_factory=...)``,
  keyword-only fields (``kw_only=True`` on the decorator or the field, or after a ``KW_ONLY``
  marker) moved after the others; ``init=False`` on the decorator means no synthesized
  ``__init__``; an ``__init__`` written in the class wins;
- ``typing.NamedTuple`` subclasses: annotated fields in order, with their defaults;
- ``attrs`` (``@attrs.define``, ``@attr.s(auto_attribs=True)``, ``@attr.s`` with ``attr.ib()``):
  the same rules as dataclasses, ``kw_only`` included.

A signature is the extractor's list of ``[name, kind, default]`` (see `extract.signature_of`),
with ``self`` first.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

__all__ = ["SynthesizedInit", "synthesized_kind"]

_DATACLASS = {"dataclasses.dataclass"}
_FIELD = {"dataclasses.field"}
_ATTRS_DECORATORS = {
    "attr.s",
    "attr.attrs",
    "attr.define",
    "attr.frozen",
    "attr.mutable",
    "attrs.define",
    "attrs.frozen",
    "attrs.mutable",
}
_ATTRS_FIELDS = {"attr.ib", "attr.attrib", "attr.field", "attrs.field"}
_NAMEDTUPLE = {"typing.NamedTuple", "typing_extensions.NamedTuple"}
_DEFAULT_MAX = 60

Resolve = Callable[[ast.expr], str | None]  # an expression in the class's module -> dotted target


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _true(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def _false(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def synthesized_kind(cls: ast.ClassDef, resolve: Resolve) -> tuple[str, ast.Call | None] | None:
    """("dataclass" | "attrs" | "namedtuple", the decorator call if any) for such a class."""
    for deco in cls.decorator_list:
        call = deco if isinstance(deco, ast.Call) else None
        target = resolve(call.func if call else deco)
        if target in _DATACLASS:
            return "dataclass", call
        if target in _ATTRS_DECORATORS:
            return "attrs", call
    for base in cls.bases:
        if resolve(base) in _NAMEDTUPLE:
            return "namedtuple", None
    return None


def _short(node: ast.expr) -> str:
    text = ast.unparse(node)
    return text if len(text) <= _DEFAULT_MAX else text[: _DEFAULT_MAX - 3] + "..."


class SynthesizedInit:
    """Rebuild the ``__init__`` signature of one class; ``bases`` gives the (module resolver,
    ClassDef) of a base class found in the same release, or None."""

    def __init__(
        self, bases: Callable[[ast.ClassDef, ast.expr], tuple[Resolve, ast.ClassDef] | None]
    ) -> None:
        self.bases = bases

    def signature(self, cls: ast.ClassDef, resolve: Resolve) -> list[list[Any]] | None:
        kind = synthesized_kind(cls, resolve)
        if kind is None:
            return None
        _what, call = kind
        if call is not None and _false(_keyword(call, "init")):
            return None  # no synthesized __init__: the inherited one applies
        fields = self._fields(cls, resolve, set())
        if fields is None:
            return None
        positional = [f for f in fields if not f[3]]
        keyword_only = [f for f in fields if f[3]]
        out: list[list[Any]] = [["self", "A", None]]
        out += [[name, "A", default] for name, _, default, _ in positional]
        out += [[name, "K", default] for name, _, default, _ in keyword_only]
        return out

    def _fields(
        self, cls: ast.ClassDef, resolve: Resolve, seen: set[int]
    ) -> list[tuple[str, bool, str | None, bool]] | None:
        """(name, has a default, default text, keyword-only), in __init__ order."""
        if id(cls) in seen:
            return None
        seen.add(id(cls))
        kind = synthesized_kind(cls, resolve)
        if kind is None:
            return []
        what, call = kind
        fields: dict[str, tuple[str, bool, str | None, bool]] = {}
        if what != "namedtuple":
            for base in reversed(cls.bases):
                found = self.bases(cls, base)
                if found is None:
                    continue
                base_resolve, base_cls = found
                inherited = self._fields(base_cls, base_resolve, seen)
                for f in inherited or ():
                    fields[f[0]] = f
        class_kw_only = call is not None and _true(_keyword(call, "kw_only"))
        after_marker = False
        auto_attribs = what != "attrs" or call is None or not _false(_keyword(call, "auto_attribs"))
        for stmt in cls.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                annotation = resolve(_outer(stmt.annotation)) or ast.unparse(
                    _outer(stmt.annotation)
                )
                if annotation.endswith("KW_ONLY"):
                    after_marker = True
                    continue
                if annotation.endswith("ClassVar"):
                    continue
                if what == "attrs" and not auto_attribs:
                    continue  # `@attr.s` without auto_attribs: only attr.ib() fields count
                entry = self._field(
                    stmt.target.id, stmt.value, resolve, class_kw_only or after_marker, what
                )
            elif (
                what == "attrs"
                and isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and isinstance(stmt.value, ast.Call)
                and resolve(stmt.value.func) in _ATTRS_FIELDS
            ):
                entry = self._field(stmt.targets[0].id, stmt.value, resolve, class_kw_only, what)
            else:
                continue
            if entry is None:
                target = stmt.target if isinstance(stmt, ast.AnnAssign) else None
                fields.pop(target.id if isinstance(target, ast.Name) else "", None)
                continue
            if entry[0] in fields:  # redeclared: keeps its place, takes the new default
                fields[entry[0]] = entry
            else:
                fields[entry[0]] = entry
        return list(fields.values())

    def _field(
        self, name: str, value: ast.expr | None, resolve: Resolve, kw_only: bool, what: str
    ) -> tuple[str, bool, str | None, bool] | None:
        if value is None:
            return (name, False, None, kw_only)
        if isinstance(value, ast.Call) and resolve(value.func) in (_FIELD | _ATTRS_FIELDS):
            if _false(_keyword(value, "init")):
                return None
            field_kw = _keyword(value, "kw_only")
            if field_kw is not None:
                kw_only = _true(field_kw)
            for key in ("default", "default_factory", "factory"):
                default = _keyword(value, key)
                if default is not None:
                    text = _short(default) if key == "default" else f"<factory {_short(default)}>"
                    return (name, True, text, kw_only)
            return (name, False, None, kw_only)
        return (name, True, _short(value), kw_only)


def _outer(annotation: ast.expr) -> ast.expr:
    """``ClassVar[int]`` -> ``ClassVar``; ``"InitVar[int]"`` stays a string."""
    if isinstance(annotation, ast.Subscript):
        return annotation.value
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        head = annotation.value.split("[", 1)[0].strip()
        try:
            return ast.parse(head, mode="eval").body
        except SyntaxError:
            return annotation
    return annotation
