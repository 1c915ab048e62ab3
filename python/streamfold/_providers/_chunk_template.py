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

Providers read a frame's bytes, not its ``str`` (``cut``, then ``read``): the fixed parts are
compared as bytes and only the body is decoded, so the payload's ``str`` is never made. ``text``
is the same rule on a ``str``; the tests hold the three to the same answers.

A ``NumberedTemplate`` has one more varying part, an unsigned integer before the string (the
``sequence_number`` of every OpenAI Responses event); it is read in Rust only.
"""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable
from typing import Any

from .._core import NumberedCut, TemplateCut, learn_cut
from .._parts import BlockKind

__all__ = ["ChunkTemplate", "NumberedTemplate", "decode_body"]

#: Top-level string fields that carry random padding and change on every chunk.
PADDING_KEYS = ("obfuscation", "p")

_loads = json.loads
#: ``json.dumps(text, ensure_ascii=False)`` of a ``str``, which calls it, without making an
#: encoder for every call: a tenth of the cost, and learning is the cost a template repays.
_quoted = json.encoder.encode_basestring


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


#: How the end of a payload may vary: not at all; a padding value; spaces before the last
#: brace (Anthropic pads its JSON so).
EXACT, PADDED_VALUE, PADDED_END = 0, 1, 2


class ChunkTemplate:
    """One learned chunk shape and where its events go (``state``, ``block``)."""

    __slots__ = (
        "block",
        "cut",
        "cutter",
        "kind",
        "mode",
        "padding_end_b",
        "prefix_b",
        "rest_b",
        "start_b",
        "state",
    )

    def __init__(
        self,
        prefix: str,
        rest: str,
        *,
        mode: int = EXACT,
        padding_end: str = "",
        state: Any = None,
        block: int = -1,
        kind: BlockKind = "text",
    ) -> None:
        self.mode = mode
        #: The provider's target for the text: its choice state and block (-1: the open text
        #: block).
        self.state = state
        self.block = block
        #: The kind of the block the text goes to (an OpenAI-compatible host's ``reasoning``
        #: deltas are read like its ``content`` ones).
        self.kind: BlockKind = kind
        # The cut is kept in UTF-8 only: ``read`` and the Rust cut compare bytes, and an open
        # stream holds its templates. ``learn`` makes templates only from text that encodes (no
        # lone surrogate), so this never fails for a learned template.
        self.prefix_b = prefix.encode()
        self.start_b = len(self.prefix_b)
        #: What follows the string body. ``PADDED_VALUE``: up to and including the opening quote
        #: of the padding value, ``padding_end_b`` being what follows that value;
        #: ``PADDED_END``: up to the spaces before the last brace.
        self.rest_b = rest.encode()
        self.padding_end_b = padding_end.encode()
        #: The cut in Rust, for ``cut`` and for the decoder's folding path (``SSEDecoder.arm``).
        self.cutter = TemplateCut(
            self.prefix_b,
            self.rest_b,
            padded_end=mode == PADDED_END,
            padding_end=self.padding_end_b if mode == PADDED_VALUE else None,
        )
        #: ``cut(frame)``: the text of a frame whose payload fits the template, read in Rust in
        #: one call; ``None`` leaves the frame to ``read`` (which decides every case). Hot
        #: loops load it and then call it (``cut = template.cut``): ``template.cut(frame)``
        #: would be a method lookup, which CPython does not specialise for an attribute.
        self.cut: Callable[[Any], str | None] = self.cutter.read

    @classmethod
    def learn(
        cls,
        frame: Any,
        *,
        path: tuple[str | int, ...],
        text: str,
        state: Any = None,
        block: int = -1,
        kind: BlockKind = "text",
    ) -> ChunkTemplate | None:
        """The template of ``frame``'s payload whose varying value is the string ``text`` at
        ``path`` of the chunk it parses to (keys and indices), found and proved in Rust
        (``learn_cut``: the same cut ``_learn_cut`` proves with ``json.loads``)."""
        found = learn_cut(frame.data_bytes, path, text, PADDING_KEYS)
        if found is None:
            return None
        prefix, rest, mode, padding_end = found
        return cls(
            prefix, rest, mode=mode, padding_end=padding_end, state=state, block=block, kind=kind
        )

    def read(self, raw: bytes) -> str | None:
        """``text`` of the payload whose UTF-8 bytes are ``raw`` (a frame's ``data_bytes``).

        The same answer as reading the decoded payload (``raw.decode("utf-8", "replace")``,
        the reference in tests/providers/chunk_template_reference.py) or ``None``, without making
        the payload's ``str``: the fixed parts are compared as bytes (a memory compare, where
        comparing an ASCII template with a ``str`` holding any wider character goes character
        by character), and only the body and padding value are decoded. A ``None`` only costs
        a parse; so every part that is not compared byte for byte is decoded strictly, and a
        payload with an invalid UTF-8 sequence (which the decoded payload would hold as
        U+FFFD) is left to the parser. Whenever this returns a text, ``raw`` is valid UTF-8
        and the bytes found here are exactly the characters the decoded payload holds there.
        """
        if not raw.startswith(self.prefix_b):
            return None
        rest = self.rest_b
        if self.mode == EXACT:
            if not raw.endswith(rest):
                return None
            try:
                body = raw[self.start_b : len(raw) - len(rest)].decode()
            except UnicodeDecodeError:
                return None
            if body and "\\" not in body and '"' not in body and body.isprintable():
                return body
            return decode_body(body)
        end = raw.find(rest, self.start_b)
        if end < 0:
            return None
        after = end + len(rest)
        try:
            if self.mode == PADDED_VALUE:
                value_end = raw.find(b'"', after)
                if value_end < 0 or raw[value_end:] != self.padding_end_b:
                    return None
                # ``str.isalnum``, not the ASCII-only ``bytes.isalnum``: the rule of ``text``.
                value = raw[after:value_end].decode()
                if value and not value.isalnum():
                    return None
            elif raw[-1:] != b"}" or raw.count(b" ", after) != len(raw) - after - 1:
                return None
            return decode_body(raw[self.start_b : end].decode())
        except UnicodeDecodeError:
            return None


class NumberedTemplate:
    """A chunk template with a number slot before its string: ``prefix`` + unsigned integer +
    ``middle`` + string body + ``rest`` (and the padding value, as ``ChunkTemplate`` has it).

    OpenAI Responses numbers every event (``sequence_number``, +1 each), so two of its deltas
    differ in a number besides their text. The number is read where JSON writes a non-negative
    integer: digits without a sign, fraction, exponent or leading zero, at most 2**64 - 1; any
    other payload is parsed. ``middle`` is ``None`` for chunks without that number (older
    streams): the template is then a ``ChunkTemplate``'s shape, and ``cut`` gives no number.
    Only the Rust cut reads these templates: a frame it refuses is parsed.
    """

    __slots__ = ("block", "cut", "cutter", "middle", "prefix", "rest")

    def __init__(
        self, prefix: str, middle: str | None, rest: str, mode: int, padding_end: str, *, block: int
    ) -> None:
        self.prefix = prefix
        self.middle = middle
        self.rest = rest
        #: The provider's block for the text.
        self.block = block
        #: The Rust cut, which the decoder's folding path reads frames with too.
        self.cutter = NumberedCut(
            prefix.encode(),
            None if middle is None else middle.encode(),
            rest.encode(),
            padded_end=mode == PADDED_END,
            padding_end=padding_end.encode() if mode == PADDED_VALUE else None,
        )
        #: ``cut(frame)``: ``(number, text)`` of a frame whose payload fits, else ``None``
        #: (loaded first in hot loops, as ``ChunkTemplate.cut`` is).
        self.cut: Callable[[Any], tuple[int | None, str] | None] = self.cutter.read

    @classmethod
    def learn(
        cls,
        data: str,
        chunk: dict[str, Any],
        *,
        number_key: str,
        key: str,
        text: str,
        expected: Callable[[str], dict[str, Any]],
        block: int,
    ) -> NumberedTemplate | None:
        """The template of ``data`` (see ``ChunkTemplate.learn``) whose number slot is the
        top-level ``number_key`` when ``chunk`` has it. The slot must lie before the string;
        the probes must parse to ``chunk`` with only the number, the string (and the padding
        value) changed."""
        if number_key not in chunk:
            found = _learn_cut(data, chunk, key=key, text=text, expected=expected)
            if found is None:
                return None
            prefix, rest, mode, padding_end = found
            return cls(prefix, None, rest, mode, padding_end, block=block)
        number = chunk[number_key]
        if number.__class__ is not int or number < 0:
            return None
        other = number + 1
        for separator in (":", ": "):
            written, probe = (
                f'"{number_key}"{separator}{number}',
                f'"{number_key}"{separator}{other}',
            )
            if data.count(written) != 1 or probe in data:
                continue
            # The string's cut is learned on the payload with another number: its probes then
            # prove the number's slot too, with no probe of their own.
            found = _learn_cut(
                data.replace(written, probe),
                {**chunk, number_key: other},
                key=key,
                text=text,
                expected=lambda body: {**expected(body), number_key: other},
            )
            if found is None or found[0].count(probe) != 1:
                return None  # unproved, or the number lies after the string
            prefix, rest, mode, padding_end = found
            end = prefix.index(probe) + len(probe)
            head, middle = prefix[: end - len(str(other))], prefix[end:]
            if middle[:1].isdigit():  # never after a whole number; the cut relies on it
                return None
            return cls(head, middle, rest, mode, padding_end, block=block)
        return None


#: Where a learned template cuts its chunk: ``(prefix, rest, mode, padding_end)``,
#: ``ChunkTemplate``'s fields of those names. A plain tuple: learning is the cost a template
#: must repay, and a named tuple adds to it.
_Cut = tuple[str, str, int, str]


def _learn_cut(
    data: str,
    chunk: dict[str, Any],
    *,
    key: str,
    text: str,
    expected: Callable[[str], dict[str, Any]],
) -> _Cut | None:
    """The cut of ``data`` around the string ``text`` under ``key``, proved by probes (see
    ``ChunkTemplate.learn``), or ``None``."""
    # The text as JSON writes it: tool-call arguments (JSON inside JSON) nearly always
    # hold quotes, so a template learned only from plain text would rarely serve them.
    # A body ``read`` could not decode back (``\\u`` escapes, text it would not accept
    # unescaped) is not learned from; the probe below proves the cut in any case.
    body = _quoted(text)[1:-1]
    if decode_body(body) != text:
        return None
    try:
        data.encode()
    except UnicodeEncodeError:  # a lone surrogate: ``read`` could never match the bytes
        return None
    for separator in (":", ": "):
        marker = f'"{key}"{separator}"{body}"'
        at = data.find(marker)
        if at < 0 or data.find(marker, at + 1) >= 0:
            continue
        start = at + len(marker) - len(body) - 1
        prefix, rest = data[:start], data[start + len(body) :]
        want = expected("probe")
        if not _parses_to(prefix + "probe" + rest, want):
            return None
        for padding in PADDING_KEYS:
            value = chunk.get(padding)
            opening = f'"{padding}"{separator}"{value}"'
            if type(value) is str and rest.count(opening) == 1:
                cut = rest.index(opening) + len(opening) - len(value) - 1
                head, tail = rest[:cut], rest[cut + len(value) :]
                padded = {**want, padding: "Zz9"}
                if _parses_to(prefix + "probe" + head + "Zz9" + tail, padded):
                    return prefix, head, PADDED_VALUE, tail
        core = rest[:-1].rstrip(" ")
        if rest.endswith(" }") and all(
            _parses_to(prefix + "probe" + core + spaces, want) for spaces in ("}", "   }")
        ):
            return prefix, core, PADDED_END, ""
        return prefix, rest, EXACT, ""
    return None


def _parses_to(data: str, want: dict[str, Any]) -> bool:
    try:
        return bool(_loads(data) == want)
    except ValueError:
        return False
