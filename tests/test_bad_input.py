"""Bad input, all in one tree beside files that must still be migrated: each bad file gets a
one-line error naming it, or is skipped, or is migrated with its bytes kept; never a traceback,
never a damaged file; the exit codes are the documented ones, and every patch `diff` prints is
taken by `git apply --check`.

Runs the real command (`python -m migrate_fi`) in a subprocess, as a user would.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

LEGACY = (
    "from flashinfer import fp4_quantize\n\n\n"
    "def q(x, gs):\n"
    "    return fp4_quantize(x, gs[:1], 16, False, True, False, True)\n"
)
MIGRATED = LEGACY.replace("False, True)", "False, enable_pdl=True)")
RANGE = ("--from", "0.6.10", "--to", "0.6.11")

# name -> (bytes, what must happen: "migrated", "error", "unchanged")
CASES: dict[str, tuple[bytes, str]] = {
    "good.py": (LEGACY.encode(), "migrated"),
    # (files a rule must read: they import FlashInfer; one that only names it is not decoded)
    "undecodable.py": (b"from flashinfer import fp4_quantize\nx = '\xff\xfe'\n", "error"),
    "latin1.py": (
        b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + LEGACY.encode("latin-1"),
        "migrated",
    ),
    "bom.py": (b"\xef\xbb\xbf" + LEGACY.encode(), "migrated"),
    "crlf.py": (LEGACY.replace("\n", "\r\n").encode(), "migrated"),
    "cr.py": (LEGACY.replace("\n", "\r").encode(), "migrated"),
    "mixed_cr.py": (LEGACY.replace("\n", "\r", 2).encode(), "error"),
    # (a string comparison of the version after a lone CR: found on the line the parser
    # counts, and then, like any site with a fix there, a file that cannot be rewritten)
    "mixed_cr_version.py": (
        b'import flashinfer as fi\r# an old line\nNEW = fi.__version__ >= "0.6.4"\n',
        "error",
    ),
    "tabs.py": (
        LEGACY.replace("    return", "\treturn").replace("\n\n\ndef", "\n\x0c\n\ndef").encode(),
        "migrated",
    ),
    "deep.py": (
        ("from flashinfer import fp4_quantize\nx = " + "[" * 150 + "]" * 150 + "\n").encode(),
        "unchanged",
    ),
    "too_deep.py": (
        ("from flashinfer import fp4_quantize\nx = " + "(" * 300 + ")" * 300 + "\n").encode(),
        "error",
    ),
    "python2.py": (b"from flashinfer import fp4_quantize\nprint 'hello'\n", "error"),
    "empty.py": (b"", "unchanged"),
    "binary.py": (bytes(range(256)) * 4 + b"\nfrom flashinfer import fp4_quantize\x00", "error"),
    "named_only.py": (b"# flashinfer fp4_quantize\nx = '\xff\xfe'\n", "unchanged"),
}


def big_file() -> bytes:
    """About 5 MB of code with one legacy call at the end."""
    body = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(150_000))
    return (LEGACY.split("\n\n\n")[0] + "\n\n\n" + body + LEGACY.split("\n\n\n", 1)[1]).encode()


def run(root: Path, *args: str, drop_dac: bool = False) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "migrate_fi", *args],
        cwd=root,
        capture_output=True,
        timeout=600,
        check=False,
        preexec_fn=_drop_dac if drop_dac else None,
    )


def _drop_dac() -> None:
    """Take away root's power to read any folder (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH) from
    the command about to run: a folder of mode 000 is then unreadable, as for any user."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "PR_CAPBSET_DROP")


def _can_drop_dac() -> bool:
    if os.geteuid() != 0:
        return True  # nothing to drop: a mode-000 folder is unreadable already
    try:
        subprocess.run(["true"], preexec_fn=_drop_dac, check=True)
    except (OSError, subprocess.SubprocessError):
        return False
    return True


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    src = root / "src"
    src.mkdir(parents=True)
    for name, (data, _) in CASES.items():
        (src / name).write_bytes(data)
    (src / "big.py").write_bytes(big_file())
    (src / "readonly.py").write_text(LEGACY)
    (src / "readonly.py").chmod(0o444)
    (src / "loop").symlink_to("..")  # a folder symlink back up: never followed
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "legacy.py").write_text(LEGACY)
    (src / "link_outside.py").symlink_to(outside / "legacy.py")
    (src / "linked_dir").symlink_to(outside, target_is_directory=True)
    if shutil.which("git"):
        for args in (
            ("init", "-q", "-b", "main"),
            ("config", "user.email", "t@example.com"),
            ("config", "user.name", "t"),
            ("add", "-A"),
            ("commit", "-q", "-m", "bad input"),
        ):
            subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)
    return root


