"""The slow, obviously correct reading of a chunk template that ``ChunkTemplate.read`` (bytes)
and the Rust cut replace: the varying text of a payload ``str`` that fits the template."""

from __future__ import annotations

from streamfold._providers._chunk_template import (
    EXACT,
    PADDED_VALUE,
    ChunkTemplate,
    decode_body,
)


def template_text(template: ChunkTemplate, data: str) -> str | None:
    """The varying text of ``data`` if it fits the template, else ``None``."""
    prefix = template.prefix_b.decode()
    rest = template.rest_b.decode()
    padding_end = template.padding_end_b.decode()
    start = len(prefix)
    if not data.startswith(prefix):
        return None
    if template.mode == EXACT:
        if not data.endswith(rest):
            return None
        body = data[start : len(data) - len(rest)]
        # The common case inline: a body with no escape, no quote, no control character.
        if body and "\\" not in body and '"' not in body and body.isprintable():
            return body
        return decode_body(body)
    # The body ends at the first ``rest``. Should that lie inside the real body (after an
    # escaped quote), the body cut there ends with an odd run of backslashes and is not a
    # valid body: ``decode_body`` rejects it and the payload is parsed.
    end = data.find(rest, start)
    if end < 0:
        return None
    after = end + len(rest)
    if template.mode == PADDED_VALUE:
        value_end = data.find('"', after)
        if value_end < 0 or data[value_end:] != padding_end:
            return None
        value = data[after:value_end]
        if value and not value.isalnum():
            return None
    elif data[-1:] != "}" or data.count(" ", after) != len(data) - after - 1:
        return None
    return decode_body(data[start:end])
