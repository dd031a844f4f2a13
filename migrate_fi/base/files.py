"""Reading a file that must be a regular file, never waiting on anything else.

A named pipe where a project keeps a `.gitignore`, a requirements file or a `pyproject.toml`
would make a plain `open` wait for a writer forever; a device would be read without end. What
migrate-fi reads beside the Python files of its walk (configuration, ignore files, pins,
includes, its own records) is read through `read_regular`, which opens without blocking and
refuses anything but a regular file with an `OSError` that says so.
"""

from __future__ import annotations

import errno
import os
import stat

__all__ = ["read_regular", "temporary_beside"]

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def read_regular(path: str) -> bytes:
    """The bytes of the regular file ``path``; `OSError` where it cannot be read or is not a
    regular file (a named pipe, a socket, a device, a folder)."""
    fd = os.open(path, _FLAGS | getattr(os, "O_BINARY", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        chunks = []
        while True:
            chunk = os.read(fd, max(st.st_size + 1, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


# (`tempfile.mkstemp`'s flags: a new file of its own, never through a link)
_NEW = (
    os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
)


def temporary_beside(folder: str, prefix: str, suffix: str = "") -> tuple[int, str]:
    """A new file in ``folder``, its name ``prefix`` + random letters + ``suffix``, readable and
    writable by its owner only: its open descriptor and path, as `tempfile.mkstemp` gives them
    (which costs a run 5 ms of imports: `random`, `shutil`). `OSError` when it cannot be made."""
    for _ in range(100):
        path = os.path.join(folder, f"{prefix}{os.urandom(6).hex()}{suffix}")
        try:
            return os.open(path, _NEW, 0o600), path
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary name", folder)
