"""The prefilter: a rule's run triggers that come from the release data are worked out only once
a file contains the string the rule declares they all contain (`Rule.triggers_contain`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import migrate_fi.api.store
from migrate_fi.analysis.prefilter import LazyPrefilter, Prefilter
from migrate_fi.base.versions import parse_version
from migrate_fi.cli import cli
from migrate_fi.framework.rule import RuleDefinitionError, RunOptions
from migrate_fi.run.pipeline import _gate, matching, reads, rule_tests, run_triggers
from migrate_fi.run.registry import all_rules

OPTIONS = RunOptions(parse_version("0.6.8.post1"), parse_version("0.7.4"))


def test_a_lazy_prefilter_is_built_by_the_first_file_that_contains_its_string() -> None:
    built: list[int] = []

    def build() -> tuple[tuple[str, ...], ...]:
        built.append(1)
        return (("flashinfer", "fp4_quantize"),)

    lazy = LazyPrefilter("flashinfer", build)
    assert not lazy.matches(b"import torch\nfp4_quantize(x)\n")
    assert built == []
    assert not lazy.matches(b"import flashinfer\n")
    assert lazy.matches(b"from flashinfer import fp4_quantize\n")
    assert lazy.names() == {b"fp4_quantize"}
    assert built == [1]  # once


@pytest.mark.parametrize("rule", [r for r in all_rules() if r.triggers_contain], ids=str)
def test_every_trigger_of_a_lazy_rule_contains_its_string(rule: type) -> None:
    """(what `run_triggers` holds each rule to, over a range with many changes)"""
    assert run_triggers(rule, OPTIONS)


def test_a_trigger_without_the_declared_string_is_a_rule_bug() -> None:
    class Broken(all_rules()[0]):  # type: ignore[misc,valid-type]
        code = "FI999"
        triggers_contain = "flashinfer"

        @classmethod
        def triggers_for(cls, options: RunOptions) -> tuple[str | tuple[str, ...], ...]:
            return (("flashinfer", "ok"), ("torch", "compile"))

    with pytest.raises(RuleDefinitionError, match="'torch', 'compile'"):
        run_triggers(Broken, OPTIONS)

    # (the string in a later part holds; an empty trigger, or one of an empty string, does not)
    for triggers, holds in [
        ((("flashinfer", "ok"), ("torch", "flashinfer_ops")), True),
        ((("flashinfer", "ok"), ()), False),
        ((("flashinfer", "ok"), ""), False),
        (("flashinfer_x", "flashinfer"), True),
    ]:
        Broken.triggers_for = classmethod(lambda cls, options, t=triggers: t)  # type: ignore[method-assign,assignment]
        if holds:
            assert run_triggers(Broken, OPTIONS) == triggers
        else:
            with pytest.raises(RuleDefinitionError):
                run_triggers(Broken, OPTIONS)


def test_a_tree_that_never_names_flashinfer_loads_no_release_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "m.py").write_text("import torch\n\nx = torch.ones(1)\n")
    monkeypatch.chdir(tmp_path)
    migrate_fi.api.store.forget()

    def no_data(version: str) -> dict[str, object]:
        raise AssertionError(f"release data of {version} loaded")

    monkeypatch.setattr(migrate_fi.api.store, "load_release", no_data)
    args = ["check", "--from", "0.6.8.post1", "--to", "0.7.4", "--no-cache", "."]
    r = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert "1 file scanned, 0 parsed" in r.output


def test_a_rule_builds_its_prefilter_on_the_first_file_it_reads(tmp_path: Path) -> None:
    """FI007 reads dependency files only: a tree without one never works out its triggers
    (the target's requirements, which `packaging.requirements` parses: start-up time)."""
    import subprocess
    import sys

    (tmp_path / "m.py").write_text("import flashinfer\n")
    code = (
        "import atexit, sys; from migrate_fi.cli import main; sys.argv = ['migrate-fi', 'check',"
        " '--from', '0.6.8.post1', '--to', '0.7.4', '--no-cache', '.']\natexit.register(lambda:"
        " print('packaging.requirements' in sys.modules, file=sys.stderr))\nmain()"
    )
    for extra, imported in ((None, "False"), ("requirements.txt", "True")):
        if extra:
            (tmp_path / extra).write_text("torch>=2.5\nflashinfer-python==0.6.8.post1\n")
        r = subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True
        )
        assert r.stderr.strip().splitlines()[-1] == imported, r.stderr


