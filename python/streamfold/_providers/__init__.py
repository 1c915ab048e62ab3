"""One module per wire format. ``get_provider(name)`` makes a fresh provider instance."""

from __future__ import annotations

from .base import Provider
from .registry import (
    PROVIDER_NAMES,
    check_provider_name,
    fold_rules,
    get_provider,
    provider_class,
)

__all__ = [
    "PROVIDER_NAMES",
    "Provider",
    "check_provider_name",
    "fold_rules",
    "get_provider",
    "provider_class",
]