def error_lines(stderr: str) -> dict[str, str]:
    out = {}
    for line in stderr.splitlines():
        if ": error: " in line and line.startswith("src/"):
            out[line.split(":", 1)[0]] = line
    return out


@pytest.mark.slow
def test_check_reports_each_bad_file_in_one_line_and_reads_the_rest(tree: Path) -> None:
    r = run(tree, "check", *RANGE, "src", "src/good.py")  # a path given twice
    out, err = r.stdout.decode(), r.stderr.decode()
    assert "Traceback" not in out + err
    assert r.returncode == 2  # files that could not be processed
    errors = error_lines(err)
    expected_errors = {f"src/{n}" for n, (_, want) in CASES.items() if want == "error"}
    assert set(errors) == expected_errors, err
    assert "not valid utf-8" in errors["src/undecodable.py"]
    assert "syntax error" in errors["src/python2.py"]
    assert "lone CRs" in errors["src/mixed_cr.py"]
    reported = [line.split(":", 1)[0] for line in out.splitlines()]
    migrated = {f"src/{n}" for n, (_, want) in CASES.items() if want == "migrated"}
    # every file to migrate once (good.py was given twice), the read-only one, the big one;
    # nothing through a symlink
    assert sorted(reported) == sorted([*migrated, "src/readonly.py", "src/big.py"])
    assert "outside" not in out and "linked_dir" not in out and "loop" not in out
    # and the links skipped are said, once, in a note
    (note,) = [line for line in err.splitlines() if "symbolic link" in line]
    assert "3 symbolic link(s) skipped" in note, note
    for name in ("src/link_outside.py", "src/linked_dir", "src/loop"):
        assert name in note, note


def test_a_link_given_by_name_is_skipped_and_said(tmp_path: Path) -> None:
    """A link named on the command line is not followed either: the file behind it may be
    outside the project, and `apply` would write through it."""
    outside = tmp_path / "outside.py"
    outside.write_text(LEGACY)
    project = tmp_path / "project"
    project.mkdir()
    (project / "link.py").symlink_to(outside)
    (project / "real.py").write_text(LEGACY)
    (project / "alias.py").symlink_to(project / "real.py")
    r = run(project, "apply", *RANGE, "--allow-dirty", "link.py", "real.py", "alias.py")
    err = r.stderr.decode()
    assert r.returncode in (0, 1) and "Traceback" not in err, err
    assert "2 symbolic link(s) skipped (link.py, alias.py)" in err, err
    assert outside.read_text() == LEGACY  # never written through the link
    assert (project / "link.py").is_symlink() and (project / "alias.py").is_symlink()
    assert "enable_pdl=True" in (project / "real.py").read_text()  # processed once


def test_a_loop_of_links_is_skipped_with_a_note(tmp_path: Path) -> None:
    """Links that lead to each other (or to themselves) cannot be followed at all: skipped
    and said, as any link, never an internal error."""
    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "real.py").write_text(LEGACY)
    (project / "pkg" / "one").symlink_to("two")
    (project / "pkg" / "two").symlink_to("one")
    (project / "self.py").symlink_to("self.py")
    for command in ("check", "apply"):
        r = run(project, command, *RANGE, ".")
        err = r.stderr.decode()
        assert r.returncode == (1 if command == "check" else 0), err
        assert "internal error" not in err and "Traceback" not in err, err
        (note,) = [line for line in err.splitlines() if "symbolic link" in line]
        assert "3 symbolic link(s) skipped (self.py, pkg/one, pkg/two)" in note, note


