"""The vocabulary every other part shares, and nothing else: results (`Diagnostic`,
`FileResult`, `RunResult`), messages in English and Chinese (`messages`), FlashInfer version
numbers, the compiled patterns, what a run depended on besides the files it read (`depends`),
where a file sits (`modules`: module names, displayed paths), the user's data and cache
folders, and TOML.

May import: the standard library and `packaging` only (no other module of migrate-fi).
"""
