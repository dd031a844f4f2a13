"""What a rule is: declared metadata, a `find` over Python's `ast`, and fixes made of edits.

A rule never reads or writes files and never prints. Given a `FileContext` it calls
``ctx.report(node, message)`` for a site a person must look at, or
``ctx.fix(node, message, *edits, imports=..., safety=...)`` for a site it can rewrite: one
diagnostic carrying edits to one or more nodes of the file (see `migrate_fi.editing.edits`) and the imports
they need. A message is said in English and Chinese in one place (`migrate_fi.base.messages.say`). The engine applies a fix only in `apply`/`diff`, only whole (a suppression comment drops
all of it), and only if its safety allows: `safe` fixes always, `review` fixes with
``--unsafe-fixes``. So `check` never loads LibCST and reports exactly the sites `apply` rewrites.

What a rule is given for a run (`RuleSettings`): the values of the options it declares, read from
``[tool.migrate-fi.rules.<id>]``, and the FlashInfer APIs that another rule selected for this run
owns. A rule never reads the registry or another rule.
"""

from __future__ import annotations

import ast
import enum
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from migrate_fi.analysis.resolver import NameResolver
from migrate_fi.base import patterns
from migrate_fi.base.messages import Said
from migrate_fi.base.results import Diagnostic, FixAvailability, FixSafety
from migrate_fi.editing.edits import (
    AddImport,
    Edit,
    InsertStatements,
    Replace,
    ReplaceStatements,
    Span,
    TextEdit,
    Transform,
)

if TYPE_CHECKING:
    from packaging.version import Version

__all__ = [
    "FileContext",
    "Fix",
    "KeywordStyle",
    "Rule",
    "RuleDefinitionError",
    "RuleOption",
    "RuleSettings",
    "RuleSetupError",
    "RunOptions",
    "preload_api_data",
    "require_api_data",
]


class KeywordStyle(str, enum.Enum):
    """How calls whose positional arguments bind differently are rewritten."""

    TAIL = "tail"  # name only the arguments from the first one that binds differently
    ALL = "all"  # name every positional argument of such a call


@dataclass(frozen=True)
class RuleOption:
    """An option a rule declares; set in ``[tool.migrate-fi.rules.<id or code>]``."""

    name: str  # kebab-case, as written in the configuration
    default: Any  # str, int, float, bool, or a tuple of str (a list in TOML)
    help: str
    choices: tuple[str, ...] = ()  # the values allowed (a string option), when they are few
    minimum: float | None = None  # the smallest value allowed (a number option)

    def parse(self, value: Any, where: str) -> Any:
        """The configured value, checked against the default's type and the choices;
        ValueError says why not, naming the allowed values."""
        if self.choices and value not in self.choices:
            allowed = ", ".join(f'"{c}"' for c in self.choices)
            raise ValueError(f"{where}: {self.name} must be one of {allowed}, not {value!r}")
        expected = type(self.default)
        if isinstance(self.default, tuple):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"{where}: {self.name} must be a list of strings")
            return tuple(value)
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if type(value) is not expected:
            raise ValueError(f"{where}: {self.name} must be a {expected.__name__}")
        if isinstance(value, float) and not math.isfinite(value):
            # (the value is written into code: `inf` or `nan` there is a NameError)
            raise ValueError(f"{where}: {self.name} must be a finite number, not {value!r}")
        if self.minimum is not None and isinstance(value, (int, float)) and value < self.minimum:
            raise ValueError(f"{where}: {self.name} must be at least {self.minimum:g}")
        return value

    def show_default(self) -> str:
        if isinstance(self.default, tuple):
            return "[" + ", ".join(f'"{v}"' for v in self.default) + "]"
        if isinstance(self.default, bool):
            return "true" if self.default else "false"
        if isinstance(self.default, str):
            return f'"{self.default}"'
        return str(self.default)