def test_triggers_that_share_words_share_them_in_the_prefilter() -> None:
    from migrate_fi.codemods._api import path_words

    paths = [f"flashinfer.{m}.Wrapper().f{i}" for m in ("decode", "prefill") for i in range(50)]
    triggers = [path_words(p) for p in paths]
    assert all(t[2] is triggers[0][2] for t in triggers)  # ("Wrapper": one string)
    prefilter = Prefilter(triggers)
    sets = [s for names in prefilter.by_context.values() for found in names.values() for s in found]
    assert (
        len(sets) == 100 and len({id(s) for s in sets}) == 2
    )  # ({decode, Wrapper}, {prefill, ...})
    assert prefilter.matches(b"from flashinfer.decode import Wrapper\nWrapper().f7()\n")
    assert not prefilter.matches(b"from flashinfer.decode import Wrapper\nWrapper().g7()\n")
    assert not prefilter.matches(b"import flashinfer\nWrapper().f7()\n")  # (no `decode`)


def test_the_words_of_many_paths_are_those_of_each() -> None:
    """`paths_words` (a range's thousands of paths at once) gives what `path_words` gives for
    each, in order: over a release pair's trigger paths, and paths of one part, of a call in
    a chain, and a module's prefix met again after another."""
    from migrate_fi.api.index import trigger_paths
    from migrate_fi.codemods._api import path_words, paths_words

    odd = ["f", "flashinfer.W().run", "flashinfer.a.f", "flashinfer.b.g", "flashinfer.a.h", ""]
    for paths in (list(trigger_paths("0.6.8.post1", "0.7.4")), odd, []):
        assert paths_words(paths) == tuple(path_words(p) for p in paths)
    assert paths_words(["flashinfer.x.y"])[0][1] is path_words("flashinfer.x.z")[1]  # (interned)


def test_a_lazy_prefilter_names_its_triggers_without_building() -> None:
    """The re-export rounds ask every rule for its names: the trigger's last identifiers, the
    same before and after the filter is built, and asking never builds it."""
    triggers = (("flashinfer", "jit", "load"), "fp4_quantize", ("mm_fp4",), "nvidia-cutlass-dsl")
    made: list[object] = []

    def make(t: tuple[str | tuple[str, ...], ...]) -> Prefilter:
        made.append(t)
        return Prefilter(t)

    lazy = LazyPrefilter("", lambda: triggers, make)
    expected = {b"load", b"fp4_quantize", b"mm_fp4", b"nvidia-cutlass-dsl"}
    assert lazy.names() == expected == Prefilter(triggers).names()
    assert made == []
    assert lazy.matches(b"from flashinfer.jit import load")
    assert made == [triggers] and lazy.names() == expected


def test_what_a_file_contains_is_kept_for_that_file_only() -> None:
    """Every rule's prefilter asks the same file for "flashinfer": the answer is kept for the
    file (the same bytes object), never for another, equal-sized or not."""
    rules = [Prefilter([("flashinfer", "fp4_quantize")]), Prefilter(["flashinfer", "FlashInfer"])]
    lazy = LazyPrefilter("flashinfer", lambda: (("flashinfer", "mm_fp4"),))
    with_it = b"import flashinfer\nfp4_quantize(x); mm_fp4(y)\n"
    without = b"import flashimfer\nfp4_quantize(x); mm_fp4(y)\n"  # (the same length)
    for _ in range(2):
        assert [p.matches(with_it) for p in (*rules, lazy)] == [True, True, True]
        assert [p.matches(without) for p in (*rules, lazy)] == [False, False, False]
        assert rules[1].matches(b"FlashInfer 0.6")


