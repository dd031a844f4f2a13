"""The re-export rounds: a file analysed before is analysed again with new re-exports only
where they can change its result (`migrate_fi.run.reexports.unaffected`), and the findings are those
of analysing every importer again."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import migrate_fi.analysis.importwords
import migrate_fi.run.engine
import migrate_fi.run.pipeline
import migrate_fi.run.reexports
from migrate_fi.analysis.importwords import file_imports
from migrate_fi.analysis.resolver import ProjectAliases
from migrate_fi.base import depends
from migrate_fi.base.results import FileResult, Lookups, Status
from migrate_fi.cli import cli
from migrate_fi.run.cache import WalkMemo
from migrate_fi.run.reexports import importers, unaffected
from migrate_fi.run.workers import SourceFile


def analysed(asked: set[str], skipped: frozenset[str] = frozenset()) -> FileResult:
    result = FileResult("m.py", Status.UNCHANGED, parsed=True)
    result.lookups = Lookups(frozenset(asked), skipped)
    return result


NONE = ProjectAliases({})


def test_a_new_reexport_of_a_name_looked_up_changes_the_result() -> None:
    after = ProjectAliases({"proj.ops.q": "flashinfer.fp4_quantize"})
    assert not unaffected(analysed({"proj.ops.q"}), b"", NONE, after)
    # by the module's last parts, as the resolver matches longer module names
    assert not unaffected(analysed({"src.proj.ops.q"}), b"", NONE, after)
    # another name, or the same name of another module: as before
    assert unaffected(analysed({"proj.ops.r", "proj.other.q", "ops.q"}), b"", NONE, after)


def test_a_reexport_that_makes_a_suffix_match_ambiguous_changes_the_result() -> None:
    before = ProjectAliases({"mod.q": "flashinfer.a"})
    after = ProjectAliases({"mod.q": "flashinfer.a", "sub.mod.q": "flashinfer.b"})
    assert before.follow("pkg.sub.mod.q") == "flashinfer.a"
    assert after.follow("pkg.sub.mod.q") == "pkg.sub.mod.q"  # two fit: none is guessed
    assert not unaffected(analysed({"pkg.sub.mod.q"}), b"", before, after)


def test_a_reexport_of_a_name_to_itself_changes_nothing() -> None:
    """FlashInfer's own modules export their own definitions (`flashinfer.x.f` -> itself)."""
    after = ProjectAliases({"flashinfer.x.f": "flashinfer.x.f"})
    assert unaffected(analysed({"flashinfer.x.f"}), b"", NONE, after)


def test_a_chain_is_followed_to_its_end() -> None:
    before = ProjectAliases({"a.q": "b.q"})
    after = ProjectAliases({"a.q": "b.q", "b.q": "flashinfer.q"})
    assert not unaffected(analysed({"a.q"}), b"", before, after)


def test_rules_the_prefilter_left_out_run_when_a_new_name_is_in_the_file() -> None:
    after = ProjectAliases({"proj.ops.q": "flashinfer.fp4_quantize"})
    partial = analysed({"os.path"}, skipped=frozenset({"fp4-quantize-keywords"}))
    assert not unaffected(partial, b"from proj.ops import q\n", NONE, after)
    assert unaffected(partial, b"import os.path\n", NONE, after)
    assert not unaffected(FileResult("m.py", Status.SKIPPED), b"", NONE, after)  # never analysed


def test_a_rule_left_out_runs_again_only_for_a_name_it_looks_for() -> None:
    """A new re-export named in the file runs the rules the prefilter left out; it can change
    what one of them finds only where it reaches one of that rule's triggers' names."""
    after = ProjectAliases({"proj.ops.q": "flashinfer.fp4_quantize"})
    text = b"from proj.ops import q\n"
    partial = analysed(set(), skipped=frozenset({"a", "b"}))
    assert unaffected(partial, text, NONE, after, {"a": {b"rmsnorm"}, "b": {b"q"}})
    assert not unaffected(partial, text, NONE, after, {"a": set(), "b": {b"fp4_quantize"}})
    assert not unaffected(partial, text, NONE, after, {"a": {b"rmsnorm"}})  # b: not known
    # through a chain of re-exports: where it ends
    chain = ProjectAliases({"proj.ops.q": "proj.low.r", "proj.low.r": "flashinfer.rmsnorm"})
    assert not unaffected(partial, text, NONE, chain, {"a": {b"rmsnorm"}, "b": set()})
    assert unaffected(analysed(set()), text, NONE, after, {})  # every rule ran
    # and only where the file may import it: an import statement names its module
    looked_for = {"a": {b"fp4_quantize"}, "b": set()}
    other = b"from elsewhere import q\n"
    assert unaffected(partial, other, NONE, after, looked_for, file_imports(other, "m.py"))
    assert not unaffected(partial, text, NONE, after, looked_for, file_imports(text, "m.py"))
    # a module imported by call: only one whose name is written out can be followed
    dynamic = b"q = importlib.import_module('proj.ops').q\n"
    assert not unaffected(partial, dynamic, NONE, after, looked_for, file_imports(dynamic, "m.py"))
    assert not unaffected(
        partial, dynamic, NONE, after, looked_for, file_imports(dynamic, "m.py"), "m.py"
    )
    by_parts = b"proj = importlib.import_module('proj')\nq = proj.ops.q\n"
    assert not unaffected(
        partial, by_parts, NONE, after, looked_for, file_imports(by_parts, "m.py"), "m.py"
    )
    unknown = b"q = importlib.import_module(name).q\n"  # (no resolver follows it)
    assert unaffected(
        partial, unknown, NONE, after, looked_for, file_imports(unknown, "m.py"), "m.py"
    )
    # and, with its path, where an import statement of it may bind the name: a file that
    # imports another name of the module and binds `q` itself is not analysed again
    own = b"from proj.ops import r\nq = r()\n"
    imports = file_imports(own, "m.py")
    assert not unaffected(partial, own, NONE, after, looked_for, imports)
    assert unaffected(partial, own, NONE, after, looked_for, imports, "m.py")
    assert not unaffected(
        partial, text, NONE, after, looked_for, file_imports(text, "m.py"), "m.py"
    )


