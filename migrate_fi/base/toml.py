"""TOML, read with the standard library's parser (``tomli`` before Python 3.11)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types import ModuleType

__all__ = ["tomllib"]


def tomllib() -> ModuleType:
    """The TOML parser (imported when a TOML file is first read: it costs start-up)."""
    if sys.version_info >= (3, 11):
        import tomllib as found
    else:  # pragma: no cover
        import tomli as found
    return found
