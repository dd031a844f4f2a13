"""On which FlashInfer releases code runs, read from the tests of FlashInfer's version made
before it.

Projects that support several releases test the installed one: ``if
Version(flashinfer.__version__) >= Version("0.6.11"):`` around a call written for 0.6.11,
``if version.parse(flashinfer.__version__) < version.parse("0.7.0"): return`` before code
written for 0.7.0, ``tuple(int(p) for p in flashinfer.__version__.split(".")[:3]) < (0, 7, 1)``.
A call in such a branch is written for the releases the test lets through, not for the release
the project pins.

`Releases.reached` answers with the releases (of those given) on which a node may run: all of
them unless a test the analysis reads says otherwise. What it reads, on the way from the node up
to the module (`migrate_fi.analysis.nodes.tests_before`): an ``if``, ``x if c else y``,
``while`` or ``a and b`` the node is inside, an ``assert`` before it, and ``if c: <ends in
raise, return, break or continue>`` before it in the same block. The tests it reads compare
FlashInfer's version with a constant (``<``, ``<=``, ``>``, ``>=``, ``==``, ``!=``): as
versions, also where the code compares strings (it means versions, and FI009 makes it compare
them so where strings order releases wrongly); ``.release`` and the tuple of a version's numbers
as tuples; also through a name assigned such a test or such a value once, and
``not``, ``and``, ``or`` of them. FlashInfer's version is ``flashinfer.__version__`` (through
any alias or ``from flashinfer import __version__``), ``importlib.metadata.version(...)`` or
``pkg_resources.get_distribution(...).version`` of its distribution. Anything else is a test
that may go either way on any release: never a guess.
"""

from __future__ import annotations

import ast
import bisect
from collections.abc import Callable, Collection, Iterator, Sequence

from packaging.version import InvalidVersion, Version

from migrate_fi.analysis import nodes
from migrate_fi.analysis.nodes import COMPARE, tests_before
from migrate_fi.analysis.resolver import NameResolver
from migrate_fi.analysis.scopes import Scope
from migrate_fi.analysis.values import assigned_values, bound_values
from migrate_fi.base import patterns

__all__ = ["Releases", "may_test_version", "reads_version"]

_MAX_DEPTH = 4
# what names FlashInfer's distribution in importlib.metadata.version(...) and friends
DISTRIBUTIONS = frozenset({"flashinfer-python", "flashinfer_python", "flashinfer"})
_METADATA = frozenset(
    {"importlib.metadata.version", "importlib_metadata.version", "pkg_resources.get_distribution"}
)
_VERSION_TYPES = frozenset(
    {"packaging.version.Version", "packaging.version.parse", "pkg_resources.parse_version"}
)
# what a file that reads FlashInfer's version holds (`reads_version`): `__version__`, or its
# distribution's name given to `version(...)` or `get_distribution(...)`
_READS = patterns.compile(
    r"""__version__|(?:version|get_distribution)\(\s*["']flashinfer(?:[-_]python)?["']"""
)

# a value computed from the installed release: its value on each release
_Value = Callable[[Version], object]
# what a test holds on the releases: (the indexes where it may be true, where it may be false)
_Truth = tuple[frozenset[int], frozenset[int]]


_DISTRIBUTION = patterns.compile(r"""["']flashinfer(?:[-_]python)?["']""")
_CALL_BEFORE = patterns.compile(r"(?:version|get_distribution)\(\s*$")
# a release written out: a string ("0.6.11", 'v0.7') or the tuple of its numbers ((0, 6, 11))
_RELEASE = patterns.compile(r"""["']v?\d+\.\d+|\(\s*\d+\s*,\s*\d+\s*[,)]""")


def may_test_version(text: str) -> bool:
    """Whether the text may test FlashInfer's version at all: it reads a version, and writes
    a release out (cheap: before anything is built)."""
    # (plain searches first: a pattern tried at every position cost a third of a millisecond a
    # file of FlashInfer's tree, where "version(" is common and a version read is not)
    if "__version__" not in text and not _reads_distribution(text):
        return False
    return _RELEASE.search(text) is not None


