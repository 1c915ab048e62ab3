"""Reading a stream's common chunk without a JSON parse.

In a Chat Completions stream most chunks differ from one another only in one string: the text
of a ``delta.content`` or the fragment of a ``tool_calls[].function.arguments`` (and in a random
padding value: OpenAI/Azure ``obfuscation``, Mistral ``p``). Parsing each of them into dicts
costs more than everything else the provider does, so the provider learns the chunk's shape
from one parsed instance and reads the next ones by comparing strings.

A template is ``prefix`` + string body + ``rest``, cut from a parsed chunk around the one value
that varies. The cut is proved, not assumed: a probe made from it must parse to the same chunk
with only that value (and the padding value) changed, or no template is made. A later payload
fits the template when it starts with ``prefix``, ends with ``rest`` (with any alphanumeric
padding value in its place) and what lies between is a valid JSON string body; the payload is
then the learned chunk with another string, and the body's decoded text is all that differs.
Anything else is parsed as usual.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

__all__ = ["ChunkTemplate", "decode_body"]

#: Top-level string fields that carry random padding and change on every chunk.
PADDING_KEYS = ("obfuscation", "p")

_loads = json.loads


def decode_body(body: str) -> str | None:
    """The text of a JSON string body (what lies between the quotes), or ``None`` when it is
    empty or not a valid body, or has ``\\u`` escapes (left to the parser, whose handling of
    lone surrogates this does not try to copy)."""
    if not body:
        return None
    if "\\" not in body:
        # Without escapes a body is valid iff it has no quote and no control character;
        # ``isprintable`` also sends a few valid characters (U+2028…) to the parser.
        return body if '"' not in body and body.isprintable() else None
    if "\\u" in body:
        return None
    try:
        text = _loads(f'"{body}"')
    except ValueError:
        return None
    return text if text.__class__ is str and text else None


class ChunkTemplate:
    """One learned chunk shape and where its events go (``state``, ``block``)."""

    __slots__ = ("block", "padding_end", "prefix", "rest", "start", "state")

    def __init__(
        self, prefix: str, rest: str, padding_end: str | None, state: Any, block: int
    ) -> None:
        self.prefix = prefix
        self.start = len(prefix)
        #: What follows the string body; with padding, up to and including the opening quote
        #: of the padding value, and ``padding_end`` what follows that value.
        self.rest = rest
        self.padding_end = padding_end
        #: The provider's target for the text: its choice state and block (-1: the open text
        #: block).
        self.state = state
        self.block = block

    @classmethod
    def learn(
        cls,
        data: str,
        chunk: dict[str, Any],
        *,
        key: str,
        text: str,
        expected: Callable[[str], dict[str, Any]],
        state: Any,
        block: int,
    ) -> ChunkTemplate | None:
        """The template of ``data``, parsed into ``chunk``, whose varying value is the string
        ``text`` under ``key``; ``expected(probe)`` is ``chunk`` with that value replaced."""
        if '"' in text or "\\" in text or not text.isprintable():
            return None
        for separator in (":", ": "):
            marker = f'"{key}"{separator}"{text}"'
            at = data.find(marker)
            if at < 0 or data.find(marker, at + 1) >= 0:
                continue
            start = at + len(marker) - len(text) - 1
            prefix, rest = data[:start], data[start + len(text) :]
            if not _parses_to(prefix + "probe" + rest, expected("probe")):
                return None
            for padding in PADDING_KEYS:
                value = chunk.get(padding)
                opening = f'"{padding}"{separator}"{value}"'
                if value.__class__ is str and rest.count(opening) == 1:
                    cut = rest.index(opening) + len(opening) - len(value) - 1
                    head, tail = rest[:cut], rest[cut + len(value) :]
                    want = {**expected("probe"), padding: "Zz9"}
                    if _parses_to(prefix + "probe" + head + "Zz9" + tail, want):
                        return cls(prefix, head, tail, state, block)
            return cls(prefix, rest, None, state, block)
        return None

    def text(self, data: str) -> str | None:
        """The varying text of ``data`` if it fits the template, else ``None``."""
        if not data.startswith(self.prefix):
            return None
        rest = self.rest
        padding_end = self.padding_end
        if padding_end is None:
            if not data.endswith(rest):
                return None
            return decode_body(data[self.start : len(data) - len(rest)])
        # ``rest`` begins with the closing quote followed by a structural character, which an
        # escaped quote inside a valid body can never be followed by.
        end = data.find(rest, self.start)
        if end < 0:
            return None
        value_start = end + len(rest)
        value_end = data.find('"', value_start)
        if value_end < 0 or data[value_end:] != padding_end:
            return None
        value = data[value_start:value_end]
        if value and not value.isalnum():
            return None
        return decode_body(data[self.start : end])


def _parses_to(data: str, want: dict[str, Any]) -> bool:
    try:
        return bool(_loads(data) == want)
    except ValueError:
        return False
