"""`migrate-fi diff` produces a patch `git apply` takes, whatever the file's bytes and wherever
it lives: git applies a patch all or nothing, so one bad file would reject the whole upgrade."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from migrate_fi.cli import cli

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

LEGACY = (
    "from flashinfer import fp4_quantize\n"
    "\n"
    "\n"
    "def q(x, gs):\n"
    "    return fp4_quantize(x, gs[:1], 16, False, True, False, True)\n"
)
MIGRATED = LEGACY.replace("False, True)", "False, enable_pdl=True)")


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)


def diff_and_apply(cwd: Path, target: str, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(cwd)
    r = CliRunner().invoke(cli, ["diff", "--from", "0.6.10", "--to", "0.6.11", target])
    assert r.exit_code == 1, r.output
    patch = repo / "change.patch"
    patch.write_bytes(r.stdout_bytes)
    checked = git(repo, "apply", "--check", "change.patch")
    assert checked.returncode == 0, checked.stderr.decode()
    assert git(repo, "apply", "change.patch").returncode == 0


@pytest.mark.parametrize(
    ("name", "data", "expected"),
    [
        ("bom.py", b"\xef\xbb\xbf" + LEGACY.encode(), b"\xef\xbb\xbf" + MIGRATED.encode()),
        (
            "latin1.py",
            ("# coding: latin-1\n# caf\xe9 flashinfer\n" + LEGACY).encode("latin-1"),
            ("# coding: latin-1\n# caf\xe9 flashinfer\n" + MIGRATED).encode("latin-1"),
        ),
        ("crlf.py", LEGACY.replace("\n", "\r\n").encode(), MIGRATED.replace("\n", "\r\n").encode()),
        ("no_eol.py", LEGACY.rstrip("\n").encode(), MIGRATED.rstrip("\n").encode()),
    ],
)
def test_git_applies_the_patch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, data: bytes, expected: bytes
) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / name).write_bytes(data)
    git(tmp_path, "init", "-q")
    diff_and_apply(tmp_path, "src", tmp_path, monkeypatch)
    assert (tmp_path / "src" / name).read_bytes() == expected


# (a file's name as git writes it in a patch's header: quoted with C escapes where it holds a
# quote, a backslash, a control character or bytes that are not UTF-8; a tab after a name with
# a space, so that `patch` reads the name up to it)
NAMES = [
    (b"sp ace.py", b"a/sp ace.py\t"),
    (b'q"uote.py', b'"a/q\\"uote.py"'),
    (b"tab\tname.py", b'"a/tab\\tname.py"'),
    ("\u6a21\u578b.py".encode(), b"a/" + "\u6a21\u578b.py".encode()),
    (b"\xff\xfename.py", b'"a/\\377\\376name.py"'),
]


def test_a_patch_names_any_file_as_git_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    try:
        for name, _ in NAMES:
            (src / os.fsdecode(name)).write_text(LEGACY)
    except (OSError, UnicodeError):
        pytest.skip("this file system refuses one of the names")
    git(tmp_path, "init", "-q")
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["diff", "--from", "0.6.10", "--to", "0.6.11", "src"])
    assert r.exit_code == 1, r.output
    headers = [line for line in r.stdout_bytes.split(b"\n") if line.startswith(b"--- ")]
    assert sorted(headers) == sorted(
        b"--- " + shown.replace(b"a/", b"a/src/", 1) for _, shown in NAMES
    )
    (tmp_path / "change.patch").write_bytes(r.stdout_bytes)
    if shutil.which("patch") is not None:  # (GNU patch reads git's quoting too)
        dry = subprocess.run(
            ["patch", "-p1", "--dry-run", "-i", "change.patch"],
            cwd=tmp_path, capture_output=True, check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert dry.returncode == 0, dry.stdout.decode(errors="replace")
    assert git(tmp_path, "apply", "change.patch").returncode == 0
    for name, _ in NAMES:
        assert (src / os.fsdecode(name)).read_text() == MIGRATED


def test_a_target_outside_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "m.py").write_text(LEGACY)
    git(repo, "init", "-q")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # run from another folder, naming the repository by its absolute path: the patch names
    # the file relative to that repository's root, where it applies
    diff_and_apply(elsewhere, str(repo / "pkg"), repo, monkeypatch)
    assert (repo / "pkg" / "m.py").read_text() == MIGRATED


def test_a_target_outside_the_current_folder_and_any_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "m.py").write_text(LEGACY)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if git(plain, "rev-parse", "--git-dir").returncode == 0:
        pytest.skip("the temporary folder is inside a git repository")
    # no repository to be relative to: the file is named from its project's root (the given
    # folder here), where the patch applies, and a note says so
    monkeypatch.chdir(elsewhere)
    r = CliRunner().invoke(cli, ["diff", "--from", "0.6.10", "--to", "0.6.11", str(plain)])
    assert r.exit_code == 1, r.output
    assert r.stdout.startswith("--- a/m.py\n+++ b/m.py\n")
    assert f"apply it there (`git -C {os.path.realpath(plain)} apply`)" in r.stderr
    (tmp_path / "change.patch").write_bytes(r.stdout_bytes)
    checked = git(plain, "apply", "--check", str(tmp_path / "change.patch"))
    assert checked.returncode == 0, checked.stderr.decode()


def _patched(a: list[str], hunks: list[str]) -> list[str]:
    """``a`` with unified-diff hunks applied (a check that they say the change)."""
    out: list[str] = []
    at = 0
    for line in hunks:
        if line.startswith("@@"):
            start = int(line.split()[1].split(",")[0][1:])
            length = line.split()[1].split(",")[1] if "," in line.split()[1] else "1"
            begin = start - 1 if length != "0" else start
            out += a[at:begin]
            at = begin
        elif line.startswith(("-", " ")):
            at += 1
            if line[0] == " ":
                out.append(line[1:])
        else:
            out.append(line[1:])
    return out + a[at:]


def test_hunks_of_large_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above `_WHOLE_FILE_LINES`, hunks come from the stretches between lines unique to both
    files, not from difflib over the whole files. They always say the change; where the lines
    around the edits are distinct they are difflib's, byte for byte. (Among many copies of one
    line, difflib may pair other copies: another patch of the same change.)"""
    import difflib
    import random

    from migrate_fi.outputs import reporting

    monkeypatch.setattr(reporting, "_WHOLE_FILE_LINES", 0)
    rng = random.Random(7)
    for trial in range(600):
        repeated = trial % 2 == 1
        n = rng.randint(0, 300)
        a = [
            f"x = {rng.randint(0, 9)}\n" if repeated and rng.random() < 0.3 else f"u{k}\n"
            for k in range(n)
        ]
        b = list(a)
        for _ in range(rng.randint(1, 8)):
            k = rng.randrange(len(b) + 1)
            kind = rng.random()
            if kind < 0.5 and k < len(b):
                b[k] = b[k].rstrip("\n") + "  # edited\n"
            elif kind < 0.75:
                b.insert(k, f"new {rng.random()}\n")
            elif k < len(b):
                del b[k]
        hunks = reporting._unified(a, b)
        assert _patched(a, hunks) == b
        if not repeated:
            assert hunks == list(difflib.unified_diff(a, b, "a", "b"))[2:]


