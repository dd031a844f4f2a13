"""Notebooks: their code cells are checked and fixed as one module, sites are placed in their
cells, and the JSON is written back byte for byte outside the edited cells."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from migrate_fi.cli import cli
from migrate_fi.editing.notebooks import Notebook, NotebookError

RANGE = ("--from", "0.6.10", "--to", "0.6.11")
OLD = "y = fp4_quantize(x, gs[:1], 16, False, True, False, True)\n"
NEW = "y = fp4_quantize(x, gs[:1], 16, False, True, False, enable_pdl=True)\n"


def code(*lines: str, outputs: list[Any] | None = None) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "execution_count": 1,
        "metadata": {},
        "outputs": outputs or [],
        "source": list(lines),
    }


def notebook(*cells: dict[str, Any], language: str = "python") -> dict[str, Any]:
    return {
        "cells": list(cells),
        "metadata": {"kernelspec": {"language": language, "name": "k", "display_name": "K"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def write(path: Path, doc: dict[str, Any], **layout: Any) -> bytes:
    options = {"indent": 1, "sort_keys": True, "ensure_ascii": False, **layout}
    data = (json.dumps(doc, **options) + "\n").encode("utf-8")
    path.write_bytes(data)
    return data


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


DOC = notebook(
    {"cell_type": "markdown", "metadata": {}, "source": [f"# Calls such as {OLD}"]},
    code(
        "%matplotlib inline\n",
        "from flashinfer import fp4_quantize",
        outputs=[{"output_type": "stream", "name": "stdout", "text": ["caf\u00e9 " + OLD]}],
    ),
    code("!pip list\n", OLD, "print(y)"),
    code("%%bash\n", f"echo '{OLD}'"),
)


@pytest.mark.parametrize(
    "layout",
    [{}, {"indent": 2, "sort_keys": False}, {"ensure_ascii": True}, {"indent": 4}],
    ids=["nbformat", "indent-2-unsorted", "ascii", "indent-4"],
)
def test_a_call_in_a_cell_is_found_there_and_fixed_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: dict[str, Any]
) -> None:
    before = write(tmp_path / "demo.ipynb", DOC, **layout)
    monkeypatch.chdir(tmp_path)
    checked = invoke("check", *RANGE, ".")
    assert checked.exit_code == 1
    assert checked.stdout.startswith("demo.ipynb:cell 3:2:5: FI001 fp4_quantize with 7")
    (site,) = json.loads(invoke("check", "--output-format", "json", *RANGE, ".").stdout)[
        "diagnostics"
    ]
    assert (site["cell"], site["cell_line"]) == (3, 2)
    # `line` is the notebook file's line that holds the call: where annotations point
    file_line = before.decode().splitlines()[site["line"] - 1]
    assert json.dumps(OLD, ensure_ascii=layout.get("ensure_ascii", False))[:-1] in file_line
    github = invoke("check", "--output-format", "github", *RANGE, ".").stdout
    assert f"line={site['line']}," in github and "::cell 3, line 2: fp4_quantize" in github
    assert invoke("apply", *RANGE, ".").exit_code == 0
    after = (tmp_path / "demo.ipynb").read_bytes()
    expected = before.replace(
        json.dumps(OLD, ensure_ascii=layout.get("ensure_ascii", False)).encode(),
        json.dumps(NEW).encode(),
    )
    # only the code cell's line changed: the markdown, the output and the bash cell kept it
    assert after == expected
    assert after.count(b"False, True)") == 3  # markdown, output, %%bash: untouched
    assert invoke("apply", *RANGE, ".").exit_code == 0
    assert (tmp_path / "demo.ipynb").read_bytes() == after  # idempotent


def test_a_layout_that_cannot_be_written_back_is_checked_not_rewritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = json.dumps(DOC, indent=3).replace('"cells"', '"cells" ').encode()
    (tmp_path / "odd.ipynb").write_bytes(data)
    monkeypatch.chdir(tmp_path)
    checked = invoke("check", *RANGE, ".")
    assert checked.exit_code == 1  # still checked, and said as a site for a person
    assert "not rewritten here: the notebook's JSON layout cannot be written back" in (
        checked.stdout
    )
    assert "fixable" not in checked.stderr
    applied = invoke("apply", *RANGE, ".")
    assert applied.exit_code == 1  # check and apply agree: a site left for a person
    assert (tmp_path / "odd.ipynb").read_bytes() == data


def test_a_cell_that_is_not_python_is_an_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(
        tmp_path / "bad.ipynb",
        notebook(code("from flashinfer import fp4_quantize\n"), code("def (:")),
    )
    monkeypatch.chdir(tmp_path)
    r = invoke("check", *RANGE, ".")
    assert r.exit_code == 2
    assert "bad.ipynb: error: cell 2 is not valid Python (line 1: invalid syntax)" in r.stderr


def test_a_notebook_in_another_language_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "r.ipynb", notebook(code("library(flashinfer)\n", OLD), language="R"))
    monkeypatch.chdir(tmp_path)
    r = invoke("check", *RANGE, ".")
    assert r.exit_code == 2 and "a notebook in R, not Python" in r.stderr


def test_an_import_a_fix_adds_goes_into_the_first_code_cell() -> None:
    doc = notebook(code("import torch\n", "from flashinfer import x\n"), code("y = 1\n"))
    nb = Notebook.parse((json.dumps(doc, indent=1, sort_keys=True) + "\n").encode())
    module = nb.module.replace("import torch\n", "import torch\nimport flashinfer\n")
    out = json.loads(nb.write(module))
    assert out["cells"][0]["source"] == [
        "import torch\n",
        "import flashinfer\n",
        "from flashinfer import x\n",
    ]
    assert out["cells"][1]["source"] == ["y = 1\n"]


def test_not_a_notebook() -> None:
    with pytest.raises(NotebookError, match="not a readable notebook"):
        Notebook.parse(b"{")
    with pytest.raises(NotebookError, match="no list of cells"):
        Notebook.parse(b"{}")


def test_an_import_added_above_the_first_cell_joins_it() -> None:
    doc = notebook(code("y = 1\n"), code("z = 2"))
    nb = Notebook.parse((json.dumps(doc, indent=1, sort_keys=True) + "\n").encode())
    out = json.loads(nb.write("import flashinfer\n" + nb.module))
    assert out["cells"][0]["source"] == ["import flashinfer\n", "y = 1\n"]
    assert out["cells"][1]["source"] == ["z = 2"]  # its missing last newline kept


def test_timed_lines_and_cells_are_read_and_fixed_with_their_magic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = notebook(
        code("from flashinfer import fp4_quantize\n"),
        code("%time " + OLD.rstrip("\n")),
        code("%%timeit -n 3\n", OLD),
        code("%timeit -n 10 -r 2 " + OLD.rstrip("\n")),
    )
    write(tmp_path / "bench.ipynb", doc)
    monkeypatch.chdir(tmp_path)
    checked = invoke("check", *RANGE, ".")
    assert [line.split(": FI")[0] for line in checked.stdout.splitlines()] == [
        "bench.ipynb:cell 2:1:11",
        "bench.ipynb:cell 3:2:5",
        "bench.ipynb:cell 4:1:24",
    ]
    assert invoke("apply", *RANGE, ".").exit_code == 0
    cells = json.loads((tmp_path / "bench.ipynb").read_text())["cells"]
    assert cells[1]["source"] == ["%time " + NEW.rstrip("\n")]
    assert cells[2]["source"] == ["%%timeit -n 3\n", NEW]
    assert cells[3]["source"] == ["%timeit -n 10 -r 2 " + NEW.rstrip("\n")]
