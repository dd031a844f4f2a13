"""One file through the rules: which rules see it, parse, find, settle, fix.

Per file (`process_source`): a cheap text prefilter (does the file name any rule's trigger at
all?) so that most files are never parsed; decode (BOM, coding cookie); `ast.parse`; each rule's
`find` over the shared name resolution; settling (`migrate_fi.framework.fixes`: suppression comments, and
which fixes this run applies). That is all `check` does. `diff` and `apply` then apply each
rule's fixes (`migrate_fi.framework.fixes.apply_fixes`) and re-parse the result. Rules run in release
order; after a rule changed the text, the next one reads the new text.

A failure in the file (undecodable, syntax error, RecursionError, a rule's bug) is returned as
that file's error, never raised.
"""

from __future__ import annotations

import ast
import enum
import gc
import os
import warnings
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from functools import lru_cache, partial

from migrate_fi.analysis import nodes
from migrate_fi.analysis.prefilter import LazyPrefilter, Prefilter, Triggers, reaches_flashinfer
from migrate_fi.analysis.resolver import NameResolver
from migrate_fi.analysis.suppression import Suppressions
from migrate_fi.api.store import DataError, on_forget
from migrate_fi.base import patterns
from migrate_fi.base.messages import say
from migrate_fi.base.modules import export_parts, in_flashinfer, is_python_path, module_identity
from migrate_fi.base.results import (
    FileError,
    FileResult,
    FixAvailability,
    Lookups,
    Status,
)
from migrate_fi.editing.edits import EditError
from migrate_fi.editing.sources import (
    SourceError,
    decode_source,
)
from migrate_fi.framework.fixdetails import fix_replacements
from migrate_fi.framework.fixes import apply_fixes, settle
from migrate_fi.framework.gating import VersionGates
from migrate_fi.framework.rule import (
    FileContext,
    Rule,
    RuleDefinitionError,
    RunOptions,
)
from migrate_fi.project.discovery import wanted_files
from migrate_fi.run.cache import ResultCache
from migrate_fi.run.patching import Gate

__all__ = [
    "Mode",
    "RuleTests",
    "Without",
    "failed",
    "keep_tests",
    "matching",
    "must_see",
    "prefilter_for",
    "process_source",
    "reads",
    "rule_tests",
    "star_names",
    "tests_of",
]


class Mode(str, enum.Enum):
    CHECK = "check"  # find sites; LibCST is never loaded
    DIFF = "diff"  # produce the new text; write nothing
    APPLY = "apply"  # produce the new text; the CLI writes it


_LONE_CR = patterns.compile(r"\r(?!\n)")


def prefilter_for(rule: type[Rule], options: RunOptions) -> Prefilter:
    """The text test a file must pass for ``rule`` to parse it in this run."""
    return _prefilter(run_triggers(rule, options))


def run_triggers(rule: type[Rule], options: RunOptions) -> tuple[str | tuple[str, ...], ...]:
    """``rule.triggers_for(options)``, held to the rule's `triggers_contain`."""
    triggers = rule.triggers_for(options)
    needed = rule.triggers_contain
    # (each context once where every one contains it, as most often: FI002's 7,500 triggers
    # share one, and testing each took 2.4 ms of every run, before the files are read)
    if needed is not None and not all(
        needed in first
        for first in {t if isinstance(t, str) else (t[0] if t else "") for t in triggers}
    ):
        for t in triggers:
            parts = (t,) if isinstance(t, str) else t
            if parts and needed in parts[0]:
                continue  # (the context, where it is most often: thousands of triggers)
            if not any(needed in part for part in parts):
                raise RuleDefinitionError(
                    f"rule {rule.code} declares that its triggers contain {needed!r}, but"
                    f" {t!r} does not"
                )
    return triggers


@lru_cache(maxsize=64)
def _prefilter(triggers: tuple[str | tuple[str, ...], ...]) -> Prefilter:
    return Prefilter(triggers)