@pytest.mark.parametrize("rule", all_rules(), ids=str)
def test_a_rules_gate_holds_a_word_of_every_trigger(rule: type) -> None:
    """The gate `matching` tries first never rules out a file the rule's own test matches:
    every trigger of the run contains one of its words (lower-cased)."""
    words = _gate(rule)
    if words is None:
        return
    for trigger in run_triggers(rule, OPTIONS):
        parts = (trigger,) if isinstance(trigger, str) else trigger
        assert any(w in part.lower().encode() for part in parts for w in words), trigger


TEXTS = [
    b"import torch\n\nx = fp4_quantize(y)\n",
    b"from flashinfer import fp4_quantize\n\nfp4_quantize(x, gs, 16)\n",
    b'FLASHINFER_VERSION = "0.6.8.post1"\n',
    b"# FlashInfer's wheel: flashinfer-python==0.6.8.post1\n",
    b'backend = "Flashinfer"\nif flashinfer.__version__ < "0.6.10":\n    pass\n',
    b"from proj.quant import fp4_quantize\n",
]


@pytest.mark.parametrize("path", ["m.py", "requirements.txt", "pyproject.toml", "Dockerfile"])
def test_the_gate_leaves_the_answer_as_every_rule_would_give_it(path: str) -> None:
    tests = rule_tests(all_rules(), OPTIONS)
    for text in TEXTS:
        every = tuple(
            c.id
            for c, p in tests
            if reads(c, path) and p.matches(text) and c.wants(text, path, OPTIONS)
        )
        assert matching(tests, text, path, OPTIONS) == every, text
    # (and it is what rules a file out: none of these names FlashInfer in any case)
    assert matching(tests, b"import torch\nfp4_quantize(x)\n", "m.py", OPTIONS) == ()


def test_a_file_is_ruled_out_by_every_rule_s_gate_before_its_own() -> None:
    """A file that holds no word of any rule's gate is ruled out before the rules that read it
    are looked up, and kept under the words of every gate (it holds none of them); one that
    holds a word of another rule's gate only is ruled out by its own rules' gate, under theirs."""
    fi001 = next(c for c in all_rules() if c.code == "FI001")

    class Other(fi001):  # type: ignore[misc,valid-type]
        code = "FI990"
        id = "other_gate"
        triggers = (("torchlike", "compile"),)
        suffixes = (".txt",)
        reaches_by_import = False

    tests = rule_tests([fi001, Other], OPTIONS)
    assert tests.gate_all == {b"flashinfer", b"torchlike"}
    without: dict[frozenset[bytes], list[str]] = {}
    for path, text, found in [
        ("a.py", b"import os\n", ()),
        ("b.py", b"torchlike.compile(f)\n", ()),
        ("c.txt", b"torchlike.compile(f)\n", ("other_gate",)),
        ("d.txt", b"nothing here\n", ()),
    ]:
        assert matching(tests, text, path, OPTIONS, without=without) == found, path
    assert without == {tests.gate_all: ["a.py", "d.txt"], frozenset({b"flashinfer"}): ["b.py"]}


@pytest.mark.parametrize(
    "text",
    [
        "import flashinfer\n",
        "from flashinfer import fp4_quantize\n",
        "from flashinfer.comm import create_allreduce_fusion_workspace\n",
        "import os, flashinfer.comm as c\n",
        "import torch as t, numpy, flashinfer\n",
        "def f():\n    import flashinfer.mamba  # noqa: F401\n",
        "try: import flashinfer\nexcept ImportError: flashinfer = None\n",
        "from \\\n    flashinfer import rmsnorm\n",
        "import os, \\\n    flashinfer\n",
        "import os, \\\r\n    torch, \\\r\n    flashinfer\r\n",
        "x = 1; import flashinfer.jit as j\n",
        "# flashinfer is optional\nimport flashinfer\n",
        "fi = importlib.import_module('flashinfer')\n",
        "fi = pytest.importorskip('flashinfer')\n",
    ],
)
def test_an_import_of_flashinfer_in_any_form_reaches_it(text: str) -> None:
    from migrate_fi.analysis.prefilter import reaches_flashinfer

    assert reaches_flashinfer(text.encode())


