"""FlashInfer versions: parsing (PEP 440), the releases migrate-fi knows, and range selection.

A rule declares the release that introduced the change it handles (``introduced_in``).
It runs for ``--from A --to B`` when ``A < introduced_in <= B``.
"""

from __future__ import annotations

from functools import lru_cache

from packaging.version import InvalidVersion, Version

# The published `flashinfer-python` releases whose API data is bundled, oldest first (checked
# against PyPI's index). A run knows more: those `migrate-fi signatures update` added.
KNOWN_RELEASES: tuple[str, ...] = (
    "0.5.0",
    "0.5.1",
    "0.5.2",
    "0.5.3",
    "0.6.0",
    "0.6.1",
    "0.6.2",
    "0.6.3",
    "0.6.4",
    "0.6.5",
    "0.6.6",
    "0.6.7",
    "0.6.7.post1",
    "0.6.7.post2",
    "0.6.7.post3",
    "0.6.8",
    "0.6.8.post1",
    "0.6.9",
    "0.6.10",
    "0.6.10.post1",
    "0.6.11",
    "0.6.11.post1",
    "0.6.11.post2",
    "0.6.11.post3",
    "0.6.12",
    "0.6.13",
    "0.6.14",
    "0.6.15",
    "0.6.15.post1",
    "0.6.16",
    "0.6.16.post1",
    "0.6.16.post2",
    "0.6.16.post3",
    "0.6.16.post4",
    "0.6.17",
    "0.6.18",
    "0.6.18.post1",
    "0.7.0",
    "0.7.0.post1",
    "0.7.1",
    "0.7.2",
    "0.7.2.post1",
    "0.7.4",
)


class VersionError(ValueError):
    """A version string that is not a valid PEP 440 version, or a range that makes no sense."""


@lru_cache(maxsize=1024)  # asked again and again for the same few dozen releases
def parse_version(text: str) -> Version:
    """Parse a FlashInfer version such as ``0.6.8.post1``, ``0.7.0rc1`` or ``v0.6.14``."""
    cleaned = text.strip()
    if cleaned[:1] in ("v", "V"):
        cleaned = cleaned[1:]
    try:
        return Version(cleaned)
    except InvalidVersion:
        raise VersionError(f"not a valid FlashInfer version: {text!r}") from None


def in_range(introduced_in: str, from_version: Version, to_version: Version) -> bool:
    """True when a change introduced in ``introduced_in`` lies in ``(from_version, to_version]``."""
    return from_version < parse_version(introduced_in) <= to_version


def check_range(from_version: Version, to_version: Version) -> None:
    if from_version > to_version:
        raise VersionError(
            f"--from {from_version} is newer than --to {to_version}: migrate-fi only migrates forward"
        )
