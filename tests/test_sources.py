"""Reading and writing files without damaging them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from migrate_fi.sources import SourceError, decode_source, write_atomically


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
