"""Writers: events to each provider's wire format, one module per format (see ``base``)."""

from __future__ import annotations

from . import anthropic, cohere_v2, gemini, openai_chat, openai_responses
from .base import WRITERS, Writer

__all__ = [
    "WRITERS",
    "Writer",
    "anthropic",
    "cohere_v2",
    "gemini",
    "openai_chat",
    "openai_responses",
]
