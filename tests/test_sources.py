"""Reading and writing files without damaging them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from migrate_fi.base.results import FileResult, RunResult, Status
from migrate_fi.editing.sources import (
    PreparedWrite,
    SourceError,
    decode_source,
    lines_at,
    write_atomically,
    write_changes,
)


def _line_of(pieces: list[str] | list[bytes], at: int) -> int:
    """The number of the line that holds the character at ``at``, ``pieces`` being the lines
    with their endings (counted from them, the other way than `lines_at` does)."""
    end = 0
    for number, piece in enumerate(pieces, 1):
        end += len(piece)
        if at < end:
            return number
    raise AssertionError(at)


def test_the_lines_of_offsets_are_the_parsers() -> None:
    """`lines_at` gives the lines Python's parser numbers (a line ends at CR LF, CR or LF) of
    the characters at some offsets, in text and in its bytes, whether or not it holds a CR."""
    import random

    rng = random.Random(7)
    for _ in range(5_000):
        text = "".join(rng.choice(["a", "\n", "\r\n", "\r", "é", " "]) for _ in range(30))
        starts = sorted(rng.sample(range(len(text)), rng.randint(0, 5)))
        lines = text.splitlines(keepends=True)  # (these characters only: the parser's lines)
        assert lines_at(text, starts) == {_line_of(lines, at) for at in starts}, (text, starts)
        data = text.encode()
        offsets = [len(text[:at].encode()) for at in starts]
        expected = {_line_of(data.splitlines(keepends=True), at) for at in offsets}
        assert lines_at(data, offsets) == expected, (text, starts)


def test_refuses_a_file_changed_since_it_was_read(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_bytes(b"x = 1\n")
    with pytest.raises(SourceError, match="changed on disk"):
        write_atomically(str(f), b"x = 2\n", expected_old=b"x = 0\n")
    assert f.read_bytes() == b"x = 1\n"
    assert os.listdir(tmp_path) == ["m.py"]  # no temporary file left behind


def test_writes_through_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real.py"
    real.write_bytes(b"a\n")
    link = tmp_path / "link.py"
    link.symlink_to(real)
    write_atomically(str(link), b"b\n", expected_old=b"a\n")
    assert link.is_symlink()
    assert real.read_bytes() == b"b\n"


def test_unwritable_folder_leaves_the_file(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root can write into a read-only folder")
    f = tmp_path / "m.py"
    f.write_bytes(b"x = 1\n")
    tmp_path.chmod(0o555)
    try:
        with pytest.raises(SourceError, match="temporary file"):
            write_atomically(str(f), b"x = 2\n", expected_old=b"x = 1\n")
    finally:
        tmp_path.chmod(0o755)
    assert f.read_bytes() == b"x = 1\n"


@pytest.mark.parametrize(
    ("data", "encoding"),
    [
        (b"x = 1\n", "utf-8"),
        (b"\xef\xbb\xbfx = 1\n", "utf-8-sig"),
        (b"# coding: latin-1\nx = '\xe9'\n", "iso-8859-1"),
        (b"x = 1\r\ny = 2\r\n", "utf-8"),
    ],
)
def test_decoding_round_trips(data: bytes, encoding: str) -> None:
    source = decode_source(data)
    assert source.encoding == encoding
    assert source.encode(source.text) == data


def test_undecodable_and_unknown_encodings() -> None:
    with pytest.raises(SourceError, match="not valid utf-8"):
        decode_source(b"x = '\xff'\n")
    with pytest.raises(SourceError, match="encoding"):
        decode_source(b"# coding: klingon\nx = 1\n")


def test_a_signal_during_a_write_waits_until_the_file_is_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM arriving while the temporary file is written is delivered after the replace:
    the file is new, no temporary file is left, and the interruption still happens."""
    import signal

    class Stop(Exception):
        pass

    def stop(signum: int, frame: object) -> None:
        raise Stop

    f = tmp_path / "m.py"
    f.write_bytes(b"x = 1\n")
    real_fsync = os.fsync

    def fsync_then_signal(fd: int) -> None:
        real_fsync(fd)
        os.kill(os.getpid(), signal.SIGTERM)  # mid-write: before chmod and replace

    previous = signal.signal(signal.SIGTERM, stop)
    monkeypatch.setattr(os, "fsync", fsync_then_signal)
    try:
        with pytest.raises(Stop):
            write_atomically(str(f), b"x = 2\n", expected_old=b"x = 1\n")
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert f.read_bytes() == b"x = 2\n"
    assert os.listdir(tmp_path) == ["m.py"]


def _changes(root: Path, count: int) -> RunResult:
    """``count`` files m000.py... holding ``x = 1``, each to become ``x = 2``."""
    files = []
    for i in range(count):
        f = root / f"m{i:03}.py"
        f.write_bytes(b"x = 1\n")
        files.append(FileResult(str(f), Status.CHANGED, old_bytes=b"x = 1\n", new_bytes=b"x = 2\n"))
    return RunResult(files=files)


