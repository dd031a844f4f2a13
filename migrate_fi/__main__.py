"""`python -m migrate_fi`: the command line, never importing the analysed project's modules."""

from __future__ import annotations

import os
import sys


def _drop_current_folder() -> None:
    """`python -m` puts the current folder first on sys.path, so a project's own `json.py`,
    `click.py` or `pathspec.py` would be imported (and run) in place of the library: the tool
    must never run the code it reads. The package itself is already found by now."""
    here = os.path.realpath(os.getcwd())
    sys.path[:] = [p for p in sys.path if p and os.path.realpath(p) != here] or sys.path[:0]


_drop_current_folder()

from migrate_fi.cli import main  # noqa: E402

if __name__ == "__main__":
    main()