def test_a_file_name_that_is_not_utf8_and_a_named_pipe(tmp_path: Path) -> None:
    """A file name is bytes: one that is not UTF-8 is read, analysed (its module re-exports a
    FlashInfer name another module imports), named in messages and patches, and migrated; a
    named pipe among the files is never opened (reading it would wait forever)."""
    project = tmp_path / "project"
    pkg = project / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    odd = os.fsdecode(b"\xff\xfemod.py")
    try:
        (pkg / odd).write_text(LEGACY)
    except (OSError, UnicodeError):
        pytest.skip("this file system refuses a name that is not UTF-8")
    (pkg / "user.py").write_text(
        "import importlib\n"
        "q = importlib.import_module('pkg.x').fp4_quantize\n"
        "q(x, gs[:1], 16, False, True, False, True)\n"
    )
    os.mkfifo(pkg / "pipe.py")
    os.mkfifo(project / "requirements-dev.txt")
    for command, code in (("check", 1), ("diff", 1), ("apply", 0)):
        r = run(project, command, *RANGE, ".")
        err = r.stderr.decode(errors="replace")
        assert r.returncode == code, err
        assert "internal error" not in err and "Traceback" not in err, err
    assert (pkg / odd).read_text() == MIGRATED
    assert run(project, "check", *RANGE, ".").returncode == 0


def test_an_exclude_pattern_that_is_no_pattern_is_said_in_one_line(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "mod.py").write_text(LEGACY)
    (project / "pyproject.toml").write_text('[tool.migrate-fi]\nexclude = ["x\\\\"]\n')
    for args in (("check", *RANGE, "."), ("check", *RANGE, "--exclude", "y\\", ".")):
        r = run(project, *args)
        err = r.stderr.decode(errors="replace")
        assert r.returncode == 2 and "internal error" not in err, err
        assert "is not a gitignore-style pattern" in err and err.count("\n") == 1, err


def test_a_gitignore_line_git_cannot_read_is_passed_over(tmp_path: Path) -> None:
    """A line of a .gitignore that is no pattern (`x\\`, or bytes that are no text) matches
    nothing, as in git; the file's other lines still apply."""
    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "__init__.py").write_text("")
    (project / "pkg" / "mod.py").write_text(LEGACY)
    (project / "pkg" / "generated.py").write_text(LEGACY)
    (project / ".gitignore").write_bytes(b"\xff\xfe\x00x\\\npkg/generated.py\nx\\\n")
    r = run(project, "check", *RANGE, ".")
    err = r.stderr.decode(errors="replace")
    assert r.returncode == 1 and "internal error" not in err, err
    assert b"pkg/mod.py" in r.stdout and b"generated.py" not in r.stdout


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this system")
@pytest.mark.parametrize(
    "name", [".gitignore", "pkg/.gitignore", "pyproject.toml", "requirements-dev.txt"]
)
def test_a_named_pipe_where_a_file_beside_the_code_is_read(tmp_path: Path, name: str) -> None:
    """What is read beside the Python files (ignore files, the configuration looked for
    upward, a requirements file's include) may be a named pipe: it is never waited on."""
    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "__init__.py").write_text("")
    (project / "pkg" / "mod.py").write_text(LEGACY)
    (project / "requirements.txt").write_text("-r requirements-dev.txt\n")
    os.mkfifo(project / name)
    for command, code in (("check", 1), ("apply", 0)):
        r = subprocess.run(
            [sys.executable, "-m", "migrate_fi", command, *RANGE, "."],
            cwd=project,
            capture_output=True,
            timeout=60,
            check=False,
        )
        err = r.stderr.decode(errors="replace")
        assert r.returncode == code, err
        assert "internal error" not in err and "Traceback" not in err, err
    assert (project / "pkg" / "mod.py").read_text() == MIGRATED


