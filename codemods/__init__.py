"""The rules, one module each: a module's name is its rule's id (its fixture folder, its
`--select` value, its docs anchor). A module whose name starts with ``_`` is code several rules
share. Installed as `migrate_fi.codemods`; `migrate_fi.run.registry` finds every rule here.

Rules import their shared modules relatively (``from ._api import api_calls``).
May import: `migrate_fi.base`, `migrate_fi.analysis`, `migrate_fi.editing`, `migrate_fi.api`,
`migrate_fi.project`, `migrate_fi.framework`; never `migrate_fi.run`, `migrate_fi.verify`,
`migrate_fi.outputs` or the command line.
"""
