"""`migrate-fi usage`: the FlashInfer APIs a project uses, where, and what changed in each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from migrate_fi.cli import cli

PROJECTS = Path(__file__).parent / "fixtures" / "projects"


def _usage(*args: str) -> str:
    r = CliRunner().invoke(cli, ["usage", *args], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.stdout


@pytest.mark.parametrize(("fmt", "suffix"), [("text", "txt"), ("json", "json")])
def test_demo_inventory_snapshot(monkeypatch: pytest.MonkeyPatch, fmt: str, suffix: str) -> None:
    monkeypatch.chdir(PROJECTS)
    out = _usage("--output-format", fmt, "demo")
    expected = (PROJECTS / f"demo.usage.{suffix}").read_text()
    assert out == expected, f"regenerate demo.usage.{suffix} if this change is intended"
    assert _usage("--output-format", fmt, "demo") == out  # byte-stable


def test_changes_come_from_the_data_and_the_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(PROJECTS)
    doc = json.loads(_usage("--output-format", "json", "demo"))
    by_api = {a["api"]: a for a in doc["apis"]}
    kinds = {k["kind"] for k in by_api["flashinfer.fp4_quantize"]["changes"]}
    assert {"positional", "default", "FI001", "FI003"} <= kinds
    # group='s WORLD fallback shows in no signature: the rule says it
    workspace = by_api["flashinfer.comm.create_allreduce_fusion_workspace"]
    assert [k["kind"] for k in workspace["changes"]] == ["FI004"]
    # a new optional parameter touches no existing call: not a change
    assert all(k["kind"] != "param-added" for a in doc["apis"] for k in a["changes"])
    unchanged = [a["api"] for a in doc["apis"] if not a["changes"]]
    # (the test's `_run_wrapper(wrapper, ...)` is given wrappers: its `wrapper.run` is one)
    assert unchanged == [
        "flashinfer.BatchDecodeWithPagedKVCacheWrapper",
        "flashinfer.CuteDslMoEWrapper().run",
    ]


def test_lookalikes_modules_and_unreadable_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(
        "import flashinfer\nfrom flashinfer import comm\nfrom mylib import fp4_quantize\n\n"
        "fp4_quantize(1)  # not flashinfer's\nflashinfer.fp4_quantize(x, s)\n"
    )
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_b.py").write_text("import flashinfer\nflashinfer.fp4_quantize(x)\n")
    (tmp_path / "broken.py").write_text("import flashinfer\ndef (:\n")
    doc = json.loads(
        _usage("--from", "0.6.8.post1", "--to", "0.6.11", "--output-format", "json", ".")
    )
    assert [a["api"] for a in doc["apis"]] == ["flashinfer.fp4_quantize"]
    (fp4,) = doc["apis"]
    assert (fp4["sites"], fp4["files"], fp4["in_tests"]) == (2, 2, 1)
    assert doc["not_read"] == ["broken.py: cannot parse (SyntaxError)"]


def test_methods_of_returned_values_are_not_apis_and_a_change_is_said_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`flashinfer.bmm_fp8(...).view(...)` calls the returned tensor's method, not FlashInfer's;
    a wrapper's own method is FlashInfer's. An enum exported under several paths changes once."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(
        "import flashinfer\nfrom flashinfer import ActivationType\n\n"
        "out = flashinfer.bmm_fp8(a, b, sa, sb, dtype).view(-1)\n"
        "w = flashinfer.BatchDecodeWithPagedKVCacheWrapper(ws, 'NHD')\n"
        "w.plan(indptr, indices, last, 8, 8, 128, 16)\n"
        "w.run(q, kv).view(-1)\n"
        "act = ActivationType.Swiglu\n"
    )
    doc = json.loads(_usage("--from", "0.6.14", "--to", "0.7.4", "--output-format", "json", "."))
    apis = {a["api"]: a for a in doc["apis"]}
    assert "flashinfer.bmm_fp8" in apis
    assert "flashinfer.BatchDecodeWithPagedKVCacheWrapper().plan" in apis
    assert not [a for a in apis if a.endswith((".view", "().view"))], sorted(apis)
    (enum,) = [a for a in apis.values() if a["api"].endswith("ActivationType")]
    said = [(k["kind"], k["detail"]) for k in enum["changes"]]
    assert said and len(said) == len(set(said))


def test_calls_through_the_projects_reexports_are_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module that binds a FlashInfer name (`from flashinfer import fp4_quantize as quantize`)
    gives it to the modules that import it, which may never name FlashInfer themselves: their
    calls are uses of what it reaches, as `check` reads them; a look-alike of another package
    under the same name is not."""
    monkeypatch.chdir(tmp_path)
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "kernels.py").write_text("from flashinfer import fp4_quantize as quantize\n")
    (pkg / "layer.py").write_text(
        "from pkg.kernels import quantize\n\n\ndef forward(x, s):\n    return quantize(x, s)\n"
    )
    (pkg / "other.py").write_text(
        "from mylib.kernels import quantize\n\n\ndef forward(x, s):\n    return quantize(x, s)\n"
    )
    doc = json.loads(_usage("--from", "0.6.10", "--to", "0.6.11", "--output-format", "json", "."))
    (fp4,) = doc["apis"]
    assert fp4["api"] == "flashinfer.fp4_quantize"
    assert [(w["path"], w["line"], w["use"]) for w in fp4["where"]] == [
        ("pkg/kernels.py", 1, "import"),
        ("pkg/layer.py", 5, "call"),
    ]
    # (other.py is not read: it names `quantize`, but imports it from another `kernels`)
    assert doc["files"]["parsed"] == 2


