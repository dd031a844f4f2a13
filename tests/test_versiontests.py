"""On which FlashInfer releases a line runs, read from the tests of the version before it
(`migrate_fi.analysis.versiontests`), and what the run makes of a site there
(`migrate_fi.framework.gating`)."""

from __future__ import annotations

import ast
import gc
import textwrap

import pytest
from packaging.version import Version

from migrate_fi.analysis.nodes import parents
from migrate_fi.analysis.resolver import NameResolver
from migrate_fi.analysis.versiontests import Releases, may_test_version
from migrate_fi.framework.rule import RunOptions
from migrate_fi.run.pipeline import Mode, process_source
from migrate_fi.run.registry import all_rules

RELEASES = tuple(Version(v) for v in ("0.6.8.post1", "0.6.10", "0.6.11", "0.7.0", "0.7.4"))
EVERY = frozenset(str(r) for r in RELEASES)

HEADER = """\
import importlib.metadata
import flashinfer
import flashinfer as fi
import pkg_resources
import torch
from flashinfer import __version__ as fv
from packaging import version
from packaging.version import Version
"""


def reached(body: str) -> frozenset[str]:
    """The releases on which the statement marked `target()` runs."""
    source = HEADER + textwrap.dedent(body)
    tree = ast.parse(source)
    resolver = NameResolver(tree)
    call = next(
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "target"
    )
    up = parents(tree)
    whole = Releases(resolver, tree, RELEASES).reached(call, up)
    # (read from the text's lines that name a version, as the run does, and from every node)
    by_lines = Releases(resolver, tree, RELEASES, source).reached(call, up)
    assert by_lines == whole
    return frozenset(str(r) for r in whole)


@pytest.mark.parametrize(
    ("body", "on"),
    [
        (
            'if Version(flashinfer.__version__) >= Version("0.6.11"):\n    target()\n',
            "0.6.11 0.7.0 0.7.4",
        ),
        (
            'if Version(fi.__version__) >= Version("0.6.11"):\n    pass\nelse:\n    target()\n',
            "0.6.8.post1 0.6.10",
        ),
        (
            'if version.parse(fv) < version.parse("0.7.0"):\n    raise ImportError\ntarget()\n',
            "0.7.0 0.7.4",
        ),
        (
            'def f():\n    if Version(fv) < Version("0.7.0"):\n        return None\n    return target()\n',
            "0.7.0 0.7.4",
        ),
        (
            'NEW = Version(flashinfer.__version__) >= Version("0.6.11")\nif not NEW:\n    target()\n',
            "0.6.8.post1 0.6.10",
        ),
        (
            'V = Version(importlib.metadata.version("flashinfer-python"))\nassert V >= Version("0.7.0")\ntarget()\n',
            "0.7.0 0.7.4",
        ),
        (
            'if tuple(int(p) for p in flashinfer.__version__.split(".")[:3]) < (0, 7, 0):\n    target()\n',
            "0.6.8.post1 0.6.10 0.6.11",
        ),
        ("if Version(fv).release >= (0, 6, 11):\n    target()\n", "0.6.11 0.7.0 0.7.4"),
        # a string compared with a release means a version (FI009 makes it compare so)
        ('if fv >= "0.6.10":\n    target()\n', "0.6.10 0.6.11 0.7.0 0.7.4"),
        (
            'if pkg_resources.get_distribution("flashinfer").version == "0.7.4":\n    target()\n',
            "0.7.4",
        ),
        ('x = target() if Version(fv) >= Version("0.7.0") else None\n', "0.7.0 0.7.4"),
        (
            'x = None if Version(fv) >= Version("0.7.0") else target()\n',
            "0.6.8.post1 0.6.10 0.6.11",
        ),
        (
            'if Version(fv) >= Version("0.6.10") and Version(fv) < Version("0.7.0"):\n    target()\n',
            "0.6.10 0.6.11",
        ),
        ('if (v := Version(fv)) >= Version("0.7.0"):\n    target()\n', "0.7.0 0.7.4"),
        (
            'match x:\n    case 1 if Version(fv) < Version("0.6.11"):\n        target()\n',
            "0.6.8.post1 0.6.10",
        ),
        ('y = [target() for i in x if Version(fv) >= Version("0.7.0")]\n', "0.7.0 0.7.4"),
        ('while Version(fv) < Version("0.6.11"):\n    target()\n', "0.6.8.post1 0.6.10"),
        (
            'if Version("0.6.10") <= Version(fv) < Version("0.7.0"):\n    target()\n',
            "0.6.10 0.6.11",
        ),
        # an `and` with a test that may go either way: only the version part is known
        (
            'if torch.cuda.is_available() and Version(fv) >= Version("0.7.0"):\n    target()\n',
            "0.7.0 0.7.4",
        ),
    ],
)
def test_a_test_of_the_version_says_where_code_runs(body: str, on: str) -> None:
    assert reached(body) == frozenset(on.split())


