"""The result cache of `check`: the same findings with and without it, on every fixture project and
after edits; an entry is reused only while the file and what its analysis read are unchanged."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

PROJECTS = Path(__file__).parent / "fixtures" / "projects"
NAMES = sorted(p.name for p in PROJECTS.iterdir() if (PROJECTS / f"{p.name}.diff").exists())


def check(root: Path, cache: Path, *args: str) -> tuple[int, dict]:
    env = {**os.environ, "MIGRATE_FI_CACHE_DIR": str(cache)}
    r = subprocess.run(
        [sys.executable, "-m", "migrate_fi", "check", "--output-format", "json", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert r.returncode in (0, 1), r.stderr
    return r.returncode, json.loads(r.stdout)


def entries(cache: Path) -> int:
    return sum(1 for p in cache.rglob("*") if p.is_file() and not p.name.startswith(".tmp-"))


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_the_same_findings_with_and_without_the_cache(tmp_path: Path, name: str) -> None:
    root = tmp_path / name
    shutil.copytree(PROJECTS / name, root)
    cache = tmp_path / "cache"
    without = check(root, cache, "--no-cache")
    assert entries(cache) == 0  # --no-cache neither reads nor writes it
    cold = check(root, cache)
    assert entries(cache) > 0
    warm = check(root, cache)
    assert without == cold == warm


def test_an_edit_and_a_new_file_are_seen(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "requirements.txt").write_text("flashinfer-python==0.6.10\n")
    legacy = (
        "from flashinfer import fp4_quantize\n\n\n"
        "def q(x, gs):\n"
        "    return fp4_quantize(x, gs[:1], 16, False, True, False, True)\n"
    )
    (root / "a.py").write_text(legacy)
    (root / "c.py").write_text("x = 1\n")  # ruled out by the prefilter: not read next time
    cache = tmp_path / "cache"
    _, first = check(root, cache, "--to", "0.6.11", "--select", "FI001")
    assert [d["path"] for d in first["diagnostics"]] == ["a.py"]

    (root / "a.py").write_text(
        legacy.replace("True, False, True)", "True, False, enable_pdl=True)")
    )
    (root / "b.py").write_text(legacy)
    _, second = check(root, cache, "--to", "0.6.11", "--select", "FI001")
    assert [d["path"] for d in second["diagnostics"]] == ["b.py"]
    (root / "c.py").write_text(legacy)  # now it names FlashInfer: read again
    _, third = check(root, cache, "--to", "0.6.11", "--select", "FI001")
    assert [d["path"] for d in third["diagnostics"]] == ["b.py", "c.py"]


def _entry_noting_the_line_length(tmp_path: Path) -> tuple[Any, str, Path]:
    """A cache holding one file's result, which noted the project's line length (88)."""
    from migrate_fi.base import depends
    from migrate_fi.base.results import FileResult, Status
    from migrate_fi.base.versions import parse_version
    from migrate_fi.codemods import _layout
    from migrate_fi.framework.rule import RunOptions
    from migrate_fi.run.cache import ResultCache

    (tmp_path / ".git").mkdir()
    source = tmp_path / "test_graphs.py"
    source.write_text("")
    options = RunOptions(parse_version("0.6.10"), parse_version("0.6.11"))
    store = ResultCache(("x",), options, folder=str(tmp_path / "cache"))
    key = store.key(b"", "test_graphs.py", str(source), (None, False), {}, ("x",))
    depends.start()
    assert _layout.line_length(str(source)) == 88
    notes = depends.finish()
    assert notes == (("line-length", str(source), "88"),)
    store.put(key, notes, FileResult("test_graphs.py", Status.UNCHANGED))
    return store, key, source


def test_an_entry_holds_while_what_it_read_outside_the_file_holds(tmp_path: Path) -> None:
    """The line length a fix was wrapped to (FI005) is noted; another one is a miss."""
    from migrate_fi.codemods import _layout

    store, key, source = _entry_noting_the_line_length(tmp_path)
    assert store.get(key) is not None
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 60\n")
    _layout._for_folder.cache_clear()  # (a new run is a new process)
    assert store.get(key) is None
    other = store.key(b"", "test_graphs.py", str(source), (None, False), {"a.b": "flashinfer.c"},
                      ("x",))  # fmt: skip
    assert other != key  # analysed with other re-exports: another entry


def test_an_entry_whose_note_holds_as_it_stands_now_is_kept_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A note that still holds, said another way now (a search over files that changed, none
    of them among those it found: `migrate_fi.base.depends.current`), is kept as it stands: the
    entries are written again even where the walk did not change."""
    from migrate_fi.base import depends
    from migrate_fi.base.results import FileResult, Status
    from migrate_fi.base.versions import parse_version
    from migrate_fi.framework.rule import RunOptions
    from migrate_fi.run.cache import ResultCache, WalkMemo

    asked: list[str] = []

    def holds(notes: list[tuple[str, str]], changed: object = None) -> list[str | None]:
        asked.extend(value for _, value in notes)
        return ["now" if value in ("then", "now") else None for _, value in notes]

    monkeypatch.setitem(depends._HOLDS, "mentions", f"{__name__}:_holds")
    monkeypatch.setattr(sys.modules[__name__], "_holds", holds, raising=False)
    options = RunOptions(parse_version("0.6.10"), parse_version("0.6.11"))

    def store() -> ResultCache:
        return ResultCache(("x",), options, folder=str(tmp_path / "cache"))

    first = store()
    key = first.key(b"", "m.py", str(tmp_path / "m.py"), (None, False), {}, ("x",))
    result = FileResult("m.py", Status.UNCHANGED)
    first.put(key, (("mentions", "root", "then"),), result)
    first.save_walk(WalkMemo({}, {}))
    second = store()
    memo = second.walk()
    assert second.get(key) == result and asked == ["then"]
    assert second.notes() == (("mentions", "root", "now"),)
    second.save_walk(memo)  # (the walk unchanged: written for the note)
    third = store()
    third.walk()
    assert third.get(key) == result and asked == ["then", "now"]


