"""Every finding of `migrate-fi check` on real serving-project trees, grouped by rule, to be read.

    python benchmarks/precision.py [--cache DIR] [--only NAME] [--full]

Downloads each project's wheel from the package index (`pip download --no-deps`; a wheel of these
projects is a zip of its sources), unpacks its text files into a cache (default
~/.cache/migrate-fi-precision, or $MIGRATE_FI_PRECISION_CACHE) and runs `migrate-fi check` over the
tree for each upgrade below. It prints a count by rule and every finding (one line each; --full for
the whole message), so a person can judge each one: needs a person, a right fix, or noise. The
judgement is the reader's; this script only makes the reading cheap and repeatable.

Trees (the commit before each project's real FlashInfer upgrade, as released):
- sglang 0.5.11 (pins flashinfer-python 0.6.8.post1): 0.6.8.post1 -> 0.6.11, 0.6.8.post1 -> 0.7.4
- sglang 0.5.16: 0.6.14 -> 0.7.4
- vllm 0.21.0: 0.6.8.post1 -> 0.6.11.post2
- flashinfer-python 0.6.8.post1 (FlashInfer's own sources): 0.6.8.post1 -> 0.6.11
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

# (name, distribution, version, [(from, to), ...])
TREES: list[tuple[str, str, str, list[tuple[str, str]]]] = [
    ("sglang-0.5.11", "sglang", "0.5.11", [("0.6.8.post1", "0.6.11"), ("0.6.8.post1", "0.7.4")]),
    ("sglang-0.5.16", "sglang", "0.5.16", [("0.6.14", "0.7.4")]),
    ("vllm-0.21.0", "vllm", "0.21.0", [("0.6.8.post1", "0.6.11.post2")]),
    ("flashinfer-0.6.8.post1", "flashinfer-python", "0.6.8.post1", [("0.6.8.post1", "0.6.11")]),
]
# what is worth unpacking: sources and the files pins live in (no compiled objects)
_TEXT_SUFFIXES = (".py", ".pyi", ".toml", ".txt", ".cfg", ".sh", ".json", ".yaml", ".yml", ".md")


def cache_dir(option: str | None) -> Path:
    if option:
        return Path(option)
    env = os.environ.get("MIGRATE_FI_PRECISION_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "migrate-fi-precision"


def tree(cache: Path, name: str, dist: str, version: str) -> Path:
    """The unpacked sources of one release (downloaded and unpacked once)."""
    target = cache / name
    done = target / ".unpacked"
    if done.exists():
        return target
    wheels = cache / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    found = list(wheels.glob(f"{dist.replace('-', '_')}-{version}-*.whl"))
    if not found:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "-q",
                "-d",
                str(wheels),
                f"{dist}=={version}",
            ],
            check=True,
        )
        found = list(wheels.glob(f"{dist.replace('-', '_')}-{version}-*.whl"))
    if not found:
        raise SystemExit(f"precision: no wheel of {dist}=={version} in {wheels}")
    with zipfile.ZipFile(found[0]) as archive:
        for member in archive.namelist():
            if member.endswith(_TEXT_SUFFIXES) and ".dist-info/" not in member:
                archive.extract(member, target)
    done.write_text(found[0].name + "\n")
    return target


def findings(root: Path, origin: str, target: str) -> tuple[list[dict[str, object]], float]:
    start = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "migrate_fi",
            "check",
            "--from",
            origin,
            "--to",
            target,
            "--output-format",
            "json",
            "--exit-zero",
            ".",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"precision: check failed in {root}:\n{proc.stderr.strip()}")
    data = json.loads(proc.stdout)
    return list(data["diagnostics"]), elapsed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--cache", help="where wheels and trees are kept")
    parser.add_argument("--only", help="only the trees whose name contains this")
    parser.add_argument("--full", action="store_true", help="print whole messages")
    args = parser.parse_args()
    cache = cache_dir(args.cache)
    totals: collections.Counter[str] = collections.Counter()
    for name, dist, version, upgrades in TREES:
        if args.only and args.only not in name:
            continue
        root = tree(cache, name, dist, version)
        for origin, target in upgrades:
            items, elapsed = findings(root, origin, target)
            by_rule = collections.Counter(str(item["code"]) for item in items)
            totals.update(by_rule)
            counts = ", ".join(f"{code} {n}" for code, n in sorted(by_rule.items())) or "none"
            print(
                f"== {name} {origin} -> {target}: {len(items)} findings ({counts}), {elapsed:.1f} s"
            )
            for item in sorted(
                items, key=lambda i: (str(i["code"]), str(i["path"]), int(i["line"]))
            ):
                message = str(item["message"])
                if not args.full and len(message) > 150:
                    message = message[:147] + "..."
                fix = item["fix"] if item.get("fixable") else "report"
                print(f"  {item['code']} [{fix}] {item['path']}:{item['line']}: {message}")
    print("== all: " + ", ".join(f"{code} {n}" for code, n in sorted(totals.items())))


if __name__ == "__main__":
    main()
