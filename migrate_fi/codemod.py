"""What a codemod is: declared metadata, a `find` over Python's `ast`, and edits applied with LibCST.

A codemod never reads or writes files and never prints. Given a `FileContext` it calls
``ctx.report(node, message)`` for a site a person must look at, or ``ctx.fix(node, message, edit)``
for a site it can rewrite. The edit is a function from the LibCST node at the same source span to
its replacement; the engine applies it only in `apply`/`diff`, so `check` never loads LibCST, and
`check` reports exactly the sites that `apply` rewrites.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from migrate_fi.names import NameResolver
from migrate_fi.results import Diagnostic, FixSafety

if TYPE_CHECKING:
    from packaging.version import Version

__all__ = [
    "Codemod",
    "CodemodSetupError",
    "Edit",
    "EditError",
    "FileContext",
    "RunOptions",
    "Span",
]

# (line, col, end_line, end_col): 1-based lines, 0-based columns counted in characters.
Span = tuple[int, int, int, int]

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class RunOptions:
    """Options every codemod may read. Picklable: it travels to worker processes."""

    from_version: Version
    to_version: Version
    # "tail": turn only the arguments that bind differently into keywords;
    # "all": turn every positional argument of an affected call into a keyword.
    keyword_style: str = "tail"


@dataclass(frozen=True)
class Edit:
    """Replace the LibCST node of type ``node_type`` that spans ``span`` with ``transform(node)``."""

    span: Span
    node_type: str  # LibCST class name, e.g. "Call" (names, so that `check` never imports LibCST)
    transform: Callable[[Any], Any]
    codemod: str


class FileContext:
    """One file as a codemod sees it. Collects diagnostics and edits."""

    def __init__(
        self,
        path: str,
        text: str,
        tree: ast.Module,
        options: RunOptions,
        module_name: str | None = None,
        is_package: bool = False,
        resolver: NameResolver | None = None,
        project_aliases: Mapping[str, str] | None = None,
    ) -> None:
        self.path = path
        self.text = text
        self.tree = tree
        self.options = options
        self.module_name = module_name
        self.is_package = is_package
        self._resolver = resolver
        self.project_aliases = project_aliases
        self._lines: list[str] | None = None
        self.codemod: Codemod | None = None  # set by the engine while a codemod runs
        self.diagnostics: list[Diagnostic] = []
        self.edits: list[Edit] = []

    @property
    def built_resolver(self) -> NameResolver | None:
        """The resolver if a codemod asked for it (the engine shares it with the next one)."""
        return self._resolver

    @property
    def resolver(self) -> NameResolver:
        if self._resolver is None:
            self._resolver = NameResolver(
                self.tree, self.module_name, self.is_package, self.project_aliases
            )
        return self._resolver

    # -------------------------------------------------------------- positions

    def _char_col(self, line: int, byte_col: int) -> int:
        """`ast` columns are UTF-8 byte offsets; LibCST's and ours are characters."""
        if self._lines is None:
            self._lines = _LINE_BREAK.split(self.text)
        text = self._lines[line - 1] if 0 < line <= len(self._lines) else ""
        if text.isascii():
            return byte_col
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))

    def span(self, node: ast.AST) -> Span:
        line, col = node.lineno, node.col_offset  # type: ignore[attr-defined]
        end_line, end_col = node.end_lineno, node.end_col_offset  # type: ignore[attr-defined]
        return (line, self._char_col(line, col), end_line, self._char_col(end_line, end_col))

    # ------------------------------------------------------------ diagnostics

    def _diagnostic(self, node: ast.AST, message: str, fixable: bool) -> Diagnostic:
        assert self.codemod is not None
        line, col, end_line, end_col = self.span(node)
        return Diagnostic(
            path=self.path,
            line=line,
            col=col + 1,
            code=self.codemod.code,
            codemod=self.codemod.id,
            message=message,
            fixable=fixable,
            end_line=end_line,
            end_col=end_col + 1,
        )

    def report(self, node: ast.AST, message: str) -> None:
        """A site a person must look at; nothing is rewritten."""
        self.diagnostics.append(self._diagnostic(node, message, fixable=False))

    def fix(
        self, node: ast.AST, message: str, node_type: str, transform: Callable[[Any], Any]
    ) -> None:
        """A site `apply` rewrites: the LibCST node of ``node_type`` at ``node``'s span becomes
        ``transform(that node)``."""
        assert self.codemod is not None
        self.diagnostics.append(self._diagnostic(node, message, fixable=True))
        self.edits.append(Edit(self.span(node), node_type, transform, self.codemod.id))


class CodemodSetupError(Exception):
    """A codemod cannot run for these options (e.g. no API data for a release); one line."""


class EditError(RuntimeError):
    """An edit could not be applied where `find` said it would be: the file is left untouched."""


class Codemod:
    """Base class of every migration. Subclass it in a module of `codemods/`; the module's name
    becomes the codemod's id (its `--select` value, fixture folder and docs anchor).

    The class docstring is the rule's documentation (`migrate-fi explain CODE`).
    """

    id: ClassVar[str] = ""  # set by the registry from the module name
    code: ClassVar[str]  # stable short code, e.g. "FI001"
    summary: ClassVar[str]  # one line
    # The FlashInfer release whose change this migrates ("*" for a data-driven codemod, which runs
    # for any --from < --to and reads what changed from the bundled API data).
    introduced_in: ClassVar[str]
    data_driven: ClassVar[bool] = False
    fix_safety: ClassVar[FixSafety]
    # Cheap prefilter: a file that contains none of these strings is never parsed for this codemod.
    # (a tuple ("flashinfer", "fp4_quantize"): "flashinfer" anywhere and the identifier)
    triggers: ClassVar[tuple[str | tuple[str, ...], ...]]
    # Which files it reads; Python sources for now.
    suffixes: ClassVar[tuple[str, ...]] = (".py",)
    # Public FlashInfer paths this codemod owns: data-driven codemods leave them alone.
    handles: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def prepare(cls, options: RunOptions) -> None:
        """Called once per run, before any file; raise `CodemodSetupError` to refuse the run."""

    @classmethod
    def triggers_for(cls, options: RunOptions) -> tuple[str | tuple[str, ...], ...]:
        """The prefilter for a run: a file is parsed when it contains one of these strings
        (a tuple: all of its strings). Default: ``triggers``."""
        return cls.triggers

    def find(self, ctx: FileContext) -> None:
        raise NotImplementedError

    @classmethod
    def doc(cls) -> str:
        import inspect

        return inspect.cleandoc(cls.__doc__ or "")