# A project whose modules re-export each other's FlashInfer names: `proj.quant` is found to
# re-export fp4_quantize in the first pass, `proj` in the first round, `proj.user` uses it after.
PROJECT = {
    "proj/__init__.py": "from .quant import fp4_quantize as fp4_quantize\n",
    "proj/quant/__init__.py": "from flashinfer import fp4_quantize\n",
    # reaches the API through two re-exports: found in the second round (it names FlashInfer,
    # but no import of it: the first pass leaves it to the rounds)
    "proj/user.py": (
        "from proj import fp4_quantize  # flashinfer's\n\n\n"
        "def q(x, gs):\n"
        "    return fp4_quantize(x, gs[:1], 16, False, True, False, True)\n"
    ),
    # imports both re-exporting modules, but looks up nothing they re-export: analysed once,
    # in the first round (it names fp4_quantize and imports `quant`; no import of FlashInfer
    # kept it from the first pass), never again (every rule that looks for it ran on it)
    "proj/other.py": (
        "from proj.utils import helper\n"
        "import proj.quant as quant  # flashinfer's fp4_quantize lives there\n\n\n"
        "def f(x):\n"
        "    return helper(quant, x)\n"
    ),
}

# FlashInfer's own tree: its modules re-export each other, and the release data says where each
# of its paths leads, so none of them is followed as the project's re-export.
OWN_TREE = {
    "flashinfer/__init__.py": "from .quantization import fp4_quantize as fp4_quantize\n",
    "flashinfer/quantization/__init__.py": "from .fp4_quantization import fp4_quantize\n",
    "flashinfer/quantization/fp4_quantization.py": (
        "def fp4_quantize(input, global_scale=None, sf_vec_size=16, sf_use_ue8m0=False,\n"
        "                 is_sf_swizzled_layout=True, is_sf_8x4_layout=False, enable_pdl=None):\n"
        "    return input\n"
    ),
    "flashinfer/user.py": (
        "from flashinfer.quantization import fp4_quantize\n\n\n"
        "def q(x, gs):\n"
        "    return fp4_quantize(x, gs[:1], 16, False, True, False, True)\n"
    ),
}


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def check(root: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[object, collections.Counter[str]]:
    counts: collections.Counter[str] = collections.Counter()
    process = migrate_fi.run.pipeline.process_source

    def counting(data, path, *args, **kwargs):  # type: ignore[no-untyped-def]
        counts[path] += 1
        return process(data, path, *args, **kwargs)

    monkeypatch.setattr(migrate_fi.run.pipeline, "process_source", counting)
    monkeypatch.chdir(root)
    args = ["check", "--from", "0.6.10", "--to", "0.6.11", "-j", "1", "--no-cache"]
    r = CliRunner().invoke(cli, [*args, "--output-format", "json", "."], catch_exceptions=False)
    assert r.exit_code == 1, r.output
    return json.loads(r.stdout), counts


def test_only_files_the_new_reexports_can_change_are_analysed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, PROJECT)
    found, counts = check(tmp_path, monkeypatch)
    assert [d["path"] for d in found["diagnostics"]] == ["proj/user.py"]
    assert counts["proj/user.py"] == 1  # with both re-exports, once the rounds find them
    assert counts["proj/other.py"] == 1
    # the same findings as analysing every importer again
    monkeypatch.setattr(migrate_fi.run.engine, "unaffected", lambda *a: False)
    every, counts = check(tmp_path, monkeypatch)
    assert every == found
    assert counts["proj/other.py"] > 1


