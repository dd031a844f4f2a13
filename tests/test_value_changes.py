"""The value-change files (FI010's data): the bundled ones agree with the release data, a file in
the user's data folder adds an entry with no code, and a broken file is one clear error."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from migrate_fi.api import value_changes
from migrate_fi.api.differ import api_for
from migrate_fi.api.store import available_releases
from migrate_fi.base.versions import parse_version
from migrate_fi.cli import cli


@pytest.fixture
def user_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("MIGRATE_FI_DATA_DIR", str(tmp_path / "data"))
    folder = tmp_path / "data" / "values"
    folder.mkdir(parents=True)
    value_changes.forget()
    yield folder
    value_changes.forget()


def _release_before(release: str) -> str:
    older = [v for v in available_releases() if parse_version(v) < parse_version(release)]
    return older[-1]


def test_bundled_value_changes_match_the_release_data() -> None:
    changes = value_changes.load_value_changes()
    assert {c.release for c in changes} >= {"0.6.3", "0.6.15"}
    for change in changes:
        old_api, new_api = api_for(_release_before(change.release)), api_for(change.release)
        for api in change.apis:
            before, after = old_api.callable(api), new_api.callable(api)
            assert before is not None and after is not None, (change.release, api)
            assert change.keyword in before.keyword_names(), api
            assert change.keyword not in after.keyword_names(), api
            assert change.new_keyword in after.keyword_names(), api
        if change.import_module and change.import_name:
            assert new_api.canonical(f"{change.import_module}.{change.import_name}")
        for entry in change.values:
            if entry.old_member:  # the old member has the old value
                owner, _, member = entry.old_member.rpartition(".")
                enum = old_api.defs[old_api.canonical(owner) or ""]["enum"]
                assert enum[member] == entry.old, entry
            if change.import_name:  # and the new value names what is imported
                head, _, member = entry.new.partition(".")
                assert head == change.import_name
                enum = new_api.defs[new_api.canonical(f"flashinfer.{head}") or ""]["enum"]
                assert member.removesuffix(".value") in enum, entry


CALL = """\
from flashinfer.moe_ep import Bf16CutedslMegaMoeConfig


def config(layer):
    return Bf16CutedslMegaMoeConfig(layer.size, layer.top_k, token_back_mode="epi_warps")
"""


def test_an_entry_in_the_user_folder_is_applied(user_values: Path, tmp_path: Path) -> None:
    """What a maintainer writes for a new release: no code."""
    (user_values / "0.7.1.toml").write_text(
        "[[change]]\n"
        'apis = ["flashinfer.moe_ep.Bf16CutedslMegaMoeConfig"]\n'
        'keyword = "token_back_mode"\n'
        'new_keyword = "enable_in_kernel_fc2_reduce"\n'
        'reason = "a made-up entry for this test"\n'
        'values = [{ old = "epi_warps", new = "False" }]\n'
    )
    source = tmp_path / "project" / "moe.py"
    source.parent.mkdir()
    source.write_text(CALL)
    args = ["--from", "0.7.0.post1", "--to", "0.7.1", "--select", "FI010", "--no-cache"]
    r = CliRunner().invoke(cli, ["check", *args, str(source)], catch_exceptions=False)
    assert r.exit_code == 1, r.output
    assert 'token_back_mode="epi_warps" is enable_in_kernel_fc2_reduce=False' in r.stdout
    assert "a made-up entry for this test" in r.stdout
    r = CliRunner().invoke(cli, ["apply", *args[:-1], str(source)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert "        enable_in_kernel_fc2_reduce=False,\n" in source.read_text()  # (88: wrapped)


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        ("0.7.1.toml", "[[change]\n", "not valid TOML"),
        ("latest.toml", "", "the file name must be a FlashInfer release"),
        ("0.7.1.toml", "[[change]]\nkeyword = 'a'\n", "`apis` must list public paths"),
        ("0.7.1.toml", "[[changes]]\n", "unknown table 'changes'"),
        (
            "0.7.1.toml",
            "[[change]]\napis = ['flashinfer.f']\nkeyword = 'a'\nreason = 'r'\n"
            "values = [{ old = 1, new = 'x +' }]\nwhy = 1\n",
            "unknown key 'why'",
        ),
        (
            "0.7.1.toml",
            "[[change]]\napis = ['flashinfer.f']\nkeyword = 'a'\nreason = 'r'\n"
            "values = [{ old = 1, new = 'x +' }]\n",
            "`new` is not a Python expression",
        ),
    ],
)
def test_a_broken_file_is_one_clear_error(
    user_values: Path, tmp_path: Path, name: str, text: str, said: str
) -> None:
    (user_values / name).write_text(text)
    source = tmp_path / "moe.py"
    source.write_text(CALL)
    before = source.read_bytes()
    r = CliRunner().invoke(
        cli,
        ["apply", "--from", "0.7.0.post1", "--to", "0.7.1", str(source)],
        catch_exceptions=False,
    )
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and str(user_values / name) in lines[0] and said in lines[0], lines
    assert "Traceback" not in r.output
    assert source.read_bytes() == before