@pytest.mark.parametrize(
    "text",
    [
        'if backend == "flashinfer":\n    use_flashinfer = True\n',
        "from sglang.utils import is_flashinfer_available\n",
        "import flashinfer_utils\n",
        "from vllm.utils.flashinfer import has_flashinfer\n",  # (the project's own module)
        "from . import flashinfer_backend\n",
    ],
)
def test_a_file_that_imports_no_flashinfer_module_does_not_reach_it(text: str) -> None:
    from migrate_fi.analysis.prefilter import reaches_flashinfer

    assert not reaches_flashinfer(text.encode())


def test_rules_that_reach_flashinfer_by_import_leave_a_file_without_one_to_the_rounds() -> None:
    """A file that names a FlashInfer API but imports nothing of FlashInfer's (it may get the
    name from a project module: the re-export rounds analyse it then) is not parsed for the
    rules that find only what resolves to FlashInfer; a version pin in it still is. In
    FlashInfer's own tree (relative imports, its own definitions) nothing is left out."""
    text = (
        b"from myproj.ops import fp4_quantize  # flashinfer's\n"
        b'REQUIRES = "flashinfer-python==0.6.8.post1"\n'
        b"y = fp4_quantize(x, gs, 16, False, True, False, True)\n"
    )
    tests = rule_tests(all_rules(), OPTIONS)
    found = matching(tests, text, "/p/myproj/m.py", OPTIONS)
    reaching = {c.id for c in all_rules() if c.reaches_by_import}
    assert "fp4_quantize_keywords" in reaching and "positional_binding" in reaching
    assert not reaching & set(found)
    assert "flashinfer_pins" in found
    imported = text.replace(b"from myproj.ops", b"from flashinfer")
    assert {"fp4_quantize_keywords", "positional_binding"} <= set(
        matching(tests, imported, "/p/myproj/m.py", OPTIONS)
    )
    own = matching(tests, text, "/p/flashinfer/m.py", OPTIONS, own_tree=True)
    assert {"fp4_quantize_keywords", "positional_binding"} <= set(own)


