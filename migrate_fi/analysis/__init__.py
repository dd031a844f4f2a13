"""What one Python module says, read statically with `ast`: its scopes and bindings
(`scopes`), what a name or attribute refers to through aliases, imports and re-exports
(`resolver`), literal values (`values`), every call with its arguments as Python binds them
(`calls`), LibCST node helpers (`nodes`), the imports a file makes and the quick text test that
decides whether a file is parsed at all (`importwords`, `prefilter`), and its suppression comments
(`suppression`).

May import: `migrate_fi.base`.
"""
