"""Speed and memory of migrate-fi on real and synthetic corpora, next to the floors it is measured
against, in one run (compare the ratios, never the seconds across runs: machines are noisy).

    python benchmarks/speed.py [--repeat 3] [--only NAME] [--scales 1,4,16] [--save-baseline]

Corpora, prepared once into the precision cache (~/.cache/migrate-fi-precision, or
$MIGRATE_FI_PRECISION_CACHE; the package index is needed the first time only): SGLang 0.5.11 and
0.5.23 and vLLM 0.21.0 (their wheels are zips of their sources), FlashInfer 0.6.18's own sources,
copies of SGLang 0.5.11 side by side (--scales), a tree of 2,000 small files with a site each, and
one 50,000-line file with 5,000 sites.

First the start-up: `check` of a one-file tree that never names FlashInfer (cold and warm,
nine runs each), next to `python -c pass`. Then, for each corpus, medians of --repeat runs, each
command in a fresh process as a user runs it:
- floor A: start Python, read every .py file, `ast.parse` those that mention "flashinfer";
- `check` cold (an empty result cache) and warm (nothing changed: the same command, replayed,
  `migrate_fi.run.warm`), warm from the result cache alone (the same options in another environment
  each time: never replayed), warm after touching one parsed file, cold with `-j 1`; `diff`;
  `apply` on a fresh copy; LibCST's bare parse of the files `diff` changes; once each, `check
  --output-format sarif` (every fix's replacements) beside `--output-format json`;
- files parsed, sites, peak memory (RSS) of `check` cold and warm.
The ratios of `check` cold and warm to floor A are the medians of pairs, each run right after a
floor A of its own (a burst of load on a shared machine moves them far less than seconds); so is
that of `diff` to `apply`, each `diff` run right before an `apply`. A tree checked cold in under a
second gets nine such pairs at least (its ratio is the one the host's load moves most), and a
`diff` under 2.5 s five pairs with `apply`.
Then the slope, intercept and correlation of `check` cold time against the size of the SGLang
copies. With --save-baseline the findings and patches are kept; later runs say whether theirs are
byte-identical (the speed work must not change a finding); "NO (warm)" when a warm `check`
printed anything else than the cold one.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from bench_edits import LEGACY_CALL
from precision import cache_dir, tree

MIGRATE_FI = [sys.executable, "-m", "migrate_fi"]


def measure(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, int, str]:
    """(wall seconds, peak RSS in MB, stdout) of one process."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdout is not None
    out = proc.stdout.read().decode("utf-8", "replace")
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    elapsed = time.perf_counter() - start
    return elapsed, usage.ru_maxrss // 1024, out


def median(repeat: int, fn: Callable[[], float]) -> float:
    return statistics.median(fn() for _ in range(repeat))


def floor(root: Path) -> float:
    """Floor A: start Python, read every .py file under ``root``, parse those that mention
    "flashinfer" (what any checker that parses those files pays)."""
    code = (
        "import ast, os, sys, warnings\n"
        "warnings.simplefilter('ignore')\n"
        "for d, dirs, files in os.walk(sys.argv[1]):\n"
        "    dirs[:] = [x for x in dirs if not x.startswith('.')]\n"
        "    for f in files:\n"
        "        if f.endswith('.py'):\n"
        "            data = open(os.path.join(d, f), 'rb').read()\n"
        "            if b'flashinfer' in data:\n"
        "                try: ast.parse(data)\n"
        "                except Exception: pass\n"
    )
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, str(root)], check=True)
    return time.perf_counter() - start


def libcst_parse(files: list[Path]) -> float:
    """LibCST's bare parse of ``files``, in a process of its own (a child forked from a
    benchmark that grew would report the parent's memory as its peak)."""
    code = (
        "import sys, time, warnings\n"
        "import libcst\n"
        "warnings.simplefilter('ignore')\n"
        "start = time.perf_counter()\n"
        "for f in sys.argv[1:]:\n"
        "    libcst.parse_module(open(f, 'rb').read())\n"
        "print(time.perf_counter() - start)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *map(str, files)], capture_output=True, text=True, check=True
    )
    return float(done.stdout.strip())


def _prepared(target: Path, build: Callable[[Path], None]) -> Path:
    """``target``, built once by ``build`` (from scratch) and marked done."""
    if not (target / ".done").exists():
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        build(target)
        (target / ".done").write_text("")
    return target


