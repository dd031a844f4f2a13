"""migrate-fi: migrate code that uses FlashInfer across releases."""

from __future__ import annotations

__version__ = "0.1.0"