def _reads_distribution(text: str) -> bool:
    """Whether the text calls ``version(...)`` or ``get_distribution(...)`` of FlashInfer's
    distribution: a quoted name of it, right after such a call's parenthesis."""
    if "version(" not in text and "get_distribution(" not in text:
        return False
    for found in _DISTRIBUTION.finditer(text):
        if _CALL_BEFORE.search(text[max(0, found.start() - 40) : found.start()]):
            return True
    return False


def reads_version(resolver: NameResolver, node: ast.expr, scope: Scope, depth: int = 0) -> bool:
    """``node`` is FlashInfer's installed version, as a string."""
    if depth > 3:
        return False
    if isinstance(node, ast.Attribute) and node.attr == "__version__":
        return resolver.resolve(node.value, scope).qualnames == {"flashinfer"}
    if isinstance(node, ast.Attribute) and node.attr == "version":  # pkg_resources
        return _metadata_call(resolver, node.value, scope)
    if isinstance(node, ast.Call):
        return _metadata_call(resolver, node, scope)
    if isinstance(node, ast.Name):
        if resolver.resolve(node, scope).qualnames == {"flashinfer.__version__"}:
            return True  # (`from flashinfer import __version__ as v`)
        values = assigned_values(resolver, node.id, scope)
        return bool(values) and all(
            reads_version(resolver, v, s, depth + 1) for v, s in values or ()
        )
    return False


def _metadata_call(resolver: NameResolver, node: ast.expr, scope: Scope) -> bool:
    if not isinstance(node, ast.Call) or len(node.args) != 1:
        return False
    name = node.args[0]
    if not isinstance(name, ast.Constant) or name.value not in DISTRIBUTIONS:
        return False
    found = resolver.resolve(node.func, scope).qualnames
    return bool(found) and found <= _METADATA