def test_release_notes_of_the_apis_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every note of the range on an API the project uses is listed, also the kinds `check`
    leaves out: a default that keeps what the call does, a deprecated argument, numerics."""
    monkeypatch.chdir(PROJECTS)
    doc = json.loads(_usage("--output-format", "json", "demo"))
    by_api = {a["api"]: a for a in doc["apis"]}
    run = by_api["flashinfer.BatchDecodeWithPagedKVCacheWrapper().run"]["notes"]
    assert [(n["release"], n["table"], n["parameter"]) for n in run] == [
        ("0.6.13", "same", "q_len_per_req"),
        ("0.6.13", "deprecated", "q_len_per_req"),
    ]
    assert all(n["source"].startswith("flashinfer-python 0.6.13 wheel") for n in run)
    fp4 = by_api["flashinfer.fp4_quantize"]["notes"]
    assert ("0.6.11", "behaviour", "input-format") in {
        (n["release"], n["table"], n.get("kind")) for n in fp4
    }
    # an API with a note and no signature change is among the changed ones
    text = _usage("demo")
    changed = text.split("Unchanged:")[0]
    assert "  flashinfer.BatchDecodeWithPagedKVCacheWrapper: 2 sites" in changed
    assert "0.7.1 note, error: backend='prims-ts'" in changed
    # a note of some GPUs says which, in the text and the JSON
    assert "0.7.4 note, error (below SM100): the 'cuda' and 'cute-dsl' backends" in text
    assert {"release": "0.7.4", "gpus": list(range(30, 100))}.items() <= next(
        n for n in fp4 if n["release"] == "0.7.4" and n["table"] == "behaviour"
    ).items()


def test_a_file_the_new_reexports_cannot_change_is_read_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file that may import a re-export (it names `q` and star-imports the module that binds
    it) is read again with it only where a name it followed now leads elsewhere: here it uses
    another name of that module, and its uses stay what they were."""
    import migrate_fi.outputs.usage as usage

    monkeypatch.chdir(tmp_path)
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "k.py").write_text(
        "import flashinfer\nfrom flashinfer import fp4_quantize as q\n\n\ndef helper():\n"
        "    return flashinfer.fp4_quantize\n"
    )
    (pkg / "user.py").write_text("from pkg.k import q\n\n\ndef f(x, s):\n    return q(x, s)\n")
    (pkg / "other.py").write_text(
        "# not flashinfer's q\nfrom pkg.k import *\n\n\ndef g(q):\n    return helper()(q, q)\n"
    )
    made: list[str] = []
    real = usage.NameResolver

    def counted(tree: object, module: str | None, *args: object) -> object:
        made.append(str(module))
        return real(tree, module, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(usage, "NameResolver", counted)
    doc = json.loads(_usage("--from", "0.6.10", "--to", "0.6.11", "--output-format", "json", "."))
    (fp4,) = doc["apis"]
    assert [(w["path"], w["use"]) for w in fp4["where"]] == [
        ("pkg/k.py", "import"),
        ("pkg/user.py", "call"),
    ]
    assert made.count("pkg.other") == 1 and made.count("pkg.user") == 1
