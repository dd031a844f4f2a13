"""The project being migrated: its files (`discovery`: the walk, ignore files, includes), its
FlashInfer pins in every format (`pins`), whose requirement each is (`ownership`) and the release
they name (`current`), sub-projects pinned apart (`subprojects`), the configuration (`config`),
version control (`vcs`), and the state of a migration in progress (`record`, `migration`,
`carryover`).

May import: `migrate_fi.base`, `migrate_fi.analysis`, `migrate_fi.editing`, `migrate_fi.api`.
"""