class Releases:
    """The version tests of one file, read against ``releases`` (oldest first)."""

    def __init__(
        self,
        resolver: NameResolver | Callable[[], NameResolver],
        tree: ast.Module,
        releases: Sequence[Version],
        text: str | None = None,
    ):
        # (or what makes it: a file whose tests read no version never needs its names resolved)
        self._resolver = resolver
        self.tree = tree
        # the tree's text: what finds the lines that read the version (None: every node of the
        # tree is read, the reference the tests compare that reading with)
        self.text = text
        self.releases = tuple(releases)
        self._every = frozenset(range(len(self.releases)))
        self._names: frozenset[str] | None = None
        self._starts: list[int] | None = None  # (where each line after the first starts)
        self._lines: frozenset[int] | None = None  # where they are written (None: not known)
        self._tested: dict[int, _Truth] = {}  # each test's truth, by id

    def _line_starts(self) -> list[int]:
        """Where each line of the text after the first starts (`bisect_right` of an offset,
        plus one: its line, 1-based); worked out once."""
        if self._starts is None:
            assert self.text is not None
            self._starts = [m.end() for m in patterns.LINE_BREAK.finditer(self.text)]
        return self._starts

    def line(self, number: int) -> str | None:
        """The text of line ``number`` (1-based, as `ast` counts lines), without its ending;
        None outside the text (or with no text)."""
        if self.text is None:
            return None
        starts = self._line_starts()
        if not 0 < number <= len(starts) + 1:
            return None
        begin = starts[number - 2] if number > 1 else 0
        end = starts[number - 1] if number <= len(starts) else len(self.text)
        return self.text[begin:end].rstrip("\r\n")

    @property
    def resolver(self) -> NameResolver:
        if not isinstance(self._resolver, NameResolver):
            self._resolver = self._resolver()
        return self._resolver

    def _anchored(self, test: ast.expr) -> bool:
        """Whether ``test`` may read the version at all, by its words (cheap: most tests of a
        file do not): `__version__`, a distribution's name, or a name assigned from them."""
        if self._names is None:
            self._names, self._lines = _version_names(self.tree, self.text, self._line_starts)
        return _mentions(test, self._names)

    def _test(self, test: ast.expr) -> _Truth:
        found = self._tested.get(id(test))
        if found is None:
            if self._anchored(test):
                found = self._truth(test, self.resolver.scope_at(test), 0)
            else:
                found = (self._every, self._every)
            self._tested[id(test)] = found
        return found

    def reached(self, node: ast.AST, up: dict[int, ast.AST]) -> frozenset[Version]:
        """The releases on which ``node`` may run (all of them where no test is read);
        ``up``: the parents of the node and of its ancestors (`nodes.parents`, or those of the
        descent to it)."""
        on = self._every
        for test, holds in tests_before(node, up):
            true, false = self._test(test)
            on &= true if holds else false
        return frozenset(self.releases[i] for i in on)

    def holds_on(self, test: ast.expr, release: Version) -> bool | None:
        """Whether ``test`` holds on ``release`` (one of the releases read), as far as it is a
        test of the version; None where it may go either way."""
        i = self.releases.index(release)
        true, false = self._test(test)
        if i in true and i in false:
            return None
        return i in true

    def branches(self) -> list[frozenset[Version]]:
        """For every test of the version in the file, the releases where it holds and those
        where it fails (what the code in its branches is written for)."""
        if self._names is None:
            self._names, self._lines = _version_names(self.tree, self.text, self._line_starts)
        # (only the tests on the lines that name a version or a name holding one, where the
        # text says which: not every node of a large file)
        found = (
            nodes.walk(self.tree) if self._lines is None else nodes.on_lines(self.tree, self._lines)
        )
        out: list[frozenset[Version]] = []
        for node in found:
            if isinstance(node, ast.If | ast.IfExp | ast.While | ast.Assert):
                true, false = self._test(node.test)
                if true != self._every or false != self._every:
                    out += [frozenset(self.releases[i] for i in s) for s in (true, false)]
        return out

    # ------------------------------------------------------------ tests

    def _truth(self, test: ast.expr, scope: Scope, depth: int) -> _Truth:
        unknown = (self._every, self._every)
        if depth > _MAX_DEPTH:
            return unknown
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            true, false = self._truth(test.operand, scope, depth + 1)
            return false, true
        if isinstance(test, ast.BoolOp):
            parts = [self._truth(v, scope, depth + 1) for v in test.values]
            if isinstance(test.op, ast.And):
                true = self._every
                for t, _ in parts:
                    true &= t
                return true, frozenset().union(*(f for _, f in parts))
            false = self._every
            for _, f in parts:
                false &= f
            return frozenset().union(*(t for t, _ in parts)), false
        if isinstance(test, ast.Compare):
            return self._compared(test, scope, depth)
        if isinstance(test, ast.Name | ast.Attribute):
            values = bound_values(self.resolver, test, scope)
            if not values or len(values) != 1 or isinstance(values[0][0], tuple):
                return unknown  # (a name assigned more than once: which value holds is unknown)
            value, inner = values[0]
            assert not isinstance(value, tuple)
            return self._truth(value, inner, depth + 1)
        return unknown

    def _compared(self, test: ast.Compare, scope: Scope, depth: int) -> _Truth:
        """``a < b`` (each pair of a chain must hold) where a side is the installed release."""
        unknown = (self._every, self._every)
        sides = [test.left, *test.comparators]
        values = [self._value(side, scope, depth + 1) for side in sides]
        if all(isinstance(v, tuple) for v in values):
            return unknown  # (no side reads the release)
        true: set[int] = set()
        false: set[int] = set()
        for i, release in enumerate(self.releases):
            try:
                holds = all(
                    COMPARE[type(op)](
                        _at(a, release, _at(b, release)), _at(b, release, _at(a, release))
                    )
                    for op, a, b in zip(test.ops, values, values[1:], strict=False)
                )
            except (KeyError, TypeError, ValueError):
                return unknown  # (`in`, `is`, or a comparison Python refuses: not read)
            (true if holds else false).add(i)
        return frozenset(true), frozenset(false)

    def _value(self, expr: ast.expr, scope: Scope, depth: int) -> _Value | tuple[object] | None:
        """``expr`` as a function of the installed release, or (as a 1-tuple) a constant, or
        None where it is neither."""
        if depth > _MAX_DEPTH:
            return None
        constant = _constant(expr)
        if constant is not None:
            return constant
        if isinstance(expr, ast.NamedExpr):  # (`(v := Version(...)) >= ...`: its value)
            return self._value(expr.value, scope, depth + 1)
        resolver = self.resolver
        if reads_version(resolver, expr, scope):
            # (compared with a string, as a version: what the code means, and what FI009 makes
            # of a string comparison that orders releases wrongly)
            return _as_version
        if isinstance(expr, ast.Call) and len(expr.args) == 1 and not expr.keywords:
            func = resolver.resolve(expr.func, scope).qualnames
            if func and func <= _VERSION_TYPES:  # `Version(x)`, `version.parse(x)`
                inner = self._value(expr.args[0], scope, depth + 1)
                if isinstance(inner, tuple) and isinstance(inner[0], str):
                    try:
                        return (Version(inner[0]),)
                    except InvalidVersion:
                        return None
                return _as_version if inner is _as_version else None
            numbers = _numbers_of(resolver, expr, scope)
            if numbers is not None:
                return numbers
        if isinstance(expr, ast.Attribute) and expr.attr in ("release", "major", "minor", "micro"):
            inner = self._value(expr.value, scope, depth + 1)
            if inner is _as_version:
                attr = expr.attr
                return lambda v: getattr(v, attr)
            return None
        if isinstance(expr, ast.Name | ast.Attribute):
            values = bound_values(resolver, expr, scope)
            if values and len(values) == 1 and not isinstance(values[0][0], tuple):
                value, inner_scope = values[0]
                assert not isinstance(value, tuple)
                return self._value(value, inner_scope, depth + 1)
        return None