@dataclass(frozen=True)
class RuleSettings:
    """What one rule is given for one run. Hashable and picklable (it travels to workers)."""

    options: tuple[tuple[str, Any], ...] = ()  # (name, value) of the options set in the config
    deferred_apis: frozenset[str] = frozenset()  # APIs another rule selected for this run owns
    # (public path, parameter) pairs another rule selected for this run owns
    deferred_parameters: frozenset[tuple[str, str]] = frozenset()

    def option(self, name: str) -> Any:
        for key, value in self.options:
            if key == name:
                return value
        raise KeyError(name)


@dataclass(frozen=True)
class RunOptions:
    """Options of a run that every rule may read. Hashable and picklable."""

    from_version: Version
    to_version: Version
    keyword_style: KeywordStyle = KeywordStyle.TAIL
    unsafe_fixes: bool = False  # apply `review` fixes too
    rules: tuple[tuple[str, RuleSettings], ...] = ()  # (rule id, its settings)
    unused_suppressions: bool = True  # report suppression comments that silence nothing
    fix_details: bool = False  # give each fix's replacements (SARIF), even in check mode
    # what the project's pins name, where it is not from_version: a migration in progress
    # (`migrate_fi.project.migration`) continues from its origin after apply moved the pins
    pinned: Version | None = None
    # Splice fixes said as text without LibCST where every edit of a rule in a file can be
    # (faster, the same bytes); False takes the LibCST path, so tests can compare the two.
    splice_text: bool = True

    def settings(self, rule_id: str) -> RuleSettings:
        for key, value in self.rules:
            if key == rule_id:
                return value
        return RuleSettings()


def require_api_data(code: str, options: RunOptions) -> None:
    """Refuse a run for which the API data of ``--from`` or ``--to`` is not bundled (what the
    engine does, once, for each rule that declares `needs_api_data`)."""
    from migrate_fi.api.store import available_releases, missing_data
    from migrate_fi.base.versions import parse_version

    known = {parse_version(v) for v in available_releases()}
    for v in (options.from_version, options.to_version):
        if v not in known:
            raise RuleSetupError(f"{code}: {missing_data(v)}")


def preload_api_data(options: RunOptions) -> None:
    """Load the two releases' data once, before the engine forks its workers: they share it
    instead of each reading it again (a run whose files all come from the cache never does)."""
    from migrate_fi.api.differ import api_for

    for v in (options.from_version, options.to_version):
        api_for(str(v))


class RuleSetupError(Exception):
    """A rule cannot run for these options (e.g. no API data for a release); one line."""


class RuleDefinitionError(Exception):
    """A rule broke its own declaration (e.g. a report-only rule produced a fix)."""


@dataclass
class Fix:
    """One diagnostic's fix: every edit it makes and the imports they need."""

    diagnostic: Diagnostic
    edits: tuple[Edit, ...]
    imports: tuple[AddImport, ...] = ()


@dataclass
class _Found:
    diagnostics: list[Diagnostic] = field(default_factory=list)
    fixes: list[Fix] = field(default_factory=list)