# Files that import modules by call: the one that names the re-exporting module is analysed
# with the re-exports and its call found; the one whose module name is a variable is never
# analysed for them (no resolver follows it, whatever it names).
BY_CALL = {
    "proj/__init__.py": "",
    "proj/quant.py": "from flashinfer import fp4_quantize\n",
    "proj/user.py": (
        "import importlib\n\n\n"
        "def q(x, gs):\n"
        "    m = importlib.import_module('proj.quant')\n"
        "    return m.fp4_quantize(x, gs[:1], 16, False, True, False, True)\n"
    ),
    "proj/plugins.py": (
        "import importlib\n\n\n"
        "def load(name, x, gs):  # fp4_quantize of a plugin\n"
        "    return importlib.import_module(name).fp4_quantize(x, gs, 16, False, True, False, True)\n"
    ),
}


def test_a_file_that_imports_by_call_is_analysed_again_only_for_a_module_it_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, BY_CALL)
    found, counts = check(tmp_path, monkeypatch)
    assert [(d["path"], d["code"]) for d in found["diagnostics"]] == [("proj/user.py", "FI001")]
    assert counts["proj/user.py"] == 1
    assert "proj/plugins.py" not in counts  # (no rule's prefilter took it; no round does)
    monkeypatch.setattr(migrate_fi.run.engine, "unaffected", lambda *a: False)
    every, _ = check(tmp_path, monkeypatch)
    assert every == found


# A package's modules import its re-export by a relative import that names no module
# (`from . import fp4_quantize`, `from .. import fp4_quantize`): found by the rounds as
# `from pkg.quant import fp4_quantize` is. `proj/quant/other.py` names the re-export and
# imports another name of the package: never analysed for it.
RELATIVE = {
    "proj/__init__.py": "",
    "proj/quant/__init__.py": "from flashinfer import fp4_quantize\n\n\ndef helper(x):\n    return x\n",
    "proj/quant/user.py": (
        "from . import fp4_quantize\n\n\n"
        "def q(x, gs):\n"
        "    return fp4_quantize(x, gs[:1], 16, False, True, False, True)\n"
    ),
    "proj/quant/deep/__init__.py": "",
    "proj/quant/deep/user.py": (
        "from .. import (\n    fp4_quantize,\n)\n\n\n"
        "def q(x, gs):\n"
        "    return fp4_quantize(x, gs[:1], 16, False, True, False, True)\n"
    ),
    "proj/quant/other.py": (
        "from proj.quant import helper\n\n\ndef fp4_quantize(x):  # its own\n    return helper(x)\n"
    ),
    # imports another name of the package, which loads it: `proj.quant` reaches its re-export
    "proj/chain.py": (
        "import proj\n"
        "from proj.quant import helper\n\n\n"
        "def q(x, gs):\n"
        "    return proj.quant.fp4_quantize(helper(x), gs[:1], 16, False, True, False, True)\n"
    ),
}


def test_a_reexport_imported_from_its_own_package_is_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, RELATIVE)
    found, counts = check(tmp_path, monkeypatch)
    assert [(d["path"], d["code"]) for d in found["diagnostics"]] == [
        ("proj/chain.py", "FI001"),
        ("proj/quant/deep/user.py", "FI001"),
        ("proj/quant/user.py", "FI001"),
    ]
    assert "proj/quant/other.py" not in counts  # (it binds the name itself)


@pytest.mark.parametrize(
    ("data", "bound"),
    [
        (b"from pkg.quant import q\n", True),
        (b"from pkg.quant import (\n    r,\n    q as s,\n)\n", True),
        (b"from .quant import *\n", True),
        (b"import pkg.quant\n", True),  # (`pkg.quant.q`)
        (b"import pkg.quant as m\n", True),
        (b"from pkg import quant\n", True),
        (b"from . import q\n", True),  # (the file is in `pkg.quant`)
        (b"from .. import quant\n", True),
        (b"x = 1; from pkg.quant import q\n", True),
        (b"from pkg.quant import r, s\n", False),  # (another name of the module)
        (b"from pkg.quant import r\nfrom pkg.quant import s\n", False),
        # (it loads the module: a package bound elsewhere reaches it by attribute)
        (b"import pkg\nfrom pkg.quant import r\npkg.quant.q(x)\n", True),
        (b"import pkg\nfrom pkg.quant import r\nm = pkg.quant\nm.q(x)\n", True),
        (b"import pkg\nfrom pkg.quant import r\nquantize(q)\n", False),
        (b"import pkg\nfrom pkg.quant.sub import r\npkg.quant.q(x)\n", True),
        (b"from pkg.quant.sub import r\nquantize(q)\n", False),
        (b"from pkg.quant.sub import q\n", False),  # (a module of it: its own `q`)
        (b"from other import q\n", False),
        (b"from .. import q\n", False),  # (`pkg`'s `q`)
        (b"import os\nq = 1\n", False),
        (b"# from pkg.quant import q\n", False),  # (not a statement)
    ],
)
def test_an_import_statement_may_bind_a_name_of_a_module(
    data: bytes, bound: bool, tmp_path: Path
) -> None:
    """`may_bind`: whether a statement of the file may bind `q` of a module whose last part is
    `quant` (or the module itself): what keeps a file that names `q` out of the rounds."""
    from migrate_fi.analysis.importwords import may_bind

    write(tmp_path, {"pkg/__init__.py": "", "pkg/quant/__init__.py": ""})
    path = str(tmp_path / "pkg" / "quant" / "user.py")
    assert may_bind(data, path, b"quant", b"q") is bound
    # a name or module that is not ASCII: bound (import words are ASCII)
    assert may_bind(data, path, b"quant", "q\u00e9".encode())
    assert may_bind(data, path, "qu\u00e9".encode(), b"q")


