"""Reading and writing source files without damaging them.

- Decoding follows Python's own rules (BOM, PEP 263 coding cookie); the BOM and the encoding are
  kept on the way back, and line endings are never translated (CRLF stays CRLF).
- Writing goes through a temporary file in the same folder and `os.replace`, with the original
  mode (and owner, where allowed) kept; a read-only file is refused, not overwritten; a file that
  changed on disk since it was read is refused.
"""

from __future__ import annotations

import bisect
import codecs
import contextlib
import io
import os
import signal
import stat
import tokenize
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from itertools import accumulate
from typing import TYPE_CHECKING, NamedTuple

from migrate_fi.base import patterns
from migrate_fi.base.files import temporary_beside
from migrate_fi.base.modules import TEMPORARY_SUFFIX
from migrate_fi.base.results import FileError, FileResult, RunResult

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

__all__ = [
    "DecodedSource",
    "PreparedWrite",
    "SourceError",
    "decode_source",
    "line_starts",
    "lines_at",
    "prepare_write",
    "remove_temporary",
    "signals_deferred",
    "source_lines",
    "write_atomically",
    "write_changes",
    "write_new_file",
]

_LINE = patterns.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_LINE_BYTES = patterns.compile(rb"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def source_lines(text: str) -> list[str]:
    """The lines of ``text`` with their endings, split as Python's parser counts lines: at CR,
    LF and CRLF only (`str.splitlines` also splits at form feeds and Unicode separators)."""
    return _LINE.findall(text)


def line_starts(text: str | bytes) -> list[int]:
    """The offset where each line starts (line 1 at index 0), and the end of the text (where
    an insertion after the last line goes): lines as `source_lines` splits them (bytes as
    their text would be)."""
    lines = source_lines(text) if isinstance(text, str) else _LINE_BYTES.findall(text)
    return [0, *accumulate(map(len, lines))]


def lines_at(text: str | bytes, offsets: Iterable[int]) -> set[int]:
    """The numbers of the lines where ``offsets`` (ascending) lie, lines counted as Python's
    parser counts them (a line ends at CR LF, CR or LF). Where the text holds no CR, the
    newlines between one offset and the next are counted once, not from the start of the text
    for each (SGLang's `server_args.py` quotes "flashinfer" 80 times)."""
    if "\r" in text if isinstance(text, str) else b"\r" in text:
        starts = line_starts(text)
        return {bisect.bisect_right(starts, at) for at in offsets}
    newlines = partial(text.count, "\n") if isinstance(text, str) else partial(text.count, b"\n")
    out = set()
    line, last = 1, 0
    for at in offsets:
        line += newlines(last, at)
        last = at
        out.add(line)
    return out


class SourceError(Exception):
    """A file that cannot be read, decoded or written; the message is one line."""


class DecodedSource(NamedTuple):
    text: str
    encoding: str  # codec name as Python's tokenizer reports it ("utf-8-sig" when there is a BOM)

    def encode(self, text: str) -> bytes:
        try:
            return text.encode(self.encoding)
        except UnicodeEncodeError as exc:
            raise SourceError(f"the new text cannot be encoded as {self.encoding}: {exc}") from None


def decode_source(data: bytes) -> DecodedSource:
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        try:  # usually: no coding declaration and bytes that are not UTF-8
            data.decode("utf-8")
        except UnicodeDecodeError as bad:
            raise SourceError(
                f"not valid utf-8 (byte {bad.start}: {bad.reason}); file left untouched"
            ) from None
        raise SourceError(f"cannot tell the encoding: {exc.msg}") from None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise SourceError(
            f"not valid {encoding} (byte {exc.start}: {exc.reason}); file left untouched"
        ) from None
    except LookupError:
        raise SourceError(f"unknown encoding {encoding!r} in the coding declaration") from None
    if encoding == "utf-8" and data.startswith(codecs.BOM_UTF8):  # pragma: no cover - defensive
        encoding = "utf-8-sig"
    source = DecodedSource(text, encoding)
    if source.encode(text) != data:
        raise SourceError(
            f"decoding as {encoding} does not round-trip exactly; file left untouched"
        )
    return source


def write_atomically(path: str, new: bytes, expected_old: bytes) -> None:
    """Replace ``path``'s content with ``new``, atomically, if it still holds ``expected_old``.

    The temporary file lives in the same folder, so `os.replace` never crosses file systems.
    Symbolic links are written through (the link stays a link).
    """
    # Ctrl-C and SIGTERM wait until the file is whole again, old or new: raised between the
    # temporary file's creation and its rename or removal, they would leave it behind
    with signals_deferred():
        prepare_write(path, new, expected_old).commit()


class PreparedWrite(NamedTuple):
    """A file's new content, written and flushed to disk beside it (`prepare_write`), waiting
    to replace it (`commit`) or to be removed (`discard`)."""

    path: str  # as given
    real: str  # the file it replaces (a link's target)
    temporary: str
    seen: tuple[int, int, int]  # (size, modification time, inode) when its content was checked

    def commit(self) -> None:
        """Put the new content in place: unless the file changed since it was checked."""
        try:
            st = os.stat(self.real)
        except OSError as exc:
            self.discard()
            raise SourceError(f"cannot stat: {exc.strerror}") from None
        if (st.st_size, st.st_mtime_ns, st.st_ino) != self.seen:
            self.discard()
            raise SourceError("file changed on disk while it was being migrated; not rewritten")
        try:
            os.replace(self.temporary, self.real)
        except OSError as exc:
            self.discard()
            raise SourceError(f"cannot write: {exc.strerror}") from None

    def discard(self) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self.temporary)