def test_a_gap_between_anchors_is_matched_as_difflib_matches_it() -> None:
    """Between two anchors, a gap of one line for one (most edits) or of lines on one side only
    is matched without difflib: the blocks difflib gives for every such gap, an equal pair of
    repeated lines included."""
    import difflib
    import random

    from migrate_fi.outputs import reporting

    rng = random.Random(5)
    lines = ["x = 1\n", "x = 2\n", "y\n"]
    for _ in range(3000):
        a = [rng.choice(lines) for _ in range(rng.randint(0, 3))]
        b = [rng.choice(lines) for _ in range(rng.randint(0, 3))]
        before, after = ["u\n"] * rng.randint(0, 2), ["v\n"] * rng.randint(0, 2)
        i, j = len(before), len(before) + 1
        whole_a, whole_b = [*before, *a, *after], ["w\n", *before, *b, *after]
        found = reporting._gap_blocks(whole_a, whole_b, i, i + len(a), j, j + len(b))
        expected = [
            (i + m.a, j + m.b, m.size)
            for m in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()
            if m.size
        ]
        assert found == expected, (a, b)


def test_hunks_of_large_files_where_lines_moved(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines unique to both files that moved: the anchors are the longest run both files agree
    on, and the hunks still say the change."""
    import random

    from migrate_fi.outputs import reporting

    monkeypatch.setattr(reporting, "_WHOLE_FILE_LINES", 0)
    a = [f"u{k}\n" for k in range(10)]
    b = ["u5\n", *a[:5], *a[6:]]  # u5 moved to the top
    assert reporting._anchors(a, b, 0, len(a), len(b)) == [(k, k + 1) for k in range(5)] + [
        (k, k) for k in range(6, 10)
    ]
    rng = random.Random(11)
    for _ in range(300):
        a = [f"u{k}\n" for k in range(rng.randint(2, 200))]
        b = list(a)
        for _ in range(rng.randint(1, 6)):
            line = b.pop(rng.randrange(len(b)))
            b.insert(rng.randrange(len(b) + 1), line)
        assert _patched(a, reporting._unified(a, b)) == b
