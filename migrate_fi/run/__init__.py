"""Running the rules over a tree: the registry that finds the rules and selects them for a
release range (`registry`), the engine (`engine`: walk, read, analyse, collect), the per-file
pipeline (`pipeline`), the reading of a tree and its re-export rounds (`reading`, `reexports`),
the worker processes (`workers`), and the two caches: results by file (`cache`) and whole runs
replayed when nothing they read changed (`warm`, `patching`).

May import: everything below it (`base`, `analysis`, `editing`, `api`, `project`, `framework`,
`codemods`).
"""
