from __future__ import annotations

# Fixture files are data, never tests.
collect_ignore_glob = ["fixtures/*"]