def test_a_reexport_not_named_in_ascii_is_imported_where_a_file_writes_it(
    tmp_path: Path,
) -> None:
    """A re-export whose name is not ASCII (import words are ASCII) is imported by a file of
    the module's statements that writes the name; one that writes neither name does not."""
    from migrate_fi.analysis.importwords import AliasImports

    write(tmp_path, {"pkg/__init__.py": "", "pkg/quant/__init__.py": ""})
    path = str(tmp_path / "pkg" / "user.py")
    asked = AliasImports(
        {"pkg.quant.q\u00e9": "flashinfer.fp4_quantize", "pkg.quant.r": "flashinfer.mm_fp4"}
    )
    for data, imported in [
        ("from pkg.quant import q\u00e9\n".encode(), True),
        (b"from pkg.quant import r\n", True),
        (b"from pkg.quant import s\n", False),
    ]:
        assert asked.imported_by(file_imports(data, path), data, path) is imported, data


@pytest.mark.parametrize(
    ("data", "bound"),
    [
        (b"from pkg.moe.flashinfer import q\n", True),
        (b"from src.pkg.moe.flashinfer import q\n", True),  # (a longer name ends with it)
        (b"from moe.flashinfer import q\n", False),  # (a shorter one does not)
        (b"from .flashinfer import q\n", True),  # (relative: may be it)
        (b"from ..moe.flashinfer import q\n", True),
        (b"from flashinfer import q\n", False),  # (FlashInfer itself, not the project's)
        (b"from flashinfer.jit import q\n", False),
        (b"from flashinfer.jit import logger\nflashinfer.q\n", False),  # (loads FlashInfer)
        (b"import pkg\nfrom pkg.moe.flashinfer.sub import r\npkg.moe.flashinfer.q\n", True),
        (b"from pkg.moe import flashinfer\n", True),  # (the module itself is bound)
        (b"import flashinfer\n", True),  # (an `import` statement: every word counts)
    ],
)
def test_a_from_statement_of_an_absolute_module_binds_only_a_module_it_may_name(
    data: bytes, bound: bool, tmp_path: Path
) -> None:
    """With the module's whole name (``pkg.moe.flashinfer``, a project module named as
    FlashInfer's package is), a `from` statement of an absolute module counts only where that
    module's name, up to the part, is that name or ends with it."""
    from migrate_fi.analysis.importwords import ImportStatements

    write(tmp_path, {"pkg/__init__.py": "", "pkg/moe/__init__.py": ""})
    path = str(tmp_path / "pkg" / "moe" / "user.py")
    assert ImportStatements(data, path).binds(b"flashinfer", b"q", "pkg.moe.flashinfer") is bound
    # (without it, by the last part alone: never fewer)
    assert ImportStatements(data, path).binds(b"flashinfer", b"q") or not bound


@pytest.mark.parametrize(
    ("data", "follows"),
    [
        (b"import importlib\nm = importlib.import_module('pkg.quant')\nm.q(x)\n", True),
        (b"import importlib\np = importlib.import_module('pkg')\np.quant.q(x)\n", True),
        (b"import pytest\nm = pytest.importorskip('src.pkg.quant')\nm.q(x)\n", True),
        (b"import importlib\nm = importlib.import_module(name)\nm.q(x)\n", False),
        (b"import importlib\nm = importlib.import_module('pkg.other')\nm.q(x)\n", False),
        (b"import importlib\nm = importlib.import_module('pkg.quant')\nm.r(x)\n", False),
    ],
)
def test_a_file_that_imports_by_call_may_import_a_module_it_writes_out(
    data: bytes, follows: bool
) -> None:
    """`AliasImports.imported_by`: a file that imports modules by call may import a re-export
    only where every part of its module's name is written in it (a resolver follows only a
    call that names the module, and the attributes of what it gives) and its name is too."""
    from migrate_fi.analysis.importwords import AliasImports

    asked = AliasImports(["pkg.quant.q"])
    assert asked.imported_by(file_imports(data, "m.py"), data, "m.py") is follows


def test_a_relative_import_of_a_package_names_it_among_the_import_words(tmp_path: Path) -> None:
    """``from . import x`` names no module: its package's last part is added to the words (the
    rounds ask the words for the module of a re-export)."""
    write(tmp_path, {"pkg/__init__.py": "", "pkg/quant/__init__.py": ""})
    inner = str(tmp_path / "pkg" / "quant" / "user.py")
    package = str(tmp_path / "pkg" / "quant" / "__init__.py")
    assert b" quant " in file_imports(b"from . import q\n", inner).words
    assert b" quant " in file_imports(b"from . import q\n", package).words  # (its own)
    assert b" pkg " in file_imports(b"from .. import q\n", inner).words
    assert b" quant " not in file_imports(b"from .. import q\n", inner).words
    assert b" quant " not in file_imports(b"from .sub import q\n", inner).words
    # a top-level module has no package: nothing added
    assert file_imports(b"from . import q\n", str(tmp_path / "top.py")).all() == {
        b"from",
        b"import",
        b"q",
    }


