"""What a rule is and what happens to its fixes: the `Rule` class, the `FileContext` a
rule is given, `RunOptions` (`rule`); settling and applying fixes (`fixes`); the lines a fix
changes, for SARIF and JSON fix details (`fixdetails`). The rules themselves live in
`migrate_fi.codemods` (the `codemods/` folder of the source tree).

May import: `migrate_fi.base`, `migrate_fi.analysis`, `migrate_fi.editing`, `migrate_fi.api`.
"""
