"""Callers across a project's modules: what FI003 reads about a parameter from every call of its
function (codemods/_callers.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

QUANT = """\
from flashinfer import fp4_quantize


def quantize(x, scale):
    return fp4_quantize(x, scale)
"""


def _project(tmp_path: Path, users: dict[str, str]) -> Path:
    pkg = tmp_path / "proj"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "quant.py").write_text(QUANT)
    for name, text in users.items():
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return tmp_path


def _fi003(root: Path, *paths: str) -> list[dict[str, object]]:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "migrate_fi",
            "check",
            "--from",
            "0.6.8.post1",
            "--to",
            "0.6.11",
            "--select",
            "FI003",
            "--output-format",
            "json",
            "--exit-zero",
            *(paths or ["."]),
        ],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return list(json.loads(proc.stdout)["diagnostics"])


ONE = "import torch\nfrom proj.quant import quantize\n\nquantize(None, torch.ones(1))\n"
MANY = (
    "import torch\nfrom proj import quant\n\n\ndef run(x):\n    quant.quantize(x, torch.ones(8))\n"
)


def test_every_caller_in_other_modules_passes_one_element(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        {
            "proj/user.py": ONE,
            "proj/sub/__init__.py": "",
            "proj/sub/more.py": ONE.replace("proj.quant", "..quant"),
        },
    )
    assert _fi003(root) == []


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this system")
def test_the_search_walks_past_a_named_pipe(tmp_path: Path) -> None:
    """A named pipe among the files a search reads is left unread (opening it to read would
    wait for a writer forever); the callers around it are still read."""
    root = _project(tmp_path, {"proj/user.py": ONE, "proj/bad.py": MANY})
    os.mkfifo(root / "proj" / "pipe.py")
    os.mkfifo(root / "proj" / "flashinfer_quantize.py")
    found = _fi003(root)
    assert len(found) == 1 and "proj/bad.py:6" in str(found[0]["message"])


def test_a_caller_in_another_module_is_named(tmp_path: Path) -> None:
    root = _project(tmp_path, {"proj/user.py": ONE, "proj/bad.py": MANY})
    found = _fi003(root)
    assert len(found) == 1 and found[0]["path"] == "proj/quant.py"
    message = str(found[0]["message"])
    assert "the call at proj/bad.py:6 passes `torch.ones(8)`" in message, message


def test_callers_outside_the_package_count_in_a_git_tree(tmp_path: Path) -> None:
    test = "import torch\nfrom proj.quant import quantize\n\n\ndef test_it():\n    quantize(None, torch.rand(4))\n"
    root = _project(tmp_path, {"proj/user.py": ONE, "tests/test_quant.py": test})
    (root / ".git").mkdir()
    found = _fi003(root, "proj")  # only the package is checked; its callers are looked for
    assert [d["path"] for d in found] == ["proj/quant.py"]
    assert "tests/test_quant.py:6" in str(found[0]["message"])


def test_a_function_handed_around_is_not_judged_by_its_calls(tmp_path: Path) -> None:
    hooks = "from proj.quant import quantize\n\nHOOKS = {'q': quantize}\n"
    root = _project(tmp_path, {"proj/user.py": ONE, "proj/hooks.py": hooks})
    found = _fi003(root)
    assert len(found) == 1 and "not all of its calls can be seen" in str(found[0]["message"])


def test_a_custom_op_is_also_called_through_torch_ops(tmp_path: Path) -> None:
    op = """\
import torch
from flashinfer import fp4_quantize