def test_flashinfer_own_modules_are_never_followed_as_reexports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, OWN_TREE)
    found, counts = check(tmp_path, monkeypatch)
    # found in the first pass, through the release data's path, and reported once
    assert [(d["path"], d["code"]) for d in found["diagnostics"]] == [
        ("flashinfer/user.py", "FI001")
    ]
    assert set(counts.values()) == {1}


def test_flashinfer_own_modules_are_parsed_where_they_reach_a_changed_api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In FlashInfer's own tree, a module that reaches a changed API only through a relative
    import is analysed and its call found; one whose relative imports reach nothing a rule
    looks for is never parsed."""
    write(
        tmp_path,
        {
            **OWN_TREE,
            "flashinfer/gemm/__init__.py": "",
            "flashinfer/gemm/user.py": (
                "from ..quantization import fp4_quantize as q\n\n\n"
                "def f(x, gs):\n"
                "    return q(x, gs[:1], 16, False, True, False, True)\n"
            ),
            "flashinfer/gemm/plain.py": (
                "from .. import utils\n\n\ndef g(x):\n    return utils.helper(x)\n"
            ),
            "flashinfer/utils.py": "def helper(x):\n    return x\n",
        },
    )
    found, counts = check(tmp_path, monkeypatch)
    assert sorted((d["path"], d["code"]) for d in found["diagnostics"]) == [
        ("flashinfer/gemm/user.py", "FI001"),
        ("flashinfer/user.py", "FI001"),
    ]
    assert counts["flashinfer/gemm/user.py"] == 1
    assert "flashinfer/gemm/plain.py" not in counts
    assert "flashinfer/utils.py" not in counts


def test_import_words_are_those_of_every_statement_a_scan_finds() -> None:
    """`import_words` matches statements only where a line holding "import" starts (or after a
    `;`), a block of them at once (one a line, blank lines between): the same words as scanning
    the whole file for statements, one by one."""
    import random
    import re

    from migrate_fi.analysis.importwords import _STATEMENT, import_words

    def scanned(data: bytes) -> set[bytes]:
        every = re.compile(rb"(?<![^\n;])" + _STATEMENT, re.MULTILINE)
        return {w for m in every.finditer(data) for w in re.findall(rb"\w+", m.group(0))}

    pieces = [b"import", b"from", b" ", b"\t", b"\n", b";", b"(", b")", b"#", b"\\\n", b"a",
              b"b.c", b"important", b"\r\n", b"'"]  # fmt: skip
    rng = random.Random(3)
    for _ in range(20_000):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 25)))
        assert import_words(data) == scanned(data), data
    assert import_words(b"x = 1; from a.b import (c,\n d)  # e\nimport f as g\n") == {
        b"from",
        b"a",
        b"b",
        b"import",
        b"c",
        b"d",
        b"f",
        b"as",
        b"g",
    }


def test_a_files_import_words_answer_few_or_many_words_asked() -> None:
    """A substring test per word asked when they are few, a lookup of the file's words when
    many (a tree of 2,000 modules each re-exporting a name asks 2,000): the same answer."""
    from migrate_fi.analysis.importwords import _FEW_WORDS, Words

    found = file_imports(b"from pkg.quant import q\nimport os, quantize as z\n", "m.py")
    assert found.all() == {
        b"from",
        b"pkg",
        b"quant",
        b"import",
        b"q",
        b"os",
        b"quantize",
        b"as",
        b"z",
    }
    filler = [b"m%d" % i for i in range(_FEW_WORDS + 5)]
    for asked in ([b"quant", b"uant", b"pkg.quant"], [b"quant", b"uant", *filler]):
        words = Words(asked)
        assert (words.spaced is None) == (len(asked) > _FEW_WORDS)
        assert found.among(words) == {b"quant"}
        assert not found.among(Words([b"uant", *asked[3:]]))


@pytest.mark.parametrize(
    ("data", "by_call"),
    [
        (b"import importlib\nm = importlib.import_module('pkg.quant')\n", True),
        (b"from importlib import import_module\n", True),
        (b"import os; from importlib import import_module as load\n", True),
        (b"import pytest\nfi = pytest.importorskip('flashinfer')\n", True),
        (b"x = 1  # importorskip is how the tests skip\n", True),  # (a superset: it is a test)
        (b"import importlib\nimport os\n", False),
        (b"from a import important_module\nimports = 1\n", False),
    ],
)
def test_a_file_that_imports_modules_by_call_is_told_from_the_scan(
    data: bytes, by_call: bool
) -> None:
    """Whether a file names `importlib.import_module` or `pytest.importorskip` (its imports
    are then in strings, and the rounds read it whatever its import statements name): told
    from the same scan as its import words, in a statement or anywhere else."""
    assert file_imports(data, "m.py").dynamic is by_call


def test_a_candidate_found_not_to_import_the_reexports_is_not_searched_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walk memo notes a file a rule must see (in memory, its text searched for the names)
    that imports none of a round's re-exports, as it notes the others: the next run, the file
    unchanged, does not search it again; changed, it does."""
    monkeypatch.setattr(depends, "_RECENT_NS", 0)
    path = tmp_path / "c.py"
    data = b"import flashinfer\nfrom proj import quant\n\nx = quant.other\n"
    path.write_bytes(data)
    aliases = {"proj.quant.q": "flashinfer.fp4_quantize"}
    searched: list[bytes] = []
    search = migrate_fi.analysis.importwords.names_one_of

    def counting(text: bytes, names: object) -> bool:
        searched.append(text)
        return search(text, names)  # type: ignore[arg-type]

    monkeypatch.setattr(migrate_fi.analysis.importwords, "names_one_of", counting)
    depends.forget_stats()
    memo = WalkMemo({}, {})
    assert importers(aliases, [SourceFile(data, str(path), ())], [], memo) == []
    assert searched == [data]
    again = WalkMemo(*memo.state())
    assert importers(aliases, [SourceFile(data, str(path), ())], [], again) == []
    assert searched == [data]  # (unchanged: the memo answers)
    edited = data + b"y = quant.q\n"
    path.write_bytes(edited)
    depends.forget_stats()
    found = importers(aliases, [SourceFile(edited, str(path), ())], [], WalkMemo(*memo.state()))
    assert [f.path for f in found] == [str(path)] and searched == [data, edited]