class RuleTests:
    """Each rule with its prefilter for a run (iterate for the pairs), and what makes
    `matching` cheap on the files no rule wants, most of a tree: the rules grouped by the files
    they read (a few tests of the path, not one per rule), and, for each group, the words one of
    which every file a rule of it matches contains, in lower case (`gate`): a file whose
    lower-cased text holds none is ruled out with one search, before any rule's own test."""

    def __init__(self, pairs: Sequence[tuple[type[Rule], Prefilter]]) -> None:
        self.pairs = list(pairs)
        groups: dict[tuple[tuple[str, ...], tuple[str, ...]], list[int]] = {}
        for i, (c, _) in enumerate(self.pairs):
            groups.setdefault((c.suffixes, c.file_patterns), []).append(i)
        self._groups = [(_wanted_files(*key), members) for key, members in groups.items()]
        self._kinds = list(groups)  # (each group's suffixes and file patterns, in that order)
        self._gates = [_gate(c) for c, _ in self.pairs]
        # the words one of which every file some rule must see contains (None: a rule has no
        # gate): most files hold none, and are ruled out before their rules are looked up
        self.gate_all: frozenset[bytes] | None = (
            None if None in self._gates else frozenset().union(*self._gates)  # type: ignore[arg-type]
        )
        # which rules read a path -> the union of their gates (None: one of them has none)
        self._union: dict[tuple[int, ...], frozenset[bytes] | None] = {}

    def __iter__(self) -> Iterator[tuple[type[Rule], Prefilter]]:
        return iter(self.pairs)

    def build(self) -> None:
        """Work out now the prefilter of every rule that reads Python files (a lazy one waits
        for its first file; a rule that reads only dependency files still does: few files)."""
        for c, p in self.pairs:
            if isinstance(p, LazyPrefilter) and ".py" in c.suffixes:
                p.build()

    def __len__(self) -> int:
        return len(self.pairs)

    def readers(self, path: str) -> tuple[int, ...]:
        """The indexes of the rules that read the file at ``path``, in rule order."""
        found = [i for wanted, members in self._groups if wanted(path) for i in members]
        return tuple(sorted(found))

    def gates(self) -> tuple[Gate, ...]:
        """For each group of rules that read the same files, its suffixes and file patterns,
        and the words one of which every file a rule of it must see contains (`gate`): what a
        warm replay tests a changed file with (`migrate_fi.run.patching`)."""
        out = []
        for kind, (_, members) in zip(self._kinds, self._groups, strict=True):
            words = self.gate(tuple(members))
            out.append((*kind, None if words is None else tuple(sorted(words))))
        return tuple(out)

    def gate(self, readers: tuple[int, ...]) -> frozenset[bytes] | None:
        try:
            return self._union[readers]
        except KeyError:
            gates = [self._gates[i] for i in readers]
            union = None if None in gates else frozenset().union(*gates)  # type: ignore[arg-type]
            self._union[readers] = union
            return union


def _gate(rule: type[Rule]) -> frozenset[bytes] | None:
    """Words, in lower case, one of which every file the rule's prefilter matches contains:
    the first part of each declared trigger (a trigger's context, or its one name), or the
    string a rule that works its triggers out declares they contain. None where neither says."""
    if _computes_triggers(rule):
        needed = rule.triggers_contain
        return frozenset({needed.lower().encode()}) if needed else None
    firsts = [t if isinstance(t, str) else (t[0] if t else "") for t in rule.triggers]
    if not firsts or not all(firsts):
        return None
    return frozenset(f.lower().encode() for f in firsts)