class FileContext:
    """One file as a rule sees it. Collects diagnostics and fixes."""

    def __init__(
        self,
        path: str,
        text: str,
        tree: ast.Module | None,
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
        self.rule: Rule | None = None  # set by the engine while a rule runs
        self.diagnostics: list[Diagnostic] = []
        self.fixes: list[Fix] = []

    def again(self, options: RunOptions) -> FileContext:
        """A context of the same text and tree for a run with other ``options`` (its resolver
        shared: the names mean what they mean here)."""
        return FileContext(
            self.path,
            self.text,
            self.tree,
            options,
            self.module_name,
            self.is_package,
            self._resolver if self.tree is None else self.resolver,
            self.project_aliases,
        )

    @property
    def lines(self) -> list[str]:
        """The file's lines, without their line breaks."""
        if self._lines is None:
            self._lines = patterns.split_lines(self.text)
        return self._lines

    @property
    def built_resolver(self) -> NameResolver | None:
        """The resolver if a rule asked for it (the engine shares it with the next one)."""
        return self._resolver

    @property
    def resolver(self) -> NameResolver:
        assert self.tree is not None, "a text file has no names to resolve"
        if self._resolver is None:
            self._resolver = NameResolver(
                self.tree, self.module_name, self.is_package, self.project_aliases
            )
        return self._resolver

    # ------------------------------------------------------------- settings

    @property
    def settings(self) -> RuleSettings:
        assert self.rule is not None
        return self.options.settings(self.rule.id)

    def option(self, name: str) -> Any:
        """The value of an option the running rule declares (configured, or its default)."""
        assert self.rule is not None
        try:
            return self.settings.option(name)
        except KeyError:
            for declared in self.rule.options:
                if declared.name == name:
                    return declared.default
        raise RuleDefinitionError(f"rule {self.rule.code} reads undeclared option {name!r}")

    # -------------------------------------------------------------- positions

    def _char_col(self, line: int, byte_col: int) -> int:
        """`ast` columns are UTF-8 byte offsets; LibCST's and ours are characters."""
        if self._lines is None:
            self._lines = patterns.split_lines(self.text)
        text = self._lines[line - 1] if 0 < line <= len(self._lines) else ""
        if text.isascii():
            return byte_col
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))

    def span(self, node: ast.AST) -> Span:
        line, col = node.lineno, node.col_offset  # type: ignore[attr-defined]
        end_line, end_col = node.end_lineno, node.end_col_offset  # type: ignore[attr-defined]
        return (line, self._char_col(line, col), end_line, self._char_col(end_line, end_col))

    # ------------------------------------------------------------------ edits

    def replace(
        self,
        node: ast.AST,
        node_type: str,
        transform: Transform,
        as_text: tuple[TextEdit, ...] | None = None,
    ) -> Replace:
        """An edit: the LibCST node of ``node_type`` at ``node``'s span becomes
        ``transform(that node)`` (helpers in `migrate_fi.editing.edits`); ``as_text``: the same change
        as text edits, if the rule can say it (see `Replace`)."""
        return Replace(self.span(node), node_type, transform, as_text)

    def text_between(self, start: tuple[int, int], end: tuple[int, int]) -> str:
        """The source from ``start`` to ``end`` ((line, character column) pairs), its line
        breaks written as ``\n``."""
        if self._lines is None:
            self._lines = patterns.split_lines(self.text)
        (l1, c1), (l2, c2) = start, end
        if l1 == l2:
            return self._lines[l1 - 1][c1:c2]
        middle = self._lines[l1 : l2 - 1]
        return "\n".join([self._lines[l1 - 1][c1:], *middle, self._lines[l2 - 1][:c2]])

    def insert_before(self, statement: ast.stmt, code: str) -> InsertStatements:
        return InsertStatements(self.span(statement), code)

    def insert_after(self, statement: ast.stmt, code: str) -> InsertStatements:
        return InsertStatements(self.span(statement), code, after=True)

    def replace_statements(self, first: ast.stmt, last: ast.stmt, code: str) -> ReplaceStatements:
        return ReplaceStatements(self.span(first), self.span(last), code)

    def replace_text(self, span: Span, text: str) -> TextEdit:
        return TextEdit(span, text)

    # ------------------------------------------------------------ diagnostics

    @property
    def is_python(self) -> bool:
        """A Python source (with an `ast` tree); else a text file (pins, Dockerfiles...)."""
        return self.tree is not None

    def _diagnostic(
        self, node: ast.AST | Span, message: Said, safety: FixSafety | None
    ) -> Diagnostic:
        assert self.rule is not None
        line, col, end_line, end_col = node if isinstance(node, tuple) else self.span(node)
        return Diagnostic(
            path=self.path,
            line=line,
            col=col + 1,
            code=self.rule.code,
            rule=self.rule.id,
            message=message.en,
            message_zh=message.zh,
            safety=safety,
            end_line=end_line,
            end_col=end_col + 1,
        )

    def report(self, node: ast.AST | Span, message: Said) -> None:
        """A site a person must look at; nothing is rewritten. ``node`` may be a span (text
        files have no nodes)."""
        self.diagnostics.append(self._diagnostic(node, message, None))

    def fix(
        self,
        node: ast.AST | Span,
        message: Said,
        *edits: Edit,
        imports: Iterable[AddImport] = (),
        safety: FixSafety | None = None,
    ) -> None:
        """A site `apply` rewrites with ``edits`` (and ``imports``). ``safety`` defaults to the
        rule's; a site may lower it (e.g. a value chosen among several candidates is `review`),
        never raise it."""
        assert self.rule is not None
        declared = self.rule.fix_safety
        if self.rule.fix_availability is FixAvailability.NONE or declared is None:
            raise RuleDefinitionError(
                f"rule {self.rule.code} is declared report-only (fix_availability NONE) but"
                " produced a fix"
            )
        safety = declared if safety is None else safety
        if safety.rank > declared.rank:
            raise RuleDefinitionError(
                f"rule {self.rule.code} produced a {safety.value} fix; its declared fix safety"
                f" is {declared.value}"
            )
        if not edits:
            raise RuleDefinitionError(f"rule {self.rule.code} produced a fix with no edit")
        diagnostic = self._diagnostic(node, message, safety)
        self.diagnostics.append(diagnostic)
        self.fixes.append(Fix(diagnostic, tuple(edits), tuple(imports)))


