"""FlashInfer's public API as data: extracted from each release's sources, bundled, and diffed.

- `extract`: read a wheel or a source folder with `ast` (never importing it).
- `store`: the bundled per-release records in `migrate_fi/data/api/` (loaded lazily).
- `index`: which paths a range changes, for the rules' quick tests.
- `differ`: what changed between two releases, classified.
- `notes`, `value_changes`: the release notes and value maps kept as data (`migrate_fi/data/`).
- `releases`: which releases exist and what each requires; `update`: adding a release.

May import: `migrate_fi.base`, `migrate_fi.analysis`.
"""
