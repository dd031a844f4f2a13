"""How do `diff` and `apply` scale with the edits they make, next to `check` on the same tree?

    python benchmarks/bench_edits.py [--dense 50000] [--files 2000] [--big-mb 5]

Generates three trees in a temporary folder and runs `check`, `diff` and `apply` on each as a
user would (a fresh process each), printing wall time and peak memory (RSS of the process):
- big:   one file of about --big-mb MB of code with one site at its end;
- dense: one file with --dense sites, one per line;
- many:  --files small files (about 100 lines each), one site in each.
Compare the ratios diff/check and apply/check within one run, not the seconds: machines are
noisy. Since edits go through LibCST only for the statements they touch, a site costs about
the same in a 5 MB file as in a small one.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LEGACY_CALL = "fp4_quantize(x, gs[:1], 16, False, True, False, True)"
RANGE = ["--from", "0.6.10", "--to", "0.6.11"]


def write_big(root: Path, megabytes: float) -> None:
    count = int(megabytes * 1_000_000 / 38)
    body = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(count))
    tail = f"def q(x, gs):\n    return {LEGACY_CALL}\n"
    (root / "big.py").write_text("from flashinfer import fp4_quantize\n\n\n" + body + tail)


def write_dense(root: Path, sites: int) -> None:
    lines = ["from flashinfer import fp4_quantize", ""]
    lines += [f"a{i} = {LEGACY_CALL}" for i in range(sites)]
    (root / "dense.py").write_text("\n".join(lines) + "\n")


def write_many(root: Path, files: int) -> None:
    body = "".join(f"def helper{j}(x):\n    return x * {j}\n\n\n" for j in range(20))
    for i in range(files):
        folder = root / f"pkg{i % 20}"
        folder.mkdir(exist_ok=True)
        (folder / f"m{i}.py").write_text(
            "from flashinfer import fp4_quantize\n\n\n"
            + body
            + f"def q(x, gs):\n    return {LEGACY_CALL}\n"
        )


def timed(args: list[str], cwd: Path) -> tuple[float, float]:
    """(seconds, peak RSS in MB of the largest of the command's processes)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "migrate_fi", *args],
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        _, status, usage = os.wait4(proc.pid, 0)
        took = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in (0, 1):
            err.seek(0)
            sys.exit(f"migrate-fi {' '.join(args)} failed: {err.read().decode()[-2000:]}")
    return took, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--dense", type=int, default=50_000, help="sites in the dense file")
    parser.add_argument("--files", type=int, default=2000, help="small files in the many tree")
    parser.add_argument("--big-mb", type=float, default=5.0, help="size of the big file")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        trees = {"big": Path(tmp, "big"), "dense": Path(tmp, "dense"), "many": Path(tmp, "many")}
        for path in trees.values():
            path.mkdir()
        write_big(trees["big"], args.big_mb)
        write_dense(trees["dense"], args.dense)
        write_many(trees["many"], args.files)
        print(f"{'tree':<6} {'command':<6} {'seconds':>8} {'x check':>8} {'peak MB':>8}")
        for name, root in trees.items():
            size = sum(f.stat().st_size for f in root.rglob("*.py")) / 1e6
            check_time = None
            for command in ("check", "diff", "apply"):
                took, peak = timed([command, *RANGE, "."], root)
                check_time = check_time or took
                print(
                    f"{name:<6} {command:<6} {took:8.2f} {took / check_time:8.1f} {peak:8.0f}"
                    + (f"   ({size:.1f} MB of Python)" if command == "check" else "")
                )
        print(f"(cpu count {os.cpu_count()}; peak MB: the largest process of the command)")


if __name__ == "__main__":
    main()
