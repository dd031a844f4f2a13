"""FlashInfer's public API as data: extracted from each release's sources, bundled, and diffed.

- `extract`: read a wheel or a source folder with `ast` (never importing it).
- `store`: the bundled per-release records in `migrate_fi/data/api/` (loaded lazily).
- `differ`: what changed between two releases, classified.
"""
