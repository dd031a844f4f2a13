"""Reading a run's files and testing each against the rules' prefilters: the first step of
`migrate_fi.run.engine.run`. Most files of a tree end here, read once and never parsed.

The files are read in parts (`read_part`, a list of `Todo`): in this process on a small tree,
and on a large one by this process and the worker processes at once (`migrate_fi.run.workers`),
each part's outcome (`Read`) coming back to the engine: the files some rule must see, with
their bytes (`SourceFile`); the others by path, with the words of their import statements (the
re-export rounds ask which of them may import a project module); the files that could not be
read; and what the walk memo of the result cache learns (`migrate_fi.run.cache.WalkMemo`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from migrate_fi.analysis.importwords import FileImports, file_imports
from migrate_fi.base import depends
from migrate_fi.base.modules import is_python_path
from migrate_fi.framework.rule import RunOptions
from migrate_fi.run.cache import Signature
from migrate_fi.run.pipeline import RuleTests, Without, must_see, tests_of
from migrate_fi.run.workers import SourceFile

__all__ = ["Read", "Todo", "read_in_worker", "read_part"]


class Todo(NamedTuple):
    """A file to read, with what the walk memo remembers of it."""

    path: str  # absolute
    signature: Signature | None  # its stat, when the memo may keep what is learnt of it
    matched: tuple[str, ...] | None  # the rules it matched, unchanged since (None: to test)


@dataclass
class Read:
    """What reading some files found (`read_part`); `merge` adds another part's."""

    candidates: list[SourceFile] = field(default_factory=list)  # a rule must see them
    skipped: list[str] = field(default_factory=list)  # no rule must: never parsed
    failed: list[tuple[str, str]] = field(default_factory=list)  # (path, why it cannot be read)
    imports: dict[str, FileImports] = field(default_factory=dict)  # (see `read_part`)
    ruled_out: list[tuple[str, Signature]] = field(default_factory=list)  # for the walk memo
    matched: list[tuple[str, Signature, tuple[str, ...]]] = field(default_factory=list)  # (too)
    # the files whose text holds no word of their rules' gate, by those words: a search for
    # a word that contains one of them need not read them (`depends.learn_absent`)
    without: Without = field(default_factory=dict)

    def merge(self, other: Read) -> None:
        self.candidates += other.candidates
        self.skipped += other.skipped
        self.failed += other.failed
        self.imports.update(other.imports)
        self.ruled_out += other.ruled_out
        self.matched += other.matched
        for words, paths in other.without.items():
            self.without.setdefault(words, []).extend(paths)


def read_part(
    todo: Iterable[Todo],
    tests: RuleTests,
    options: RunOptions,
    every_import: bool = False,
    ruled_out_imports: bool = False,
    sign: bool = False,
) -> Read:
    """Read each file of ``todo`` and test it against ``tests``. The words of the import
    statements are kept for the files no rule must see once one that a rule must see was found
    (in this part, or before it: ``ruled_out_imports``): a tree that uses FlashInfer has
    re-exports, whose rounds ask them, and need not read the files again; with
    ``ruled_out_imports`` (the parts read beside the workers), for the files a rule must see
    too (else the rounds work them out in the main process, one by one: 55 ms for the 688 of 16
    copies of SGLang); with ``every_import`` (`--changed-since`), for every file read.

    ``sign``: the walk memo keeps what is learnt of each file, but the engine left its
    signature to the reading (a memo that knows no file rules none out unread): the stat
    its open file gives, when it is settled."""
    out = Read()
    now = time.time_ns()
    for path, signature, matched in todo:
        try:
            data, st = depends.read_with_stat(path)
        except OSError as exc:
            out.failed.append((path, f"cannot read: {exc.strerror}"))
            continue
        if sign and signature is None and depends.settled(st, now):
            signature = (*st,)  # (a plain tuple, as the memo keeps it)
        if matched is None:
            matched = must_see(tests, data, path, options, out.without)
            if matched is None:
                out.skipped.append(path)
                if signature is not None:
                    out.ruled_out.append((path, signature))
            elif signature is not None:
                out.matched.append((path, signature, matched))
        python = is_python_path(path)
        if every_import or (python and (ruled_out_imports or (matched is None and out.candidates))):
            out.imports[path] = file_imports(data, path)
        if matched is not None:
            out.candidates.append(SourceFile(data, path, matched))
    return out


def read_in_worker(
    todo: Sequence[Todo],
    ids: tuple[str, ...],
    options: RunOptions,
    every_import: bool,
    ruled_out_imports: bool,
    sign: bool,
) -> Read:
    """`read_part` in a worker process, with the rules' tests of the run: those the engine kept
    before the worker was forked (`keep_tests`), else worked out there."""
    from migrate_fi.run.registry import all_rules

    by_id = {c.id: c for c in all_rules()}
    tests = tests_of([by_id[i] for i in ids], options)
    return read_part(todo, tests, options, every_import, ruled_out_imports, sign)
