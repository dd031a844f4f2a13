"""How far a run is, told on one line of a terminal: counts from the engine (files read of all,
files parsed, sites so far), shown only on a long run, redrawn seldom, erased at the end."""

from __future__ import annotations

from pathlib import Path

import pytest

from migrate_fi.base.versions import parse_version
from migrate_fi.cli import _ProgressLine
from migrate_fi.framework.rule import RunOptions
from migrate_fi.run import engine
from migrate_fi.run.pipeline import Mode
from migrate_fi.run.registry import all_rules

OPTIONS = RunOptions(parse_version("0.6.10"), parse_version("0.6.11"))
CALL = "    return fp4_quantize(x, gs[:1], 16, False, True, False, True)\n"


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_engine_tells_files_read_parsed_and_sites(tmp_path: Path, jobs: int) -> None:
    for i in range(30):
        body = (
            f"from flashinfer import fp4_quantize\n\n\ndef q(x, gs):\n{CALL}"
            if i % 3 == 0
            else "x = 1\n"
        )
        (tmp_path / f"m{i}.py").write_text(body)
    told: list[tuple[int, int, int, int]] = []
    result = engine.run(
        [str(tmp_path)], all_rules(), OPTIONS, Mode.CHECK, jobs=jobs,
        progress=lambda *counts: told.append(counts),
    )  # fmt: skip
    assert told[-1] == (30, 30, result.parsed_count, len(result.diagnostics))
    assert result.parsed_count == 10 and len(result.diagnostics) >= 10
    reads = [t[0] for t in told]
    assert reads == sorted(reads) and all(t[1] == 30 for t in told)


def test_the_line_waits_for_a_long_run_and_is_erased(capsys: pytest.CaptureFixture[str]) -> None:
    quick = _ProgressLine(delay=60)
    quick(10, 20, 1, 2)
    quick.close()
    assert capsys.readouterr().err == ""  # (a short run says nothing)
    slow = _ProgressLine(delay=0, every=60)
    slow(1_200, 2_318, 12, 5)
    slow(1_300, 2_318, 13, 6)  # (too soon after: not redrawn)
    slow.close()
    err = capsys.readouterr().err.replace("\033[K", "")  # (click drops it where not a terminal)
    assert err == "\r1,200 of 2,318 files read, 12 parsed, 5 site(s) so far\r"
