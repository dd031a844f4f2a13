"""The migrations, one module each. Installed as `migrate_fi.rules`; see `migrate_fi.registry`."""
