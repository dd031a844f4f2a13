"""What `migrate-fi check` reports of one rule over a folder, run as a user runs it (a test helper:
a fresh process, no result cache, the user's own environment variables of the tool left out)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def messages(root: Path, old: str, new: str, code: str) -> list[str]:
    """The messages of the rule ``code`` for ``root`` between the two releases, in order."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MIGRATE_FI_")}
    done = subprocess.run(
        [sys.executable, "-m", "migrate_fi", "check", "--no-cache", "--from", old, "--to", new,
         "--select", code, "--output-format", "json", str(root)],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    return [d["message"] for d in json.loads(done.stdout)["diagnostics"]]