@torch.library.custom_op("proj::quantize_op", mutates_args=[])
def quantize_op(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return fp4_quantize(x, scale)[0]


def direct(x):
    return quantize_op(x, torch.ones(1))
"""
    through_ops = (
        "import torch\n\n\ndef run(x):\n    return torch.ops.proj.quantize_op(x, torch.ones(8))\n"
    )
    root = _project(tmp_path, {"proj/op.py": op, "proj/user.py": through_ops})
    found = [d for d in _fi003(root) if d["path"] == "proj/op.py"]
    assert len(found) == 1 and "proj/user.py:5" in str(found[0]["message"])
    (root / "proj/user.py").write_text(through_ops.replace("ones(8)", "ones(1)"))
    assert [d for d in _fi003(root) if d["path"] == "proj/op.py"] == []


def test_the_searched_files_kept_fit_in_their_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A caller search reads every file of its root: their bytes are kept for the next search
    only up to a budget, the oldest dropped first, and what is read is always the file."""
    from migrate_fi.codemods import _callers

    monkeypatch.setattr(_callers, "_READ_BUDGET", 250)
    monkeypatch.setattr(_callers, "_kept", {})
    monkeypatch.setattr(_callers, "_kept_bytes", 0)
    paths = []
    for i in range(5):
        path = tmp_path / f"m{i}.py"
        path.write_bytes(bytes([65 + i]) * 100)
        paths.append(str(path))
    (tmp_path / "big.py").write_bytes(b"x" * 300)
    for i, path in enumerate(paths):
        assert _callers.read_kept(path) == bytes([65 + i]) * 100
        assert _callers._kept_bytes == sum(len(v or b"") for v in _callers._kept.values()) <= 250
    assert list(_callers._kept) == paths[3:]  # the newest two fit
    assert _callers.read_kept(str(tmp_path / "big.py")) == b"x" * 300  # read, never kept
    assert str(tmp_path / "big.py") not in _callers._kept
    assert _callers.read_kept(str(tmp_path / "missing.py")) is None


def test_a_search_holds_while_the_files_that_mention_its_words_are_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The note a caller search leaves (`_callers.mentions_hold`): as noted while no file under
    its root changed; an edit elsewhere keeps it (said again with the tree as it is now);
    an edit of a file that mentions the name, a new one that does, or one that no longer does,
    breaks it."""
    from migrate_fi.base import depends
    from migrate_fi.codemods import _callers
    from migrate_fi.project import discovery

    monkeypatch.setattr(depends, "_RECENT_NS", 0)  # (a file just written counts as settled)
    monkeypatch.setattr(_callers, "_kept", {})
    root = _project(tmp_path, {"proj/user.py": "from proj.quant import quantize\n"})
    (root / "proj" / "other.py").write_text("x = 1\n")

    def new_run() -> None:  # (what a process of its own forgets)
        depends.forget_stats()
        discovery.python_files.cache_clear()
        discovery.tree_signature.cache_clear()
        _callers._kept.clear()

    def noted() -> tuple[str, str, str]:
        new_run()
        depends.start()
        _callers._mentioning(str(root), (b"quantize",))
        (note,) = depends.finish() or ()
        return note

    kind, argument, value = noted()
    new_run()
    found = _callers._mentioning(str(root), (b"quantize",))
    assert found == [str(root / "proj" / "quant.py"), str(root / "proj" / "user.py")]
    new_run()
    assert depends.current([(kind, argument, value)]) == [value]  # nothing changed

    (root / "proj" / "other.py").write_text("x = 2  # edited elsewhere\n")
    new_run()
    (fresh,) = depends.current([(kind, argument, value)])
    assert fresh is not None and fresh != value  # holds: the same files, the same bytes
    assert fresh == noted()[2]  # (what a search now notes)

    user = root / "proj" / "user.py"
    for change in ("edit", "new", "gone"):
        kind, argument, value = noted()
        if change == "edit":
            user.write_text("from proj.quant import quantize\n\nquantize(1, 2)\n")
        elif change == "new":
            (root / "proj" / "more.py").write_text("from proj.quant import quantize as q\n")
        else:
            (root / "proj" / "more.py").write_text("q = None\n")
        new_run()
        assert depends.current([(kind, argument, value)]) == [None], change


def test_a_result_that_searched_is_reused_after_an_edit_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the result cache: an edit of a file that does not mention the function keeps the
    result of the file whose rule searched its callers (its note is said again as it stands,
    and kept so: the run after does not read the project again); an edit of a caller does
    not."""
    from migrate_fi.base import depends
    from migrate_fi.base.versions import parse_version
    from migrate_fi.codemods import _callers
    from migrate_fi.framework.rule import RunOptions
    from migrate_fi.run import engine, pipeline
    from migrate_fi.run.registry import all_rules

    monkeypatch.setattr(depends, "_RECENT_NS", 0)  # (a file just written counts as settled)
    monkeypatch.setenv("MIGRATE_FI_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "p").mkdir()
    root = _project(tmp_path / "p", {"proj/user.py": MANY, "scripts/other.py": "x = 1\n"})
    rules = [c for c in all_rules() if c.code == "FI003"]
    options = RunOptions(parse_version("0.6.8.post1"), parse_version("0.6.11"))
    analysed: list[str] = []
    searched: list[str] = []
    process, hold = pipeline.process_source, _callers.mentions_hold

    def counting(data, path, *args, **kwargs):  # type: ignore[no-untyped-def]
        analysed.append(os.path.basename(path))
        return process(data, path, *args, **kwargs)

    def holding(
        notes: list[tuple[str, str]], changed: dict[str, depends.Change] | None = None
    ) -> list[str | None]:
        found = hold(notes, changed)
        searched.extend(a for (a, v), now in zip(notes, found, strict=True) if now != v)
        return found  # (those: the project read again)

    monkeypatch.setattr(pipeline, "process_source", counting)
    monkeypatch.setattr(_callers, "mentions_hold", holding)

    def run() -> list[str]:
        _callers._parsed.cache_clear()  # (each run is a process of its own; the run forgets
        # the trees and bytes it read itself, `depends.on_forget_stats`)
        analysed.clear()
        searched.clear()
        # (the package is checked; its callers are searched for from the folder above it)
        result = engine.run([str(root / "proj")], rules, options, pipeline.Mode.CHECK, jobs=1,
                            use_cache=True)  # fmt: skip
        return [f"{d.path}:{d.line}" for d in result.diagnostics]

    first = run()
    assert "quant.py" in analysed and first
    (root / "scripts" / "other.py").write_text("x = 2\n")  # (never walked: the memo holds)
    assert run() == first
    assert "quant.py" not in analysed and len(searched) == 1  # reused: the project read again
    assert run() == first and not searched  # (its note kept as it stands now)
    (root / "proj" / "user.py").write_text(MANY.replace("ones(8)", "ones(1)"))
    assert run() == [] and "quant.py" in analysed


def test_the_searches_of_one_root_read_its_files_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two searches of the same root, checked after an edit elsewhere, read each file once;
    one that no longer holds says so beside one that does."""
    from migrate_fi.base import depends
    from migrate_fi.codemods import _callers
    from migrate_fi.project import discovery

    monkeypatch.setattr(depends, "_RECENT_NS", 0)
    root = _project(tmp_path, {"proj/user.py": ONE, "proj/other.py": "x = 1\n"})
    notes = []
    for word in (b"quantize", b"torch"):
        depends.forget_stats()
        depends.start()
        _callers._mentioning(str(root), (word,))
        notes += list(depends.finish() or ())
    (root / "proj" / "other.py").write_text("import torch\n")  # (a file naming the second)
    depends.forget_stats()
    discovery.python_files.cache_clear()
    discovery.tree_signature.cache_clear()
    read: list[str] = []
    real = _callers._into_buffer

    def reading(path: str) -> tuple[object, int]:
        read.append(path)
        return real(path)

    monkeypatch.setattr(_callers, "_into_buffer", reading)
    first, second = depends.current(notes)
    assert first is not None and first != notes[0][2] and second is None
    assert sorted(read) == sorted(set(read)) and len(read) == 4  # (__init__, quant, user, other)


def test_a_search_reads_each_file_into_one_buffer_and_a_larger_one_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The files of a search are read into one buffer (no bytes object made for those that
    contain none); a file larger than it is read whole, and a file that cannot be read
    contains nothing. What is found is each file's whole bytes."""
    from migrate_fi.codemods import _callers
    from migrate_fi.project import discovery

    monkeypatch.setattr(_callers, "_BUFFER", bytearray(64))
    root = tmp_path / "proj"
    root.mkdir()
    small = b"def quantize(x):\n    return x\n"
    large = b"#" * 200 + b"\nfrom proj.a import quantize\nquantize(1)\n"
    (root / "a.py").write_bytes(small)
    (root / "b.py").write_bytes(large)
    (root / "c.py").write_bytes(b"x = 1\n" * 40)
    hidden = root / "d.py"
    hidden.write_bytes(b"quantize\n")
    discovery.python_files.cache_clear()
    if os.geteuid() != 0:  # (root reads it anyway)
        hidden.chmod(0)
    try:
        found = _callers._containing(str(root), [(b"quantize",), (b"nothing",)], kept=False)
    finally:
        hidden.chmod(0o644)
    names = [(os.path.basename(p), data) for p, data in found[0]]
    expected = [("a.py", small), ("b.py", large)]
    if os.geteuid() == 0:
        expected.append(("d.py", b"quantize\n"))
    assert names == expected and found[1] == []


def test_a_search_skips_the_files_the_reading_found_without_a_word_its_words_contain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file the run's reading found without "flashinfer" (in any case) cannot hold
    ``flashinfer_quantize``: a search for it does not read it, and finds what it finds reading
    every file. A word that contains none of the words it was read for is searched in all."""
    from migrate_fi.base import depends
    from migrate_fi.codemods import _callers
    from migrate_fi.project import discovery

    root = tmp_path / "proj"
    root.mkdir()
    texts = {
        "a.py": "def flashinfer_quantize(x):\n    return x\n",
        "b.py": "from proj.a import flashinfer_quantize\nflashinfer_quantize(1)\n",
        "c.py": "import torch\n",
        "d.py": "x = 1\n",
    }
    for name, text in texts.items():
        (root / name).write_text(text)
    discovery.python_files.cache_clear()
    paths = {name: str(root / name) for name in texts}
    opened: list[str] = []
    real = _callers._into_buffer

    def reading(path: str) -> tuple[object, int]:
        opened.append(os.path.basename(path))
        return real(path)

    monkeypatch.setattr(_callers, "_into_buffer", reading)
    words = [(b"flashinfer_quantize",), (b"FlashInfer_quantize", b"flashinfer")]
    depends.forget_stats()
    try:
        everything = _callers._containing(str(root), words, kept=False)
        assert sorted(opened) == ["a.py", "b.py", "c.py", "d.py"]
        depends.learn_absent({frozenset({b"flashinfer"}): [paths["c.py"], paths["d.py"]]})
        depends.learn_absent({frozenset({b"other"}): [paths["a.py"]]})  # (another gate's)
        assert depends.absent(b"FLASHINFER_x") == {paths["c.py"], paths["d.py"]}
        assert depends.absent(b"quantize") == frozenset()
        opened.clear()
        assert _callers._containing(str(root), words, kept=False) == everything
        assert sorted(opened) == ["a.py", "b.py"]
        opened.clear()
        _callers._containing(str(root), [*words, (b"torch",)], kept=False)
        assert sorted(opened) == ["a.py", "b.py", "c.py", "d.py"]  # (torch: any file may)
    finally:
        depends.forget_stats()
    assert depends.absent(b"flashinfer_quantize") == frozenset()  # (a run's, forgotten)


def test_the_lines_naming_a_function_give_its_uses_as_the_whole_walk_does() -> None:
    """`_naming` (the subtrees on the lines that hold a word) gives every Name and Attribute
    of that word `ast.walk` gives, in the same order, with the calls they are the callee of:
    over this package's own modules and cases where a node's line is not where its text is
    (a decorator above its def, expressions inside f-strings, a call spanning lines), however
    the lines end."""
    import ast
    import random
    import re

    from migrate_fi.analysis import nodes
    from migrate_fi.codemods import _callers

    folders = [Path(nodes.__file__).parents[1], Path(_callers.__file__).parent]
    sources = [p.read_bytes() for f in folders for p in sorted(f.rglob("*.py"))]
    made = (
        b"@quantize\ndef f(x):\n    return x\n\n\n@other(\n    quantize,\n)\nclass C:\n"
        b"    pass\n\n\nx = f'''{\n quantize(1)\n}''' + f\"{quantize}\"\n"
        b"y = (a.\n    quantize)(\n    2)\nz = [quantize for _ in ()]\n"
    )
    # (and where lines end otherwise: at CR LF, at lone CRs, at lone CRs among LFs)
    sources += [made, made.replace(b"\n", b"\r\n"), made.replace(b"\n", b"\r")]
    sources.append(made.replace(b"\n", b"\r", 5))
    rnd = random.Random(5)
    for data in sources:
        tree = ast.parse(data)
        names = sorted(set(re.findall(rb"[A-Za-z_]\w*", data)))
        for word in [b"quantize", *rnd.sample(names, min(8, len(names)))]:
            text = word.decode()
            seen = _callers._naming(tree, data, {word})

            def named(found: list[ast.AST], text: str = text) -> list[ast.AST]:
                return [
                    n
                    for n in found
                    if (isinstance(n, ast.Name) and n.id == text)
                    or (isinstance(n, ast.Attribute) and n.attr == text)
                ]

            everywhere = named(nodes.walk(tree))
            assert named(seen) == everywhere, word
            called = {id(c.func): c for c in seen if isinstance(c, ast.Call)}
            for n in everywhere:
                assert called.get(id(n)) is nodes.called_by(tree).get(id(n))
        nodes.release()


def test_a_caller_edited_between_two_runs_of_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs in one process (`CliRunner`, a library user) read a caller edited between them
    again: what was parsed of it is used again only for the same bytes."""
    from click.testing import CliRunner

    from migrate_fi.cli import cli

    root = _project(tmp_path, {"proj/user.py": ONE})
    monkeypatch.chdir(root)
    args = ["check", "--no-cache", "--from", "0.6.8.post1", "--to", "0.6.11"]
    args += ["--select", "FI003", "--output-format", "json", "--exit-zero", "."]

    def sites() -> list[object]:
        out = CliRunner().invoke(cli, args, catch_exceptions=False).stdout
        return list(json.loads(out)["diagnostics"])

    assert sites() == []
    (root / "proj" / "user.py").write_text(ONE.replace("torch.ones(1)", "torch.ones(8)"))
    assert len(sites()) == 1
