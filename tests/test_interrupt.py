"""Interrupting a run: Ctrl-C and SIGTERM end it within a second in every phase, an interrupted
apply says what it wrote, and no file is ever half old and half new. SIGKILL cannot be caught:
after one, every file is still whole, and the temporary files it may leave are removed by the
next apply."""

from __future__ import annotations

import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

LEGACY = (
    "from flashinfer import fp4_quantize\n\n\n"
    "def q{n}(x, gs):\n"
    "    return fp4_quantize(x, gs[:1], 16, False, True, False, True)\n"
)
MIGRATED = LEGACY.replace("False, True)", "False, enable_pdl=True)")
FILES = 300
TRIAL_FILES = 3 * FILES  # apply runs for seconds on these, so the random moments fall inside

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def make_tree(root: Path, files: int = FILES) -> None:
    for i in range(files):
        folder = root / f"pkg{i % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"m{i}.py").write_text(LEGACY.format(n=i))


def start(root: Path, command: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "migrate_fi",
            command,
            "--from",
            "0.6.10",
            "--to",
            "0.6.11",
            "-j",
            "2",
            *(["--no-cache"] if command == "check" else []),  # all the work, every time
            str(root),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=root,
        # as from a terminal: a test run started in the background (`cmd &`) passes SIGINT on
        # ignored, and Python then never turns Ctrl-C into KeyboardInterrupt
        preexec_fn=_default_sigint,
    )


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def states(root: Path) -> tuple[int, int]:
    """(old files, new files); fails on a file that is neither."""
    old = new = 0
    for path in root.rglob("m*.py"):
        n = int(path.stem[1:])
        text = path.read_text()
        if text == LEGACY.format(n=n):
            old += 1
        elif text == MIGRATED.format(n=n):
            new += 1
        else:
            raise AssertionError(f"{path} is damaged")
    return old, new


def debris(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.endswith(".migrate-fi.tmp")]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("command", ["check", "apply"])
def test_a_signal_ends_the_run_within_a_second(tmp_path: Path, sig: int, command: str) -> None:
    # enough work to be mid-run after a second (apply names arguments as text now: quick too)
    files = TRIAL_FILES if command == "apply" else 8 * FILES
    make_tree(tmp_path, files)
    proc = start(tmp_path, command)
    if command == "apply":  # (once it writes: the first file of the path order is new)
        first = tmp_path / "pkg0" / "m0.py"
        deadline = time.monotonic() + 30
        while first.read_text() != MIGRATED.format(n=0) and time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            time.sleep(0.002)
    else:
        time.sleep(1.0)  # start-up is done: discovery, analysis in the workers
    sent = time.monotonic()
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=10)
    took = time.monotonic() - sent
    if proc.returncode in (0, 1):
        pytest.skip(f"the run had finished before the signal ({took:.1f}s)")
    assert proc.returncode == 130, err
    assert took < 1.0, f"took {took:.2f}s to stop"
    assert "migrate-fi: interrupted" in err
    assert "Traceback" not in err
    old, new = states(tmp_path)
    assert old + new == files
    assert debris(tmp_path) == []
    if command == "apply" and new:
        assert f"{new} file(s) were rewritten before it stopped" in err


EXIT_MASK = """
import atexit, signal, sys
from migrate_fi.cli import main
def report():  # (runs as the interpreter shuts down, after the command said it is done)
    held = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    print("held" if {signal.SIGINT, signal.SIGTERM} <= held else "open", file=sys.stderr)
atexit.register(report)
sys.argv = ["migrate-fi", *sys.argv[1:]]
main()
"""


@pytest.mark.parametrize(
    "args", [["check", "--from", "0.6.10", "--to", "0.6.11", "."], ["check", "--bad-option"]]
)
def test_a_finished_command_holds_signals_while_python_shuts_down(
    tmp_path: Path, args: list[str]
) -> None:
    """Once a command has ended (its own `sys.exit`, a usage error...), a signal would kill
    the process with its status instead of the command's, once Python has put back the default
    handlers: signals are held until it is gone."""
    make_tree(tmp_path, 2)
    done = subprocess.run(
        [sys.executable, "-c", EXIT_MASK, *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode in (1, 2), done.stderr
    assert done.stderr.strip().splitlines()[-1] == "held", done.stderr


@pytest.mark.slow
def test_sigterm_at_random_moments_leaves_whole_files_and_no_debris(tmp_path: Path) -> None:
    rng = random.Random(7)
    for _ in range(6):
        make_tree(tmp_path, TRIAL_FILES)
        proc = start(tmp_path, "apply")
        time.sleep(rng.uniform(0.3, 2.5))
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=10)
        old, new = states(tmp_path)
        # -SIGTERM: the signal came while Python was still starting, before any handler (and
        # long before any write)
        assert proc.returncode in (0, 130) or (proc.returncode == -signal.SIGTERM and new == 0)
        assert old + new == TRIAL_FILES
        assert debris(tmp_path) == []


@pytest.mark.slow
def test_sigkill_leaves_whole_files_and_the_next_run_cleans_up(tmp_path: Path) -> None:
    rng = random.Random(11)
    for _ in range(6):
        make_tree(tmp_path, TRIAL_FILES)
        proc = start(tmp_path, "apply")
        time.sleep(rng.uniform(0.3, 2.5))
        proc.kill()
        proc.communicate(timeout=10)
        old, new = states(tmp_path)
        assert old + new == TRIAL_FILES
    # a temporary file a killed run may leave: reported by check, removed by the next apply
    stale = tmp_path / "pkg0" / ".m0.py.abc123.migrate-fi.tmp"
    stale.write_text("half")
    checked = start(tmp_path, "check")
    _out, err = checked.communicate(timeout=60)
    assert "temporary file(s) an interrupted run left" in err
    assert stale.exists()
    applied = start(tmp_path, "apply")
    _out, err = applied.communicate(timeout=60)
    # the planted one, and any the killed runs left
    assert re.search(r"removed \d+ temporary file\(s\) an interrupted run left: .*abc123", err)
    assert debris(tmp_path) == []
    assert states(tmp_path) == (0, TRIAL_FILES)