def test_many_files_are_written_in_order_and_each_failure_is_its_own(tmp_path: Path) -> None:
    """More files than one window (`sources._WINDOW`) of threads: every writable file is
    written, listed in the order given; a read-only file and one edited after its new content
    was made ready are refused, each with its reason; no temporary file is left."""
    result = _changes(tmp_path, 75)
    (tmp_path / "m010.py").chmod(0o444)
    edited = tmp_path / "m040.py"
    real_commit = PreparedWrite.commit

    def commit(self: PreparedWrite) -> None:
        if self.path == str(edited):
            edited.write_bytes(b"x = 1  # edited\n")
        real_commit(self)

    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(PreparedWrite, "commit", commit)
            write_changes(result)
    finally:
        (tmp_path / "m010.py").chmod(0o644)
    refused = {os.path.basename(e.path): e.reason for e in result.write_errors}
    assert refused == {
        "m010.py": "file is read-only; not rewritten (make it writable to migrate it)",
        "m040.py": "file changed on disk while it was being migrated; not rewritten",
    }
    assert result.written == [f.path for f in result.files if os.path.basename(f.path)
                              not in refused]  # fmt: skip
    for f in result.files:
        expected = {"m010.py": b"x = 1\n", "m040.py": b"x = 1  # edited\n"}
        assert Path(f.path).read_bytes() == expected.get(os.path.basename(f.path), b"x = 2\n")
    assert sorted(os.listdir(tmp_path)) == [f"m{i:03}.py" for i in range(75)]


def test_an_interruption_between_files_leaves_the_rest_old_and_no_debris(
    tmp_path: Path,
) -> None:
    """Ctrl-C after the 40th file of 75 (in the second window): 40 files are new and listed,
    the others are old, and the temporary files made ready for them are removed."""
    result = _changes(tmp_path, 75)
    real_commit = PreparedWrite.commit
    done: list[str] = []

    def commit(self: PreparedWrite) -> None:
        real_commit(self)
        done.append(self.path)
        if len(done) == 40:
            raise KeyboardInterrupt

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(PreparedWrite, "commit", commit)
        with pytest.raises(KeyboardInterrupt):
            write_changes(result)
    assert result.written == done[:39]  # (the 40th was written, then interrupted: not listed)
    contents = [Path(f.path).read_bytes() for f in result.files]
    assert contents == [b"x = 2\n"] * 40 + [b"x = 1\n"] * 35
    assert sorted(os.listdir(tmp_path)) == [f"m{i:03}.py" for i in range(75)]


@pytest.mark.parametrize("size", [0, 1, 65_535, 65_536, 300_001])
def test_read_bytes_reads_the_whole_file(tmp_path: Path, size: int) -> None:
    """The same bytes as `open(...).read()`, empty and larger than one read included."""
    from migrate_fi.base.depends import read_bytes

    f = tmp_path / "m.py"
    data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    f.write_bytes(data)
    assert read_bytes(str(f)) == data
    with pytest.raises(OSError):
        read_bytes(str(tmp_path / "missing.py"))
    with pytest.raises(OSError):
        read_bytes(str(tmp_path))  # a folder


def test_read_bytes_reads_on_after_a_short_read_or_past_the_size_it_was_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read that gives fewer bytes than asked (some file systems cut reads short) is not
    the end of the file; nor is the size `fstat` gave, when the file holds more (it grew, or it
    is a /proc file, whose size says 0)."""
    from migrate_fi.base import depends

    f = tmp_path / "m.py"
    data = b"".join(b"line %d\n" % i for i in range(2000))
    f.write_bytes(data)
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: real_read(fd, min(n, 100)))
    assert depends.read_bytes(str(f)) == data
    monkeypatch.undo()
    real_fstat = os.fstat

    class Smaller:
        def __init__(self, fd: int) -> None:
            self.st_size = real_fstat(fd).st_size // 2

    monkeypatch.setattr(os, "fstat", Smaller)
    assert depends.read_bytes(str(f)) == data


def test_a_temporary_file_is_new_private_and_never_through_a_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from migrate_fi.base import files

    made = [files.temporary_beside(str(tmp_path), ".m.py.", ".tmp") for _ in range(3)]
    for fd, path in made:
        os.close(fd)
        name = os.path.basename(path)
        assert name.startswith(".m.py.") and name.endswith(".tmp")
        assert os.stat(path).st_mode & 0o777 == 0o600
    assert len({path for _, path in made}) == 3
    # a name that is taken (a file, or a link to one) is never opened: another is drawn
    (tmp_path / "target").write_bytes(b"kept")
    taken = iter([b"\x00" * 6, b"\x00" * 6, b"\x01" * 6])
    monkeypatch.setattr(files.os, "urandom", lambda n: next(taken))
    os.symlink(tmp_path / "target", tmp_path / ".x000000000000")
    fd, path = files.temporary_beside(str(tmp_path), ".x")
    os.close(fd)
    assert path == str(tmp_path / ".x010101010101")
    assert (tmp_path / "target").read_bytes() == b"kept"
