"""Write a fixture case's expected files from what the rule does now, for review.

    python scripts/bless_fixture.py RULE_ID CASE [CASE ...]

Runs the case exactly as tests/test_fixtures.py does and writes <case>.after.py (unless the case
is a noop_ one) and <case>.report.txt (removed when nothing is left for a person). Read the git
diff of what it wrote before committing: a fixture is a claim about correct behaviour.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from test_fixtures import FIXTURES, _run, after_file, before_file  # noqa: E402

from migrate_fi.base.results import Status  # noqa: E402
from migrate_fi.outputs.reporting import format_diagnostic  # noqa: E402


def bless(cid: str, case: str) -> None:
    folder = FIXTURES / cid
    before = before_file(folder, case).read_bytes()
    result = _run(cid, case, before, "apply")
    if result.error is not None:
        raise SystemExit(f"{cid}/{case}: {result.error.reason}")
    if not case.startswith("noop_"):
        output = result.new_bytes if result.status is Status.CHANGED else before
        after_file(folder, case).write_bytes(output or before)
    manual = "".join(format_diagnostic(d) + "\n" for d in result.diagnostics if not d.fixable)
    report = folder / f"{case}.report.txt"
    if manual:
        report.write_text(manual)
    elif report.exists():
        report.unlink()
    print(f"{cid}/{case}: written")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    for name in sys.argv[2:]:
        bless(sys.argv[1], name)
