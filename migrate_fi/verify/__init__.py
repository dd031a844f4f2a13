"""Proving a migration on a GPU: running the migrated tests, and the baseline, against the
installed FlashInfer (`runner`) and reading their JUnit results (`junit`).

May import: `migrate_fi.base`, `migrate_fi.analysis`, `migrate_fi.editing`, `migrate_fi.api`,
`migrate_fi.project`.
"""
