"""Changing files without damaging them: the edits a fix is made of (`edits`), applying
them with LibCST (`cstedit`) or as text (`textedit`), reading and atomically writing sources with
their encoding, BOM and line endings kept (`sources`), and Jupyter notebooks as modules
(`notebooks`).

May import: `migrate_fi.base`.
"""
