"""Regenerate the documents made from the rules' metadata and docstrings.

    python scripts/update_docs.py

Writes docs/rules.md (`migrate-fi rules --output-format markdown`), the rules table of
README.md (between its markers), and docs/usage.md's sample output of `migrate-fi check` on the
demo project. tests/test_cli.py fails when any of them is stale.
"""

from __future__ import annotations

import os
from pathlib import Path

from migrate_fi.outputs.docs import README_BEGIN, README_END, readme_rules_table, rules_markdown

ROOT = Path(__file__).resolve().parent.parent


def readme_with_table(text: str) -> str:
    begin, end = text.index(README_BEGIN), text.index(README_END) + len(README_END)
    return text[:begin] + readme_rules_table() + text[end:]


SAMPLE = "$ migrate-fi check tests/fixtures/projects/demo\n"


def with_sample(text: str) -> str:
    """The sample output of `check` on the demo, as the command prints it now."""
    from click.testing import CliRunner

    from migrate_fi.cli import cli

    os.chdir(ROOT)
    r = CliRunner().invoke(cli, ["check", "tests/fixtures/projects/demo"])
    head, rest = text.split(SAMPLE, 1)
    tail = rest[rest.index("$ ") :]
    return head + SAMPLE + r.stdout + r.stderr + tail


def main() -> None:
    (ROOT / "docs" / "rules.md").write_text(rules_markdown(), encoding="utf-8")
    readme = ROOT / "README.md"
    readme.write_text(readme_with_table(readme.read_text(encoding="utf-8")), encoding="utf-8")
    usage = ROOT / "docs" / "usage.md"
    usage.write_text(with_sample(usage.read_text(encoding="utf-8")), encoding="utf-8")


if __name__ == "__main__":
    main()
