"""Regenerate the documents made from the rules' metadata and docstrings.

    python scripts/update_docs.py

Writes docs/rules.md (`migrate-fi rules --output-format markdown`) and the rules table of
README.md (between its markers). tests/test_docs.py fails when either is stale.
"""

from __future__ import annotations

from pathlib import Path

from migrate_fi.docs import README_BEGIN, README_END, readme_rules_table, rules_markdown

ROOT = Path(__file__).resolve().parent.parent


def readme_with_table(text: str) -> str:
    begin, end = text.index(README_BEGIN), text.index(README_END) + len(README_END)
    return text[:begin] + readme_rules_table() + text[end:]


def main() -> None:
    (ROOT / "docs" / "rules.md").write_text(rules_markdown(), encoding="utf-8")
    readme = ROOT / "README.md"
    readme.write_text(readme_with_table(readme.read_text(encoding="utf-8")), encoding="utf-8")


if __name__ == "__main__":
    main()