def test_words_asked_of_a_file_s_imports_are_found_as_one_test_each_would() -> None:
    """`Words.one_in`, by one search of the file's import words (few words) or a set (many):
    whether one of the words is among them, as a test of each would say."""
    import random

    from migrate_fi.analysis.importwords import FileImports, Words

    rnd = random.Random(3)
    vocabulary = [b"a", b"ab", b"b", b"quant", b"flashinfer", b"flashinfer_utils", b"x_y", b"mla"]
    for _ in range(3000):
        asked = Words(rnd.sample(vocabulary, rnd.randint(0, 5)))
        many = Words([*asked.words, *(b"w%d" % i for i in range(rnd.choice((0, 20))))])
        words = rnd.sample(vocabulary, rnd.randint(0, 4))
        imports = FileImports(b" %s " % b" ".join(words), False)
        for w in (asked, many):
            assert w.one_in(imports) == bool(w.words & set(words)), (w.words, words)


def test_a_star_import_of_flashinfer_reexports_its_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`from flashinfer import *` in a project module: a module that imports a FlashInfer name
    from it calls FlashInfer. Not where the module binds the name itself, nor where it also
    star-imports another library (the name might come from either)."""
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "__init__.py").write_text("")
    (tmp_path / "proj" / "fi.py").write_text("from flashinfer import *  # noqa: F403\n")
    (tmp_path / "proj" / "own.py").write_text(
        "from flashinfer import *  # noqa: F403\n\n\ndef fp4_quantize(*args):\n    return args\n"
    )
    (tmp_path / "proj" / "mixed.py").write_text(
        "from flashinfer import *  # noqa: F403\nfrom mylib import *  # noqa: F403\n"
    )
    call = "fp4_quantize(x, gs, 16, False, True, False, True)"
    (tmp_path / "proj" / "user.py").write_text(
        "from proj.fi import fp4_quantize\nfrom proj import fi\n\n\n"
        f"def f(x, gs):\n    return {call}, fi.{call}\n"
    )
    (tmp_path / "proj" / "others.py").write_text(
        "from proj.own import fp4_quantize\nfrom proj.mixed import fp4_quantize as q\n\n\n"
        f"def f(x, gs):\n    return {call}, q{call[len('fp4_quantize') :]}\n"
    )
    doc, _ = check(tmp_path, monkeypatch)
    found = sorted(
        (d["path"], d["line"], d["code"])
        for d in doc["diagnostics"]  # type: ignore[index]
        if d["code"] == "FI001"
    )
    assert found == [("proj/user.py", 6, "FI001"), ("proj/user.py", 6, "FI001")]


def test_a_factory_of_another_module_gives_what_it_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`w = make_wrapper(buf)` where `make_wrapper`, in another module of the project, returns
    a FlashInfer wrapper: `w.plan(...)` is the wrapper's, found and fixed (also where the file
    never names FlashInfer, in a class attribute). A factory that returns another library's
    object of the same name, or something else on one of its paths, is not FlashInfer's."""
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "__init__.py").write_text("")
    (tmp_path / "proj" / "attn.py").write_text(
        "from flashinfer import BatchDecodeWithPagedKVCacheWrapper\n\n\n"
        "def make_wrapper(buf):\n    return BatchDecodeWithPagedKVCacheWrapper(buf, 'NHD')\n\n\n"
        "def maybe(buf, other):\n    if other:\n        return other\n"
        "    return BatchDecodeWithPagedKVCacheWrapper(buf, 'NHD')\n"
    )
    (tmp_path / "proj" / "other.py").write_text(
        "import mylib\n\n\ndef make_wrapper(buf):\n"
        "    return mylib.BatchDecodeWithPagedKVCacheWrapper(buf)\n"
    )
    args = ", ".join(f"a[{i}]" for i in range(13))
    (tmp_path / "proj" / "user.py").write_text(
        "from proj.attn import make_wrapper, maybe\nfrom proj.other import make_wrapper as theirs\n"
        "\n\nclass Runner:\n    def __init__(self, buf):\n        self.w = make_wrapper(buf)\n"
        "        self.t = theirs(buf)\n        self.m = maybe(buf, None)\n\n"
        f"    def go(self, a):\n        self.w.plan({args})\n        self.t.plan({args})\n"
        f"        self.m.plan({args})\n"
    )
    monkeypatch.chdir(tmp_path)
    args_ = ["check", "--from", "0.5.3", "--to", "0.6.1", "--no-cache", "--select", "FI002"]
    r = CliRunner().invoke(cli, [*args_, "--output-format", "json", "."], catch_exceptions=False)
    found = [(d["path"], d["line"]) for d in json.loads(r.stdout)["diagnostics"]]
    assert found == [("proj/user.py", 12)], r.output


