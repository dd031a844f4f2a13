"""A `check` whose inputs did not change is answered from the record of its last run
(`migrate_fi.run.warm`): byte for byte what that run printed, with its exit status; and any change
to what the run read (a file of the tree, a new file, the configuration, one looked for above,
the pins, the record of a migration, a .gitignore, the command line, the environment) makes
the command run again."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from migrate_fi.base import depends
from migrate_fi.base.modules import splits
from migrate_fi.cli import cli
from migrate_fi.run import warm

DEMO = Path(__file__).parent / "fixtures" / "projects" / "demo"
STREAMS = (False, "utf-8", "strict", False, "utf-8", "backslashreplace")
LEGACY = (
    "from flashinfer import fp4_quantize\n\n\n"
    "def q(x, gs):\n"
    "    return fp4_quantize(x, gs[:1], 16, False, True, False, True)\n"
)

Output = tuple[int, str, str]


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The demo project, its files settled as soon as written, with a result cache of its own."""
    monkeypatch.setattr(depends, "_RECENT_NS", 0)
    monkeypatch.setenv("MIGRATE_FI_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "work" / "demo"
    shutil.copytree(DEMO, root)
    monkeypatch.chdir(root)
    return root


def fresh_process() -> None:
    """What a process remembers of the file system, forgotten (each command is a process)."""
    from migrate_fi.base import modules
    from migrate_fi.codemods import _layout
    from migrate_fi.project import discovery

    depends.forget_stats()
    for memo in (discovery.python_files, discovery.tree_signature, modules._package_parts):
        memo.cache_clear()
    _layout._for_folder.cache_clear()


def command(*argv: str) -> warm.Command:
    return warm.Command.current(["check", *argv])._replace(streams=STREAMS)


def made(*argv: str) -> Output:
    """The command run, recorded as the entry point records it (after a replay of the same
    command that missed, taking the walk that replay made, as the entry point does)."""
    fresh_process()
    warm.begin(command(*argv))
    try:
        r = CliRunner().invoke(cli, ["check", *argv], catch_exceptions=False)
    finally:
        warm._forget()  # (as at the end of a process)
    return r.exit_code, r.stdout, r.stderr


def replayed(capsys: pytest.CaptureFixture[str], *argv: str) -> Output | None:
    capsys.readouterr()
    fresh_process()
    code = warm.replay(["check", *argv], command(*argv))
    out, err = capsys.readouterr()
    if code is None:
        assert out == err == ""  # (nothing printed: the command runs)
        return None
    return code, out, err


def test_a_replay_is_what_the_run_printed(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert replayed(capsys) is None  # (never run)
    first = made()
    assert first[0] == 1 and "FI001" in first[1] and "Found" in first[2]
    assert replayed(capsys) == first
    assert replayed(capsys) == first
    assert made("--no-cache") == first  # (what a run without any cache prints)
    json_ = made("--output-format", "json")
    assert replayed(capsys, "--output-format", "json") == json_ and json_ != first


@pytest.mark.parametrize(
    "change",
    [
        "edit",
        "new file",
        "configuration",
        "configuration above",
        "pin",
        "record",
        "gitignore",
        "line length",
    ],
)
def test_a_change_to_what_the_run_read_makes_it_run_again(
    demo: Path, capsys: pytest.CaptureFixture[str], change: str
) -> None:
    config = demo / "pyproject.toml"
    if change == "configuration above":  # (none in the project: looked for above it)
        config.write_text(config.read_text().split("[tool.migrate-fi.rules.FI006]")[0])
    if change == "record":  # (its folder there already: the record alone appears)
        (demo / ".migrate-fi").mkdir()
    before = made()
    assert replayed(capsys) == before
    code = demo / "src" / "demo_server"
    if change == "edit":
        (code / "server.py").write_text((code / "server.py").read_text() + LEGACY)
    elif change == "new file":
        (code / "legacy.py").write_text(LEGACY)
    elif change == "configuration":
        with (demo / "pyproject.toml").open("a") as fh:
            fh.write('\n[tool.migrate-fi]\nignore = ["FI001"]\n')
    elif change == "configuration above":
        (demo.parent / "pyproject.toml").write_text('[tool.migrate-fi]\nignore = ["FI001"]\n')
    elif change == "pin":
        for pinned in (demo / "pyproject.toml", demo / "scripts" / "install.sh"):
            pinned.write_text(pinned.read_text().replace("0.6.8.post1", "0.6.10"))
    elif change == "record":  # (a record of an apply that stopped halfway, damaged)
        (demo / ".migrate-fi" / "last-apply.json").write_text("{")
    elif change == "gitignore":
        (demo / ".git").mkdir()
        (demo / ".gitignore").write_text("src/demo_server/layers/\n")
    elif change == "line length":  # (what the rewrites of test files are wrapped to)
        with (demo / "pyproject.toml").open("a") as fh:
            fh.write("\n[tool.ruff]\nline-length = 60\n")
    assert replayed(capsys) is None
    after = made()
    assert after != before or change == "line length", change  # (it changes the fixes only)
    assert replayed(capsys) == after


def test_another_command_line_or_environment_is_another_entry(
    demo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    made()
    assert replayed(capsys, "--select", "FI001") is None
    assert replayed(capsys, ".") is None  # (the same tree, said otherwise: run again)
    monkeypatch.setenv("MIGRATE_FI_SOMETHING", "1")
    assert replayed(capsys) is None
    monkeypatch.delenv("MIGRATE_FI_SOMETHING")
    assert replayed(capsys) is not None
    monkeypatch.chdir(demo / "src")
    assert replayed(capsys, "..") is None  # (another current folder)
    # (and other options of the interpreter: `python -W error -m migrate_fi check`)
    assert command()._replace(python="-W error").entry() != command().entry()


def test_what_is_never_replayed(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a run that reports an error says it again each time
    (demo / "src" / "demo_server" / "broken.py").write_text(LEGACY + "x = (\n")
    assert made()[0] == 2
    assert replayed(capsys) is None
    (demo / "src" / "demo_server" / "broken.py").unlink()
    # a run that read a file changed too recently for its stat to say so
    os.environ["MIGRATE_FI_CACHE_DIR"] = str(demo.parent / "other-cache")
    with pytest.MonkeyPatch.context() as m:
        m.setattr(depends, "_RECENT_NS", 10**12)
        made()
    assert replayed(capsys) is None
    # --no-cache, --changed-since, another command, MIGRATE_FI_NO_CACHE=1
    for argv in (["check", "--no-cache"], ["check", "--changed-since", "HEAD"], ["diff"]):
        assert not warm.Command.current(argv).eligible()
    with pytest.MonkeyPatch.context() as m:
        m.setenv("MIGRATE_FI_NO_CACHE", "1")
        assert not warm.Command.current(["check"]).eligible()


def test_a_run_that_started_a_program_or_prints_what_click_alters_is_not_kept(
    demo: Path,
) -> None:
    from migrate_fi.outputs import reporting

    summary = reporting.summary
    for spoil in ("program", "escape", "encoding"):
        c = command()
        if spoil == "encoding":  # (click would write it otherwise)
            c = c._replace(streams=(False, "ascii", "strict", False, "utf-8", "strict"))
        fresh_process()
        warm.begin(c)
        try:
            recording = warm.recording()
            assert recording is not None
            if spoil == "program":  # (git, say: what it reads is not known)
                recording.hook("subprocess.Popen", ("git", ["git", "status"], None, None))
            with pytest.MonkeyPatch.context() as m:
                if spoil == "escape":  # (click strips escape sequences, but on a terminal)
                    m.setattr(reporting, "summary", lambda *a: "\x1b[1m" + summary(*a))
                r = CliRunner().invoke(cli, ["check"], catch_exceptions=False)
            assert r.exit_code == 1, r.output
        finally:
            warm._forget()
        assert warm.replay(["check"], c) is None, spoil
    made()
    assert warm.replay(["check"], command()) is not None  # (the same run, unspoilt)


def test_the_entry_point_answers_without_importing_the_command_line(tmp_path: Path) -> None:
    """The real entry, end to end: the same bytes and status, and neither click nor the rules
    are imported (what makes it fast)."""
    root = tmp_path / "demo"
    shutil.copytree(DEMO, root)
    env = {**os.environ, "MIGRATE_FI_CACHE_DIR": str(tmp_path / "cache")}
    time.sleep(2.1)  # (a file changed within two seconds is never trusted by its stat)

    def run() -> tuple[int, bytes, bytes, bool]:
        r = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "migrate_fi", "check", "."],
            cwd=root,
            env=env,
            capture_output=True,
            check=False,
            timeout=300,
        )
        lines = r.stderr.splitlines(keepends=True)
        err = b"".join(x for x in lines if not x.startswith(b"import time:"))
        imported = b" click\n" in r.stderr or b" migrate_fi.cli\n" in r.stderr
        return r.returncode, r.stdout, err, imported

    first = run()
    assert first[0] == 1 and first[3]
    second = run()
    assert second[:3] == first[:3] and not second[3]


def test_a_damaged_entry_is_a_miss(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = made()
    entry = Path(command().entry())
    for damaged in (b"", b"\x00garbage", entry.read_bytes()[:-7]):
        entry.write_bytes(damaged)
        assert replayed(capsys) is None
    assert made() == first  # (the command runs, and keeps a sound entry again)
    assert replayed(capsys) == first


def test_the_run_after_a_replay_that_missed_takes_its_walk_digest_and_stats(
    demo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replay walked the tree, asked each file's stat and made the digest: the command
    that then runs walks, stats and digests nothing again (16 copies of SGLang's tree: 0.17 s
    of stats), and the entry it keeps is replayed."""
    from migrate_fi.run import engine

    made()
    server = demo / "src" / "demo_server" / "server.py"
    server.write_text(server.read_text() + LEGACY)
    fresh_process()
    capsys.readouterr()
    assert warm.replay(["check"], command()) is None
    walked = set(depends._stats)
    assert str(server) in walked

    def again(*args: object) -> None:
        raise AssertionError("walked or digested again")

    monkeypatch.setattr(engine, "discover", again)
    monkeypatch.setattr(engine, "tree_state", again)
    stats = []  # (the files whose stat the run asked of the file system)
    real_stat = depends.stat

    def stat(path: str) -> depends.Stat | None:
        if path not in depends._stats:
            stats.append(path)
        return real_stat(path)

    monkeypatch.setattr(depends, "stat", stat)
    warm.begin(command())
    try:
        r = CliRunner().invoke(cli, ["check"], catch_exceptions=False)
    finally:
        warm._forget()
    assert r.exit_code == 1 and "FI001" in r.stdout
    assert not walked & set(stats)
    monkeypatch.setattr(depends, "stat", real_stat)
    assert replayed(capsys) == (r.exit_code, r.stdout, r.stderr)


def test_what_the_run_did_not_read_keeps_the_replay(
    demo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replay misses only for what the run read: git at work inside `.git` (the run only
    looked whether it is there), or a shell's own variables, change nothing."""
    (demo / ".git").mkdir()
    first = made()
    assert replayed(capsys) == first
    (demo / ".git" / "index.lock").write_text("")  # (as `git status` does)
    (demo / ".git" / "index.lock").unlink()
    monkeypatch.setenv("_", "/usr/bin/something-else")
    monkeypatch.setenv("OLDPWD", "/elsewhere")
    assert replayed(capsys) == first


def test_an_upgraded_library_is_another_fingerprint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The result cache and the replay are keyed on the libraries a result depends on (found
    on sys.path, never imported): an upgrade of packaging is another key."""
    (tmp_path / "packaging").mkdir()
    init = tmp_path / "packaging" / "__init__.py"
    init.write_text("__version__ = '1'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(warm, "_fingerprint", None)
    before = warm.fingerprint()
    assert str(init) in warm._libraries()
    init.write_text("__version__ = '22'\n")
    monkeypatch.setattr(warm, "_fingerprint", None)
    assert warm.fingerprint() != before


def test_the_digest_of_a_walk_says_every_file_its_stat_and_its_packages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`tree_digest` changes with any file's path or stat, a package marker, a stale or linked
    file; None while a file is too new for its stat to say it changed; its folders are those
    `os.path.dirname` gives, asked once per folder."""
    import random

    monkeypatch.setattr(depends, "_RECENT_NS", 0)
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    files = [pkg / "a.py", pkg / "b.py", tmp_path / "c.py"]
    for f in files:
        f.write_text("x = 1\n")
    paths = [str(f) for f in files]

    def digest(*extra: list[str]) -> bytes | None:
        depends.forget_stats()
        from migrate_fi.base import modules

        modules._package_parts.cache_clear()
        return warm.tree_digest(paths, *(extra or ([], [])))

    first = digest()
    assert first is not None and digest() == first
    assert digest(["x.py.tmp"], []) != first and digest([], ["link.py"]) != first
    os.utime(files[0], ns=(1, 1))
    assert digest() != first
    touched = digest()
    (pkg / "__init__.py").write_text("")
    assert digest() not in (first, touched)
    monkeypatch.setattr(depends, "_RECENT_NS", 10**18)
    assert digest() is None

    rng = random.Random(5)
    parts = ["a", "b", "", "c.py", "d"]
    for _ in range(2000):
        sample = [
            rng.choice(["/", "", "//"])
            + "/".join(rng.choice(parts) for _ in range(rng.randint(0, 4)))
            for _ in range(rng.randint(0, 6))
        ]
        assert list(splits(sample)) == [os.path.split(p) for p in sample], sample


def entry_tree() -> bytes:
    """The digest of the walk the entry of the plain `check` was kept with."""
    import marshal

    with open(command().entry(), "rb") as fh:
        tree: bytes = marshal.loads(fh.read())[3]
    return tree


def flashinfer_package(demo: Path) -> Path:
    """A package `flashinfer` beside the demo's: its modules are FlashInfer's own."""
    package = demo / "src" / "flashinfer"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "ops.py").write_text("def op(x):\n    return x\n")
    return package


@pytest.mark.parametrize(
    "change",
    [
        "touch analysed",
        "touch re-exporter",
        "comment in unparsed",
        "touch in unparsed",
        "touch flashinfer's own module analysed",
    ],
)
def test_files_changed_in_no_way_that_matters_keep_the_replay(
    demo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    """A file whose stat changed while a rule analysed it and its bytes are the same, or that no
    rule must see and that imports none of the project's re-exports, leaves the output as it
    was: the replay prints it (`migrate_fi.run.patching`), and keeps the entry as the tree is now
    (the next replay is a plain one)."""
    code = demo / "src" / "demo_server"
    own = flashinfer_package(demo) / "quant.py"  # (analysed: it reaches a changed API)
    own.write_text("from .quantization import fp4_quantize as q\n\ny = q(x, gs[:1], 16)\n")
    first = made()
    tree = entry_tree()
    target = {
        "touch analysed": code / "layers" / "fp4_utils.py",
        "touch re-exporter": code / "layers" / "quant_api.py",
        "comment in unparsed": code / "layers" / "__init__.py",
        "touch in unparsed": code / "attention" / "__init__.py",
        "touch flashinfer's own module analysed": own,
    }[change]
    if change.startswith("touch"):
        os.utime(target, ns=(10**9, 10**9))
    else:
        target.write_text(target.read_text() + "# served by main(): see --port\n")
    from migrate_fi.codemods import _callers

    def searched(*args: object) -> None:
        raise AssertionError("the files of a search read again")

    with monkeypatch.context() as m:  # (the changed files alone are looked at)
        m.setattr(_callers, "_containing", searched)
        assert replayed(capsys) == first
    assert first == made("--no-cache")
    assert entry_tree() != tree

    from migrate_fi.run import patching

    def never(*args: object) -> None:
        raise AssertionError("patched again")

    monkeypatch.setattr(patching, "changes", never)
    assert replayed(capsys) == first


@pytest.mark.parametrize(
    "change",
    [
        "edit analysed",
        "unparsed imports a re-export",
        "unparsed names flashinfer",
        "unparsed calls a function whose callers were searched",
        "touch a script",
        "flashinfer's own module",
        "cannot be read",
    ],
)
def test_files_changed_in_a_way_that_may_matter_make_it_run_again(
    demo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    """A changed file a rule analysed (other bytes), one that a rule must see now, or that may
    import one of the project's re-exports, a file that is not Python, one of FlashInfer's own
    modules (tested with their module's name), or one that cannot be read: the command runs."""
    code = demo / "src" / "demo_server"
    own = flashinfer_package(demo) / "ops.py"  # (no rule must see it)
    script = demo / "scripts" / "build.sh"  # (no rule must see it)
    script.write_text("echo build\n")
    before = made()
    server = code / "server.py"
    if change == "edit analysed":  # (a file no search for callers found: its bytes alone)
        allreduce = code / "distributed" / "allreduce.py"
        allreduce.write_text(allreduce.read_text() + "\n# one more line\n")
    elif change == "unparsed imports a re-export":  # (never names FlashInfer)
        server.write_text(
            "from demo_server.layers.quant_api import grouped_gemm_nvfp4\n\n\n"
            "def gemm(a, b, s, t, m, out):\n"
            "    return grouped_gemm_nvfp4(a, b, s, t, m, 1.0, 128, 128, 128, out)\n"
        )
    elif change == "unparsed names flashinfer":
        server.write_text(server.read_text() + LEGACY)
    elif change == "unparsed calls a function whose callers were searched":  # (FI003's search)
        init = code / "attention" / "__init__.py"
        init.write_text(init.read_text() + "quantize_moe_input(1, 2, True)\n")
    elif change == "touch a script":  # (not a Python file: a pin file may include others)
        os.utime(script, ns=(10**9, 10**9))
    elif change == "flashinfer's own module":
        own.write_text(own.read_text() + "# edited\n")
    real = depends.read_bytes
    if change == "cannot be read":
        os.utime(server, ns=(10**9, 10**9))

        def read(path: str) -> bytes:
            if path == str(server):
                raise PermissionError(13, "Permission denied")
            return real(path)

        monkeypatch.setattr(depends, "read_bytes", read)
    assert replayed(capsys) is None
    monkeypatch.setattr(depends, "read_bytes", real)  # (readable again)
    after = made()
    assert after == made("--no-cache")
    # (a new site in these two; the new caller of quantize_moe_input leaves the report as it was)
    assert (after != before) == (
        change in ("unparsed imports a re-export", "unparsed names flashinfer")
    )


def test_the_files_whose_stat_changed_are_each_found() -> None:
    """`changed_files` finds exactly the files whose stat differs, over blocks of many files."""
    import random

    from migrate_fi.run.patching import RECORD, changed_files

    rng = random.Random(7)
    for size in (0, 1, 511, 512, 513, 2000):
        files = [f"f{i}.py" for i in range(size)]
        before = bytes(rng.getrandbits(8) for _ in range(size * RECORD))
        for _ in range(5):
            now = bytearray(before)
            picked = sorted(rng.sample(range(size), min(size, rng.randint(0, 4))))
            for i in picked:
                now[i * RECORD + rng.randrange(RECORD)] ^= 1 + rng.randrange(255)
            assert changed_files(files, before, bytes(now)) == [files[i] for i in picked]
    assert changed_files(["a.py"], b"\0" * RECORD, b"\0" * (2 * RECORD)) is None


def test_the_fingerprint_covers_every_rule_and_the_bundled_data(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A cached result depends on the rules and the release data: editing either (a rule, a
    notes file) must change the fingerprint, in an installed package as in an editable install
    of the source tree (where the rules live beside the package)."""
    import migrate_fi.codemods
    import migrate_fi.run.warm as warm

    stamped: list[str] = []
    stamp = warm._stamp

    def recording(path: str, st: os.stat_result) -> str:
        stamped.append(os.path.realpath(path))
        return stamp(path, st)

    monkeypatch.setattr(warm, "_stamp", recording)
    monkeypatch.setattr(warm, "_fingerprint", None)
    warm.fingerprint()
    rules = os.path.realpath(os.path.dirname(migrate_fi.codemods.__file__))
    package = os.path.realpath(os.path.dirname(migrate_fi.__file__))
    assert os.path.join(rules, "fp4_quantize_keywords.py") in stamped
    assert os.path.join(package, "data", "notes", "0.7.4.toml") in stamped
    assert os.path.join(package, "cli.py") in stamped
