"""What a response is checked for before its body is read as a stream: its status (an error
body read, at most :data:`MAX_ERROR_BODY` bytes, into a ``StreamError`` with the provider's code,
message and ``Retry-After``) and its content type (the provider's streaming type, or a
``ProtocolError`` with an excerpt of the body)."""

from __future__ import annotations

import datetime
import json
import math
import re
from collections.abc import (
    AsyncIterator,
    Iterator,
    Mapping,
)
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, Literal

from .._errors import ProtocolError, StreamError
from .._failures import is_transport_error
from .._providers import provider_class

if TYPE_CHECKING:
    pass


#: At most this many bytes of an error body are read.
MAX_ERROR_BODY = 64 * 1024
#: At most this many bytes of an unexpected body are read for the error's excerpt.
EXCERPT_BYTES = 1024

SSE_TYPES = frozenset({"text/event-stream"})
JSON_LINES_TYPES = frozenset(
    {
        "application/stream+json",
        "application/x-ndjson",
        "application/ndjson",
        "application/jsonl",
        "application/x-jsonlines",
        "application/json",
    }
)


#: What ``StreamError.retry_after`` is capped by where no ``max_delay`` applies (an error of a
#: response handed to ``sf.fold``): the default ``max_delay`` of ``sf.stream`` and of the
#: resumable folds.
DEFAULT_MAX_DELAY = 30.0


#: Statuses that say the server did not act on the request (timed out waiting for it, a
#: conflict, too early, rate limited): sent again whatever the method, as the OpenAI and
#: Anthropic SDKs do.
#: Not 503 nor Anthropic's 529: a gateway also answers 503 when the application it forwarded
#: the request to failed (Envoy's "upstream reset before headers"), after an agent run may
#: have started; they are sent again as any 5xx, where that cannot act twice.
_REFUSED_STATUSES = frozenset({408, 409, 425, 429})


def retry_kind(status: int) -> Literal["refused", "failed"] | None:
    """What a status says about sending the same request again, for every retry streamfold
    makes (``sf.stream``'s first request, a resumable stream's reconnections): ``"refused"``,
    the server did not act on it, so it is sent again whatever the method; ``"failed"``, a
    server error after which the request may have acted, sent again only where that cannot
    act twice; ``None``, final (a 4xx the request itself caused)."""
    if status in _REFUSED_STATUSES:
        return "refused"
    return "failed" if status >= 500 else None


# -- checks made before the body is read ----------------------------------------------------


def expected_types(provider: str) -> frozenset[str]:
    if provider == "auto":
        return SSE_TYPES | JSON_LINES_TYPES
    framing = getattr(provider_class(provider), "framing", "sse")
    return JSON_LINES_TYPES if framing == "jsonl" else SSE_TYPES


def media_type(content_type: str | None) -> str | None:
    if not content_type:
        return None
    return content_type.split(";", 1)[0].strip().lower() or None


def content_type_error(provider: str, content_type: str, body: bytes, status: int) -> ProtocolError:
    expected = " or ".join(sorted(expected_types(provider)))
    excerpt = body[:EXCERPT_BYTES].decode("utf-8", errors="replace")
    hint = ""
    if provider == "gemini" and media_type(content_type) == "application/json":
        hint = " (Gemini streams SSE only with ?alt=sse on streamGenerateContent)"
    shown = excerpt if len(excerpt) <= 200 else excerpt[:200] + "…"
    return ProtocolError(
        f"{provider}: HTTP {status} with content type {content_type!r}, expected {expected}"
        f"{hint}; the body starts with {shown!r}. To parse it anyway pass the bytes "
        "(response.iter_bytes()) instead of the response",
        provider=provider,
        position=0,
        raw=excerpt,
    )


def error_fields(body: Any) -> tuple[str | int | None, str | None]:
    """The provider's error code and message from the common error body shapes."""
    if isinstance(body, list) and len(body) == 1:
        body = body[0]  # Gemini without alt=sse wraps everything in an array
    if not isinstance(body, dict):
        return None, None
    error: Any = body.get("error", body)
    if isinstance(error, str):
        return body.get("code") if isinstance(body.get("code"), str) else None, error
    if not isinstance(error, dict):
        return None, None
    message = error.get("message") or error.get("detail") or body.get("detail")
    if not isinstance(message, str):
        message = json.dumps(message) if message is not None else None
    code: Any = None
    for key in ("code", "type", "status"):
        value = error.get(key)
        if isinstance(value, str) and value and value != "error":
            code = value
            break
    if code is None and isinstance(error.get("code"), int):
        code = error["code"]
    return code, message