def copies(base: Path, scale: int, into: Path) -> Path:
    def build(target: Path) -> None:
        for i in range(scale):
            shutil.copytree(base, target / f"copy{i}", ignore=shutil.ignore_patterns(".unpacked"))

    return _prepared(into / f"sglang-x{scale}", build)


def many_sites(into: Path) -> Path:
    def build(target: Path) -> None:
        filler = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(24))
        for i in range(2000):
            (target / f"m{i}.py").write_text(
                "from flashinfer import fp4_quantize\n\n\n" + filler
                + f"def q(x, gs):\n    return {LEGACY_CALL}\n"
            )  # fmt: skip
        (target / "requirements.txt").write_text("flashinfer-python==0.6.10\n")

    return _prepared(into / "many-sites", build)


def huge_file(into: Path) -> Path:
    def build(target: Path) -> None:
        lines = ["from flashinfer import fp4_quantize", ""]
        for i in range(5000):
            lines += [f"a{i} = {LEGACY_CALL}"] + [f"b{i}_{j} = {j}" for j in range(9)]
        (target / "huge.py").write_text("\n".join(lines) + "\n")
        (target / "requirements.txt").write_text("flashinfer-python==0.6.10\n")

    return _prepared(into / "huge-file", build)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", help="only the corpora whose name contains this")
    parser.add_argument("--scales", default="1,4,16", help="copies of SGLang 0.5.11 (linearity)")
    parser.add_argument("--save-baseline", action="store_true")
    args = parser.parse_args()
    cache = cache_dir(None)
    synthetic = cache / "speed"
    synthetic.mkdir(parents=True, exist_ok=True)
    sglang = tree(cache, "sglang-0.5.11", "sglang", "0.5.11")
    corpora: list[tuple[str, Path, list[str]]] = [
        ("SGLang 0.5.11", sglang, ["--from", "0.6.8.post1", "--to", "0.7.4"]),
        ("SGLang 0.5.23", tree(cache, "sglang-0.5.23", "sglang", "0.5.23"),
         ["--from", "0.7.2", "--to", "0.7.4"]),
        ("vLLM 0.21.0", tree(cache, "vllm-0.21.0", "vllm", "0.21.0"),
         ["--from", "0.6.8.post1", "--to", "0.7.4"]),
        ("FlashInfer 0.6.18", tree(cache, "flashinfer-0.6.18", "flashinfer-python", "0.6.18"),
         ["--from", "0.6.18", "--to", "0.7.4"]),
        ("2,000 files, a site each", many_sites(synthetic), ["--from", "0.6.10", "--to", "0.6.11"]),
        ("one file, 5,000 sites", huge_file(synthetic), ["--from", "0.6.10", "--to", "0.6.11"]),
    ]  # fmt: skip
    scales = [int(s) for s in args.scales.split(",") if s]
    for scale in scales:
        corpora.append((f"SGLang 0.5.11 x{scale}", copies(sglang, scale, synthetic), corpora[0][2]))
    if args.only:
        corpora = [c for c in corpora if args.only.lower() in c[0].lower()]

    rows: list[dict[str, Any]] = []
    linear: list[tuple[float, float]] = []
    work = Path(tempfile.mkdtemp(prefix="migrate-fi-speed-"))
    try:
        print(startup(work, args.repeat), flush=True)
        for name, root, span in corpora:
            row = run_corpus(name, root, span, args.repeat, work, cache, args.save_baseline)
            rows.append(row)
            if name.startswith("SGLang 0.5.11 x"):
                linear.append((row["mb"], row["cold"]))
            print_row(row)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    print_table(rows)
    if len(linear) >= 2:
        xs, ys = zip(*linear, strict=True)
        slope, intercept = statistics.linear_regression(xs, ys)
        r = statistics.correlation(xs, ys)
        print(
            f"\ncheck cold over SGLang copies: {slope:.4f} s/MB, intercept {intercept:.2f} s,"
            f" r = {r:.4f}"
        )


_QUICK_PAIRS = 9  # (runs at least, of what takes under a second)
_QUICK_DIFFS = 5  # (`diff` and `apply` pairs at least, where `diff` takes under 2.5 s)