def rule_tests(
    rules: Sequence[type[Rule]], options: RunOptions, cache: ResultCache | None = None
) -> RuleTests:
    """Each rule with its prefilter for the run, worked out the first time a file the rule
    reads is tested (a rule that declares `triggers_contain`: a file that contains that string;
    through ``cache`` when given: they may come from the release data, loaded for them). A run
    that meets no dependency file never builds the requirement rule's (`packaging` parses the
    target's requirements for it)."""

    def triggers(rule: type[Rule]) -> Triggers:
        if cache is None or not _computes_triggers(rule):
            return run_triggers(rule, options)
        return cache.memo(f"triggers {rule.id}", lambda: run_triggers(rule, options))

    return RuleTests(
        [
            (c, LazyPrefilter(c.triggers_contain or "", partial(triggers, c), _prefilter))
            for c in rules
        ]
    )


def tests_of(rules: Sequence[type[Rule]], options: RunOptions) -> RuleTests:
    """`rule_tests` of ``rules`` for the run, once per process: those `keep_tests` kept (a
    worker forked after it shares the run's, built), else built here. A file that imports the
    project's re-exports is tested again with stand-ins for them, and working FI002's triggers
    out again for each took 7 ms (vLLM's second round has three)."""
    ids = tuple(c.id for c in rules)
    tests = _kept.get((ids, options))
    if tests is None:
        # (the rules a file of some kind reads, of the run's: their prefilters, built once)
        run = next((t for (i, o), t in _kept.items() if o == options and set(ids) <= set(i)), None)
        if run is not None:
            tests = RuleTests([pair for pair in run.pairs if pair[0].id in ids])
        else:
            tests = rule_tests(rules, options)
        _kept[ids, options] = tests
    return tests


def keep_tests(
    tests: RuleTests, ids: tuple[str, ...], options: RunOptions, build: bool = True
) -> None:
    """Keep ``tests`` (of the rules ``ids``) as this process's for the run; with ``build``,
    built now (the prefilters every Python file asks worked out here once, not again in each
    worker forked from now on)."""
    if build:
        tests.build()
    _kept.clear()
    _kept[ids, options] = tests


_kept: dict[tuple[tuple[str, ...], RunOptions], RuleTests] = {}
on_forget(_kept.clear)  # (the triggers of data-driven rules come from the release data)


def _computes_triggers(rule: type[Rule]) -> bool:
    """Whether ``rule`` works its triggers out for the run (worth keeping in the cache), rather
    than declaring them."""
    return rule.triggers_for.__func__ is not Rule.triggers_for.__func__  # type: ignore[attr-defined]


# files whose text holds none of some words (in any case), by those words (`must_see`)
Without = dict[frozenset[bytes], list[str]]


def matching(
    tests: RuleTests,
    data: bytes,
    path: str,
    options: RunOptions,
    own_tree: bool = False,
    without: Without | None = None,
) -> tuple[str, ...]:
    """The ids of the rules that must see the file: its prefilter, then its finer test, and
    for a rule that `reaches_by_import`, outside FlashInfer's tree (``own_tree``), an import
    that may reach FlashInfer. A file whose text holds no word of its rules' gate is added to
    ``without``, under those words (those of every rule's gate, where it holds none of them)."""
    lowered = None
    words = tests.gate_all
    if words is not None:
        lowered = data.lower()
        if _holds_none(words, lowered, path, without):
            return ()
    # (a rule that does not read this kind of file never pays for its text tests: FI007 reads
    # dependency files only, and its requirement names, torch among them, are in every model file)
    readers = tests.readers(path)
    if not readers:
        return ()
    words = tests.gate(readers)
    if (
        words is not None
        and words != tests.gate_all
        and _holds_none(words, data.lower() if lowered is None else lowered, path, without)
    ):
        return ()
    pairs = tests.pairs
    imports: bool | None = own_tree or None  # (asked once, of the first rule that needs it)
    star: bool | None = None  # (does it star-import FlashInfer: `_star_exporter`)
    out = []
    for c, p in (pairs[i] for i in readers):
        # (the import first: most files that name FlashInfer outside an import, in a string
        # such as `backend == "flashinfer"`, are ruled out by it before any rule's own test)
        if c.reaches_by_import:
            if imports is None:
                imports = reaches_flashinfer(data)
            if not imports:
                continue
        if p.matches(data) and c.wants(data, path, options):
            out.append(c.id)
        elif c.reaches_by_import:
            if star is None:
                star = _star_exporter(data)  # (asked once, of the first rule left out)
            if star:
                out.append(c.id)
    return tuple(out)