def status_error(
    provider: str,
    status: int,
    *,
    reason: str | None,
    headers: Mapping[str, str],
    body: bytes,
    truncated: bool,
    failure: BaseException | None = None,
    max_delay: float = DEFAULT_MAX_DELAY,
) -> StreamError:
    """The error of an HTTP error status; ``failure``: the connection failed while its body
    was read (the status still says what happened: the body is what came)."""
    text = body.decode("utf-8", errors="replace")
    raw: Any
    try:
        raw = json.loads(text)
    except ValueError:
        raw = text
    code, message = error_fields(raw)
    if message is None:
        message = text.strip()[:500] or (reason or "")
    notes = ""
    if truncated:
        notes += f" (error body cut at {MAX_ERROR_BODY} bytes)"
    if failure is not None:
        notes += (
            f" (the connection failed after {len(body)} bytes of the error body: "
            f"{type(failure).__name__}: {failure})"
        )
    asked, retry_after_header = retry_after_headers(headers)
    error = StreamError(
        message,
        code=code if code is not None else status,
        provider=provider,
        raw=raw,
        status=status,
        retryable_without_duplicate=True,
        position=0,
        retry_after_header=retry_after_header,
    )
    # What the server asked, before any cap: ``retry_after_wait`` caps it by the max_delay
    # of whoever waits.
    error._retry_after_asked = asked  # type: ignore[attr-defined]
    retry_after_wait(error, max_delay)
    # ``message`` stays the provider's own text, as for an error inside the stream; what
    # ``str(err)`` says adds the provider, the status and what happened to the body.
    error.args = (
        f"{provider}: HTTP {status}{' ' + reason if reason else ''} before the stream: "
        f"{message}{notes}",
    )
    error.__cause__ = failure
    return error


#: Delay-seconds past this many digits (over 31 years) are read as this many seconds: every
#: wait is capped far below, and ``int()`` of a longer run would cost for nothing.
_MAX_DIGITS = 9


def retry_after_headers(headers: Mapping[str, str]) -> tuple[float | None, str | None]:
    """How long the server asks to wait, in seconds, and the raw header value read:
    ``retry-after-ms`` (OpenAI, Azure; the OpenAI and Anthropic SDKs read it first) when it is
    a plain non-negative number of milliseconds, else ``Retry-After``. (None, raw) when the
    header is there but says nothing valid: the caller's backoff applies."""
    milliseconds = headers.get("retry-after-ms")
    if milliseconds and _MILLISECONDS.fullmatch(milliseconds.strip()):
        return min(float(milliseconds), 10.0**_MAX_DIGITS) / 1000, milliseconds
    value = headers.get("retry-after")
    if value is None:
        return None, milliseconds
    return retry_after(value), value


#: ``retry-after-ms`` is no standard; the SDKs read it as a float, of which only the plain
#: decimal forms are taken (not ``inf``, ``nan``, ``1e3``, ``1_0`` nor a sign).
_MILLISECONDS = re.compile(r"[0-9]+(?:\.[0-9]+)?")


def retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds, or None when it is neither form of RFC 9110 section
    10.2.3: delay-seconds (ASCII digits only: ``inf``, ``1e3``, ``1_0``, ``-5``, ``nan`` are
    no delay) or an HTTP date (0 once past)."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        digits = value.lstrip("0") or "0"
        return float(digits) if len(digits) <= _MAX_DIGITS else 10.0**_MAX_DIGITS
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    seconds = (when - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
    return max(0.0, min(seconds, 10.0**_MAX_DIGITS))


def retry_after_wait(error: BaseException | None, max_delay: float) -> float | None:
    """The wait ``error`` (a refused request) asks for, capped by ``max_delay``, which is also
    what its ``retry_after`` says from then on (the value waited); None when it asks none."""
    if not isinstance(error, StreamError):
        return None
    asked = getattr(error, "_retry_after_asked", error.retry_after)
    if not isinstance(asked, (int, float)) or math.isnan(asked):
        return None
    error.retry_after = max(0.0, min(max_delay, float(asked)))
    return error.retry_after


#: A body read before the stream: its bytes, whether the limit cut it, and the client's
#: exception when the connection failed while it was read (the bytes are those that came).
_Read = tuple[bytes, bool, BaseException | None]


def read_bounded(chunks: Iterator[bytes], limit: int) -> _Read:
    buf = bytearray()
    try:
        for chunk in chunks:
            buf += chunk
            if len(buf) > limit:
                return bytes(buf[:limit]), True, None
    except Exception as exc:
        if not is_transport_error(exc):
            raise
        return bytes(buf), False, exc
    return bytes(buf), False, None


async def aread_bounded(chunks: AsyncIterator[bytes], limit: int) -> _Read:
    buf = bytearray()
    try:
        async for chunk in chunks:
            buf += chunk
            if len(buf) > limit:
                return bytes(buf[:limit]), True, None
    except Exception as exc:
        if not is_transport_error(exc):
            raise
        return bytes(buf), False, exc
    return bytes(buf), False, None


def check_head(provider: str, status: int, content_type: str | None) -> tuple[bool, bool]:
    """(status is an error, content type is wrong)."""
    if not 200 <= status < 300:
        return True, False
    media = media_type(content_type)
    return False, media is not None and media not in expected_types(provider)