class Rule:
    """Base class of every migration. Subclass it in a module of `codemods/`; the module's name
    becomes the rule's id (its `--select` value, fixture folder and docs anchor).

    The class docstring is the rule's documentation (`migrate-fi explain CODE`).
    """

    id: ClassVar[str] = ""  # set by the registry from the module name
    code: ClassVar[str]  # stable short code, e.g. "FI001"
    summary: ClassVar[str]  # one line
    summary_zh: ClassVar[str] = ""  # the same line in Chinese (`report --lang zh`)
    # The FlashInfer release whose change this migrates ("*" for a data-driven rule, which runs
    # for any --from < --to and reads what changed from the bundled API data).
    introduced_in: ClassVar[str]
    data_driven: ClassVar[bool] = False
    # Whether it fixes what it finds: SOMETIMES (the usual: some sites are for a person), ALWAYS
    # (every site it reports has a fix), or NONE (it only reports).
    fix_availability: ClassVar[FixAvailability] = FixAvailability.SOMETIMES
    # The most a fix of this rule may be trusted, SAFE or REVIEW; None for a rule that only
    # reports (fix_availability NONE).
    fix_safety: ClassVar[FixSafety | None] = None
    # Cheap prefilter: a file that contains none of these strings is never parsed for this rule.
    # (a tuple ("flashinfer", "fp4_quantize"): "flashinfer" anywhere and the identifier)
    triggers: ClassVar[tuple[str | tuple[str, ...], ...]]
    # A string that every file the run's triggers (`triggers_for`) can match contains: they are
    # then worked out only once a file that contains it is read, and a tree that never does
    # never pays for them (a data-driven rule's come from the release data). The engine holds
    # each trigger to it. None: worked out before the walk.
    triggers_contain: ClassVar[str | None] = None
    # Which files it reads: Python sources by default. A rule that also reads text files
    # (`pyproject.toml`, Dockerfiles) names them by suffix or by file-name pattern, and must
    # check `ctx.is_python` in `find`.
    suffixes: ClassVar[tuple[str, ...]] = (".py",)
    file_patterns: ClassVar[tuple[str, ...]] = ()
    # Public FlashInfer paths whose positional-binding checks this rule takes over from the
    # data-driven rule when both run (the engine tells that rule, through its settings).
    owns_apis: ClassVar[frozenset[str]] = frozenset()
    # Public paths of the FlashInfer APIs whose change this rule migrates (what `usage` and the
    # report attribute to it: a change no signature shows, such as group='s WORLD fallback).
    concerns: ClassVar[frozenset[str]] = frozenset()
    # (public path, parameter) pairs whose change this rule handles itself (FI005 drops
    # `max_num_tokens=` where 0.6.14 ignores it): the data-driven rules leave them alone.
    owns_parameters: ClassVar[frozenset[tuple[str, str]]] = frozenset()
    # Everything it finds is reached through a name that resolves to FlashInfer's own (a call,
    # an attribute, an import of it). Outside FlashInfer's tree a file reaches such a name only
    # through an import statement that names the flashinfer package, a module imported by call
    # (`importlib.import_module`, `pytest.importorskip`), or the project's re-exports (the
    # re-export rounds run it again where one reaches the file): the engine parses a file for it
    # only where the first two may be (`migrate_fi.analysis.prefilter.reaches_flashinfer`).
    reaches_by_import: ClassVar[bool] = False
    # What it finds may be reached through the project's re-exports of FlashInfer names (the
    # re-export rounds analyse a file again for it where a new one reaches a name it looks
    # for). False for a rule about FlashInfer's own module objects (FI013: a patch of a
    # FlashInfer module; the project's module that re-exports a name is another object).
    via_reexports: ClassVar[bool] = True
    # Its analysis of a file may read every file of the project (who calls a function:
    # `migrate_fi.codemods._callers`): the engine analyses the files it must see before the
    # others, so that the longest analyses do not start last while the other workers wait.
    searches_project: ClassVar[bool] = False
    # It reads the release data of --from and --to: the engine checks, once per run, that both
    # are bundled (a clear error otherwise) and loads them before the workers start.
    needs_api_data: ClassVar[bool] = False
    # Options this rule reads with `FileContext.option`.
    options: ClassVar[tuple[RuleOption, ...]] = ()
    # Public threads behind a hand-written rule's change, each "<what it shows>: <url>" (the
    # pull request that made the change, the downstream fix that met it). The report's
    # motivation cites them; a data-driven rule's references come from its data instead.
    links: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def parameters_owned(
        cls, from_version: Version, to_version: Version
    ) -> frozenset[tuple[str, str]]:
        """`owns_parameters` for a run from ``from_version`` to ``to_version``: a rule whose
        parameters come from data (FI010) says which the range holds. Default: the class's."""
        return cls.owns_parameters

    @classmethod
    def references(cls, from_version: Version, to_version: Version) -> tuple[str, ...]:
        """What a pull request's motivation cites for this rule's range: the FlashInfer changes
        it migrates, each ``"<release>: <what> (<link>)"`` where the data has a link (FI010's
        value-change files do). Default: the rule's `links`."""
        return cls.links

    @classmethod
    def prepare(cls, options: RunOptions) -> None:
        """Called once per run, before any file; raise `RuleSetupError` to refuse the run."""

    @classmethod
    def triggers_for(cls, options: RunOptions) -> tuple[str | tuple[str, ...], ...]:
        """The prefilter for a run: a file is parsed when it contains one of these strings
        (a tuple: all of its strings). Default: ``triggers``."""
        return cls.triggers

    @classmethod
    def wants(cls, data: bytes, path: str, options: RunOptions) -> bool:
        """A finer test, asked only of files that passed the prefilter, for a rule whose
        triggers are common words (every file of a serving project says "flashinfer"): False
        and the file is not parsed for this rule. It must be cheap and never say False for a
        file the rule would report or fix. Default: True."""
        return True

    def find(self, ctx: FileContext) -> None:
        raise NotImplementedError

    @classmethod
    def fix_label(cls) -> str:
        """What the docs and `plan` show for the rule's fixes: its safety, or "none"."""
        return "none" if cls.fix_safety is None else cls.fix_safety.value

    @classmethod
    def doc(cls) -> str:
        import inspect

        return inspect.cleandoc(cls.__doc__ or "")
