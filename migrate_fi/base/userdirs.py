"""The per-user folders migrate-fi keeps its data and cache in, as each platform names them."""

from __future__ import annotations

import os
import sys

__all__ = ["user_folder"]


def user_folder(kind: str, env: str, *parts: str) -> str:
    """``$env`` when set, else the platform's per-user ``kind`` folder ("data" or "cache") with
    ``migrate-fi/<parts>`` inside: ``$XDG_DATA_HOME``/``$XDG_CACHE_HOME`` (``~/.local/share``,
    ``~/.cache``) on Linux, ``~/Library/Application Support`` or ``~/Library/Caches`` on macOS,
    ``%LOCALAPPDATA%`` on Windows."""
    explicit = os.environ.get(env)
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    home = os.path.expanduser("~")
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.join(home, "AppData", "Local")
        return os.path.join(base, "migrate-fi", *(["cache"] if kind == "cache" else []), *parts)
    if sys.platform == "darwin":
        folder = "Caches" if kind == "cache" else "Application Support"
        return os.path.join(home, "Library", folder, "migrate-fi", *parts)
    xdg, default = (
        ("XDG_CACHE_HOME", ".cache") if kind == "cache" else ("XDG_DATA_HOME", ".local/share")
    )
    base = os.environ.get(xdg) or os.path.join(home, *default.split("/"))
    return os.path.join(base, "migrate-fi", *parts)
