"""The migrations, one module each. Installed as `migrate_fi.codemods`; see `migrate_fi.registry`."""