@pytest.mark.slow
def test_diff_patches_apply_and_apply_keeps_every_byte_it_does_not_mean_to_change(
    tree: Path, tmp_path: Path
) -> None:
    before = {p: p.read_bytes() for p in (tree / "src").iterdir() if p.is_file()}
    outside = (tmp_path / "outside" / "legacy.py").read_bytes()
    d = run(tree, "diff", *RANGE, "src")
    assert d.returncode == 2 and b"Traceback" not in d.stderr
    patch = d.stdout
    if shutil.which("git"):
        check = subprocess.run(
            ["git", "apply", "--check", "-"], cwd=tree, input=patch, capture_output=True
        )
        assert check.returncode == 0, check.stderr.decode()

    a = run(tree, "apply", *RANGE, "src")
    err = a.stderr.decode()
    assert a.returncode == 2 and "Traceback" not in err
    assert "src/readonly.py: error: " in err and "read-only" in err
    for name, (data, want) in CASES.items():
        now = (tree / "src" / name).read_bytes()
        if want == "migrated":
            assert now != data and b"enable_pdl=True" in now, name
            # only the call changed: the rest of the bytes are the file's own
            assert now.replace(b"enable_pdl=True", b"True") == data, name
        else:
            assert now == data, name
    assert (tree / "src" / "readonly.py").read_bytes() == before[tree / "src" / "readonly.py"]
    assert (tmp_path / "outside" / "legacy.py").read_bytes() == outside  # never through a link
    assert (tree / "src" / "link_outside.py").is_symlink()
    big = (tree / "src" / "big.py").read_bytes()
    assert big.replace(b"enable_pdl=True", b"True") == before[tree / "src" / "big.py"]
    assert not [p for p in tree.rglob("*.migrate-fi.tmp")]

    again = run(tree, "apply", *RANGE, "--allow-dirty", "src")  # idempotent
    assert b"rewritten" not in again.stdout
    assert {p: p.read_bytes() for p in (tree / "src").iterdir() if p.is_file()} != before


@pytest.mark.slow
@pytest.mark.skipif(not _can_drop_dac(), reason="cannot take root's read-anything capability away")
def test_an_unreadable_folder_is_an_error_and_the_rest_is_read(tree: Path) -> None:
    locked = tree / "src" / "locked"
    locked.mkdir()
    (locked / "hidden.py").write_text(LEGACY)
    locked.chmod(0)
    try:
        r = run(tree, "check", *RANGE, "src", drop_dac=True)
    finally:
        locked.chmod(stat.S_IRWXU)
    err = r.stderr.decode()
    assert r.returncode == 2 and "Traceback" not in err
    assert "src/locked: error: cannot read this folder (Permission denied)" in err
    assert "src/good.py:5:12: FI001" in r.stdout.decode()


def test_a_file_changed_between_read_and_write_is_not_overwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Someone edits a file while apply is analysing the tree: that file keeps the edit and gets
    a one-line error; the others are migrated; the exit code says a file failed."""
    from click.testing import CliRunner

    import migrate_fi.editing.sources as sources
    from migrate_fi.cli import cli

    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text(LEGACY)
    real_commit = sources.PreparedWrite.commit

    def edit_then_commit(self: sources.PreparedWrite) -> None:
        if self.path.endswith("a.py"):  # (edited after its new content was made ready)
            with open(self.path, "ab") as fh:
                fh.write(b"# edited meanwhile\n")
        real_commit(self)

    monkeypatch.setattr(sources.PreparedWrite, "commit", edit_then_commit)
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["apply", "--allow-dirty", "-j", "1", *RANGE, "."])
    assert r.exception is None or isinstance(r.exception, SystemExit)
    assert r.exit_code == 2, r.output
    lines = [x for x in r.output.splitlines() if "a.py" in x and "error" in x]
    assert lines == ["a.py: error: file changed on disk while it was being migrated; not rewritten"]
    assert (tmp_path / "a.py").read_text() == LEGACY + "# edited meanwhile\n"
    assert (tmp_path / "b.py").read_text() == MIGRATED
    debris = [p for p in tmp_path.rglob("*") if p.name.endswith(".migrate-fi.tmp")]
    assert debris == []


@pytest.mark.skipif(sys.platform == "win32", reason="a folder in use cannot be removed")
def test_a_current_folder_that_is_gone_is_said_in_one_line(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    script = (
        "import os, runpy, sys\n"
        f"os.chdir({str(gone)!r}); os.rmdir({str(gone)!r})\n"
        "sys.argv = ['migrate-fi', 'check', *sys.argv[1:]]\n"
        "runpy.run_module('migrate_fi', run_name='__main__')\n"
    )
    for args in ([], ["--no-cache", "."]):
        gone.mkdir()
        r = subprocess.run(
            [sys.executable, "-c", script, *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert r.returncode == 2, r.stderr
        assert r.stderr.startswith("migrate-fi: error: the current folder cannot be read"), r.stderr
        assert len(r.stderr.splitlines()) == 1 and "Traceback" not in r.stderr
