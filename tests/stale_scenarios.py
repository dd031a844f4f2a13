#!/usr/bin/env python3
"""Adversarial check: does `migrate-fi check` answer stale from its caches?

Each scenario builds a small project in a fresh temp folder (a copy of the demo fixture plus
small hand-written files), points MIGRATE_FI_CACHE_DIR (and MIGRATE_FI_DATA_DIR) at fresh temp
folders, warms the caches with two runs of `migrate-fi check --output-format json ...`, mutates
one input, and runs `check` again with the cache and with `--no-cache`:

  SAME     the cached answer (stdout and exit code) equals the `--no-cache` one
  STALE    it does not (the caches kept an old answer)
  INVALID  the mutation did not change the `--no-cache` answer: the scenario proves nothing
  ERROR    the scenario could not be set up (message printed)

Every file is aged (mtime an hour back) and each mutation is followed by a wait of a little
more than 2 s: migrate-fi never trusts the stat of a file changed (mtime or ctime) within the
last 2 s (`migrate_fi.base.depends.settled`), so without the wait no cache would be used at all.

Usage:  python tests/stale_scenarios.py [-k NAME] [--serial] [--keep] [-v]
        exit 1 when any scenario is STALE, else 2 when any is ERROR, else 0
Tests:  tests/test_stale_cache.py runs every scenario in `SCENARIOS` (each a function
        `f() -> Outcome`) and requires SAME of each.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

DEMO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "projects", "demo")
MIGRATE_FI = [sys.executable, "-m", "migrate_fi"]
SETTLE_S = 2.3  # > migrate_fi.base.depends._RECENT_NS (2 s)
AGE_S = 3600
KEEP = False  # keep the temp folders (for debugging)


# ---------------------------------------------------------------------------------------------
# plumbing


@dataclass
class Answer:
    code: int
    out: str
    err: str = ""

    def key(self) -> tuple[int, str]:
        return (self.code, self.out)


@dataclass
class Outcome:
    name: str
    verdict: str  # SAME, STALE, INVALID, ERROR
    warm: Answer | None = None
    cached: Answer | None = None
    fresh: Answer | None = None
    note: str = ""

    def line(self) -> str:
        def c(a: Answer | None) -> str:
            return "-" if a is None else str(a.code)

        s = (
            f"{self.name:<34} {self.verdict:<7} warm={c(self.warm)} cached={c(self.cached)}"
            f" no-cache={c(self.fresh)}"
        )
        return s + (f"  ({self.note})" if self.note else "")


@dataclass
class Ctx:
    """One scenario's temp folder: base/proj (the project), base/cache, base/data."""

    base: str
    args: list[str] = field(default_factory=list)  # what `check` is given (relative to base)
    cwd: str = ""
    env: dict[str, str] = field(default_factory=dict)

    @property
    def proj(self) -> str:
        return os.path.join(self.base, "proj")

    def p(self, *parts: str) -> str:
        return os.path.join(self.proj, *parts)

    def check(self, no_cache: bool = False) -> Answer:
        argv = [*MIGRATE_FI, "check", "--output-format", "json", *self.args]
        if no_cache:
            argv.insert(len(MIGRATE_FI) + 1, "--no-cache")
        r = subprocess.run(
            argv,
            cwd=self.cwd or self.base,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return Answer(r.returncode, r.stdout, r.stderr)


def new_ctx(demo: bool = True) -> Ctx:
    base = tempfile.mkdtemp(prefix="mfi-stale-")
    if demo:
        shutil.copytree(DEMO, os.path.join(base, "proj"))
    else:
        os.makedirs(os.path.join(base, "proj"))
    os.makedirs(os.path.join(base, "cache"))
    os.makedirs(os.path.join(base, "data"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MIGRATE_FI_")}
    env["MIGRATE_FI_CACHE_DIR"] = os.path.join(base, "cache")
    env["MIGRATE_FI_DATA_DIR"] = os.path.join(base, "data")
    env.pop("PWD", None)
    return Ctx(base, ["proj"], base, env)


def write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write(text)


def age(root: str, seconds: int = AGE_S) -> None:
    """Every file and folder under ``root`` (and root) an hour old (mtime and atime)."""
    t = time.time() - seconds
    for folder, dirs, files in os.walk(root):
        for name in files + dirs:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                os.utime(path, (t, t))
    os.utime(root, (t, t))


def settle() -> None:
    time.sleep(SETTLE_S)


def edit_same_size(path: str, old: str, new: str) -> None:
    """Replace ``old`` by ``new`` (same length) in place (same inode), times restored."""
    assert len(old.encode()) == len(new.encode()), (old, new)
    st = os.stat(path)
    with open(path, "rb") as fh:
        data = fh.read()
    assert data.count(old.encode()) >= 1, (path, old)
    data = data.replace(old.encode(), new.encode())
    with open(path, "r+b") as fh:
        fh.write(data)
        fh.truncate()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        st.st_size,
        st.st_mtime_ns,
        st.st_ino,
    ), "stat not kept"


def scenario(
    build: Callable[[Ctx], None],
    mutate: Callable[[Ctx], None],
    name: str,
    warm_runs: int = 2,
    demo: bool = True,
) -> Outcome:
    """The common flow (see the module docstring)."""
    return _scenario(build, mutate, name, warm_runs, demo)


def _scenario(
    build: Callable[[Ctx], None],
    mutate: Callable[[Ctx], None],
    name: str,
    warm_runs: int,
    demo: bool,
) -> Outcome:
    ctx = new_ctx(demo)
    try:
        build(ctx)
        age(ctx.base)
        settle()
        warm = None
        for _ in range(warm_runs):
            warm = ctx.check()
        again = ctx.check()  # (warm: should be answered from the caches, and agree)
        if warm is None or again.key() != warm.key():
            return Outcome(name, "ERROR", warm, again, None, "warm runs disagree")
        if warm.code == 2:
            return Outcome(name, "ERROR", warm, None, None, "warm run errs: " + warm.err[-200:])
        mutate(ctx)
        settle()
        cached = ctx.check()
        # which layer: a run whose command line the replay record does not know (another
        # environment variable) goes past `warm.replay` and still reads the result cache.
        # (made before the --no-cache run, which may write the cache)
        probe = Ctx(ctx.base, ctx.args, ctx.cwd, {**ctx.env, "MFI_STALE_PROBE": "1"}).check()
        fresh = ctx.check(no_cache=True)
        if fresh.key() == warm.key():
            verdict = "INVALID"
        elif cached.key() == fresh.key():
            verdict = "SAME"
        else:
            verdict = "STALE"
        notes = []
        if verdict == "STALE":
            notes.append("cached == warm" if cached.key() == warm.key() else "cached != warm")
            if cached.code == fresh.code and _diagnostics(cached.out) == _diagnostics(fresh.out):
                notes.append("diagnostics equal: only the counts differ")
            notes.append(
                "result cache stale too"
                if probe.key() != fresh.key()
                else "replay only (result cache right)"
            )
        note = "; ".join(notes)
        return Outcome(name, verdict, warm, cached, fresh, note)
    except Exception as exc:
        return Outcome(name, "ERROR", note=f"{type(exc).__name__}: {exc}")
    finally:
        if not KEEP:
            shutil.rmtree(ctx.base, ignore_errors=True)
        else:
            print(f"[{name}] kept {ctx.base}", file=sys.stderr)


def _diagnostics(out: str) -> object:
    import json

    try:
        return json.loads(out).get("diagnostics")
    except ValueError:
        return out


# A caller of demo's `quantize_activations(x, global_scale)` (layers/fp4_utils.py), whose
# global scale FI003 judges by what every caller in the project passes: `scale` (a float: one
# element, no FI003 on fp4_utils.py:25) or `scal1` (torch.randn(8): FI003 reported). It never
# names FlashInfer: no rule analyses it, only the caller search reads it.
CALLER = """\
import torch

from demo_server.layers.fp4_utils import quantize_activations

scale = 1.0
scal1 = torch.randn(8)


def run(x):
    return quantize_activations(x, {arg})
"""
CALLER_REL = """\
import torch

from ..layers.fp4_utils import quantize_activations

scale = 1.0
scal1 = torch.randn(8)


def run(x):
    return quantize_activations(x, {arg})
"""


# ---------------------------------------------------------------------------------------------
# scenarios


def s1_caller_edit_same_stat() -> Outcome:
    """1. A caller (FI003 caller search) edited at the same size, mtime restored."""

    def build(c: Ctx) -> None:
        write(c.p("src/demo_server/caller.py"), CALLER.format(arg="scale"))

    def mutate(c: Ctx) -> None:
        edit_same_size(c.p("src/demo_server/caller.py"), "x, scale)", "x, scal1)")

    return scenario(build, mutate, "1 caller edit, same size+mtime")


def s2_caller_cp_p() -> Outcome:
    """2. The caller replaced by `cp -p` from a file of the same size and the same mtime."""

    def build(c: Ctx) -> None:
        write(c.p("src/demo_server/caller.py"), CALLER.format(arg="scale"))
        write(os.path.join(c.base, "spare", "caller.py"), CALLER.format(arg="scal1"))

    def mutate(c: Ctx) -> None:
        dst = c.p("src/demo_server/caller.py")
        src = os.path.join(c.base, "spare", "caller.py")
        a, b = os.stat(dst), os.stat(src)
        assert a.st_size == b.st_size
        os.utime(src, ns=(a.st_atime_ns, a.st_mtime_ns))  # the same mtime
        subprocess.run(["cp", "-p", src, dst], check=True)
        after = os.stat(dst)
        assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
            a.st_size,
            a.st_mtime_ns,
            a.st_ino,
        )

    return scenario(build, mutate, "2 caller cp -p, same size+mtime")


def s3_git_init_above() -> Outcome:
    """3. `git init` above the checked folder moves the caller search root (src -> proj), so a
    caller in proj/tests starts to count."""

    def build(c: Ctx) -> None:
        c.args = ["proj/src"]
        write(c.p("src/demo_server/caller.py"), CALLER.format(arg="scale"))
        write(c.p("tests/test_caller.py"), CALLER.format(arg="scal1"))

    def mutate(c: Ctx) -> None:
        subprocess.run(["git", "init", "-q", c.proj], check=True, env=c.env)

    return scenario(build, mutate, "3 git init above checked folder")


def s4_init_py_removed() -> Outcome:
    """4. A package's __init__.py disappears: the caller's relative import stops resolving, so
    `quantize_activations` has no caller left (FI003 reported)."""

    def build(c: Ctx) -> None:
        write(c.p("src/demo_server/extra/__init__.py"), "")
        write(c.p("src/demo_server/extra/caller.py"), CALLER_REL.format(arg="scale"))

    def mutate(c: Ctx) -> None:
        os.unlink(c.p("src/demo_server/extra/__init__.py"))

    return scenario(build, mutate, "4a __init__.py removed")


def s4_init_py_added() -> Outcome:
    """4. The reverse: __init__.py appears, the relative import resolves, a caller passing a
    one-element scale counts (FI003 no longer reported)."""

    def build(c: Ctx) -> None:
        write(c.p("src/demo_server/extra/caller.py"), CALLER_REL.format(arg="scale"))

    def mutate(c: Ctx) -> None:
        write(c.p("src/demo_server/extra/__init__.py"), "")
        age(c.p("src/demo_server/extra/__init__.py"))

    return scenario(build, mutate, "4b __init__.py added")


def _s5(name: str, args: list[str], include: str, where: str, pin: str = "0.6.8.post1"):
    def build(c: Ctx) -> None:
        c.args = args
        write(c.p("requirements.txt"), f"-r {include}\ntorch>=2.8\n")
        write(os.path.join(c.proj, os.path.dirname(where), "README"), "shared pins\n")

    def mutate(c: Ctx) -> None:
        path = os.path.normpath(os.path.join(c.proj, where))
        write(path, f"flashinfer-python=={pin}\n")
        age(path)

    return scenario(build, mutate, name)


def s5_requirements_include() -> Outcome:
    """5. requirements.txt includes `-r deps/other.txt`, missing at first; then it appears with
    a flashinfer-python pin (FI006 reports it). Only the requirements file is given: migrate-fi
    follows its `-r` (`discovery.with_includes`; a walked one's too, 5e and 5f)."""
    return _s5(
        "5a -r deps/other.txt (file arg)",
        ["proj/requirements.txt"],
        "deps/other.txt",
        "deps/other.txt",
    )


def s5_requirements_include_dir() -> Outcome:
    """5, the project folder given too: the pin search's recursive walk lists proj/deps."""
    return _s5(
        "5b -r deps/other.txt (dir+file)",
        ["proj", "proj/requirements.txt"],
        "deps/other.txt",
        "deps/other.txt",
    )


def s5_requirements_include_outside() -> Outcome:
    """5, the included file outside the project (`-r ../shared/requirements-shared.txt`: a
    name FI006 reads, so the diagnostics change, not only the file count)."""
    return _s5(
        "5c -r ../shared/requirements-*.txt",
        ["proj", "proj/requirements.txt"],
        "../shared/requirements-shared.txt",
        "../shared/requirements-shared.txt",
    )


def s5_requirements_include_disagree() -> Outcome:
    """5, other.txt pins another release: the pins disagree (an error, exit 2)."""
    return _s5(
        "5d -r other.txt, other version",
        ["proj/requirements.txt"],
        "deps/other.txt",
        "deps/other.txt",
        pin="0.6.11",
    )


def s5_walked_include_edited() -> Outcome:
    """5, only the project folder given: its requirements.txt includes `-r base.txt`, a name
    no pin pattern matches (read because it is included); the pin there is edited at the same
    size with its times kept."""

    def build(c: Ctx) -> None:
        c.args = ["proj"]
        write(c.p("requirements.txt"), "-r base.txt\ntorch>=2.8\n")
        write(c.p("base.txt"), "flashinfer-python==0.6.8.post1\n")

    def mutate(c: Ctx) -> None:
        edit_same_size(c.p("base.txt"), "==0.6.8.post1", ">=0.6.8.post1")

    return scenario(build, mutate, "5e walked -r base.txt edited")


def s5_walked_include_added() -> Outcome:
    """5, only the project folder given: base.txt (a pin) is there from the start, and
    requirements.txt comes to include it (`-r base.txt`)."""

    def build(c: Ctx) -> None:
        c.args = ["proj"]
        write(c.p("requirements.txt"), "torch>=2.8\n")
        write(c.p("base.txt"), "flashinfer-python==0.6.8.post1\n")

    def mutate(c: Ctx) -> None:
        write(c.p("requirements.txt"), "-r base.txt\ntorch>=2.8\n")

    return scenario(build, mutate, "5f walked -r base.txt added")


VALUES = """\
[[change]]
apis = ["flashinfer.CuteDslMoEWrapper"]
keyword = "activation"
new_keyword = "activation_type"
import = {{ module = "flashinfer", name = "ActivationType" }}
reason = "a test map"
values = [
  {{ old = "{old}", new = "ActivationType.Gelu" }},
]
"""
MOE_CALL = """\
from flashinfer import CuteDslMoEWrapper


def make():
    return CuteDslMoEWrapper(num_experts=8, top_k=2, activation="gelu")
"""


def s6_user_value_map() -> Outcome:
    """6. A value map in the user's data folder (MIGRATE_FI_DATA_DIR/values/0.6.16.toml) edited
    at the same size, mtime kept: "gelu" mapped, then "gelx" (FI010's message changes)."""

    def build(c: Ctx) -> None:
        write(os.path.join(c.base, "data", "values", "0.6.16.toml"), VALUES.format(old="gelu"))
        write(c.p("src/demo_server/moe_make.py"), MOE_CALL)

    def mutate(c: Ctx) -> None:
        edit_same_size(os.path.join(c.base, "data", "values", "0.6.16.toml"), '"gelu"', '"gelx"')

    return scenario(build, mutate, "6 user value map, same size+mtime")


def s7_cache_in_tree() -> Outcome:
    """7. MIGRATE_FI_CACHE_DIR inside the checked tree (proj/mfcache), then a file of the
    project that a rule analyses edited at the same size, mtime kept."""

    def build(c: Ctx) -> None:
        c.env["MIGRATE_FI_CACHE_DIR"] = c.p("mfcache")

    def mutate(c: Ctx) -> None:
        edit_same_size(
            c.p("src/demo_server/layers/moe.py"),
            "hidden, input_global_scale, 16",
            "hidden, 1.0               , 16",
        )

    return scenario(build, mutate, "7 cache dir inside tree")


def _pin_moves(c: Ctx) -> None:
    path = c.p("pyproject.toml")
    with open(path) as fh:
        text = fh.read()
    write(
        path,
        text.replace("flashinfer_python[cu13]==0.6.8.post1", "flashinfer_python[cu13]==0.6.11"),
    )


def s7_cache_is_tree_root() -> Outcome:
    """7, the cache folder is the project folder itself and `proj/src` is checked; then the
    project's pin (proj/pyproject.toml: read for --from, not walked) moves to 0.6.11."""

    def build(c: Ctx) -> None:
        c.env["MIGRATE_FI_CACHE_DIR"] = c.proj
        c.args = ["proj/src"]

    return scenario(build, _pin_moves, "7b cache dir = project root")


def s7_control_cache_outside() -> Outcome:
    """7b's control: the same run and pin move, the cache folder outside the project."""

    def build(c: Ctx) -> None:
        c.args = ["proj/src"]

    return scenario(build, _pin_moves, "7c control: cache outside")


def s8_plain_edit() -> Outcome:
    """8. An analysed file of the project edited at the same size, mtime kept (plain)."""

    def build(c: Ctx) -> None:
        pass

    def mutate(c: Ctx) -> None:
        edit_same_size(
            c.p("src/demo_server/layers/moe.py"),
            "hidden, input_global_scale, 16",
            "hidden, 1.0               , 16",
        )

    return scenario(build, mutate, "8 plain edit, same size+mtime")


def s9_nested_config_added() -> Outcome:
    """9. A sub-folder gains a pyproject.toml with a [tool.migrate-fi] table (which the run
    does not read, and says so)."""

    def build(c: Ctx) -> None:
        pass

    def mutate(c: Ctx) -> None:
        write(
            c.p("tools/pyproject.toml"),
            '[project]\nname = "tools"\n\n[tool.migrate-fi]\nignore = ["FI003"]\n',
        )

    return scenario(build, mutate, "9 nested [tool.migrate-fi] added")


def s9_nested_config_edited() -> Outcome:
    """9. The one [tool.migrate-fi] table under the paths (none upward: the run's) edited."""
    table = '[tool.migrate-fi]\nto = "0.6.11"\nignore = ["FI006"]\n'

    def build(c: Ctx) -> None:
        write(
            c.p("python/pyproject.toml"),
            '[project]\nname = "x"\ndependencies = ["flashinfer-python==0.6.10"]\n\n' + table,
        )
        write(
            c.p("python/x/q.py"),
            "from flashinfer import fp4_quantize\n\n\n"
            "def q(x, gs):\n    return fp4_quantize(x, gs[:1], 16, False, True, False, True)\n",
        )

    def mutate(c: Ctx) -> None:
        edit_same_size(c.p("python/pyproject.toml"), 'ignore = ["FI006"]', 'ignore = ["FI002"]')

    return scenario(build, mutate, "9 the one nested table edited", demo=False)


def s10_replacement_edited() -> Outcome:
    """10. A FlashInfer name replaced by a function of another module of the project (FI002
    reads that module for what the replacement takes): that module edited at the same size,
    mtime kept, so that the replacement now takes what FlashInfer passes."""
    pyproject = '[project]\nname = "x"\ndependencies = ["flashinfer-python==0.6.15.post1"]\n'

    def build(c: Ctx) -> None:
        write(c.p("pyproject.toml"), pyproject + '\n[tool.migrate-fi]\nto = "0.6.16"\n')
        write(c.p("x/__init__.py"), "")
        write(c.p("x/gen.py"), "def ours(xxxxxxxxxxxx=False):\n    return None\n")
        write(
            c.p("x/lora.py"),
            "import flashinfer.fused_moe.core as fi_core\n\nfrom x.gen import ours\n\n\n"
            "def build():\n    fi_core.gen_trtllm_gen_fused_moe_sm100_module = ours\n",
        )

    def mutate(c: Ctx) -> None:
        edit_same_size(c.p("x/gen.py"), "xxxxxxxxxxxx=", "enable_rubin=")

    return scenario(build, mutate, "10 a patch's replacement edited", demo=False)


SCENARIOS: list[Callable[[], Outcome]] = [
    s1_caller_edit_same_stat,
    s2_caller_cp_p,
    s3_git_init_above,
    s4_init_py_removed,
    s4_init_py_added,
    s5_requirements_include,
    s5_requirements_include_dir,
    s5_requirements_include_outside,
    s5_requirements_include_disagree,
    s5_walked_include_edited,
    s5_walked_include_added,
    s6_user_value_map,
    s7_cache_in_tree,
    s7_cache_is_tree_root,
    s7_control_cache_outside,
    s8_plain_edit,
    s9_nested_config_added,
    s9_nested_config_edited,
    s10_replacement_edited,
]


def main(argv: list[str] | None = None) -> int:
    global KEEP
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", help="only scenarios whose function name contains this")
    ap.add_argument("--serial", action="store_true", help="one scenario at a time")
    ap.add_argument("--keep", action="store_true", help="keep the temp folders")
    ap.add_argument("-v", action="store_true", help="show the diff of a STALE one")
    a = ap.parse_args(argv)
    KEEP = a.keep
    chosen = [f for f in SCENARIOS if not a.k or a.k in f.__name__]
    t0 = time.time()
    if a.serial:
        outcomes = [f() for f in chosen]
    else:
        with ThreadPoolExecutor(max_workers=min(6, len(chosen) or 1)) as pool:
            outcomes = list(pool.map(lambda f: f(), chosen))
    for o in outcomes:
        print(o.line())
        if a.v and o.verdict in ("STALE", "ERROR") and o.cached and o.fresh:
            import difflib

            sys.stdout.writelines(
                difflib.unified_diff(
                    o.cached.out.splitlines(True),
                    o.fresh.out.splitlines(True),
                    "cached",
                    "no-cache",
                    n=1,
                )
            )
    print(f"({len(outcomes)} scenarios, {time.time() - t0:.1f} s)")
    if any(o.verdict == "STALE" for o in outcomes):
        return 1
    return 2 if any(o.verdict == "ERROR" for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