def test_a_module_of_flashinfer_s_own_tree_is_seen_as_naming_itself(tmp_path: Path) -> None:
    """A module of FlashInfer's tree names its own definitions without its module, and reaches
    the rest of the API through relative imports: it is tested as if it named its module and
    needs no import of FlashInfer. A relative import writes the rest of the path, so one that
    reaches a changed API is seen, and one that reaches none is not."""
    from migrate_fi.run.pipeline import must_see

    package = tmp_path / "flashinfer" / "quantization"
    package.mkdir(parents=True)
    (tmp_path / "flashinfer" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    tests = rule_tests(all_rules(), OPTIONS)
    own = str(package / "fp4_quantization.py")
    call = b"y = fp4_quantize(x, gs, 16, False, True, False, True)\n"
    assert "fp4_quantize_keywords" in (must_see(tests, call, own, OPTIONS) or ())
    relative = b"from .utils import helper\n\nhelper()\n"
    assert must_see(tests, relative, own, OPTIONS) is None  # (nothing a rule looks for)
    assert must_see(tests, b"x = 1\n", own, OPTIONS) is None
    (tmp_path / "flashinfer" / "gemm").mkdir()
    (tmp_path / "flashinfer" / "gemm" / "__init__.py").write_text("")
    gemm = str(tmp_path / "flashinfer" / "gemm" / "gemm_base.py")
    for reaching in (
        b"from ..quantization import fp4_quantize as q\n\nq(x, gs, 16, False, True)\n",
        b"from .. import quantization\n\nquantization.fp4_quantize(x, gs, 16)\n",
        b"from ..quantization.fp4_quantization import (\n    fp4_quantize,\n)\n",
    ):
        assert "fp4_quantize_keywords" in (must_see(tests, reaching, gemm, OPTIONS) or ()), reaching
    elsewhere = str(tmp_path / "proj" / "m.py")
    assert must_see(tests, call, elsewhere, OPTIONS) is None  # (no import of FlashInfer)
    assert must_see(tests, relative, elsewhere, OPTIONS) is None


def test_the_search_on_the_lines_naming_flashinfer_finds_what_a_whole_file_search_does() -> None:
    """`reaches_flashinfer` searches for the import statement only on the logical lines that
    say "flashinfer" (the physical lines a backslash joins included): the same answer as the
    pattern searched over the whole file, on every combination of these pieces."""
    import itertools

    from migrate_fi.analysis.prefilter import _IMPORTS_FLASHINFER, reaches_flashinfer

    pieces = [
        b"import os, \\\n", b"import os, \\\r\n", b"from \\\n", b"    ", b"flashinfer",
        b" import x\n", b"_utils\n", b"\r\n", b"\n", b"x = 1; ", b"import ", b"# \\\n",
        b"flashinfer.comm as c\n", b'"flashinfer"\n',
    ]  # fmt: skip
    seen = 0
    for n in (1, 2, 3, 4):
        for combo in itertools.product(pieces, repeat=n):
            data = b"".join(combo)
            whole = _IMPORTS_FLASHINFER.search(data) is not None
            assert reaches_flashinfer(data) is whole, data
            seen += 1
    assert seen > 40_000


def test_a_name_found_as_a_whole_identifier_is_what_the_identifiers_say() -> None:
    """`names_one_of` (occurrences with no identifier byte beside them) answers as the set of
    a file's identifiers does, at the file's edges, inside longer words and across lines."""
    import random

    from migrate_fi.analysis.prefilter import identifiers, names_one_of

    rng = random.Random(21)
    alphabet = b"ab_1 .(\n\xc3"
    for _ in range(20_000):
        data = bytes(rng.choice(alphabet) for _ in range(rng.randrange(12)))
        names = {b"a", b"ab", b"b_1", b"_"}
        assert names_one_of(data, names) is not identifiers(data).isdisjoint(names), data
    assert names_one_of(b"from m import q\nq(x)", [b"q"])
    assert not names_one_of(b"qq = sq(q_)", [b"q"])


def test_path_words_are_the_parts_of_the_path() -> None:
    """`path_words` splits a path's module or class once for all its names (cached): the same
    words as splitting each path, `()` dropped."""
    from migrate_fi.api.index import trigger_paths
    from migrate_fi.codemods._api import path_words

    paths = ["", "a", "a.", ".a", "a..b", "x()", "flashinfer.X().run", "flashinfer.X.run"]
    paths += list(trigger_paths("0.6.8.post1", "0.7.4"))[::50]
    for path in paths:
        assert path_words(path) == tuple(path.replace("()", "").split(".")), path
    assert path_words("flashinfer.X().run")[1] is path_words("flashinfer.X.plan")[1]  # interned


def test_which_files_a_rule_reads_is_what_its_patterns_say() -> None:
    """A file is read by its suffix, by a glob on its name, or by a glob with a ``/`` on the end
    of its path; the quick tests of a name's or path's literal ends before the globs change
    nothing (globs that end or start with a wildcard, and character classes, included)."""
    import fnmatch
    import random

    from migrate_fi.project.discovery import wanted_files

    cases = [
        ((".py",), ()),
        ((), ("pyproject.toml", "*requirements*.txt", "Dockerfile", "Dockerfile.*", "*.sh")),
        ((), ("*.[ch]", "x?y", "requirements/*", "a/[ab]c.txt", "req*")),
        ((".py",), ("dev-requirements.txt", "deep/*.yml", "requirements/*.in")),
    ]
    rnd = random.Random(7)
    letters = "abcxy.-_/[]*?hDockerfilerequirements.txtinymlpyprojectoml"
    paths = ["/p/" + "".join(rnd.choice(letters) for _ in range(rnd.randint(1, 24)))
             for _ in range(20_000)]  # fmt: skip
    paths += ["/p/Dockerfile", "/p/Dockerfile.gpu", "/p/x/requirements/a.in", "/p/a/bc.txt",
              "/p/dev-requirements.txt", "/p/q/deep/r/s.yml", "/p/m.c", "/p/xzy"]  # fmt: skip
    for suffixes, patterns in cases:
        test = wanted_files(suffixes, patterns)
        for path in paths:
            name = path.rsplit("/", 1)[-1]
            expected = (
                name.endswith(suffixes)
                or any(fnmatch.fnmatchcase(name, p) for p in patterns if "/" not in p)
                or any(fnmatch.fnmatchcase(path, "*/" + p) for p in patterns if "/" in p)
            )
            assert test(path) == expected, (patterns, path)
