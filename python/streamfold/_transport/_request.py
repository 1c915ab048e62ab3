"""A request's parts as the core takes them: method, URL with its query, headers as bytes,
the body. Everything is checked here or in the core before anything is sent."""

from __future__ import annotations

import json as jsonlib
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .._errors import LocalProtocolError

__all__ = ["Prepared", "merge_cursor", "prepare"]

#: What ``Client.stream`` takes besides the method and URL.
_KEYWORDS = frozenset(
    {"params", "headers", "json", "content", "data", "timeout", "follow_redirects"}
)

Prepared = tuple[str, list[tuple[str, bytes]], bytes | None]


def _pairs(value: Any) -> list[tuple[Any, Any]]:
    if value is None:
        return []
    if hasattr(value, "multi_items"):
        return list(value.multi_items())
    if isinstance(value, Mapping):
        return list(value.items())
    return list(value)


def _text(value: Any, what: str) -> str:
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise LocalProtocolError(f"{what} must be str or bytes, got {type(value).__name__}")


def _header_value(value: Any, name: str) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        # HTTP carries bytes; a non-ASCII value (an SSE id sent back as Last-Event-ID) goes as
        # UTF-8, as EventSource sends it.
        return value.encode("utf-8")
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value).encode()
    raise LocalProtocolError(
        f"the value of header {name!r} must be str or bytes, got {type(value).__name__}"
    )


def with_params(url: str, params: Any) -> str:
    """``url`` with ``params`` in its query: a name given in ``params`` replaces the URL's
    values of that name, the others stay."""
    pairs = [(_text(k, "a query name"), _text(v, "a query value")) for k, v in _pairs(params)]
    if not pairs:
        return url
    parts = urlsplit(url)
    names = {name for name, _ in pairs}
    kept = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in names]
    return urlunsplit(parts._replace(query=urlencode(kept + pairs)))


def merge_headers(*layers: Any) -> list[tuple[str, bytes]]:
    """Header pairs, each layer's names replacing the earlier layers' (any case)."""
    merged: list[tuple[str, bytes]] = []
    for layer in layers:
        pairs = [(_text(n, "a header name"), v) for n, v in _pairs(layer)]
        names = {name.lower() for name, _ in pairs}
        merged = [(n, v) for n, v in merged if n.lower() not in names]
        merged.extend((name, _header_value(value, name)) for name, value in pairs)
    return merged


def _body(kwargs: Mapping[str, Any]) -> tuple[bytes | None, str | None]:
    given = [name for name in ("json", "content", "data") if kwargs.get(name) is not None]
    if len(given) > 1:
        raise LocalProtocolError(f"give one body, not {' and '.join(given)}")
    if "json" in given:
        # As httpx 0.28 sends it: compact, UTF-8, NaN refused.
        text = jsonlib.dumps(
            kwargs["json"], ensure_ascii=False, separators=(",", ":"), allow_nan=False
        )
        return text.encode("utf-8"), "application/json"
    if "content" in given:
        content = kwargs["content"]
        if isinstance(content, str):
            return content.encode("utf-8"), None
        if isinstance(content, (bytes, bytearray, memoryview)):
            return bytes(content), None
        raise LocalProtocolError(
            f"content= must be bytes or str (sf.Client sends a body whole), got "
            f"{type(content).__name__}"
        )
    if "data" in given:
        data = kwargs["data"]
        if not isinstance(data, (Mapping, Iterable)) or isinstance(data, (str, bytes)):
            raise LocalProtocolError("data= takes form fields (a dict); use content= for bytes")
        return urlencode(_pairs(data), doseq=True).encode(), "application/x-www-form-urlencoded"
    return None, None


def prepare(url: Any, defaults: Any, kwargs: Mapping[str, Any]) -> Prepared:
    """The URL (with ``params``), the headers (the client's, then the request's) and the body."""
    unknown = sorted(set(kwargs) - _KEYWORDS)
    if unknown:
        raise TypeError(
            f"sf.Client.stream() got unexpected keyword arguments {', '.join(unknown)} "
            f"(it takes {', '.join(sorted(_KEYWORDS))})"
        )
    target = with_params(str(url), kwargs.get("params"))
    body, content_type = _body(kwargs)
    implied: list[tuple[str, str]] = []
    if content_type is not None:
        implied.append(("Content-Type", content_type))
    headers = merge_headers(defaults, implied, kwargs.get("headers"))
    return target, headers, body


def merge_cursor(url: Any, kwargs: dict[str, Any], params: Any, headers: Any) -> dict[str, Any]:
    """``kwargs`` for the request that resumes a stream: the cursor's query ``params`` and
    ``headers`` (``Last-Event-ID``...) replace those of the same names."""
    merged = dict(kwargs)
    if params:
        sent = _pairs(kwargs.get("params"))
        if not sent:
            sent = parse_qsl(urlsplit(str(url)).query, keep_blank_values=True)
        names = {str(name) for name in params}
        merged["params"] = [(k, v) for k, v in sent if k not in names] + list(params.items())
    if headers:
        merged["headers"] = merge_headers(kwargs.get("headers"), headers)
    return merged
