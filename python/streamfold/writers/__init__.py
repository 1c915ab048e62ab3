"""Writers: events to each provider's wire format, one module per format (see ``base``)."""

from __future__ import annotations

from . import anthropic, openai_chat
from .base import WRITERS, Writer

__all__ = ["WRITERS", "Writer", "anthropic", "openai_chat"]
