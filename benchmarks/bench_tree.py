"""How fast is migrate-fi on a large tree, next to the floor it cannot beat?

    python benchmarks/bench_tree.py PATH [--from 0.6.8.post1] [--repeat 3] [--libcst]

Prints, for one run on this machine (compare the ratios, not the seconds: machines are noisy):
- the floor: Python start-up, reading every .py file and testing it with the run's prefilter,
  `ast.parse` of the files that pass it (what any checker that parses those files pays);
- `migrate-fi check` and `migrate-fi diff` as a user runs them (a fresh process each, best of N);
- with --libcst, what LibCST's parse + qualified-name + position metadata costs on the same
  candidate files (what a LibCST-only checker would pay).
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import time
import warnings


def best(repeat: int, fn) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def run_cli(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "migrate_fi", *args], capture_output=True, text=True, check=False
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("path")
    parser.add_argument("--from", dest="from_version", default="0.6.8.post1")
    parser.add_argument("--to", dest="to_version", default=None)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--libcst", action="store_true", help="also time LibCST with metadata")
    args = parser.parse_args()

    from migrate_fi.api.store import newest_release
    from migrate_fi.base.versions import parse_version
    from migrate_fi.framework.rule import RunOptions
    from migrate_fi.project.discovery import discover
    from migrate_fi.run.pipeline import prefilter_for
    from migrate_fi.run.registry import select

    from_v = parse_version(args.from_version)
    to_v = parse_version(args.to_version) if args.to_version else newest_release()
    options = RunOptions(from_v, to_v)
    prefilters = [prefilter_for(c, options) for c in select(from_v, to_v).rules]
    files = list(discover([args.path]))
    total_bytes = 0
    candidates: list[str] = []

    def read_all() -> None:
        nonlocal total_bytes
        candidates.clear()
        total_bytes = 0
        for f in files:
            with open(f, "rb") as fh:
                data = fh.read()
            total_bytes += len(data)
            if any(p.matches(data) for p in prefilters):
                candidates.append(f)

    def parse_candidates() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for f in candidates:
                with open(f, "rb") as fh:
                    ast.parse(fh.read())

    t_start = best(args.repeat, lambda: subprocess.run([sys.executable, "-c", "pass"], check=True))
    t_read = best(args.repeat, read_all)
    t_ast = best(args.repeat, parse_candidates)
    lines = 0
    for f in files:
        with open(f, "rb") as fh:
            lines += fh.read().count(b"\n")

    common = ["--from", args.from_version, "--output-format", "json"]
    if args.to_version:
        common += ["--to", args.to_version]
    check_out: dict = {}

    def check() -> None:
        r = run_cli(["check", *common, args.path])
        check_out.update(json.loads(r.stdout))

    t_check = best(args.repeat, check)
    t_diff = best(args.repeat, lambda: run_cli(["diff", *common, args.path]))

    floor = t_start + t_read + t_ast
    print(f"tree: {args.path}")
    print(f"  .py files: {len(files)}  lines: {lines}  MB: {total_bytes / 1e6:.1f}")
    print(f"  files naming an API (prefilter hits): {len(candidates)}")
    print(f"  files migrate-fi parsed: {check_out['files']['parsed']}")
    print(f"  sites found: {len(check_out['diagnostics'])}  errors: {len(check_out['errors'])}")
    print(f"floor (best of {args.repeat}):")
    print(f"  python start-up          {t_start:7.3f} s")
    print(f"  read + prefilter all     {t_read:7.3f} s")
    print(f"  ast.parse of the hits    {t_ast:7.3f} s")
    print(f"  sum                      {floor:7.3f} s")
    print("migrate-fi (fresh process each):")
    print(f"  check                    {t_check:7.3f} s   {t_check / floor:5.2f} x floor")
    print(f"  diff                     {t_diff:7.3f} s   {t_diff / floor:5.2f} x floor")
    if args.libcst:
        import libcst as cst
        from libcst.metadata import MetadataWrapper, PositionProvider, QualifiedNameProvider

        def libcst_all() -> None:
            for f in candidates:
                with open(f, "rb") as fh:
                    wrapper = MetadataWrapper(cst.parse_module(fh.read()))
                wrapper.resolve(QualifiedNameProvider)
                wrapper.resolve(PositionProvider)

        t_import = best(
            args.repeat,
            lambda: subprocess.run([sys.executable, "-c", "import libcst.rule"], check=True),
        )
        t_cst = best(1, libcst_all)
        print("LibCST, for comparison:")
        print(f"  import libcst.rule    {t_import - t_start:7.3f} s (beyond start-up)")
        print(
            f"  parse + qualified names + positions of the hits: {t_cst:.3f} s,"
            f" {t_cst / floor:.1f} x floor"
        )


if __name__ == "__main__":
    main()
