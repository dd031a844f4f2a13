"""`migrate-fi verify` on a small real pytest project (CPU only): which tests it selects, the
environment report (from a stand-in interpreter that reports a GPU machine), JUnit reading, exit
codes, the all-skipped case, pass-through arguments and the baseline."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from migrate_fi.cli import cli
from migrate_fi.project.record import Applied, read_record, write_record
from migrate_fi.verify.junit import Outcome, parse_junit
from migrate_fi.verify.runner import select_tests

SAMPLE = Path(__file__).parent / "fixtures" / "projects" / "verify_sample"
H200 = {
    "python": "3.12.3",
    "executable": "/opt/torch/.venv/bin/python3",
    "torch": "2.11.0+cu130",
    "torch_cuda": "13.0",
    "gpus": [{"name": "NVIDIA H200", "capability": "9.0"}],
    "pytest": "8.0",
}


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "sample"
    shutil.copytree(SAMPLE, root)
    monkeypatch.chdir(root)
    return root


def fake_python(tmp_path: Path, flashinfer: str | None = "0.6.14") -> str:
    """An interpreter that reports an H200 with FlashInfer installed, and runs pytest for real."""
    env = dict(H200, **({"flashinfer": flashinfer} if flashinfer else {}))
    script = tmp_path / "python-h200"
    script.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = "-c" ]; then echo \'{json.dumps(env)}\'; exit 0; fi\n'
        f'exec "{sys.executable}" "$@"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def record(root: Path, *written: str, to: str = "0.6.14") -> None:
    files = {str(root / w): (root / w).read_bytes() for w in written if (root / w).is_file()}
    applied = Applied(written=files, seen=frozenset(), sites=[], failed=[])
    write_record(str(root), "0.6.8.post1", to, applied)


# --------------------------------------------------------------------- selection


def test_selects_rewritten_tests_and_tests_that_import_rewritten_modules(project: Path) -> None:
    chosen = select_tests(str(project), ["src/sample_pkg/ops.py"])
    names = sorted(os.path.relpath(p, project) for p in chosen)
    assert names == ["tests/test_gpu_only.py", "tests/test_ops.py"]  # not test_unrelated
    chosen = select_tests(str(project), ["tests/test_unrelated.py"])
    assert [os.path.relpath(p, project) for p in chosen] == ["tests/test_unrelated.py"]


def test_apply_records_what_it_wrote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    demo = tmp_path / "demo"
    shutil.copytree(Path(__file__).parent / "fixtures" / "projects" / "demo", demo)
    monkeypatch.chdir(tmp_path)
    invoke("apply", "demo")
    rec = read_record(str(demo))
    assert rec is not None and rec.from_version == "0.6.8.post1" and rec.to_version == "0.7.4"
    assert "tests/test_moe_graph.py" in rec.written
    assert "src/demo_server/layers/moe.py" in rec.written


def test_a_damaged_record_is_a_one_line_error(project: Path) -> None:
    (project / ".migrate-fi").mkdir()
    (project / ".migrate-fi" / "last-apply.json").write_text("{not json")
    r = invoke("verify", ".")
    assert r.exit_code == 2
    assert "last-apply.json: not a readable apply record" in r.stderr


def test_no_record_and_no_tests(project: Path) -> None:
    r = invoke("verify", ".")
    assert r.exit_code == 2 and "run `migrate-fi apply` first" in r.stderr


# ---------------------------------------------------------------- runs and codes


def test_passing_tests_with_the_environment_report(project: Path, tmp_path: Path) -> None:
    record(project, "src/sample_pkg/ops.py")
    r = invoke("verify", "--python", fake_python(tmp_path), ".")
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert "torch       2.11.0+cu130, CUDA 13.0" in out
    assert "GPU 0       NVIDIA H200 (compute capability 9.0)" in out
    assert "flashinfer  0.6.14 (the migration's target: 0.6.14)" in out
    assert "pin         pyproject.toml:5 ==0.6.14" in out
    assert "PASSED   tests/test_ops.py::test_scale" in out
    assert "SKIPPED  tests/test_gpu_only.py::test_needs_blackwell" in out
    assert "reason: CuteDslMoEWrapper.run() needs an SM100-family GPU" in out
    assert "Verdict: passed (2 passed, 0 failed, 1 skipped, 0 error)" in out


def test_a_failure_exits_1_with_its_first_lines(project: Path, tmp_path: Path) -> None:
    (project / "src" / "sample_pkg" / "ops.py").write_text(
        "def scale(x, factor=2):\n    return x\n"
    )
    record(project, "src/sample_pkg/ops.py")
    r = invoke("verify", "--python", fake_python(tmp_path), ".")
    assert r.exit_code == 1
    assert "FAILED   tests/test_ops.py::test_scale" in r.stdout
    assert "assert 3 == 6" in r.stdout
    assert "Verdict: failed" in r.stdout


def test_all_skipped_is_nothing_verified(project: Path, tmp_path: Path) -> None:
    python = fake_python(tmp_path)
    r = invoke(
        "verify", "--python", python, "--tests", "tests/test_gpu_only.py", "--to", "0.6.14", "."
    )
    assert r.exit_code == 3
    assert "Verdict: nothing verified" in r.stdout and "proves nothing" in r.stdout
    r = invoke(
        "verify",
        "--python",
        python,
        "--tests",
        "tests/test_gpu_only.py",
        "--to",
        "0.6.14",
        "--allow-skips",
        ".",
    )
    assert r.exit_code == 0
    assert "nothing verified (with --allow-skips)" in r.stdout


def test_the_installed_flashinfer_must_be_the_target(project: Path, tmp_path: Path) -> None:
    record(project, "src/sample_pkg/ops.py")
    old = fake_python(tmp_path, flashinfer="0.6.13")
    r = invoke("verify", "--python", old, ".")
    assert r.exit_code == 2
    assert "the installed flashinfer-python is 0.6.13, the migration's target is 0.6.14" in r.stdout
    assert invoke("verify", "--python", old, "--allow-version-mismatch", ".").exit_code == 0
    missing = fake_python(tmp_path / "..", flashinfer=None)
    r = invoke("verify", "--python", missing, ".")
    assert r.exit_code == 2 and "flashinfer-python is not installed" in r.stdout


def test_local_version_tags_match_the_target(project: Path, tmp_path: Path) -> None:
    record(project, "src/sample_pkg/ops.py")
    assert invoke("verify", "--python", fake_python(tmp_path, "0.6.14+cu130"), ".").exit_code == 0


def test_json_output_and_pytest_arguments_after_dashes(project: Path, tmp_path: Path) -> None:
    record(project, "src/sample_pkg/ops.py")
    r = invoke(
        "verify",
        "--python",
        fake_python(tmp_path),
        "--output-format",
        "json",
        ".",
        "--",
        "-k",
        "factor",
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    ran = [x["test"] for x in doc["results"] if x["outcome"] != "skipped"]
    assert ran == ["tests/test_ops.py::test_scale_factor"]
    assert doc["verdict"] == "passed" and doc["environment"]["gpus"][0]["name"] == "NVIDIA H200"


def test_a_pytest_usage_error_is_said_with_its_reason(project: Path, tmp_path: Path) -> None:
    """pytest prints its usage error, then lines about its configuration: the error is what
    the user needs (it once showed only `rootdir: ...`)."""
    record(project, "src/sample_pkg/ops.py")
    r = invoke("verify", "--python", fake_python(tmp_path), ".", "--", "--no-such-option")
    assert r.exit_code == 2
    assert "unrecognized arguments: --no-such-option" in r.output, r.output


def test_baseline_tells_new_failures_from_old_ones(project: Path, tmp_path: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)

    (project / "tests" / "test_old_failure.py").write_text(
        "from sample_pkg.ops import scale\n\ndef test_was_failing():\n    assert scale(1) == 3\n"
    )
    git("init", "-q")
    git("-c", "user.email=a@b", "-c", "user.name=t", "add", "-A")
    git("-c", "user.email=a@b", "-c", "user.name=t", "commit", "-qm", "before")
    # "the migration" breaks test_scale_factor
    (project / "src" / "sample_pkg" / "ops.py").write_text(
        "def scale(x, factor=2):\n    return x * 2\n"
    )
    record(project, "src/sample_pkg/ops.py")
    r = invoke("verify", "--python", fake_python(tmp_path), "--baseline", "HEAD", ".")
    assert r.exit_code == 1
    assert "new failures:      tests/test_ops.py::test_scale_factor" in r.stdout
    assert "already failing:   tests/test_old_failure.py::test_was_failing" in r.stdout
    r = invoke("verify", "--python", fake_python(tmp_path), "--baseline", "nope", ".")
    assert r.exit_code == 2 and "--baseline nope: no such commit" in r.stdout


# ------------------------------------------------------------------------ junit


def test_junit_parsing() -> None:
    xml = """<?xml version="1.0"?>
    <testsuites><testsuite name="pytest">
      <testcase classname="tests.test_a" name="test_ok" time="0.01"/>
      <testcase classname="tests.test_a.TestX" name="test_bad" time="0.2">
        <failure message="assert 1 == 2">def test_bad():
    &gt;   assert 1 == 2
    E   assert 1 == 2</failure></testcase>
      <testcase classname="tests.test_b" name="test_skip" time="0">
        <skipped type="pytest.skip" message="needs SM100">tests/test_b.py:3: needs SM100</skipped>
      </testcase>
      <testcase classname="" name="tests.test_c" file="tests/test_c.py" time="0.000">
        <skipped message="collection skipped">('/x/tests/test_c.py', 11, 'Skipped: needs an SM100-family GPU')</skipped>
      </testcase>
      <testcase classname="tests.test_b" name="test_err" time="0">
        <error message="failed on setup with &quot;RuntimeError: boom&quot;">RuntimeError: boom</error>
      </testcase>
    </testsuite></testsuites>"""
    results = parse_junit(xml)
    assert [(r.test_id, r.outcome) for r in results] == [
        ("tests/test_a.py::test_ok", Outcome.PASSED),
        ("tests/test_a.py::TestX::test_bad", Outcome.FAILED),
        ("tests/test_b.py::test_skip", Outcome.SKIPPED),
        ("tests/test_c.py", Outcome.SKIPPED),
        ("tests/test_b.py::test_err", Outcome.ERROR),
    ]
    assert results[3].detail == "needs an SM100-family GPU"
    assert results[1].detail.startswith("assert 1 == 2")
    assert results[2].detail == "needs SM100"
    with pytest.raises(ValueError):
        parse_junit("not xml")


def test_a_failure_that_names_an_api_a_release_changed_says_the_release_note() -> None:
    """A migrated test that fails because the target refuses the GPU is told as that, with
    the release note, not only as "failed"."""
    from migrate_fi.verify.junit import Outcome, TestResult
    from migrate_fi.verify.runner import VerifyRun, explain_failures

    run = VerifyRun(
        [
            TestResult(
                "tests/test_mla.py::test_xqa",
                Outcome.FAILED,
                "ValueError: xqa_batch_decode_with_kv_cache_mla needs SM120a",
            ),
            TestResult("tests/test_mla.py::test_other", Outcome.FAILED, "AssertionError: 1 != 2"),
            TestResult("tests/test_mla.py::test_ok", Outcome.PASSED),
        ]
    )
    explained = explain_failures(run, "0.6.10.post1", "0.6.11")
    assert list(explained) == ["tests/test_mla.py::test_xqa"]
    (why,) = explained["tests/test_mla.py::test_xqa"]
    assert why.en.startswith("FlashInfer 0.6.11 changed xqa_batch_decode_with_kv_cache_mla")
    # (and in Chinese, with the note's own Chinese text)
    assert why.zh.startswith("FlashInfer 0.6.11 改变了 `xqa_batch_decode_with_kv_cache_mla`")
    assert "SM120" in why.zh
    assert explain_failures(run, "0.6.11", "0.6.12") == {}  # not a change of that range