def _as_version(release: Version) -> Version:
    return release


def _at(value: _Value | tuple[object] | None, release: Version, other: object = None) -> object:
    """The value on ``release``; a string compared with a version, as a version."""
    if value is None:
        raise ValueError("not read")
    found = value[0] if isinstance(value, tuple) else value(release)
    if isinstance(found, str) and isinstance(other, Version):
        return Version(found)  # (InvalidVersion is a ValueError: the test is not read)
    return found


def _constant(expr: ast.expr) -> tuple[object] | None:
    """A string, a number, or a tuple of numbers, as a 1-tuple."""
    if (
        isinstance(expr, ast.Constant)
        and isinstance(expr.value, str | int)
        and not isinstance(expr.value, bool)
    ):
        return (expr.value,)
    if isinstance(expr, ast.Tuple) and all(
        isinstance(e, ast.Constant) and type(e.value) is int for e in expr.elts
    ):
        return (tuple(e.value for e in expr.elts),)  # type: ignore[attr-defined]
    return None


def _numbers_of(resolver: NameResolver, call: ast.Call, scope: Scope) -> _Value | None:
    """``tuple(int(p) for p in <version>.split(".")[:N])`` (or ``map(int, ...)``): the
    release's first N numbers."""
    if not _called(call, "tuple", 1) or resolver.lookup("tuple", scope) is not None:
        return None  # (not the builtin: a `tuple` of the module's own)
    arg = call.args[0]
    if isinstance(arg, ast.GeneratorExp) and len(arg.generators) == 1:
        gen, elt = arg.generators[0], arg.elt
        if not (
            _called(elt, "int", 1)
            and isinstance(gen.target, ast.Name)
            and isinstance(elt.args[0], ast.Name)  # type: ignore[attr-defined]
            and elt.args[0].id == gen.target.id  # type: ignore[attr-defined]
            and not gen.ifs
        ):
            return None
        source = gen.iter
    elif _called(arg, "map", 2) and isinstance(arg.args[0], ast.Name) and arg.args[0].id == "int":  # type: ignore[attr-defined]
        source = arg.args[1]  # type: ignore[attr-defined]
    else:
        return None
    count: int | None = None
    if isinstance(source, ast.Subscript) and isinstance(source.slice, ast.Slice):
        s = source.slice
        if s.lower is not None or s.step is not None or not isinstance(s.upper, ast.Constant):
            return None
        if type(s.upper.value) is not int:
            return None
        count, source = s.upper.value, source.value
    if not (
        isinstance(source, ast.Call)
        and isinstance(source.func, ast.Attribute)
        and source.func.attr == "split"
        and len(source.args) == 1
        and isinstance(source.args[0], ast.Constant)
        and source.args[0].value == "."
        and reads_version(resolver, source.func.value, scope)
    ):
        return None
    length = count

    def numbers(release: Version) -> tuple[int, ...]:
        parts = str(release).split(".")
        if length is not None:
            parts = parts[:length]
        return tuple(int(p) for p in parts)  # (ValueError on "8rc1", as the code would)

    return numbers


