"""Prove a refactoring changed no output: run `check`, `diff` and `apply` with the code of
another revision and with the working tree, on the fixture projects and on real trees, and
compare the bytes.

    python scripts/same_output.py [--base REV] [--tree PATH:FROM:TO ...] [--no-real]

``--base`` (default ``HEAD``) is checked out into a temporary git worktree. The corpora: every
project under tests/fixtures/projects (with its own pins), and SGLang 0.5.11's tree from the
precision cache (`benchmarks/precision.py` prepares it) from 0.6.8.post1 to 0.7.4, unless
``--no-real``; ``--tree`` adds others. For each corpus it compares `check` as text, JSON and
SARIF, `diff`, and the whole tree after `apply` on a copy, and prints one line per
comparison. Exit status 1 when anything differs (the first differing lines are shown).
``--parsed-may-differ``: a change that parses fewer (or more) files for the same findings
(a finer prefilter) compares the outputs with the count of parsed files masked.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROJECTS = ROOT / "tests" / "fixtures" / "projects"
sys.path.insert(0, str(ROOT / "benchmarks"))

# each command runs the given checkout's code, whatever is installed (asserted)
_LAUNCH = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); import migrate_fi;"
    " assert migrate_fi.__file__.startswith(sys.path[0]), migrate_fi.__file__;"
    " sys.argv[0] = 'migrate-fi'; from migrate_fi.cli import main; main()"
)
_COMMANDS = {
    "check (text)": ["check"],
    "check (json)": ["check", "--output-format", "json"],
    "check (sarif)": ["check", "--output-format", "sarif"],
    "diff": ["diff"],
}


def run(code: Path, args: list[str], cwd: Path) -> bytes:
    env = {**os.environ, "MIGRATE_FI_NO_CACHE": "1", "COLUMNS": "100"}
    proc = subprocess.run(
        [sys.executable, "-c", _LAUNCH, str(code), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        check=False,
    )
    return b"exit %d\n" % proc.returncode + proc.stdout + b"\n--- stderr\n" + proc.stderr


def tree_bytes(folder: Path) -> bytes:
    """Every file's path and content hash, in order: two trees compare equal iff identical.
    (The migration record in `.migrate-fi/` is left out: it holds the time and the folder.)"""
    lines = []
    skip = {".git", ".migrate-fi"}
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not skip & set(p.parts)):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        lines.append(f"{path.relative_to(folder)} {digest}")
    return "\n".join(lines).encode()


_PARSED = (re.compile(rb"\d+ parsed\b"), re.compile(rb'"parsed": \d+'))
MASK_PARSED = False  # (--parsed-may-differ)


def _masked(out: bytes) -> bytes:
    if MASK_PARSED:
        for pattern in _PARSED:
            out = pattern.sub(b"(count) parsed", out)
    return out


def compare(label: str, old: bytes, new: bytes) -> bool:
    old, new = _masked(old), _masked(new)
    if old == new:
        print(f"  same       {label}")
        return True
    print(f"  DIFFERENT  {label}")
    a = old.decode("utf-8", "replace").splitlines()
    b = new.decode("utf-8", "replace").splitlines()
    for line in list(difflib.unified_diff(a, b, "base", "working tree", lineterm=""))[:20]:
        print(f"      {line}")
    return False


def corpus(base: Path, name: str, folder: Path, span: list[str], work: Path) -> bool:
    print(f"{name} {' '.join(span) or '(its own pins)'}")
    ok = True
    for label, args in _COMMANDS.items():
        old = run(base, [*args, *span, "."], folder)
        new = run(ROOT, [*args, *span, "."], folder)
        ok &= compare(label, old, new)
    trees = []
    for code, tag in ((base, "base"), (ROOT, "new")):
        copy = work / f"{name}-{tag}"
        shutil.copytree(folder, copy, symlinks=True)
        out = run(code, ["apply", "--allow-dirty", *span, "."], copy)
        trees.append(out + b"\n" + tree_bytes(copy))
        shutil.rmtree(copy)
    return compare("apply (output and the tree after)", *trees) and ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="HEAD", help="the revision to compare with")
    parser.add_argument("--tree", action="append", default=[], metavar="PATH:FROM:TO")
    parser.add_argument("--no-real", action="store_true", help="fixture projects only")
    parser.add_argument(
        "--parsed-may-differ", action="store_true", help="mask the count of parsed files"
    )
    args = parser.parse_args()
    global MASK_PARSED
    MASK_PARSED = args.parsed_may_differ
    corpora: list[tuple[str, Path, list[str]]] = [
        (p.name, p, []) for p in sorted(PROJECTS.iterdir()) if p.is_dir()
    ]
    if not args.no_real:
        from precision import cache_dir, tree

        sglang = tree(cache_dir(None), "sglang", "sglang", "0.5.11")
        corpora.append(("sglang-0.5.11", sglang, ["--from", "0.6.8.post1", "--to", "0.7.4"]))
    for spec in args.tree:
        path, old, new = spec.rsplit(":", 2)
        corpora.append((Path(path).name, Path(path).resolve(), ["--from", old, "--to", new]))
    with tempfile.TemporaryDirectory(prefix="same-output-") as tmp:
        work = Path(tmp)
        base = work / "base"
        subprocess.run(
            ["git", "worktree", "add", "--detach", "-q", str(base), args.base],
            cwd=ROOT,
            check=True,
        )
        try:
            results = [corpus(base, name, folder, span, work) for name, folder, span in corpora]
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT)
    print("identical" if all(results) else "outputs differ")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