def test_a_method_annotated_to_return_a_flashinfer_class_gives_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vLLM 0.33.0's one-sided all-to-all: a manager class in one module whose method is
    annotated to return FlashInfer's `NVLinkOneSidedAlltoAll` (imported for type checking
    only), held in another module by a class attribute annotated with the manager's class:
    the keyword that 0.7.4 renamed on its `dispatch` is found there. A manager of another
    module whose method returns something else is not FlashInfer's."""
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "__init__.py").write_text("")
    (tmp_path / "proj" / "all2all.py").write_text(
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
        "    from flashinfer.moe_ep import NVLinkOneSidedAlltoAll\n\n\n"
        'class Manager:\n    def get_communication(self) -> "NVLinkOneSidedAlltoAll":\n'
        "        return self.communication\n"
    )
    (tmp_path / "proj" / "mine.py").write_text(
        "import mylib\n\n\nclass Manager:\n"
        "    def get_communication(self) -> mylib.NVLinkOneSidedAlltoAll:\n"
        "        return self.communication\n"
    )
    (tmp_path / "proj" / "user.py").write_text(
        "from proj import mine\nfrom proj.all2all import Manager\n\n\n"
        "class Prepare:\n    all2all_manager: Manager\n    other: mine.Manager\n\n"
        "    def go(self, x):\n        communication = self.all2all_manager.get_communication()\n"
        "        communication.dispatch(x, max_tokens_per_rank=4)\n"
        "        self.other.get_communication().dispatch(x, max_tokens_per_rank=4)\n"
    )
    monkeypatch.chdir(tmp_path)
    args_ = ["check", "--from", "0.7.2.post1", "--to", "0.7.4", "--no-cache", "--select", "FI002"]
    r = CliRunner().invoke(cli, [*args_, "--output-format", "json", "."], catch_exceptions=False)
    found = [(d["path"], d["line"]) for d in json.loads(r.stdout)["diagnostics"]]
    assert found == [("proj/user.py", 11)], r.output


def test_a_file_that_imports_a_reexport_runs_the_rules_its_target_concerns() -> None:
    """Not every rule: those that would see the file if it named the re-export's target (the
    others are recorded as skipped, for a later round to run them if another re-export
    reaches a name they look for)."""
    from migrate_fi.base.versions import parse_version
    from migrate_fi.framework.rule import RunOptions
    from migrate_fi.run.pipeline import Mode, process_source
    from migrate_fi.run.registry import select

    lo, hi = parse_version("0.6.10"), parse_version("0.6.11")
    selection = select(lo, hi)
    options = RunOptions(lo, hi, rules=selection.settings())
    source = b"from proj.ops import q\n\n\ndef f(x, gs):\n    return q(x, gs, 16, False, True, False, True)\n"
    aliases = {"proj.ops.q": "flashinfer.fp4_quantize"}
    result = process_source(
        source,
        "proj/user.py",
        selection.rules,
        options,
        Mode.CHECK,
        ("proj.user", False),
        aliases,
        (),
    )
    assert [d.code for d in result.diagnostics] == ["FI001", "FI003"]  # (fp4_quantize's)
    assert result.lookups is not None
    assert "allreduce_workspace_group" in result.lookups.skipped  # (FI004: not its API)
    assert "fp4_quantize_keywords" not in result.lookups.skipped


