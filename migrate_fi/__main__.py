"""The `migrate-fi` command (`python -m migrate_fi`, and the installed script): a `check` that
nothing changed since its last run is answered from its record (`migrate_fi.run.warm`), before
click and the rules are even imported; anything else is the command line (`migrate_fi.cli`)."""

from __future__ import annotations

import os
import sys


def _drop_current_folder() -> None:
    """`python -m` puts the current folder first on sys.path, so a project's own `json.py`,
    `click.py` or `pathspec.py` would be imported (and run) in place of the library: the tool
    must never run the code it reads. The package itself is already found by now."""
    try:
        here = os.path.realpath(os.getcwd())
    except OSError:  # (the current folder is gone: nothing can be imported from it)
        here = None
    sys.path[:] = [p for p in sys.path if p and os.path.realpath(p) != here] or sys.path[:0]


def main() -> None:
    from migrate_fi.run import warm

    try:
        command = warm.Command.current(sys.argv[1:])
    except OSError:  # (the current folder is gone: the command line says so)
        command = None
    if command is not None and command.eligible():
        try:
            code = warm.replay(command.argv, command)
        except KeyboardInterrupt as exc:  # (said as any interrupted run says it)
            from migrate_fi.cli import _interrupted

            _interrupted(exc)
        if code is not None:
            sys.exit(code)
        warm.begin(command)
    from migrate_fi.cli import main as run

    run()


if __name__ == "__main__":
    _drop_current_folder()
    main()