def _holds_none(
    words: frozenset[bytes], lowered: bytes, path: str, without: Without | None
) -> bool:
    """Whether the lower-cased text of the file at ``path`` holds none of ``words`` (it is
    then added to ``without``, under them)."""
    if any(w in lowered for w in words):
        return False
    if without is not None:
        without.setdefault(words, []).append(path)
    return True


_STAR_IMPORT = patterns.compile(rb"(?m)^\s*from\s+flashinfer[\w.]*\s+import\s+\*")


def _star_exporter(data: bytes) -> bool:
    """Whether the file star-imports a FlashInfer module: every module that imports a name
    from it may call FlashInfer through it (`NameResolver.exports`), so its exports are worked
    out even where it names no API a rule looks for."""
    return b"import *" in data and _STAR_IMPORT.search(data) is not None


def must_see(
    tests: RuleTests,
    data: bytes,
    path: str,
    options: RunOptions,
    without: Without | None = None,
) -> tuple[str, ...] | None:
    """The ids of the rules that must see the file (`matching`), or None when no rule must;
    a file ruled out by its rules' gate is added to ``without``.

    A module of FlashInfer's own tree is tested as if it named its module (it names its own
    definitions without it: `DirectDenseGemmKernel(...)` where it is defined), and needs no
    import to reach FlashInfer. That also covers what it reaches relatively: a relative import
    writes every part of the path but the package's name (`from ..quantization import
    fp4_quantize`, `from .. import quantization as q` then `q.fp4_quantize`), which its module
    gives, so a module that imports relatively but matches no rule names no API a rule looks
    for, and is not parsed (253 of the 522 modules of FlashInfer 0.6.18's tree)."""
    module = _own_module(path)
    if module is None:
        return matching(tests, data, path, options, without=without) or None
    named = data + b"\n" + module.replace(".", " ").encode()
    found = matching(tests, named, path, options, own_tree=True)
    return found or None


def _own_module(path: str) -> str | None:
    """The module name of a Python file of FlashInfer's own tree; None for any other file."""
    if not path.endswith(".py") or f"flashinfer{os.sep}" not in path:
        return None  # (cheap: a module of the flashinfer package lies in a folder of that name)
    module = module_identity(path)[0]
    return module if in_flashinfer(module) else None


def process_source(
    data: bytes,
    path: str,
    rules: Sequence[type[Rule]],
    options: RunOptions,
    mode: Mode,
    module: tuple[str | None, bool] = (None, False),
    aliases: Mapping[str, str] | None = None,
    prefiltered: Collection[str] | None = None,
) -> FileResult:
    """Run ``rules`` over one file's bytes. Never raises for a problem in the file.

    ``aliases`` are the project's own re-exports of FlashInfer names (see `run`);
    ``prefiltered`` the ids of the rules whose prefilter `run` already found matching (None:
    test them here)."""
    # Parsing and analysis build millions of small objects and no reference cycles worth
    # collecting meanwhile: the cycle collector would walk them again and again (ast.parse of a
    # 5 MB file: 8 s with it, 3 s without).
    collecting = gc.isenabled()
    gc.disable()
    built: list[NameResolver] = []  # released at the end: their trees are freed at once
    try:
        if path.endswith(".ipynb"):
            return _notebook(data, path, rules, options, mode, aliases or {}, prefiltered, built)
        return _process(data, path, rules, options, mode, module, aliases or {}, prefiltered, built)
    except RecursionError:
        return failed(path, "too deeply nested to analyse (RecursionError); file left untouched")
    except MemoryError:
        return failed(path, "ran out of memory analysing it; file left untouched")
    except (SourceError, DataError) as exc:
        return failed(path, str(exc))
    except (EditError, RuleDefinitionError) as exc:
        return failed(path, f"{exc}; file left untouched")
    except Exception as exc:  # a bug in a rule must not stop the run or damage the file
        return failed(path, f"internal error ({type(exc).__name__}: {exc}); file left untouched")
    finally:
        for resolver in built:
            resolver.release()
        nodes.release()
        if collecting:
            gc.enable()