def _version_names(
    tree: ast.Module, text: str | None, line_starts: Callable[[], list[int]]
) -> tuple[frozenset[str], frozenset[int] | None]:
    """The names and attributes the file may hold FlashInfer's version in, or a test of it:
    imported as `__version__`, or assigned a value that mentions one (followed from name to
    name); and, given the tree's ``text``, the lines that write them or read a version (only
    the statements on those lines are looked at: in a large file, a few)."""
    if text is None:
        return _names_in(nodes.walk(tree), set()), None
    starts = line_starts()
    lines = {bisect.bisect_right(starts, m.start()) + 1 for m in _READS.finditer(text)}
    names: set[str] = set()
    asked = set(lines)
    while True:
        more = _names_in(nodes.on_lines(tree, asked), names) - names
        if not more:
            return frozenset(names), frozenset(lines)
        names |= more
        asked = set()
        for name in more:  # (the lines that write a new name: where it may be assigned on)
            asked.update(bisect.bisect_right(starts, at) + 1 for at in _written(text, name))
        asked -= lines
        lines |= asked


def _names_in(found: Sequence[ast.AST], names: set[str]) -> frozenset[str]:
    """Of the nodes ``found``, the names imported as `__version__` and the targets of the
    assignments whose value mentions a version read or one of ``names`` (to a fixed point)."""
    known = set(names)
    known |= {
        alias.asname or alias.name
        for node in found
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.name == "__version__"
    }
    pending = [n for n in known if n not in names]
    by_word: dict[str, list[list[str]]] = {}  # a word a value mentions -> the targets set so
    for node in found:
        if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
            continue
        targets = [
            t.id if isinstance(t, ast.Name) else t.attr
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(t, ast.Name | ast.Attribute)
        ]
        if _mentions(node.value, names):
            pending += targets  # (it reads the version, or a name known to hold it)
            continue
        for word in _words(node.value):
            by_word.setdefault(word, []).append(targets)
    while pending:
        name = pending.pop()
        known.add(name)
        for targets in by_word.pop(name, ()):
            pending += [t for t in targets if t not in known]
    return frozenset(known)


def _written(text: str, name: str) -> Iterator[int]:
    """Where ``name`` is written in ``text`` as a whole word (a plain search: a regex that
    tests the bytes around every position took a tenth of a second on FlashInfer's tree)."""
    at = text.find(name)
    while at >= 0:
        end = at + len(name)
        if (at == 0 or not _word_char(text[at - 1])) and (
            end == len(text) or not _word_char(text[end])
        ):
            yield at
        at = text.find(name, end)


def _word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


def _words(expr: ast.AST) -> set[str]:
    """The names and attribute names an expression mentions."""
    return {
        node.id if isinstance(node, ast.Name) else node.attr
        for node in ast.walk(expr)
        if isinstance(node, ast.Name | ast.Attribute)
    }


def _mentions(expr: ast.AST, names: Collection[str]) -> bool:
    """Whether ``expr`` may read a version by its words: `__version__`, one of ``names``, or
    ``version(...)``/``get_distribution(...)`` of FlashInfer's distribution (not any string
    "flashinfer": a logger's name is no version)."""
    for node in ast.walk(expr):
        if isinstance(node, ast.Attribute) and (node.attr == "__version__" or node.attr in names):
            return True
        if isinstance(node, ast.Name) and node.id in names:
            return True
        if (
            isinstance(node, ast.Call)
            and _function_word(node.func) in ("version", "get_distribution")
            and any(isinstance(a, ast.Constant) and a.value in DISTRIBUTIONS for a in node.args)
        ):
            return True
    return False


def _function_word(func: ast.expr) -> str | None:
    """The last word of what a call calls (`version` for `importlib.metadata.version`)."""
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else None


def _called(node: ast.AST, name: str, arguments: int) -> bool:
    """``node`` calls the plain name ``name`` with ``arguments`` positional arguments."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == name
        and len(node.args) == arguments
    )
