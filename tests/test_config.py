"""``[tool.migrate-fi]``: found next to the code, command line over configuration over defaults,
and every mistake in it a one-line error that names the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from migrate_fi.cli import cli

LEGACY = (
    "from flashinfer import fp4_quantize\n"
    "\n"
    "\n"
    "def q(x, gs):\n"
    "    return fp4_quantize(x, gs[:1], 16, False, True, False, True)\n"
)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src" / "vendored").mkdir(parents=True)
    (tmp_path / "src" / "legacy.py").write_text(LEGACY)
    (tmp_path / "src" / "vendored" / "old.py").write_text(LEGACY)
    return tmp_path


def configure(root: Path, table: str) -> None:
    (root / "pyproject.toml").write_text(
        '[project]\nname = "x"\ndependencies = ["flashinfer-python==0.6.10"]\n\n' + table
    )


def test_defaults_without_configuration(project: Path) -> None:
    configure(project, "")
    r = invoke("check", "--to", "0.6.11", "src")
    assert r.exit_code == 1
    assert r.stdout.count("FI001") == 2


def test_configuration_sets_target_selection_and_exclusions(project: Path) -> None:
    configure(
        project,
        '[tool.migrate-fi]\nto = "0.6.10.post1"\nexclude = ["src/vendored/"]\n',
    )
    assert invoke("check", "src").exit_code == 0  # 0.6.10 -> 0.6.10.post1: nothing for fp4
    configure(project, '[tool.migrate-fi]\nto = "0.6.11"\nexclude = ["src/vendored/"]\n')
    r = invoke("check", "src")
    assert r.exit_code == 1 and r.stdout.count("FI001") == 1
    # the exclusions are relative to the configuration's folder, wherever the command runs
    r = invoke("check", str(project / "src"))
    assert r.stdout.count("FI001") == 1


def test_the_command_line_wins(project: Path) -> None:
    configure(project, '[tool.migrate-fi]\nto = "0.6.10.post1"\nselect = ["FI003"]\n')
    assert invoke("check", "src").exit_code == 0
    r = invoke("check", "--to", "0.6.11", "--select", "FI001", "src")
    assert r.exit_code == 1 and "FI001" in r.stdout


def test_output_format_and_keywords_from_the_configuration(project: Path) -> None:
    configure(project, '[tool.migrate-fi]\nto = "0.6.11"\noutput-format = "github"\n')
    assert invoke("check", "src").stdout.startswith("::warning file=src/")
    configure(project, '[tool.migrate-fi]\nto = "0.6.11"\nkeywords = "all"\n')
    assert "input=x, global_scale=gs[:1]" in invoke("diff", "src").stdout


def test_configuration_is_found_from_a_subfolder(project: Path, monkeypatch) -> None:
    configure(project, '[tool.migrate-fi]\nto = "0.6.10.post1"\n')
    monkeypatch.chdir(project / "src")
    assert invoke("check", ".").exit_code == 0


def test_explicit_config_file(project: Path) -> None:
    (project / "other.toml").write_text('[tool.migrate-fi]\nto = "0.6.10.post1"\n')
    configure(project, "")
    assert invoke("check", "--config", "other.toml", "src").exit_code == 0
    r = invoke("check", "--config", "missing.toml", "src")
    assert r.exit_code == 2 and "missing.toml: no such file" in r.stderr


def test_the_one_table_under_the_paths_and_the_tables_not_read(project: Path) -> None:
    """One configuration applies to a run: the nearest upward from the first path, else the one
    table under the paths (a repository whose package lives in a folder, as SGLang's
    `python/`); a table the run does not read is named, never silently left out."""
    configure(project, "")  # (the pin, no table)
    sub = project / "src" / "vendored"
    (sub / "pyproject.toml").write_text(
        '[project]\nname = "v"\n\n[tool.migrate-fi]\nto = "0.6.10"\n'
    )
    # the only table: read (to = 0.6.10 is the pin: nothing to migrate)
    r = invoke("check", ".")
    assert r.exit_code == 0 and "does not read" not in r.stderr
    # two tables under the paths, none upward: neither is read, both are named
    (project / "src" / "pyproject.toml").write_text('[tool.migrate-fi]\nto = "0.6.10"\n')
    r = invoke("check", "--to", "0.6.11", ".")
    note = "src/vendored/pyproject.toml has a [tool.migrate-fi] table this run does not read"
    assert note in r.stderr and "(it reads none: 2 tables under the paths given)" in r.stderr
    assert (
        "pass --config src/vendored/pyproject.toml, or check src/vendored/ on its own" in r.stderr
    )
    (project / "src" / "pyproject.toml").unlink()
    # one upward from the first path: that one, and the other is named
    configure(project, '[tool.migrate-fi]\nto = "0.6.11"\n')
    r = invoke("check", ".")
    assert note + " (it reads pyproject.toml, the nearest one upward" in r.stderr
    assert r.exit_code == 1  # (to = 0.6.11: the root's, not the folder's 0.6.10)
    # the table named on the command line is the one meant; one outside the paths is not named
    assert (
        "does not read" not in invoke("check", "--config", str(sub / "pyproject.toml"), ".").stderr
    )
    assert "does not read" not in invoke("check", "src/legacy.py").stderr
    assert "does not read" not in invoke("check", "src/vendored").stderr


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('[tool.migrate-fi]\ntagret = "0.7.4"\n', "unknown key 'tagret'"),
        ('[tool.migrate-fi]\nselect = "FI001"\n', "select must be a list of strings"),
        ("[tool.migrate-fi]\nunsafe-fixes = 1\n", "unsafe-fixes must be a boolean"),
        ('[tool.migrate-fi]\nkeywords = "some"\n', "keywords must be one of tail, all"),
        ("[tool.migrate-fi.rules.FI999]\nx = 1\n", "unknown rule 'FI999'"),
        ("[tool.migrate-fi.rules.FI001]\nx = 1\n", "unknown option 'x' of FI001"),
        ('[tool.migrate-fi]\nto = "0.7.4"\n[tool.migrate-fi\n', "not valid TOML"),
        # written into the migrated test: `inf` there would be a NameError
        ("[tool.migrate-fi.rules.FI005]\nreplay-tolerance = inf\n", "must be a finite number"),
        ("[tool.migrate-fi.rules.FI005]\nreplay-tolerance = nan\n", "must be a finite number"),
        ("[tool.migrate-fi.rules.FI005]\nreplay-tolerance = -1\n", "must be at least 0"),
        ("[tool.migrate-fi.rules.FI005]\nwarmup-runs = -2\n", "must be at least 0"),
    ],
)
def test_mistakes_are_one_line_errors(project: Path, table: str, message: str) -> None:
    configure(project, table)
    r = invoke("check", "src")
    assert r.exit_code == 2
    (line,) = r.stderr.splitlines()
    assert "pyproject.toml" in line and message in line
    assert "Traceback" not in r.output


def test_unsafe_fixes_from_the_configuration_and_overridden(project: Path) -> None:
    configure(project, '[tool.migrate-fi]\nto = "0.6.11"\nunsafe-fixes = true\n')
    from migrate_fi.cli import _Common, _settle

    common = _Common(
        paths=("src",),
        from_version=None,
        to_version=None,
        select=(),
        ignore=(),
        exclude=(),
        output_format=None,
        jobs=None,
        exit_zero=False,
        keywords=None,
        respect_gitignore=None,
        unsafe_fixes=None,
        config=None,
    )
    assert _settle(common).unsafe_fixes is True
    common.unsafe_fixes = False  # --no-unsafe-fixes
    assert _settle(common).unsafe_fixes is False
