"""Round trip over a real tree: migrate-fi changes only what it reports, and nothing on code that
is already migrated.

    python benchmarks/roundtrip.py PATH [PATH...] [--from V] [--to V]

For each tree, on a copy in a temporary folder:
1. `apply` (with --unsafe-fixes: every fix it has) once; every file it does not list as
   rewritten must be byte-identical to the original;
2. `apply` again on the result: not one byte may change (the migrated code has nothing to
   migrate);
3. every file either run could not process must be a real syntax error (Python's own parser
   refuses it too).
Prints the counts and exits 1 on any violation, naming the files.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path


def snapshot(root: Path) -> dict[str, str]:
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink() and ".migrate-fi" not in path.parts:
            out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def apply(root: Path, extra: list[str]) -> tuple[dict, float]:
    start = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "migrate_fi",
            "apply",
            "--unsafe-fixes",
            "--allow-dirty",
            "--output-format",
            "json",
            *extra,
            ".",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    took = time.perf_counter() - start
    if proc.returncode not in (0, 1, 2) or not proc.stdout.strip():
        sys.exit(f"apply failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(proc.stdout), took


def real_syntax_error(path: Path) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(path.read_bytes())
    except (SyntaxError, ValueError):
        return True
    return False


def roundtrip(tree: Path, extra: list[str]) -> list[str]:
    """The violations found on a copy of ``tree`` (printing what was done)."""
    problems: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / tree.name
        shutil.copytree(tree, root, symlinks=True)
        before = snapshot(root)
        first, t1 = apply(root, extra)
        after_first = snapshot(root)
        written = {str(Path(p)) for p in first["files"]["written"]}
        changed = {p for p in before if after_first.get(p) != before[p]}
        for path in sorted(changed - written):
            problems.append(f"{tree}: {path} changed but apply did not say it rewrote it")
        second, t2 = apply(root, extra)
        after_second = snapshot(root)
        for path in sorted(p for p in after_first if after_second.get(p) != after_first[p]):
            problems.append(f"{tree}: {path} changed again on the second run (not idempotent)")
        failed = {e["path"] for e in first["errors"]} | {e["path"] for e in second["errors"]}
        for path in sorted(failed):
            if path.endswith(".py") and not real_syntax_error(root / path):
                problems.append(f"{tree}: {path} failed, but Python parses it")
        print(
            f"{tree}: {len(before)} files, {first['files']['parsed']} parsed;"
            f" first apply {t1:.1f}s rewrote {len(written)}"
            f" ({len(first['diagnostics'])} sites); second apply {t2:.1f}s rewrote"
            f" {len(second['files']['written'])}; {len(failed)} failed"
            f" ({sum(1 for p in failed if real_syntax_error(root / p))} real syntax errors)"
        )
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--from", dest="from_version")
    parser.add_argument("--to", dest="to_version")
    args = parser.parse_args()
    extra = []
    if args.from_version:
        extra += ["--from", args.from_version]
    if args.to_version:
        extra += ["--to", args.to_version]
    problems = [p for tree in args.paths for p in roundtrip(tree, extra)]
    for problem in problems:
        print(f"VIOLATION: {problem}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
