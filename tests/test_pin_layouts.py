"""Pins in the layouts real projects use, configuration errors, and `python -m` safety.

The layouts themselves are fixture cases of FI006 (tests/fixtures/flashinfer_pins: Poetry's
parentheses, direct URLs, hashes, docker bake JSON and HCL, lock files, a cubin sharing the
main package's variable, git tags); these tests run them through the command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from migrate_fi.cli import cli


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("given", ["requirements/cuda.txt", "."])
def test_a_requirements_folder_at_the_root_is_read_as_dependency_files(
    project: Path, given: str
) -> None:
    (project / "requirements").mkdir()
    cuda = project / "requirements" / "cuda.txt"
    cuda.write_text("flashinfer-python==0.6.13\nflashinfer-cubin==0.6.13\n")
    r = invoke("apply", "--to", "0.6.14", given)
    # the python pin moves; the cubin pin cannot (0.6.14 is not on PyPI) and is reported
    assert cuda.read_text() == "flashinfer-python==0.6.14\nflashinfer-cubin==0.6.13\n"
    assert r.exit_code == 1
    assert "requirements/cuda.txt:2:19: FI006 flashinfer-cubin 0.6.14 is not published" in r.stdout


def test_a_lagging_cubin_pin_is_a_finding_not_a_fatal_disagreement(project: Path) -> None:
    (project / "requirements.txt").write_text(
        "flashinfer-python==0.6.14\nflashinfer-cubin==0.6.12\n"
    )
    for command in ("check", "diff", "plan"):
        r = invoke(command, "--to", "0.7.4", ".")
        assert r.exit_code in (0, 1), (command, r.output)
        assert "disagree" not in r.output
    plan = invoke("plan", "--to", "0.7.4", ".")
    assert "FlashInfer now: 0.6.14" in plan.stdout


def test_a_direct_url_names_the_version_the_project_is_on(project: Path) -> None:
    (project / "requirements.txt").write_text(
        "flashinfer-python @ https://example.org/flashinfer_python-0.6.10-py3-none-any.whl\n"
    )
    plan = invoke("plan", "--to", "0.6.11", ".")
    assert plan.exit_code == 0, plan.output
    assert "FlashInfer now: 0.6.10 (the pins below)" in plan.stdout


def test_a_build_of_a_release_tag_names_the_version_the_project_is_on(project: Path) -> None:
    # (text-generation-inference builds FlashInfer so, in an included `Makefile-flashinfer`)
    (project / "Makefile-flashinfer").write_text(
        "install-flashinfer:\n\tpip install"
        " git+https://github.com/flashinfer-ai/flashinfer.git@v0.6.10#egg=flashinfer-python\n"
    )
    plan = invoke("plan", "--to", "0.6.11", ".")
    assert plan.exit_code == 0, plan.output
    assert "FlashInfer now: 0.6.10 (the pins below)" in plan.stdout
    assert "Makefile-flashinfer:2 flashinfer-python @0.6.10" in plan.stdout


def test_with_no_pin_the_error_says_what_the_lock_holds(project: Path) -> None:
    # (an RL framework on vLLM: FlashInfer only through vLLM, locked by uv; the lock is a
    # hint for --from, never taken as the version the code is written for)
    (project / "pyproject.toml").write_text('[project]\nname = "t"\ndependencies = ["vllm"]\n')
    (project / "uv.lock").write_text(
        'version = 1\n\n[[package]]\nname = "flashinfer-python"\nversion = "0.6.14"\n'
    )
    r = invoke("plan", "--to", "0.7.4", ".")
    assert r.exit_code == 2
    assert "no flashinfer-python pin found" in r.stderr
    assert "uv.lock holds flashinfer-python 0.6.14): pass --from VERSION" in r.stderr


def test_poetry_parentheses_name_the_version(project: Path) -> None:
    (project / "pyproject.toml").write_text(
        '[project]\nname = "p"\ndependencies = ["flashinfer-python (==0.6.9)"]\n'
    )
    assert "FlashInfer now: 0.6.9" in invoke("plan", "--to", "0.6.11", ".").stdout


def test_a_wrong_rule_option_value_is_a_configuration_error(project: Path) -> None:
    (project / "pyproject.toml").write_text(
        '[project]\nname = "p"\ndependencies = ["flashinfer-python==0.6.12"]\n'
        '[tool.migrate-fi.rules.FI006]\ncubin = "instal-from-index"\n'
    )
    r = invoke("check", ".")
    assert r.exit_code == 2
    assert "pyproject.toml: [tool.migrate-fi.rules].FI006: cubin must be one of" in r.stderr
    assert '"report", "install-from-index"' in r.stderr and "instal-from-index" in r.stderr


def test_an_unknown_change_kind_and_an_empty_target_are_usage_errors(project: Path) -> None:
    r = invoke("api-diff", "0.6.10", "0.6.11", "--kind", "bogus")
    assert r.exit_code == 2 and "is not a kind of change" in r.output
    (project / "requirements.txt").write_text("flashinfer-python==0.6.10\n")
    for command in ("check", "plan"):
        r = invoke(command, "--to", "", ".")
        assert r.exit_code == 2 and "--to needs a version" in r.output, r.output


def test_python_m_never_imports_the_current_folders_modules(tmp_path: Path) -> None:
    for name in ("json", "click", "pathspec", "libcst", "packaging"):
        (tmp_path / f"{name}.py").write_text(
            f"open({str(tmp_path / ('RAN_' + name))!r}, 'w').write('ran')\n"
        )
    (tmp_path / "requirements.txt").write_text("flashinfer-python==0.6.10\n")
    proc = subprocess.run(
        [sys.executable, "-m", "migrate_fi", "check", "--to", "0.6.11", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert "requirements.txt:1:20: FI006" in proc.stdout
    assert sorted(p.name for p in tmp_path.glob("RAN_*")) == []


def test_companions_are_checked_against_the_extra_the_project_installs(project: Path) -> None:
    """`flashinfer-python[cu13]` in pyproject.toml: 0.7.1's cu13 extra requires
    `nvidia-cutlass-dsl[cu13]>=4.7.0a0`, so a 4.6.2 pin in requirements/cuda.txt (which pins no
    flashinfer-python itself) is too old; without the extra, 4.6.2 is what 0.7.1 needs."""
    (project / "pyproject.toml").write_text(
        '[project]\nname = "p"\nversion = "1"\ndependencies = ["flashinfer-python[cu13]==0.7.0.post1"]\n'
    )
    (project / "requirements").mkdir()
    (project / "requirements" / "cuda.txt").write_text("nvidia-cutlass-dsl[cu13]==4.6.2\n")
    args = ("check", "--to", "0.7.1", "--select", "FI007", "--no-cache", str(project))
    r = invoke(*args)
    assert r.exit_code == 1, r.output
    assert "requirements/cuda.txt:1" in r.stdout and "with the extra cu13" in r.stdout
    (project / "pyproject.toml").write_text(
        '[project]\nname = "p"\nversion = "1"\ndependencies = ["flashinfer-python==0.7.0.post1"]\n'
    )
    r = invoke(*args)
    assert r.exit_code == 0, r.output


def test_requirements_includes_are_followed(project: Path) -> None:
    """`-r ../common/requirements-base.txt` in the one file given: its pins are the project's
    (read for --from, moved by apply); a link is not followed, a loop ends."""
    (project / "app").mkdir()
    (project / "common").mkdir()
    (project / "app" / "requirements.txt").write_text(
        "-r ../common/requirements-base.txt\n--constraint=../common/requirements-base.txt\n"
    )
    base = project / "common" / "requirements-base.txt"
    base.write_text("-r ../app/requirements.txt\nflashinfer-python==0.6.12\n")  # (a loop)
    r = invoke("plan", "app/requirements.txt")
    assert r.exit_code == 0 and "common/requirements-base.txt:2" in r.stdout, r.output
    r = invoke("apply", "--to", "0.6.14", "app/requirements.txt")
    assert r.exit_code == 0, r.output
    assert base.read_text() == "-r ../app/requirements.txt\nflashinfer-python==0.6.14\n"


def test_requirements_named_with_words_around_are_dependency_files(project: Path) -> None:
    """`dev-requirements-gpu.txt` is a requirements file (FI006 and the version detection read
    it, from the one list of dependency-file patterns)."""
    pinned = project / "dev-requirements-gpu.txt"
    pinned.write_text("flashinfer-python==0.6.12\n")
    assert "FlashInfer now: 0.6.12" in invoke("plan", "--to", "0.6.13", ".").stdout
    r = invoke("apply", "--to", "0.6.13", ".")
    assert r.exit_code == 0, r.output
    assert pinned.read_text() == "flashinfer-python==0.6.13\n"


@pytest.mark.parametrize("given", [".", "requirements.txt"])
def test_a_file_a_requirements_file_includes_is_read_whatever_its_name(
    project: Path, given: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`-r base.txt` and `-c pins.txt` (recursively, relative to the including file): a pin
    there is the project's as much, and was left behind while `check` passed. An include
    outside the folder checked is not the run's to change; a loop of includes ends."""
    monkeypatch.setenv("MIGRATE_FI_NO_CACHE", "1")
    (project / "requirements.txt").write_text("-r base.txt\ntorch\n")
    (project / "base.txt").write_text("-c deps/pins.txt\n-r requirements.txt\n")
    (project / "deps").mkdir()
    (project / "deps" / "pins.txt").write_text("flashinfer-python==0.6.10\n-r ../../outside.txt\n")
    (project.parent / "outside.txt").write_text("flashinfer-python==0.6.10\n")
    r = invoke("check", "--to", "0.6.11", given)
    assert r.exit_code == 1, r.output
    assert "deps/pins.txt:1:20: FI006 flashinfer-python pin ==0.6.10" in r.stdout
    invoke("apply", "--to", "0.6.11", given)
    assert (project / "deps" / "pins.txt").read_text().startswith("flashinfer-python==0.6.11\n")
    if given == ".":
        assert (project.parent / "outside.txt").read_text() == "flashinfer-python==0.6.10\n"