def failed(path: str, reason: str, line: int | None = None, col: int | None = None) -> FileResult:
    """A file (or folder) that could not be processed; it does not count as parsed."""
    return FileResult(path, Status.FAILED, error=FileError(path, reason, line, col))


def _parse_fixed(text: str, path: str, rule: str) -> ast.Module:
    """The tree of a text ``rule``'s fixes made; `EditError` when it does not parse."""
    try:
        return _parse(text, path)
    except SyntaxError as exc:
        raise EditError(f"{rule} produced code that does not parse ({exc.msg})") from None


def _check_parses(text: str, path: str, rule: str) -> None:
    """`_parse_fixed` where no rule reads the tree after: compiled, not kept as Python
    objects (a third less memory at its peak on a 10 MB file)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        # (compiling checks more than parsing does: a top-level `await` in a notebook, a
        # `return` outside a function; the parse decides)
        _parse_fixed(text, path, rule)


def _parse(text: str, path: str) -> ast.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarnings about the user's code are not ours
        return ast.parse(text, filename=path)


def _wanted(rule: type[Rule]) -> Callable[[str], bool]:
    return _wanted_files(rule.suffixes, rule.file_patterns)


@lru_cache(maxsize=64)
def _wanted_files(suffixes: tuple[str, ...], patterns: tuple[str, ...]) -> Callable[[str], bool]:
    return wanted_files(suffixes, patterns)


def reads(rule: type[Rule], path: str) -> bool:
    """Whether ``rule`` reads the file at ``path`` (by suffix or file pattern)."""
    return _wanted(rule)(path)


def _process(
    data: bytes,
    path: str,
    rules: Sequence[type[Rule]],
    options: RunOptions,
    mode: Mode,
    module: tuple[str | None, bool],
    aliases: Mapping[str, str],
    prefiltered: Collection[str] | None,
    built: list[NameResolver],
    python: bool | None = None,
) -> FileResult:
    source = decode_source(data)
    text = source.text
    is_python = is_python_path(path) if python is None else python
    # Old Mac line endings (a lone CR): LibCST cannot print them back, so such a file is
    # migrated with LF endings and given its CRs back at the end; a file that mixes lone CRs
    # with other endings cannot be rewritten without changing them (refused where it has fixes).
    lone_cr = "\r" in text and _LONE_CR.search(text) is not None
    cr_only = lone_cr and "\n" not in text
    if cr_only:
        text = text.replace("\r", "\n")
    every = {name for c in rules for name in (c.code, c.id)}
    rules = [c for c in rules if reads(c, path)]
    own_tree = is_python and in_flashinfer(module[0])
    if prefiltered is None:
        prefiltered = must_see(tests_of(rules, options), data, path, options) or ()
    # (in FlashInfer's own tree, relative imports reach its API: every rule that resolves
    # names reads every module a rule must see)
    wanted = [c for c in rules if c.id in prefiltered or (own_tree and c.reaches_by_import)]
    tree: ast.Module | None = None
    if is_python:
        try:
            tree = _parse(text, path)
        except SyntaxError as exc:
            msg = exc.msg or "invalid syntax"
            return failed(path, f"syntax error: {msg}; file left untouched", exc.lineno, exc.offset)
        except ValueError as exc:  # e.g. NUL bytes
            return failed(path, f"cannot parse: {exc}; file left untouched")

    result = FileResult(path, Status.UNCHANGED, parsed=True)
    original = text
    resolver: NameResolver | None = None
    named = [t for k, t in aliases.items() if export_parts(k)[1] in text] if is_python else []
    if named:
        # (a file that may import a re-export is seen by the rules that would see it if it
        # named the re-export's target itself: its import and the words of its path)
        stand_in = "\nimport flashinfer\n" + "\n".join(
            t.replace("()", "").replace("[]", "").replace(".", " ") for t in named
        )
        seen = must_see(tests_of(rules, options), data + stand_in.encode(), path, options)
        wanted += [c for c in rules if c not in wanted and c.id in (seen or ())]
    suppressions = Suppressions.of(text, is_python)
    asked: set[str] = set()  # what the resolvers looked up among the project's re-exports

    unparsed: str | None = None  # the rule whose fixes made the text not parsed yet
    gates: VersionGates | None = None  # the text's tests of FlashInfer's version
    for cls in rules:
        if cls not in wanted:
            continue
        if unparsed is not None:
            tree, unparsed = _parse_fixed(text, path, unparsed), None
        ctx = FileContext(path, text, tree, options, module[0], module[1], resolver, aliases)
        rule = cls()
        ctx.rule = rule
        rule.find(ctx)
        if tree is not None:
            if gates is None or gates.tree is not tree:
                gates = VersionGates(text, tree, options)
            gates.settle(cls, ctx)
        if cls.fix_availability is FixAvailability.ALWAYS and any(
            d.safety is None for d in ctx.diagnostics
        ):
            raise RuleDefinitionError(
                f"rule {cls.code} is declared to fix every site (fix_availability ALWAYS) but"
                " reported one without a fix"
            )
        # (each fix alone, in the text as read: a later rule's fixes cannot be told there)
        details = (
            fix_replacements(cls, text, tree) if options.fix_details and text == original else None
        )
        diagnostics, fixes = settle(ctx, suppressions, options.unsafe_fixes, details)
        made = ctx.built_resolver
        if made is not None and made is not resolver:
            built.append(made)
        if resolver is None and made is not None and text == original:
            result.exports = made.exports(star_names(str(options.from_version)))
        if made is not None:
            asked |= made.asked
        resolver = made  # shared by the next rule while the text is unchanged
        result.diagnostics.extend(diagnostics)
        if fixes and lone_cr and not cr_only:
            raise EditError(
                "its line endings mix lone CRs with others, which cannot be kept through a rewrite"
            )
        if mode is Mode.CHECK or not fixes:
            continue
        new_text = apply_fixes(text, tree, fixes, cls, options.splice_text)
        if is_python:
            # the old tree is done with: it is freed before the new text is parsed (by the next
            # rule that reads it, or checked at the end), so that a large file is held once
            while built:
                built.pop().release()
            nodes.release()
            ctx = tree = made = gates = None  # type: ignore[assignment]
            unparsed = cls.id
        else:
            _check_still_valid(path, text, new_text, cls.id)
        text = new_text
        suppressions = Suppressions.of(text, is_python)
        resolver = None
    if unparsed is not None:
        _check_parses(text, path, unparsed)
    if is_python:
        skipped = (c.id for c in rules if c not in wanted)
        result.lookups = Lookups(frozenset(asked), frozenset(skipped))
    if text == original and options.unused_suppressions:
        # Lines have not moved, and every rule that reads the file had its say (a rule the
        # prefilter skipped has no site here): a comment that silenced nothing is stale.
        ran = {name for c in rules for name in (c.code, c.id)}
        result.diagnostics.extend(suppressions.unused(path, ran, every))
    if text != original:
        if cr_only:
            original, text = original.replace("\n", "\r"), text.replace("\n", "\r")
        result.status = Status.CHANGED
        result.old_text, result.new_text = original, text
        result.old_bytes, result.new_bytes = data, source.encode(text)
    return result


# what a fix in a notebook that cannot be written back says instead
_NOTEBOOK_KEPT = say(
    " (not rewritten here: the notebook's JSON layout cannot be written back byte for byte;"
    " make the change in Jupyter)",
    "（这里没有改写：这个 notebook 的 JSON 布局无法逐字节写回；请在 Jupyter 中修改）",
)


def _notebook(
    data: bytes,
    path: str,
    rules: Sequence[type[Rule]],
    options: RunOptions,
    mode: Mode,
    aliases: Mapping[str, str],
    prefiltered: Collection[str] | None,
    built: list[NameResolver],
) -> FileResult:
    """A notebook's code cells, run as one module (`migrate_fi.editing.notebooks`): its sites placed
    in their cells, its fixes written back into them."""
    from migrate_fi.editing.notebooks import Notebook  # (here: most runs meet no notebook)

    notebook = Notebook.parse(data)
    if not notebook.cells:
        return FileResult(path, Status.UNCHANGED)
    module = notebook.module.encode("utf-8")
    inner = _process(module, path, rules, options, mode, (None, False), aliases, None, built, True)
    if inner.error is not None:
        where = notebook.place(inner.error.line) if inner.error.line is not None else None
        reason = (
            f"cell {where[0]}, line {where[1]}: {inner.error.reason}"
            if where
            else inner.error.reason
        )
        return failed(path, reason)
    out = FileResult(path, inner.status, parsed=inner.parsed, lookups=inner.lookups)
    places = notebook.file_places()
    writable = notebook.layout is not None
    for d in inner.diagnostics:
        cell, line = notebook.place(d.line)
        end = notebook.place(d.end_line) if d.end_line is not None else None
        file_line = places.get((cell, line), (1, 0))[0]
        file_end = places.get(end, (file_line, 0))[0] if end is not None else None
        changes: dict[str, object] = {}
        if not writable and d.safety is not None:  # (said as it is: apply cannot write it)
            changes = {
                "safety": None,
                "applies": False,
                "message": d.message + _NOTEBOOK_KEPT.en,
                "message_zh": d.message_zh + _NOTEBOOK_KEPT.zh if d.message_zh else "",
            }
        out.diagnostics.append(
            d._replace(
                line=file_line,
                col=d.col + notebook.shift(cell, line),
                end_line=file_end,
                end_col=None,
                cell=cell,
                cell_line=line,
                replacements=(),
                **changes,  # type: ignore[arg-type]
            )
        )
    if not writable and out.status is Status.CHANGED:
        out.status = Status.UNCHANGED  # (its fixes were said as sites for a person)
    elif inner.status is Status.CHANGED and inner.new_text is not None:
        new = notebook.write(inner.new_text)
        if new == data:
            out.status = Status.UNCHANGED
        else:
            out.old_bytes, out.new_bytes = data, new
            out.old_text, out.new_text = data.decode("utf-8"), new.decode("utf-8")
    return out


def _check_still_valid(path: str, old: str, new: str, rule: str) -> None:
    """A TOML or JSON file that parsed before must parse after a rule edited it."""
    import json

    from migrate_fi.base.toml import tomllib

    loaders = {".toml": tomllib().loads, ".json": json.loads}
    load = loaders.get(os.path.splitext(path)[1])
    if load is None:
        return
    try:
        load(old)
    except ValueError:
        return  # it was not valid before either: nothing to compare
    try:
        load(new)
    except ValueError as exc:
        raise EditError(f"{rule} produced a file that no longer parses ({exc})") from None


def star_names(version: str) -> Callable[[str], list[str]]:
    """The names ``from <FlashInfer module> import *`` gives on ``version``, as its API data
    lists them: the module's public names and those of its own star imports."""

    def names(module: str) -> list[str]:
        from migrate_fi.api.differ import api_for

        api = api_for(version)
        found = set(api.names(module))
        for star in api.modules.get(module, {}).get("stars", ()):
            found.update(api.names(star))
        return sorted(n for n in found if not n.startswith("_"))

    return names
