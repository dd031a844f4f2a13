"""Write the compiled copy of the reviewed data files (release notes, value maps).

    python scripts/compile_data.py

For each of `migrate_fi/data/notes/` and `migrate_fi/data/values/`, writes its
`compiled.jsonl`: each TOML file's name, the SHA-256 of its bytes and what it parses to, as
JSON (`migrate_fi.base.toml`). A run reads a file from it only while the file's bytes are those
it was made from: a stale copy costs time, never a wrong note. tests/test_toml_data.py fails when
one is stale.
"""

from __future__ import annotations

import os
from pathlib import Path

from migrate_fi.base.toml import COMPILED, compiled_text

DATA = Path(__file__).resolve().parent.parent / "migrate_fi" / "data"
FOLDERS = ("notes", "values")


def main() -> None:
    for name in FOLDERS:
        folder = DATA / name
        target = folder / COMPILED
        text = compiled_text(str(folder))
        if target.exists() and target.read_text(encoding="utf-8") == text:
            continue
        temporary = target.with_suffix(".tmp")
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, target)
        print(f"wrote {target.relative_to(DATA.parent.parent)}")


if __name__ == "__main__":
    main()
