"""FI009: FlashInfer's version compared as a string, which orders 0.6.10 before 0.6.4."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any, ClassVar

from packaging.version import InvalidVersion, Version

from migrate_fi.analysis import nodes
from migrate_fi.analysis.scopes import Scope
from migrate_fi.analysis.versiontests import reads_version
from migrate_fi.base import patterns
from migrate_fi.base.messages import say
from migrate_fi.base.results import FixSafety
from migrate_fi.editing.edits import AddImport, replace_with
from migrate_fi.editing.sources import lines_at
from migrate_fi.framework.rule import FileContext, Rule, RunOptions

_ORDERING: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_VERSION = "packaging.version.Version"
# a version string next to an ordering operator, either side (`>= "0.6.4"`, `"0.6.4" <= v`);
# one class of first bytes, then the branch that byte starts (two branches tried at every byte
# took four times longer over the files that name FlashInfer)
_VERSIONISH = patterns.compile(
    rb"""[<>"'](?:(?<=[<>])=?\s*["']v?\d+\.\d+|(?<=["'])v?\d+\.\d+[^"'\n]*["']\s*[<>])"""
)
_DISTRIBUTION_NAMED = patterns.compile(rb"""["']flashinfer([-_]python)?["']""")


class VersionComparisons(Rule):
    """FlashInfer's version compared with `<`, `<=`, `>`, `>=` as a string.

    `flashinfer.__version__ >= "0.6.4"` compares characters: "0.6.10" sorts before "0.6.4", so
    on 0.6.10 and later such a check answers the opposite of what it means, with no error (a
    feature switched off, an old code path taken). The version may be read as
    `flashinfer.__version__` (through any alias), `importlib.metadata.version("flashinfer-python")`
    or `pkg_resources.get_distribution(...).version`, directly or through a variable assigned it.

    Reported and fixed where the string comparison and the version comparison disagree on the
    target release or on the one migrated from: both sides become
    `packaging.version.Version(...)` (FlashInfer itself requires `packaging`), with
    `from packaging.version import Version` added when the file has no `Version` of its own;
    where `Version` names something else the comparison is only reported. Left alone: a
    comparison that both ways give the same answer for on both releases, `==`/`!=` (a string
    is equal exactly when the version is), and comparisons already made on `Version`,
    `version.parse(...)` or tuples.
    """

    code = "FI009"
    summary = "FlashInfer's version compared as a string (0.6.10 < 0.6.4): compare Version objects"
    summary_zh = "以字符串比较 FlashInfer 版本（0.6.10 < 0.6.4）：改为比较 Version 对象"
    introduced_in = "*"
    data_driven: ClassVar[bool] = True  # (runs for every range: the releases decide)
    fix_safety = FixSafety.SAFE
    # a file must name FlashInfer and a version (`__version__`, `version("flashinfer-python")`)
    triggers = (
        ("flashinfer", "__version__"),
        ("flashinfer", "version"),
        ("flashinfer", "get_distribution"),
    )

    @classmethod
    def wants(cls, data: bytes, path: str, options: RunOptions) -> bool:
        # a version string compared, and a way of reading FlashInfer's version, in sight
        # (the cheaper tests first: the version pattern is tried at every quote and bracket)
        return (
            b"__version__" in data or _DISTRIBUTION_NAMED.search(data) is not None
        ) and _VERSIONISH.search(data) is not None

    def find(self, ctx: FileContext) -> None:
        assert ctx.tree is not None
        releases = (ctx.options.from_version, ctx.options.to_version)
        data = ctx.text.encode("utf-8", "surrogateescape")
        lines = _match_lines(data)
        for node in nodes.on_lines(ctx.tree, lines):
            if not isinstance(node, ast.Compare) or len(node.ops) != 1:
                continue
            compare = _ORDERING.get(type(node.ops[0]))
            left, right = node.left, node.comparators[0]
            literal = _version_literal(right) or _version_literal(left)
            if compare is None or literal is None:
                continue
            version_side = right if _version_literal(left) else left
            if not isinstance(version_side, (ast.Attribute, ast.Call, ast.Name)):
                continue
            text, bound = literal
            wrong = [
                str(v)
                for v in releases
                if (compare(str(v), text) if version_side is left else compare(text, str(v)))
                != (compare(v, bound) if version_side is left else compare(bound, v))
            ]
            if not wrong:
                continue  # both ways agree on both releases (what is read does not matter)
            resolver = ctx.resolver  # (built only for a comparison that may be wrong)
            scope = resolver.scope_at(node)
            if reads_version(resolver, version_side, scope):
                self._report(ctx, node, scope, wrong)

    def _report(self, ctx: FileContext, node: ast.Compare, scope: Scope, wrong: list[str]) -> None:
        told = say(
            "FlashInfer's version compared as a string (`{source}`): strings order 0.6.10 before"
            " 0.6.4, so on {on} this gives the opposite of what it means",
            "把 FlashInfer 的版本当作字符串比较（`{source}`）：字符串把 0.6.10 排在 0.6.4 之前，"
            "所以在 {on} 上结果与本意相反",
            source=_source(ctx, node),
            on=" and ".join(dict.fromkeys(wrong)),
        )
        by_hand = say(
            "{told}: compare packaging.version.Version objects",
            "{told}：请比较 `packaging.version.Version` 对象",
            told=told,
        )
        found = ctx.resolver.resolve(ast.Name(id="Version", ctx=ast.Load()), scope)
        if found.candidates and found.qualnames != {_VERSION}:
            ctx.report(node, by_hand)
            return
        imports = (
            () if found.qualnames == {_VERSION} else (AddImport("packaging.version", "Version"),)
        )
        sides = (node.left, node.comparators[0])
        kinds = [_LIBCST.get(type(side)) for side in sides]
        if any(kind is None for kind in kinds) or any("\n" in _source(ctx, s) for s in sides):
            ctx.report(node, by_hand)
            return
        edits = [
            ctx.replace(side, str(kind), replace_with(f"Version({_source(ctx, side)})"))
            for side, kind in zip(sides, kinds, strict=True)
        ]
        fixed = say("{told}: compare Version objects", "{told}：改为比较 `Version` 对象", told=told)
        ctx.fix(node, fixed, *edits, imports=imports)


# the LibCST node an expression is, for the ones a version is written as
_LIBCST: dict[type, str] = {
    ast.Attribute: "Attribute",
    ast.Call: "Call",
    ast.Name: "Name",
    ast.Constant: "SimpleString",
}


def _source(ctx: FileContext, node: ast.expr) -> str:
    return ast.get_source_segment(ctx.text, node) or ast.unparse(node)


def _version_literal(node: ast.expr) -> tuple[str, Version] | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return node.value, Version(node.value)
        except InvalidVersion:
            return None
    return None


def _match_lines(data: bytes) -> set[int]:
    """The lines where a version string is written (counted as the matches go: one pass)."""
    return lines_at(data, (m.start() for m in _VERSIONISH.finditer(data)))