@pytest.mark.parametrize(
    "body",
    [
        # another library's version
        'if Version(torch.__version__) >= Version("2.6"):\n    target()\n',
        'if version.parse(importlib.metadata.version("torch")) < version.parse("2.6"):\n    target()\n',
        # a name assigned twice: which value holds is not known
        'NEW = Version(fv) >= Version("0.6.11")\nif torch.cuda.is_available():\n    NEW = False\nif NEW:\n    target()\n',
        # an `or` with a test that may go either way
        'if torch.cuda.is_available() or Version(fv) >= Version("0.7.0"):\n    target()\n',
        # a test not read: a function of the project, a version that is no constant
        "def new():\n    return True\nif new():\n    target()\n",
        "def f(wanted):\n    if Version(fv) >= Version(wanted):\n        target()\n",
        # a case with no guard: the pattern decides
        'match x:\n    case 1 if Version(fv) < Version("0.6.11"):\n        pass\n    case _:\n        target()\n',
        # Python refuses to order a Version and a tuple: not a test the code can make
        "if Version(fv) >= (0, 7):\n    target()\n",
    ],
)
def test_any_other_test_runs_the_code_everywhere(body: str) -> None:
    assert reached(body) == EVERY


def test_a_file_is_read_only_when_it_may_test_the_version() -> None:
    assert may_test_version('if flashinfer.__version__ >= "0.6.11": pass')
    assert may_test_version('v = version("flashinfer-python")\nok = v >= "0.6"')
    assert may_test_version("x = tuple(map(int, flashinfer.__version__.split('.'))) < (0, 7)")
    assert not may_test_version("print(torch.__version__)")  # (no release written out)
    assert not may_test_version('logging.getLogger("flashinfer").info("0.6.11")')


def test_holds_on() -> None:
    tree = ast.parse(HEADER + 'if Version(fv) >= Version("0.7.0"):\n    pass\n')
    test = tree.body[-1].test  # type: ignore[attr-defined]
    reader = Releases(NameResolver(tree), tree, RELEASES)
    assert reader.holds_on(test, Version("0.7.4")) is True
    assert reader.holds_on(test, Version("0.6.11")) is False
    other = ast.parse("if flag:\n    pass\n")
    unknown = Releases(NameResolver(other), other, RELEASES)
    assert unknown.holds_on(other.body[0].test, Version("0.7.4")) is None  # type: ignore[attr-defined]


# ---------------------------------------------------------------- what the run makes of it

GATED = b"""\
import flashinfer
from flashinfer import fp4_quantize
from packaging.version import Version

NEW = Version(flashinfer.__version__) >= Version("0.6.11")


def quantize(x, gs):
    if NEW:
        return fp4_quantize(x, gs, 16, False, True, False, False, True)
    return fp4_quantize(x, gs, 16, False, True, False, True)


def everywhere(x, gs):
    return fp4_quantize(x, gs, 16, False, True, False, True)
"""


def _run(data: bytes, from_v: str, to_v: str, mode: Mode = Mode.CHECK):  # type: ignore[no-untyped-def]
    rules = [c for c in all_rules() if c.code == "FI001"]
    options = RunOptions(from_version=Version(from_v), to_version=Version(to_v))
    return process_source(data, "/tmp/gated.py", rules, options, mode)


