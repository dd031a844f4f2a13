"""Helpers for codemods that fix how a call binds its arguments.

The edit functions here run only in `apply`/`diff`; they import LibCST when they run, so that a
codemod module that uses them costs nothing at `check` time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from migrate_fi.codemod import EditError

__all__ = ["keyword_indexes", "keywordize"]


def keyword_indexes(
    n_positional: int, first_affected: int, params: tuple[str, ...], style: str
) -> dict[int, str]:
    """Which positional arguments to turn into keywords, and by which (old) names.

    ``style`` "tail" keeps the arguments before ``first_affected`` positional; "all" names every one.
    """
    start = 0 if style == "all" else first_affected
    return {i: params[i] for i in range(start, n_positional)}


def keywordize(names: dict[int, str]) -> Callable[[Any], Any]:
    """An edit turning positional arguments into keywords: ``names`` maps argument index to name.

    Only the argument gains ``name=``: its value, comments and the whitespace around it are kept.
    """

    def transform(call: Any) -> Any:
        import libcst as cst

        args = list(call.args)
        for index, name in names.items():
            arg = args[index]
            if arg.keyword is not None or arg.star:
                raise EditError(f"argument {index + 1} of the call is not a plain positional one")
            args[index] = arg.with_changes(
                keyword=cst.Name(name),
                equal=cst.AssignEqual(
                    whitespace_before=cst.SimpleWhitespace(""),
                    whitespace_after=cst.SimpleWhitespace(""),
                ),
            )
        return call.with_changes(args=args)

    return transform