def prepare_write(path: str, new: bytes, expected_old: bytes) -> PreparedWrite:
    """Check that ``path`` still holds ``expected_old`` and may be written, and write ``new``
    to a temporary file beside it, flushed to disk, with the file's mode (and owner, where
    allowed). Call with signals deferred: the temporary file is the caller's to commit or
    discard."""
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError as exc:
        raise SourceError(f"cannot stat: {exc.strerror}") from None
    if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        raise SourceError("file is read-only; not rewritten (make it writable to migrate it)")
    try:
        with open(real, "rb") as fh:
            current = fh.read()
    except OSError as exc:
        raise SourceError(f"cannot read: {exc.strerror}") from None
    if current != expected_old:
        raise SourceError("file changed on disk while it was being migrated; not rewritten")
    tmp = _written_beside(real, new, st)
    return PreparedWrite(path, real, tmp, (st.st_size, st.st_mtime_ns, st.st_ino))


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Ctrl-C and SIGTERM are held (blocked) inside, and delivered when it ends."""
    if not hasattr(signal, "pthread_sigmask"):  # (Windows: no signal masks)
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _written_beside(real: str, new: bytes, st: os.stat_result) -> str:
    """A temporary file beside ``real`` holding ``new``, on disk, with ``st``'s mode and owner."""
    folder = os.path.dirname(real) or "."
    try:
        fd, tmp = temporary_beside(folder, f".{os.path.basename(real)}.", TEMPORARY_SUFFIX)
    except OSError as exc:
        raise SourceError(f"cannot create a temporary file beside it: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(new)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        if hasattr(os, "chown"):
            # where we may not give the file away, it keeps our ownership
            with contextlib.suppress(OSError):
                os.chown(tmp, st.st_uid, st.st_gid)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise SourceError(f"cannot write: {exc.strerror}") from None
    except BaseException:  # interrupted all the same: the file is old, leave no debris
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return tmp


def write_new_file(path: str, data: bytes) -> None:
    """Write a file the tool produces (a record, a report) whole or not at all: a temporary
    file in the same folder, then an atomic rename over ``path``; the temporary file is removed
    when anything fails."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = temporary_beside(folder, f".{os.path.basename(path)}.", ".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def remove_temporary(paths: list[str]) -> list[str]:
    """Remove the temporary files an interrupted run left (`is_temporary`); those removed."""
    removed = []
    for path in paths:
        with contextlib.suppress(OSError):
            os.unlink(path)
            removed.append(path)
    return removed


_WRITERS = 8  # threads that write and flush the temporary files of an apply of many files
_WINDOW = 32  # files prepared at once (the temporary files that exist at a time)


def write_changes(result: RunResult, last: Callable[[str], bool] | None = None) -> None:
    """`apply`: write every changed file atomically; record what was written or why not.
    ``last``: files to write after all others (pin and version files: a run stopped halfway
    leaves the old pins, so the next run still migrates from the old version).

    Each file's new content is first written and flushed to disk beside it, a window of files
    at a time, by threads when there are several (flushing is mostly waiting for the disk,
    which takes several at once); then the files are replaced one by one, in order. An
    interruption lands between two replacements; the temporary files not used are removed."""
    changed = result.changed
    if last is not None:
        changed = sorted(changed, key=lambda f: last(f.path))  # stable: path order within each
    pool = None
    try:
        for start in range(0, len(changed), _WINDOW):
            window = changed[start : start + _WINDOW]
            ready: list[PreparedWrite | SourceError] = []
            used = 0  # (the temporary files of ``ready`` from here on are not used yet)
            try:
                # (threads started while Ctrl-C and SIGTERM are blocked keep them blocked: a
                # signal waits for this thread, and lands between two files)
                with signals_deferred():
                    if pool is None and len(changed) > 1:
                        from concurrent.futures import ThreadPoolExecutor

                        pool = ThreadPoolExecutor(min(_WRITERS, len(changed)))
                    ready = _prepare_all(window, pool)
                for f, outcome in zip(window, ready, strict=True):
                    with signals_deferred():  # (a file written is a file listed as written)
                        used += 1
                        if isinstance(outcome, PreparedWrite):
                            try:
                                outcome.commit()
                            except SourceError as exc:
                                outcome = exc
                        if isinstance(outcome, SourceError):
                            result.write_errors.append(FileError(f.path, str(outcome)))
                        else:
                            result.written.append(f.path)
            finally:
                for left in ready[used:]:
                    if isinstance(left, PreparedWrite):
                        left.discard()
    finally:
        if pool is not None:
            pool.shutdown(wait=True)


def _prepare_all(
    window: list[FileResult], pool: ThreadPoolExecutor | None
) -> list[PreparedWrite | SourceError]:
    """Each file's prepared write, or why it cannot be written; on an unexpected error, the
    temporary files made are removed before it is raised."""
    out: list[PreparedWrite | SourceError] = []
    try:
        if pool is None:
            for f in window:
                out.append(_prepared(f))
        else:
            from concurrent.futures import wait

            futures = [pool.submit(_prepared, f) for f in window]
            wait(futures)  # (every one done before any is looked at)
            out += (future.result() for future in futures if future.exception() is None)
            for future in futures:
                future.result()  # (raises the first error)
    except BaseException:
        for made in out:
            if isinstance(made, PreparedWrite):
                made.discard()
        raise
    return out


def _prepared(f: FileResult) -> PreparedWrite | SourceError:
    assert f.new_bytes is not None and f.old_bytes is not None
    try:
        return prepare_write(f.path, f.new_bytes, f.old_bytes)
    except SourceError as exc:
        return exc