def test_the_walk_remembers_what_a_file_matched_while_it_is_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from migrate_fi.base import depends
    from migrate_fi.run.cache import WalkMemo

    monkeypatch.setattr(depends, "_RECENT_NS", 0)  # (a file just written counts as settled)
    path = tmp_path / "m.py"
    path.write_text("import flashinfer\n")
    depends.forget_stats()  # (a run begins: `engine.run` does it)
    memo = WalkMemo({}, {})
    signature = memo.signature(str(path))
    assert signature is not None and memo.matched(str(path), signature) is None
    memo.note_matched(str(path), signature, ("positional_binding",))
    out, imports, matched = memo.state()
    depends.forget_stats()
    again = WalkMemo(out, imports, matched)  # the next run
    assert again.matched(str(path), again.signature(str(path))) == ("positional_binding",)
    path.write_text("import torch, os\n")  # changed: tested again by the run after
    # (a run asks a file's stat once: what it read at the start is what it remembers)
    assert again.signature(str(path)) == signature
    depends.forget_stats()
    later = WalkMemo(out, imports, matched)
    assert later.matched(str(path), later.signature(str(path))) is None


def test_the_files_known_to_import_none_are_those_unchanged_since(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`WalkMemo.not_known_to_import_none` leaves out the files noted as importing none of what
    is asked, while their stat is the one noted: a changed file, one noted for another question,
    one never noted, or a memo that remembers nothing, and the file is asked again."""
    from migrate_fi.base import depends
    from migrate_fi.run.cache import WalkMemo

    monkeypatch.setattr(depends, "_RECENT_NS", 0)
    paths = [str(tmp_path / f"m{i}.py") for i in range(4)]
    for p in paths:
        Path(p).write_text("import os\n")
    depends.forget_stats()
    memo = WalkMemo({}, {})
    memo.note_imports_none(paths[:3], "asked")
    memo.note_imports_none(paths[3:], "another question")
    out, imports, matched = memo.state()
    Path(paths[1]).write_text("import pkg.mod\n")  # changed since it was noted
    os.utime(paths[1], ns=(1, 1))
    depends.forget_stats()  # (the next run)
    again = WalkMemo(out, imports, matched)
    assert again.not_known_to_import_none(paths, "asked") == [paths[1], paths[3]]
    assert again.not_known_to_import_none(paths, "new") == paths
    assert WalkMemo().not_known_to_import_none(paths, "asked") == paths
    for p in paths:  # (as `imports_none` answers each)
        known = again.imports_none(p, again.signature(p), "asked")
        assert known == (p not in again.not_known_to_import_none(paths, "asked"))


def test_files_noted_to_import_none_are_noted_by_their_signature(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`WalkMemo.note_imports_none` notes each path with its signature, leaves out a file
    changed too recently to be told by its stat and one that is gone, and a memo that
    remembers nothing notes nothing."""
    from migrate_fi.base import depends
    from migrate_fi.run.cache import WalkMemo

    paths = [str(tmp_path / f"m{i}.py") for i in range(3)]
    for p in paths:
        Path(p).write_text("import os\n")
    gone = str(tmp_path / "gone.py")
    depends.forget_stats()
    recent = WalkMemo({}, {})  # (every file was written just now: none is noted)
    recent.note_imports_none(paths, "asked")
    assert recent.state()[1] == {} and not recent.changed
    monkeypatch.setattr(depends, "_RECENT_NS", 0)
    many = WalkMemo({}, {})
    many.note_imports_none([*paths, gone], "asked")
    assert many.state()[1] == {"asked": {p: many.signature(p) for p in paths}} and many.changed
    assert sorted(many.state()[1]["asked"]) == paths
    nothing = WalkMemo()
    nothing.note_imports_none(paths, "asked")
    assert nothing.state()[1] == {} and not nothing.changed


def test_a_search_of_the_whole_project_is_never_stored() -> None:
    from migrate_fi.base import depends

    depends.start()
    depends.note_unbounded()
    assert depends.finish() is None


def test_a_damaged_entry_is_a_miss(tmp_path: Path) -> None:
    root = tmp_path / "p"
    shutil.copytree(PROJECTS / "demo", root)
    cache = tmp_path / "cache"
    before = check(root, cache)
    for entry in cache.rglob("*"):
        if entry.is_file():
            entry.write_bytes(b"\x80\x04 damaged")
    assert check(root, cache) == before
    unwritable = tmp_path / "a-file"
    unwritable.write_text("")
    assert check(root, unwritable / "cache") == before  # a cache that cannot be written: no cache


def test_the_cache_is_bounded(tmp_path: Path) -> None:
    """A run keeps its entries in one file with its walk; those a later run with the same
    options leaves out get a file each; the folder is kept under the bound, oldest out."""
    from migrate_fi.base.results import FileResult, Status
    from migrate_fi.base.versions import parse_version
    from migrate_fi.framework.rule import RunOptions
    from migrate_fi.run.cache import ResultCache, WalkMemo

    options = RunOptions(parse_version("0.6.10"), parse_version("0.6.11"))
    store = ResultCache(("x",), options, folder=str(tmp_path))
    store.walk()
    for i in range(30):
        key = store.key(f"{i}".encode(), f"f{i}.py", f"/f{i}.py", (None, False), {}, ("x",))
        store.put(key, (), FileResult(f"f{i}.py", Status.UNCHANGED))
    store.save_walk(WalkMemo({}, {}))
    assert entries(tmp_path) == 1  # (the run's entries, with its walk)
    later = ResultCache(("x",), options, folder=str(tmp_path))  # (a run that uses none of them)
    later.walk()
    later.put(later.key(b"new", "g.py", "/g.py", (None, False), {}, ("x",)), (),
              FileResult("g.py", Status.UNCHANGED))  # fmt: skip
    later.save_walk(WalkMemo({}, {}))
    assert entries(tmp_path) == 31  # (each left out entry in a file of its own, and the walk)
    later.prune(limit=10)
    assert entries(tmp_path) == 10


def test_a_warm_run_takes_the_entries_it_used_from_one_file(tmp_path: Path) -> None:
    from migrate_fi.base.results import FileResult, Status
    from migrate_fi.base.versions import parse_version
    from migrate_fi.framework.rule import RunOptions
    from migrate_fi.run.cache import ResultCache, WalkMemo

    options = RunOptions(parse_version("0.6.10"), parse_version("0.6.11"))
    first = ResultCache(("x",), options, folder=str(tmp_path))
    first.walk()
    keys = [
        first.key(b"%d" % i, f"f{i}.py", f"/f{i}.py", (None, False), {}, ("x",)) for i in range(3)
    ]
    for i, key in enumerate(keys):
        first.put(key, (), FileResult(f"f{i}.py", Status.UNCHANGED))
    first.save_walk(WalkMemo({}, {}))
    walk_file = first._file(first._walk_key())
    for entry in tmp_path.rglob("*"):  # only the walk is left
        if entry.is_file() and str(entry) != walk_file:
            entry.unlink()
    warm = ResultCache(("x",), options, folder=str(tmp_path))
    warm.walk()
    found = warm.get(keys[1])
    assert found is not None and found.path == "f1.py"
    assert warm.get("0" * 40) is None  # (a key it does not hold: looked up as a file)
    # the walk is written again only where what the run used differs
    before = os.stat(walk_file).st_mtime_ns
    warm.get(keys[0])
    warm.get(keys[2])
    warm.save_walk(WalkMemo({}, {}))
    assert os.stat(walk_file).st_mtime_ns == before


def test_a_kept_result_holds_its_files_never_parsed_by_their_path() -> None:
    """A result kept for a replay pickles the files never parsed (most of a tree) as their path
    alone, and reads them back as they were; any other result of a file is kept whole."""
    import pickle

    from migrate_fi.base.results import FileResult, RunResult, Status

    files = [FileResult(f"pkg/m{i}.py", Status.SKIPPED) for i in range(200)]
    files[3] = FileResult("pkg/m3.py", Status.UNCHANGED, parsed=True, exports={"a.q": "f.q"})
    files[4] = FileResult("pkg/m4.py", Status.SKIPPED, exports={"a.r": "f.r"})  # (not bare)
    result = RunResult(files=files, notices=["a notice"], from_version="0.6.10", rules=["FI001"])
    data = pickle.dumps(result, protocol=4)
    assert pickle.loads(data) == result
    assert data.count(b"FileResult") == 1 and len(data) < 200 * 20  # (by path: a class once)


def test_a_value_of_the_run_is_kept_from_the_second_run_on(tmp_path: Path) -> None:
    """A first run over an empty cache works out the values of the run (a rule's triggers)
    and keeps none: it is often the only one; a run after it keeps them, and the next reads
    them."""
    from migrate_fi.base.versions import parse_version
    from migrate_fi.framework.rule import RunOptions
    from migrate_fi.run.cache import ResultCache

    options = RunOptions(parse_version("0.6.10"), parse_version("0.6.11"))
    made: list[int] = []

    def triggers() -> tuple[str, ...]:
        made.append(1)
        return ("flashinfer", "fp4_quantize")

    def run() -> tuple[str, ...]:
        cache = ResultCache(("x",), options, folder=str(tmp_path))
        walk = cache.walk()
        value = cache.memo("triggers x", triggers)
        walk.rule_out(str(tmp_path / "a.py"), (1, 2, 3, 4))
        cache.save_walk(walk)
        return value

    assert run() == ("flashinfer", "fp4_quantize") and len(made) == 1
    assert run() == ("flashinfer", "fp4_quantize") and len(made) == 2  # (kept now)
    assert run() == ("flashinfer", "fp4_quantize") and len(made) == 2  # read


LEGACY = (
    "from flashinfer import fp4_quantize\n\n\n"
    "def q(x, gs):\n"
    "    return fp4_quantize(x, gs[:1], 16, False, True, False, True)\n"
)


@pytest.fixture
def replaying(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """`engine.run` with the cache in ``tmp_path/cache``, files settled as soon as written;
    yields the list of runs that were made (not replayed), by their number."""
    from migrate_fi.base import depends
    from migrate_fi.run import engine

    monkeypatch.setattr(depends, "_RECENT_NS", 0)
    monkeypatch.setenv("MIGRATE_FI_CACHE_DIR", str(tmp_path / "cache"))
    made: list[int] = []
    tests = engine.rule_tests
    monkeypatch.setattr(engine, "rule_tests", lambda *a: made.append(1) or tests(*a))
    yield made


def _run(root: Path) -> object:
    from migrate_fi.base.versions import parse_version
    from migrate_fi.framework.rule import RunOptions
    from migrate_fi.run import engine
    from migrate_fi.run.pipeline import Mode
    from migrate_fi.run.registry import select

    versions = parse_version("0.6.10"), parse_version("0.6.11")
    rules = select(*versions).rules
    result = engine.run([str(root)], rules, RunOptions(*versions), Mode.CHECK, use_cache=True)
    return [(f.path, f.status, f.diagnostics, f.error) for f in result.files], result.notices


def test_a_run_over_a_tree_where_nothing_changed_is_the_last_one_read(
    tmp_path: Path, replaying: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole result is kept with the digest of the walk (every file's path and stat, the
    packages around each folder, the current folder): the same tree, the same result, without
    reading a file; any change, and the run is made again."""
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text(LEGACY)
    (root / "pkg" / "b.py").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    first = _run(root)
    assert len(replaying) == 1 and first[0][0][2]  # (a.py's finding)
    assert _run(root) == first and len(replaying) == 1  # replayed

    (root / "pkg" / "b.py").write_text(LEGACY)  # an edit
    second = _run(root)
    assert len(replaying) == 2 and second != first
    assert _run(root) == second and len(replaying) == 2

    (root / "pkg" / "__init__.py").write_text("")  # its files are modules of a package now
    third = _run(root)
    assert len(replaying) == 3 and _run(root) == third and len(replaying) == 3

    monkeypatch.chdir(root)  # the paths are shown from elsewhere
    shown = _run(root)
    assert len(replaying) == 4 and shown != third
    (root / "pkg" / "a.py").unlink()  # a file gone
    assert _run(root) != shown and len(replaying) == 5


def test_a_first_run_learns_the_stats_of_the_files_it_reads_as_it_reads_them(
    tmp_path: Path, replaying: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With nothing kept to replay, a run asks no file's stat before reading it: the digest of
    the tree waits for the end of the run and is made of the stats the reading gave (in the
    workers too); the next run over the same tree is this one's replayed, and an edit is seen."""
    from migrate_fi.base import depends

    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    for i in range(3):
        (root / "pkg" / f"mod{i}.py").write_text(LEGACY if i == 0 else f"x = {i}\n")
    monkeypatch.chdir(tmp_path)
    asked: list[str] = []
    stat = os.stat

    def spy(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        asked.append(os.fspath(path))
        return stat(path, *args, **kwargs)

    monkeypatch.setattr(depends.os, "stat", spy)
    first = _run(root)
    assert not [p for p in asked if os.path.basename(p).startswith("mod") and str(root) in p]
    assert _run(root) == first and len(replaying) == 1  # (the digest the walk makes again)
    (root / "pkg" / "mod1.py").write_text(LEGACY)
    assert _run(root) != first and len(replaying) == 2


def test_a_run_with_a_file_that_cannot_be_read_is_never_replayed(
    tmp_path: Path, replaying: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An error is said again by every run, never taken from the last one."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.py").write_text(LEGACY + "x = (\n")  # (it cannot be parsed)
    monkeypatch.chdir(tmp_path)
    first = _run(root)
    assert first[0][0][3] is not None
    assert _run(root) == first and len(replaying) == 2


def test_a_replay_holds_while_what_its_results_read_outside_their_files_holds(
    tmp_path: Path,
) -> None:
    from migrate_fi.base.results import FileResult, RunResult, Status
    from migrate_fi.base.versions import parse_version
    from migrate_fi.codemods import _layout
    from migrate_fi.framework.rule import RunOptions
    from migrate_fi.run.cache import ResultCache

    store, _, _ = _entry_noting_the_line_length(tmp_path)
    result = RunResult(files=[FileResult("test_graphs.py", Status.UNCHANGED)])
    store.save_replay(b"tree", result)
    assert store.replay(b"tree") == result
    assert store.replay(b"another tree") is None
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 60\n")
    _layout._for_folder.cache_clear()  # (a new run is a new process)
    assert store.replay(b"tree") is None
    options = RunOptions(parse_version("0.6.10"), parse_version("0.6.11"))
    fresh = ResultCache(("x",), options, folder=str(tmp_path / "other"))
    fresh.replayable = False  # (a result it neither took from the cache nor stored)
    fresh.save_replay(b"tree", result)
    assert fresh.replay(b"tree") is None


def test_an_entry_a_later_run_leaves_out_is_still_found(tmp_path: Path) -> None:
    """A run over part of the tree (or after an edit) keeps only what it used with its walk;
    the entries of the run before that it left out get a file each, and the next run over the
    whole tree finds them: no result is analysed again for having been left out once."""
    from migrate_fi.base.results import FileResult, Status
    from migrate_fi.base.versions import parse_version
    from migrate_fi.framework.rule import RunOptions
    from migrate_fi.run.cache import ResultCache, WalkMemo

    options = RunOptions(parse_version("0.6.10"), parse_version("0.6.11"))

    def run(use: list[str], new: list[str]) -> ResultCache:
        store = ResultCache(("x",), options, folder=str(tmp_path))
        store.walk()
        for name in use:
            assert store.get(keys[name]) is not None, name
        for name in new:
            store.put(keys[name], (), FileResult(f"{name}.py", Status.UNCHANGED))
        store.save_walk(WalkMemo({}, {}))
        return store

    probe = ResultCache(("x",), options, folder=str(tmp_path))
    keys = {
        n: probe.key(n.encode(), f"{n}.py", f"/{n}.py", (None, False), {}, ("x",)) for n in "abc"
    }
    run([], ["a", "b"])  # the whole tree, cold
    run(["a"], ["c"])  # part of it, with a new file: b is left out
    whole = run(["a", "b", "c"], [])
    assert whole.hits == 3