def startup(work: Path, repeat: int) -> str:
    """Start-up: `check` of a one-file tree that never names FlashInfer, with an empty result
    cache and a warm one, next to starting Python itself (medians, and peak memory)."""
    tiny = work / "tiny"
    tiny.mkdir()
    (tiny / "m.py").write_text("import os\n\nprint(os.sep)\n")
    time.sleep(2.1)  # (a file changed within two seconds is never trusted by its stat: settled)
    env = {**os.environ, "MIGRATE_FI_CACHE_DIR": str(work / "tiny-cache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    command = [*MIGRATE_FI, "check", "--from", "0.6.8.post1", "--to", "0.7.4", "."]

    def cold() -> tuple[float, int, str]:
        shutil.rmtree(work / "tiny-cache", ignore_errors=True)
        return measure(command, tiny, env)

    runs = max(repeat, _QUICK_PAIRS)  # (a tenth of a second each)
    colds = [cold() for _ in range(runs)]
    warms = [measure(command, tiny, env) for _ in range(runs)]
    python = statistics.median(
        measure([sys.executable, "-c", "pass"], tiny, env)[0] for _ in range(runs)
    )
    return (
        f"start-up, a one-file tree: check cold {statistics.median(t for t, _, _ in colds):.2f} s"
        f" ({max(m for _, m, _ in colds)} MB), warm {statistics.median(t for t, _, _ in warms):.2f} s"
        f" ({max(m for _, m, _ in warms)} MB); python -c pass {python:.2f} s"
    )


def run_corpus(
    name: str,
    root: Path,
    span: list[str],
    repeat: int,
    work: Path,
    cache: Path,
    save: bool,
) -> dict[str, Any]:
    env = {**os.environ, "MIGRATE_FI_NO_CACHE": "0"}
    # as installed by pip, which compiles the bytecode: a machine that forbids writing it would
    # charge every run the compilation of the tool's own modules
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    results = work / "results"
    env["MIGRATE_FI_CACHE_DIR"] = str(results)
    common = [*span, "--exit-zero"]
    py = [p for p in root.rglob("*.py")]
    mb = sum(p.stat().st_size for p in py) / 1e6

    # what check parses, and the findings (JSON)
    _, _, report = measure([*MIGRATE_FI, "check", *common, "--no-cache", "--output-format",
                            "json", "."], root, env)  # fmt: skip
    data = json.loads(report)
    sites = len(data["diagnostics"])
    parsed = data["files"]["parsed"]
    reported = sorted(
        {str(root / d["path"]) for d in data["diagnostics"] if d["path"].endswith(".py")}
    )

    def cold(*extra: str) -> tuple[float, int]:
        shutil.rmtree(results, ignore_errors=True)
        t, mem, out = measure([*MIGRATE_FI, "check", *common, *extra, "."], root, env)
        printed.add(out)
        return t, mem

    printed: set[str] = set()  # what every `check` printed (the same, cold, warm or replayed)

    # (each `check` right after a floor A: the ratios are the medians of those pairs, which a
    # burst of load on a shared machine moves far less than seconds measured apart)
    # (a tree checked in under a second gets nine pairs at least: its ratio moves most with
    # the host, and nine cost a few seconds)
    floors, colds = [], []
    while len(colds) < repeat or (len(colds) < _QUICK_PAIRS and max(t for t, _ in colds) < 1.0):
        floors.append(floor(root))
        colds.append(cold())
    floor_a = statistics.median(floors)
    cold_t = statistics.median(t for t, _ in colds)
    cold_x = statistics.median(t / f for (t, _), f in zip(colds, floors, strict=True))
    cold_mem = max(m for _, m in colds)
    j1 = statistics.median(cold("-j", "1")[0] for _ in range(repeat))
    cold()  # fill the cache
    # warm: the same command again (`migrate_fi.run.warm` replays it); and in another environment
    # each time, which only the result cache answers (`migrate_fi.run.cache`)
    warms, warm_x, cached = [], [], []
    for i in range(repeat):
        f = floor(root)
        warms.append(measure([*MIGRATE_FI, "check", *common, "."], root, env))
        warm_x.append(warms[-1][0] / f)
        other = {**env, "MIGRATE_FI_SPEED_RUN": str(i)}
        cached.append(measure([*MIGRATE_FI, "check", *common, "."], root, other))
    printed.update(out for _, _, out in warms + cached)
    warm_t = statistics.median(t for t, _, _ in warms)
    cached_t = statistics.median(t for t, _, _ in cached)
    warm_mem = max(m for _, m, _ in warms + cached)
    touched = reported[0] if reported else None
    touch_t = float("nan")
    if touched:
        times = []
        for _ in range(repeat):
            os.utime(touched)
            times.append(measure([*MIGRATE_FI, "check", *common, "."], root, env)[0])
        touch_t = statistics.median(times)

    # SARIF (each fix's replacements): once, cold, beside the same run's JSON (--no-cache)
    sarif_t = measure([*MIGRATE_FI, "check", *common, "--no-cache", "--output-format", "sarif",
                       "."], root, env)[0]  # fmt: skip
    json_t = measure([*MIGRATE_FI, "check", *common, "--no-cache", "--output-format", "json",
                      "."], root, env)[0]  # fmt: skip

    # (in pairs, each `diff` right before an `apply` of a fresh copy: the ratio is the median
    # of the pairs', as for `check` and floor A)
    # (five pairs at least where a `diff` takes under 2.5 s: one slow pair moved the ratio of
    # three by a tenth)
    diffs, apply_times = [], []
    while len(diffs) < repeat or (len(diffs) < _QUICK_DIFFS and max(t for t, _, _ in diffs) < 2.5):
        diffs.append(measure([*MIGRATE_FI, "diff", *span, "."], root, env))
        copy = work / "copy"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(root, copy)
        apply_times.append(
            measure([*MIGRATE_FI, "apply", *span, "--allow-dirty", "."], copy, env)[0]
        )
    diff_t = statistics.median(t for t, _, _ in diffs)
    apply_t = statistics.median(apply_times)
    diff_x = statistics.median(d / a for (d, _, _), a in zip(diffs, apply_times, strict=True))
    patch = diffs[0][2]
    changed = sorted({line[6:] for line in patch.splitlines() if line.startswith("+++ b/")})
    # (patch paths start at the git work tree above the files, else at the project's root)
    bases = [root, *root.parents]
    files = [next((b / c for b in bases if (b / c).is_file()), root / c) for c in changed]
    cst_t = libcst_parse([f for f in files if f.is_file() and f.suffix == ".py"])

    identical = "-" if len(printed) == 1 else "NO (warm)"
    baseline = cache / "speed-baseline" / name.replace(" ", "_").replace(",", "")
    findings_now = json.dumps(data["diagnostics"], sort_keys=True)
    if save:
        baseline.mkdir(parents=True, exist_ok=True)
        (baseline / "findings.json").write_text(findings_now)
        (baseline / "patch.diff").write_text(patch)
    elif (baseline / "findings.json").exists():
        same = (baseline / "findings.json").read_text() == findings_now and (
            baseline / "patch.diff"
        ).read_text() == patch
        identical = ("yes" if same else "NO") if len(printed) == 1 else "NO (warm)"
    return {
        "name": name, "files": len(py), "mb": mb, "parsed": parsed, "sites": sites,
        "floor_a": floor_a, "cold": cold_t, "j1": j1, "warm": warm_t, "cached": cached_t,
        "cold_x": cold_x, "warm_x": statistics.median(warm_x),
        "touch": touch_t, "diff": diff_t, "diff_x": diff_x, "apply": apply_t, "libcst": cst_t,
        "sarif": sarif_t, "json": json_t,
        "cold_mem": cold_mem, "warm_mem": warm_mem, "identical": identical,
    }  # fmt: skip


def print_row(row: dict[str, Any]) -> None:
    print(
        f"{row['name']}: check cold {row['cold']:.2f} s = {row['cold_x']:.2f}x"
        f" floor A ({row['floor_a']:.2f} s), warm {row['warm']:.2f} s",
        flush=True,
    )


def print_table(rows: list[dict[str, Any]]) -> None:
    print(
        "| corpus | .py files | MB | parsed | sites | floor A s | check cold s (x A) | -j 1 s"
        " | warm s (x A) | result cache s | one touched s | SARIF s (x JSON) | diff s (x apply)"
        " | apply s (x LibCST parse) | peak MB cold / warm | identical |"
    )
    print("|" + "---|" * 16)
    for r in rows:
        a, apply_t, cst = r["floor_a"], r["apply"], r["libcst"]
        cst_ratio = f"{apply_t / cst:.2f}" if cst else "-"
        print(
            f"| {r['name']} | {r['files']} | {r['mb']:.1f} | {r['parsed']} | {r['sites']}"
            f" | {a:.2f} | {r['cold']:.2f} ({r['cold_x']:.2f}) | {r['j1']:.2f}"
            f" | {r['warm']:.2f} ({r['warm_x']:.2f}) | {r['cached']:.2f} | {r['touch']:.2f}"
            f" | {r['sarif']:.2f} ({r['sarif'] / r['json']:.2f})"
            f" | {r['diff']:.2f} ({r['diff_x']:.2f}) | {apply_t:.2f} ({cst_ratio})"
            f" | {r['cold_mem']} / {r['warm_mem']} | {r['identical']} |"
        )


if __name__ == "__main__":
    main()