def test_only_code_that_runs_on_both_releases_is_migrated() -> None:
    result = _run(GATED, "0.6.8.post1", "0.6.11", Mode.APPLY)
    assert [d.line for d in result.diagnostics] == [15]
    assert result.new_text is not None
    assert "False, False, True)" in result.new_text  # (written for 0.6.11: as it was)
    assert "False, True, False, True)\n\n\ndef" in result.new_text  # (the old branch: as it was)
    assert "everywhere" in result.new_text and "enable_pdl=True)\n" in result.new_text


def test_without_a_version_test_every_call_is_migrated() -> None:
    plain = GATED.replace(b"if NEW:", b"if x.is_cuda:")
    result = _run(plain, "0.6.8.post1", "0.6.11")
    assert [d.line for d in result.diagnostics] == [10, 11, 15]


def test_a_range_inside_the_branch_migrates_it_as_any_code() -> None:
    # from 0.6.11 on, `NEW` holds on both releases: the branch is migrated, the old one is not
    result = _run(GATED, "0.6.11", "0.7.4")
    assert all(d.line != 11 for d in result.diagnostics)


def test_a_site_after_other_characters_on_its_line_is_placed() -> None:
    # (a site's column counts characters, the tree's bytes: "é" is two of them)
    data = GATED.replace(
        b"    if NEW:\n        return fp4_quantize(x, gs, 16, False, True, False, False, True)",
        "    if NEW:\n        s = 'é'; return fp4_quantize(x, gs, 16, False, True, False, False, True)".encode(),
    )
    assert data != GATED
    result = _run(data, "0.6.8.post1", "0.6.11")
    assert [d.line for d in result.diagnostics] == [15]


def test_a_site_on_a_decorator_line_is_placed_in_its_branch() -> None:
    # (a def's span starts at `def`: a site on its decorator is placed by the block around it)
    data = b"""\
import flashinfer
from packaging.version import Version

if Version(flashinfer.__version__) < Version("0.6.11"):

    @flashinfer.fp4_quantize(1, 2, 16, False, True, False, True)
    def old():
        pass
"""
    result = _run(data, "0.6.8.post1", "0.6.11")
    assert result.diagnostics == []  # (the branch 0.6.11 never runs)
    assert len(_run(data.replace(b"<", b">="), "0.6.8.post1", "0.6.11").diagnostics) == 0
    assert (
        len(
            _run(
                data.replace(b'Version(flashinfer.__version__) < Version("0.6.11")', b"flag"),
                "0.6.8.post1",
                "0.6.11",
            ).diagnostics
        )
        == 1
    )


def test_the_analysis_of_a_file_that_tests_its_version_leaves_no_cycle() -> None:
    # (the engine disables the cycle collector while it analyses: anything a cycle holds, the
    # file's tree among it, would stay until the collector ran, file after file)
    # (one whose text reads a version where no test does: its names are never resolved)
    mentions = b"import torch\nLOG = (torch.__version__, '0.6.11')\n" + GATED.replace(
        b"if NEW:", b"if x.is_cuda:"
    )
    for data in (GATED, mentions):
        gc.collect()
        gc.disable()
        try:
            result = _run(data, "0.6.8.post1", "0.7.4")
            left = gc.collect()
        finally:
            gc.enable()
        assert result.diagnostics
        assert left == 0


def test_a_site_under_a_node_with_no_place_of_its_own_is_placed() -> None:
    # (`case` clauses and `with` items carry no line numbers: the site is found through them)
    data = b"""\
import flashinfer
from flashinfer import fp4_quantize
from packaging.version import Version


def matched(x, gs, mode, ctx):
    match mode:
        case "new" if Version(flashinfer.__version__) >= Version("0.6.11"):
            return fp4_quantize(x, gs, 16, False, True, False, False, True)
    if Version(flashinfer.__version__) >= Version("0.6.11"):
        with ctx(fp4_quantize(x, gs, 16, False, True, False, False, True)) as y:
            return y
"""
    assert _run(data, "0.6.8.post1", "0.6.11").diagnostics == []