# The first pass's order: `proj/user.py` imports a name `proj/ops.py` re-exports, and is
# analysed after it, with it, once; `proj/lazy.py` imports it by call, writing its name.
ORDERED = {
    "proj/__init__.py": "",
    "proj/ops.py": "import flashinfer\nfrom flashinfer import fp4_quantize\n",
    "proj/user.py": (
        "import flashinfer\nfrom proj.ops import fp4_quantize\n\n\n"
        "def q(x, gs):\n"
        "    return fp4_quantize(x, gs[:1], 16, False, True, False, True)\n"
    ),
    "proj/sub/__init__.py": "",
    "proj/sub/rel.py": (
        "import flashinfer\nfrom ..ops import fp4_quantize\n\n\n"
        "def q(x, gs):\n"
        "    return fp4_quantize(x, gs[:1], 16, False, True, False, True)\n"
    ),
    "proj/lazy.py": (
        "import importlib\nimport flashinfer\n\n\n"
        "def q(x, gs):\n"
        "    m = importlib.import_module('proj.ops')\n"
        "    return m.fp4_quantize(x, gs[:1], 16, False, True, False, True)\n"
    ),
    "proj/alone.py": (
        "from flashinfer import fp4_quantize\n\n\n"
        "def q(x, gs):\n"
        "    return fp4_quantize(x, gs[:1], 16, False, True, False, True)\n"
    ),
    # two modules that import each other: each is analysed all the same
    "proj/a.py": "import flashinfer\nfrom proj.b import fp4_quantize\n",
    "proj/b.py": "import flashinfer\nfrom proj.a import g\nfrom flashinfer import fp4_quantize\n",
}


def test_a_file_waits_for_the_modules_its_imports_name(tmp_path: Path) -> None:
    write(tmp_path, {**ORDERED, **{f"flashinfer/{k}": v for k, v in OWN_TREE.items()}})
    files = [
        SourceFile(p.read_bytes(), str(p), ("positional_binding",))
        for p in sorted(tmp_path.rglob("*.py"))
    ]
    order = migrate_fi.run.reexports.ExportOrder(files, {}, migrate_fi.run.pipeline.RuleTests([]))
    after = {
        str(Path(p).relative_to(tmp_path)): sorted(str(Path(x).relative_to(tmp_path)) for x in w)
        for p, w in order.after.items()
    }
    assert after == {
        "proj/user.py": ["proj/__init__.py", "proj/ops.py"],
        "proj/sub/rel.py": ["proj/__init__.py", "proj/ops.py"],
        "proj/lazy.py": ["proj/__init__.py", "proj/ops.py"],
        "proj/a.py": ["proj/__init__.py", "proj/b.py"],
        "proj/b.py": ["proj/__init__.py", "proj/a.py"],
        # (FlashInfer's own modules re-export nothing: none waits for one)
    }
    by_name = {str(Path(f.path).relative_to(tmp_path)): f for f in files}
    ops, user = by_name["proj/ops.py"], by_name["proj/user.py"]
    assert order.awaited(ops) and not order.awaited(user) and not order.ready(user)
    # the longest chain of files that wait, one for the other, from each (in bytes)
    assert order.chain(ops) == len(ops.data) + max(
        len(by_name[p].data) for p in ("proj/user.py", "proj/sub/rel.py", "proj/lazy.py")
    )


def test_the_first_pass_gives_a_waiting_file_its_modules_reexports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, ORDERED)
    found, counts = check(tmp_path, monkeypatch)
    paths = sorted({d["path"] for d in found["diagnostics"]})
    assert paths == ["proj/alone.py", "proj/lazy.py", "proj/sub/rel.py", "proj/user.py"]
    # analysed once each: the re-export was known when they were (a file that imports by call
    # is analysed again for the other modules' re-exports of `flashinfer` itself, whose names
    # it writes: `unaffected` cannot tell it never imports them)
    assert [counts[p] for p in ("proj/user.py", "proj/sub/rel.py")] == [1, 1]
    # the same findings as a first pass in no order, its files analysed again in the rounds
    monkeypatch.setattr(migrate_fi.run.engine, "ExportOrder", _NoOrder)
    unordered, counts = check(tmp_path, monkeypatch)
    assert unordered == found
    assert counts["proj/user.py"] == 2


class _NoOrder(migrate_fi.run.reexports.ExportOrder):
    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.after = {}


def test_the_modules_an_import_statement_names(tmp_path: Path) -> None:
    from migrate_fi.analysis.importwords import modules_named

    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    for init in ("pkg/__init__.py", "pkg/sub/__init__.py"):
        (tmp_path / init).write_text("")
    data = (
        b"from a.b import c, d as e\n"
        b"import x.y as z, w\n"
        b"from ..p import (\n    q,\n    r as s,\n)\n"
        b"from . import t\n"
        b"from m import *\n"
        b"if T:\n    from n.o import u\n"
    )
    named = modules_named(data, str(tmp_path / "pkg" / "sub" / "mod.py"))
    assert named == {
        "a.b", "a.b.c", "a.b.d", "x.y", "w", "pkg.p", "pkg.p.q", "pkg.p.r", "pkg.sub",
        "pkg.sub.t", "m", "n.o", "n.o.u",
    }  # fmt: skip
