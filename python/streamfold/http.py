"""HTTP client adapters: httpx (sync and async), aiohttp and requests responses, and ``stream()``.

``sf.events(response, provider=...)`` and ``sf.fold(response, ...)`` accept an ``httpx.Response``
(from ``httpx.Client`` or ``httpx.AsyncClient``, for the async forms; an ``httpx2.Response``,
as the OpenAI and Anthropic SDKs' ``response.http_response``, alike), an
``aiohttp.ClientResponse`` (async forms) or a ``requests.Response`` (sync forms; open it with
``stream=True``, or requests reads the whole body before returning) directly. Before a byte of
the body is parsed:

* a status outside 2xx raises :class:`~streamfold.errors.StreamError` with ``status``, the
  provider's ``code`` and ``message`` and the parsed error body in ``raw`` (the body is read,
  at most :data:`MAX_ERROR_BODY` bytes, and never parsed as events);
* a content type the provider does not stream raises :class:`~streamfold.errors.ProtocolError`
  with an excerpt of the body (``text/event-stream`` for SSE providers; ``cohere-v1`` streams
  JSON lines: ``application/stream+json``, ``application/x-ndjson``, ``application/ndjson``,
  ``application/jsonl``, ``application/x-jsonlines`` or ``application/json``; ``auto``
  accepts any of them; a missing ``Content-Type`` is accepted). To skip the checks, pass
  the bytes instead of the response (``response.iter_bytes()``).

The response is closed when the iteration ends, when the caller stops early and when the
caller's loop raises: no connection is leaked. Bodies are read decoded (gzip and friends
undone by the client). A connection that fails while the body is read raises
``IncompleteStreamError`` (``ConnectionLostError``; the client's exception is its
``__cause__``), so ``sf.fold`` gives it ``.partial``; :mod:`streamfold.resumable` reconnects.

None of httpx, aiohttp and requests is imported by ``import streamfold``: a response is
recognised only when its client's module is already loaded (``pip install streamfold[httpx]`` /
``streamfold[aiohttp]`` / ``streamfold[requests]``). aiohttp is asyncio-only; everything for
httpx works under asyncio and trio alike.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import re
import sys
import time
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Callable,
    Generator,
    Iterable,
    Iterator,
    Mapping,
)
from typing import TYPE_CHECKING, Any

from ._events import BlockDelta, BlockStart
from ._io.failures import connection_lost, is_transport_error
from ._types import ProviderName
from .errors import IdleTimeoutError, ProtocolError, StreamError, StreamfoldError
from .folder import DEFAULT_MAX_MESSAGE_BYTES, check_max_message_bytes
from .pipeline import DEFAULT_MAX_EVENT_BYTES, check_max_event_bytes

if TYPE_CHECKING:
    import ssl
    from types import TracebackType

    import httpx
    import httpx2

    from ._events import AnyEvent, Event
    from .folder import Folder
    from .message import Message
    from .resumable import Cursor

__all__ = [
    "MAX_ERROR_BODY",
    "AsyncEventStream",
    "EventStream",
    "astream",
    "async_response_chunks",
    "stream",
    "sync_response_chunks",
]

#: At most this many bytes of an error body are read.
MAX_ERROR_BODY = 64 * 1024
#: At most this many bytes of an unexpected body are read for the error's excerpt.
_EXCERPT_BYTES = 1024

_SSE_TYPES = frozenset({"text/event-stream"})
_JSON_LINES_TYPES = frozenset(
    {
        "application/stream+json",
        "application/x-ndjson",
        "application/ndjson",
        "application/jsonl",
        "application/x-jsonlines",
        "application/json",
    }
)

#: Timeouts of the temporary client ``stream()`` makes: LLM streams can be silent for minutes
#: (reasoning models), so reads get the OpenAI and Anthropic SDKs' 600 s; connecting gets 5 s.
_DEFAULT_TIMEOUT = (600.0, 5.0)

#: Statuses that say the server did not act on the request (timed out waiting for it, a
#: conflict, too early, rate limited): sent again whatever the method, as the OpenAI and
#: Anthropic SDKs do.
#: Not 503 nor Anthropic's 529: a gateway also answers 503 when the application it forwarded
#: the request to failed (Envoy's "upstream reset before headers"), after an agent run may
#: have started; they are sent again as any 5xx, where that cannot act twice.
_REFUSED_STATUSES = frozenset({408, 409, 425, 429})
#: What ``StreamError.retry_after`` is capped by where no ``max_delay`` applies (an error of a
#: response handed to ``sf.fold``): the default ``max_delay`` of ``sf.stream`` and of the
#: resumable folds.
DEFAULT_MAX_DELAY = 30.0
#: RFC 9110 section 9.2.2.
_IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"})
#: Providers whose POST starts an agent run (tools that act, resources created): a 5xx or a
#: connection lost before the response may come after the run started, so it is not sent
#: again unless the request is idempotent. ``auto`` may be one of them.
_RUN_STARTING_PROVIDERS = frozenset({"clouisle", "onecortex", "auto"})


def _pause(seconds: float) -> None:
    """The wait between two attempts of ``stream()``'s first request."""
    time.sleep(seconds)


async def _apause(seconds: float) -> None:
    """The wait between two attempts of ``astream()``'s first request (asyncio or trio)."""
    from .resumable import _sleep

    await _sleep(seconds)


def _header_pairs(headers: Any) -> list[tuple[Any, Any]]:
    """``headers`` (None, a dict, pairs, httpx's or httpx2's ``Headers``) as name/value pairs,
    repeated names kept."""
    if headers is None:
        return []
    if hasattr(headers, "multi_items"):
        return list(headers.multi_items())
    if hasattr(headers, "items"):
        return list(headers.items())
    return list(headers)


def _header_names(pairs: list[tuple[Any, Any]]) -> set[str]:
    """The lower-cased names of header ``pairs`` (bytes names read as Latin-1, as HTTP does)."""
    return {
        (name.decode("latin-1") if isinstance(name, bytes) else str(name)).lower()
        for name, _ in pairs
    }


def _names_header(headers: Any, name: str) -> bool:
    """Whether ``headers`` (a dict, pairs, ``httpx.Headers``, None) has ``name``, any case."""
    return name in _header_names(_header_pairs(headers))


def _count_attempts(exc: Exception, refused: list[Exception], max_retries: int) -> None:
    """Say on the error the first request finally raised how many requests were made:
    ``attempts`` (1 when none was retried), and a note (Python 3.11+) naming the earlier
    ones' errors."""
    attempts = len(refused) + 1
    with contextlib.suppress(AttributeError, TypeError):
        exc.attempts = attempts  # type: ignore[attr-defined]
    if not refused:
        return
    earlier = ", ".join(_describe_refusal(e) for e in refused)
    add_note = getattr(exc, "add_note", None)
    if add_note is not None:
        add_note(
            f"streamfold: request {attempts} of at most {max_retries + 1} (max_retries="
            f"{max_retries}); the earlier {'one' if len(refused) == 1 else len(refused)} "
            f"failed: {earlier}"
        )


def _describe_refusal(exc: Exception) -> str:
    if isinstance(exc, StreamError) and exc.status is not None:
        return f"HTTP {exc.status}"
    return type(exc).__name__


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """The SSL context of every temporary client ``stream()`` / ``astream()`` makes.

    httpx makes a new one for each client it builds, loading certifi's CA bundle: 20-30 ms of
    CPU, which a stream opened without ``client=`` paid every time, inside the event loop for
    ``astream``. One context serves every client (OpenSSL contexts are shared safely between
    connections and threads); it is made as httpx makes it (``SSL_CERT_FILE`` /
    ``SSL_CERT_DIR`` honoured, else certifi).
    """
    import httpx

    return httpx.create_ssl_context()


# -- checks made before the body is read ----------------------------------------------------


def _expected_types(provider: str) -> frozenset[str]:
    if provider == "auto":
        return _SSE_TYPES | _JSON_LINES_TYPES
    from .providers import provider_class

    framing = getattr(provider_class(provider), "framing", "sse")
    return _JSON_LINES_TYPES if framing == "jsonl" else _SSE_TYPES


def _media_type(content_type: str | None) -> str | None:
    if not content_type:
        return None
    return content_type.split(";", 1)[0].strip().lower() or None


def _content_type_error(
    provider: str, content_type: str, body: bytes, status: int
) -> ProtocolError:
    expected = " or ".join(sorted(_expected_types(provider)))
    excerpt = body[:_EXCERPT_BYTES].decode("utf-8", errors="replace")
    hint = ""
    if provider == "gemini" and _media_type(content_type) == "application/json":
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


def _error_fields(body: Any) -> tuple[str | int | None, str | None]:
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


def _status_error(
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
    code, message = _error_fields(raw)
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
    asked, retry_after_header = _retry_after_headers(headers)
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


def _retry_after_headers(headers: Mapping[str, str]) -> tuple[float | None, str | None]:
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
    return _retry_after(value), value


#: ``retry-after-ms`` is no standard; the SDKs read it as a float, of which only the plain
#: decimal forms are taken (not ``inf``, ``nan``, ``1e3``, ``1_0`` nor a sign).
_MILLISECONDS = re.compile(r"[0-9]+(?:\.[0-9]+)?")


def _retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds, or None when it is neither form of RFC 9110 section
    10.2.3: delay-seconds (ASCII digits only: ``inf``, ``1e3``, ``1_0``, ``-5``, ``nan`` are
    no delay) or an HTTP date (0 once past)."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        digits = value.lstrip("0") or "0"
        return float(digits) if len(digits) <= _MAX_DIGITS else 10.0**_MAX_DIGITS
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    import datetime

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


def _read_bounded(chunks: Iterator[bytes], limit: int) -> _Read:
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


async def _aread_bounded(chunks: AsyncIterator[bytes], limit: int) -> _Read:
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


def _check_head(provider: str, status: int, content_type: str | None) -> tuple[bool, bool]:
    """(status is an error, content type is wrong)."""
    if not 200 <= status < 300:
        return True, False
    media = _media_type(content_type)
    return False, media is not None and media not in _expected_types(provider)


# -- which client made the response ---------------------------------------------------------


#: The modules whose ``Response`` is read as httpx's: httpx, and httpx2, the httpx the OpenAI
#: and Anthropic SDKs make their requests with (their ``response.http_response``). Both have
#: the same response, stream and exception classes.
_HTTPX_MODULES = ("httpx", "httpx2")


def _httpx_module(source: object, kinds: tuple[str, ...] = ("Response",)) -> Any:
    """The module (httpx or httpx2) of which ``source`` is one of the classes ``kinds``
    (a ``Response`` unless told), or ``None``."""
    for name in _HTTPX_MODULES:
        module = sys.modules.get(name)
        if module is None:
            continue
        for kind in kinds:  # a loop: this runs for every response read
            if isinstance(source, getattr(module, kind)):
                return module
    return None


def _httpx_response(source: object) -> httpx.Response | None:
    if _httpx_module(source) is None:
        return None
    response: httpx.Response = source  # type: ignore[assignment]
    return response


def _aiohttp_response(source: object) -> Any:
    aiohttp_module = sys.modules.get("aiohttp")
    if aiohttp_module is not None and isinstance(source, aiohttp_module.ClientResponse):
        return source
    return None


def _requests_response(source: object) -> Any:
    requests_module = sys.modules.get("requests")
    if requests_module is not None and isinstance(source, requests_module.Response):
        return source
    return None


def is_response(source: object) -> bool:
    """A response of a supported client, read through its adapter (some are iterable
    themselves, as ``requests.Response``; the clients' byte iterators are plain iterables)."""
    return (
        _httpx_response(source) is not None
        or _aiohttp_response(source) is not None
        or _requests_response(source) is not None
    )


def _httpx_is_async_only(response: httpx.Response) -> bool:
    httpx = _httpx_module(response)
    stream = response.stream
    return not isinstance(stream, httpx.SyncByteStream) and not response.is_stream_consumed


def _not_a_response(source: object, *, asynchronous: bool = False) -> TypeError:
    kind = type(source)
    got = f"{kind.__module__}.{kind.__qualname__}"
    if asynchronous and (isinstance(source, Iterable) or hasattr(source, "__enter__")):
        # A list of chunks is an iterable of bytes, just not an async one; httpx.Client's
        # stream() is a sync context manager: say so.
        return TypeError(
            f"expected an async iterable of bytes chunks or an HTTP response, got {got}: the "
            "async functions (aevents, afold, astream, aevents_resumable, afold_resumable) "
            "read with `async for` or `async with`; pass this to their sync twins (events, "
            "fold, stream, events_resumable, fold_resumable), or use an async client"
        )
    if not asynchronous and _is_async_source(source):
        return TypeError(
            f"expected an iterable of bytes chunks or an HTTP response, got {got}: an async "
            "iterable, awaitable or async context manager (an httpx.AsyncClient's or "
            "aiohttp's request) is read by the async twins (aevents, afold, astream, "
            "aevents_resumable, afold_resumable) with `async for`, `await` or `async with`"
        )
    return TypeError(
        f"expected {'an async' if asynchronous else 'an'} iterable of bytes chunks or an HTTP "
        f"response (httpx.Response, aiohttp.ClientResponse, requests.Response), got {got}"
    )


def _is_async_source(source: object) -> bool:
    """Something only the async API can read: an async iterable, an awaitable (a coroutine,
    aiohttp's request) or an async context manager (``AsyncClient.stream(...)``)."""
    return (
        isinstance(source, AsyncIterable)
        or hasattr(source, "__aenter__")
        or hasattr(source, "__await__")
    )


# -- sync: httpx.Response from httpx.Client --------------------------------------------------


def check_response(response: httpx.Response, provider: str) -> None:
    """Raise ``StreamError`` / ``ProtocolError`` for a response that is not the stream.

    Reads (and closes) the response only when it raises.
    """
    _check_sync(response, provider, response.reason_phrase, response.iter_bytes)


def check_requests_response(response: Any, provider: str) -> None:
    """:func:`check_response` for a ``requests.Response``."""
    _check_sync(response, provider, response.reason, lambda: _requests_body(response))


def _check_sync(
    response: Any, provider: str, reason: str | None, body: Callable[[], Iterator[bytes]]
) -> None:
    """:func:`check_response` for a sync client's response (``status_code``, ``headers`` and
    ``close()`` are alike in httpx and requests; its ``reason`` and ``body`` reader differ)."""
    status = response.status_code
    is_error, bad_type = _check_head(provider, status, response.headers.get("content-type"))
    if not (is_error or bad_type):
        return
    try:
        if is_error:
            text, truncated, failure = _read_bounded(body(), MAX_ERROR_BODY)
            raise _status_error(
                provider,
                status,
                reason=reason,
                headers=response.headers,
                body=text,
                truncated=truncated,
                failure=failure,
            )
        text, _, failure = _read_bounded(body(), _EXCERPT_BYTES)
        content_type = response.headers.get("content-type", "")
        raise _content_type_error(provider, content_type, text, status) from failure
    finally:
        _close_sync(response)


def _close_sync(response: Any) -> None:
    """Close a sync client's response. An httpx response read already is closed already,
    and may be an ``AsyncClient``'s (its body in memory, so the sync API reads it), whose
    sync ``close()`` raises ``RuntimeError``."""
    if getattr(response, "is_closed", False) is not True:
        response.close()


@contextlib.contextmanager
def _closing_body(
    body: Iterator[bytes], response: Any, provider: str
) -> Generator[Iterator[bytes]]:
    """``body`` with connection failures reported (``_guard``), the response closed on exit."""
    chunks = _guard(body, provider)
    try:
        yield chunks
    finally:
        try:
            chunks.close()
        finally:
            _close_sync(response)


@contextlib.contextmanager
def sync_response_chunks(source: Any, provider: str) -> Generator[Iterator[bytes]]:
    """The decoded body of a sync HTTP response as an iterator of bytes, checked first and
    closed on exit (end of body, early exit, exception in the caller's loop)."""
    requests_response = _requests_response(source)
    if requests_response is not None:
        check_requests_response(requests_response, provider)
        body = _requests_body(requests_response)
        with _closing_body(body, requests_response, provider) as chunks:
            yield chunks
        return
    response = _httpx_response(source)
    if response is None:
        if _aiohttp_response(source) is not None:
            raise TypeError(
                "an aiohttp.ClientResponse is read asynchronously: use sf.aevents / sf.afold"
            )
        raise _not_a_response(source)
    if _httpx_is_async_only(response):
        raise TypeError(
            "this httpx.Response comes from httpx.AsyncClient: use sf.aevents / sf.afold "
            "(or read it with httpx.Client)"
        )
    check_response(response, provider)
    with _closing_body(response.iter_bytes(), response, provider) as chunks:
        yield chunks


#: The most one read of a requests body hands over.
_REQUESTS_READ = 64 * 1024


def _requests_body(response: Any) -> Iterator[bytes]:
    """A ``requests.Response`` body, each read as it arrives, decoded (gzip undone).

    ``iter_content(chunk_size=None)`` reads a body framed by ``Content-Length`` or by the
    connection's end whole before the first byte is handed over (urllib3's ``read()`` with no
    size), so no event would come before the last, and a connection cut inside it loses every
    byte; a chunked body it reads a whole HTTP chunk at a time, losing the bytes of a chunk
    that the connection cut. urllib3 2's ``read1()`` gives what has arrived. Its connection
    failures are urllib3's, which ``_guard`` reports too; requests raises its own as
    ``OSError``s (urllib3 1.x, without ``read1``, is read with ``iter_content``).
    """
    raw = response.raw
    urllib3_response = sys.modules.get("urllib3.response")
    read1 = getattr(raw, "read1", None)
    if (
        read1 is None
        # Not urllib3's (a transport adapter's file or BytesIO): its read1 takes no options.
        or urllib3_response is None
        or not isinstance(raw, urllib3_response.HTTPResponse)
        or getattr(response, "_content", False) is not False  # read already: requests has it
        or getattr(response, "_content_consumed", False)
    ):
        return response.iter_content(chunk_size=None)  # type: ignore[no-any-return]

    def reads() -> Generator[bytes]:
        while True:
            chunk = read1(_REQUESTS_READ, decode_content=True)
            if not chunk:
                # Read to the end, as iter_content marks it (a body left before its end is
                # then closed by response.close(), not handed back to the pool unread).
                response._content_consumed = True
                return
            yield chunk

    return reads()


def _guard(chunks: Iterator[bytes], provider: str) -> Generator[bytes]:
    """The body, with a connection failing mid-body raised as ``ConnectionLostError``."""
    seen = 0
    try:
        for chunk in chunks:
            seen += len(chunk)
            yield chunk
    except Exception as exc:
        if is_transport_error(exc):
            raise connection_lost(provider, seen, exc) from exc
        raise
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()


async def _aguard(chunks: AsyncIterator[bytes], provider: str) -> AsyncGenerator[bytes]:
    """Async twin of :func:`_guard`."""
    seen = 0
    try:
        async for chunk in chunks:
            seen += len(chunk)
            yield chunk
    except Exception as exc:
        if is_transport_error(exc):
            raise connection_lost(provider, seen, exc) from exc
        raise
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()


# -- async: httpx.Response from httpx.AsyncClient, aiohttp.ClientResponse -------------------


async def acheck_response(response: Any, provider: str) -> None:
    """Async twin of :func:`check_response`, for httpx and aiohttp responses."""
    aiohttp_response = _aiohttp_response(response)
    if aiohttp_response is not None:
        status = aiohttp_response.status
        content_type = aiohttp_response.headers.get("Content-Type")
    else:
        status = response.status_code
        content_type = response.headers.get("content-type")
    is_error, bad_type = _check_head(provider, status, content_type)
    if not (is_error or bad_type):
        return
    try:
        chunks = (
            _aiter_aiohttp(aiohttp_response)
            if aiohttp_response is not None
            else response.aiter_bytes()
        )
        limit = MAX_ERROR_BODY if is_error else _EXCERPT_BYTES
        body, truncated, failure = await _aread_bounded(chunks, limit)
        if is_error:
            reason = (
                aiohttp_response.reason if aiohttp_response is not None else response.reason_phrase
            )
            raise _status_error(
                provider,
                status,
                reason=reason,
                headers=response.headers,
                body=body,
                truncated=truncated,
                failure=failure,
            )
        raise _content_type_error(provider, content_type or "", body, status) from failure
    finally:
        await _aclose_response(response, complete=False)


async def _aclose_response(response: Any, *, complete: bool) -> None:
    aiohttp_response = _aiohttp_response(response)
    if aiohttp_response is None:
        # An httpx response read already is closed already, and may be an httpx.Client's,
        # whose aclose() raises RuntimeError (see _close_sync).
        if not response.is_closed:
            await response.aclose()
    elif complete:
        # Whole body read: the connection goes back to the pool.
        aiohttp_response.release()
    else:
        # Body not read to the end: the connection cannot be reused; close it so the server
        # sees the client go away.
        aiohttp_response.close()


async def _aiter_aiohttp(response: Any) -> AsyncGenerator[bytes]:
    if response.content.at_eof():
        # Read already (``await response.read()``, ``.text()``): aiohttp keeps the body, and
        # ``read()`` gives it again (as httpx's iter_bytes() and requests' iter_content() do).
        body = await response.read()
        if body:
            yield body
        return
    async for chunk in response.content.iter_any():
        yield chunk


@contextlib.asynccontextmanager
async def async_response_chunks(source: Any, provider: str) -> AsyncIterator[AsyncIterator[bytes]]:
    """Async twin of :func:`sync_response_chunks` for httpx (``AsyncClient``) and aiohttp."""
    chunks: AsyncGenerator[bytes]
    if _requests_response(source) is not None:
        raise TypeError(
            "a requests.Response is read synchronously: use sf.events / sf.fold "
            "(or httpx.AsyncClient / aiohttp for async code)"
        )
    if _aiohttp_response(source) is not None:
        await acheck_response(source, provider)
        chunks = _aguard(_aiter_aiohttp(source), provider)
    else:
        response = _httpx_response(source)
        if response is None:
            raise _not_a_response(source, asynchronous=True)
        httpx = _httpx_module(response)
        if (
            isinstance(response.stream, httpx.SyncByteStream)
            and not isinstance(response.stream, httpx.AsyncByteStream)
            and not response.is_stream_consumed  # read already: its body is in memory
        ):
            raise TypeError(
                "this httpx.Response comes from httpx.Client: use sf.events / sf.fold "
                "(or read it with httpx.AsyncClient)"
            )
        await acheck_response(response, provider)
        chunks = _aguard(response.aiter_bytes(), provider)
    complete = False
    try:
        yield chunks
        complete = True
    finally:
        try:
            await chunks.aclose()
        finally:
            await _aclose_response(source, complete=complete and _at_eof(source))


def _at_eof(response: Any) -> bool:
    aiohttp_response = _aiohttp_response(response)
    if aiohttp_response is None:
        return True
    return bool(aiohttp_response.content.at_eof())


# -- stream(): make the request, get the events ----------------------------------------------


def _merge_cursor(
    url: Any, request_kwargs: dict[str, Any], cursor: Cursor, client: object = None
) -> dict[str, Any]:
    # The client's own module: an httpx2 client reads httpx's Headers as a plain mapping, and
    # encodes its values in ASCII (a non-ASCII SSE id raised UnicodeEncodeError reconnecting).
    httpx = _client_module(client)

    kwargs = dict(request_kwargs)
    if cursor.params:
        # httpx >= 0.28 replaces the URL's query with ``params=``: start from what was sent.
        sent = kwargs["params"] if "params" in kwargs else httpx.URL(url).params
        kwargs["params"] = httpx.QueryParams(sent).merge(cursor.params)
    if cursor.headers:
        headers = httpx.Headers(kwargs.get("headers"))
        for name, value in cursor.headers.items():
            # Item by item: an SSE id is any text, sent in UTF-8 (as EventSource sends it);
            # update() would encode it as ASCII and refuse ``évt-1``.
            headers[name] = value
        kwargs["headers"] = headers
    return kwargs


def _with_stream_headers(request_kwargs: dict[str, Any], provider: str) -> dict[str, Any]:
    """``request_kwargs`` with the headers httpx-sse's ``connect_sse`` sends (``Accept:
    text/event-stream``, ``Cache-Control: no-store``), each unless ``headers=`` names it
    already, in any case. ``Accept`` only for the providers that stream SSE: Cohere v1 streams
    JSON lines and ``auto`` may be it, so theirs stays httpx's ``*/*``."""
    pairs = _header_pairs(request_kwargs.get("headers"))
    named = _header_names(pairs)
    wanted = [("Cache-Control", "no-store")]
    if provider != "auto" and _expected_types(provider) == _SSE_TYPES:
        wanted.insert(0, ("Accept", "text/event-stream"))
    missing = [(name, value) for name, value in wanted if name.lower() not in named]
    if not missing:
        return request_kwargs
    # Pairs, not an ``httpx.Headers``: the caller's values reach httpx as they were given.
    return {**request_kwargs, "headers": [*pairs, *missing]}


# -- redirects: credentials stay with the origin they were given for --------------------------

#: Header names that carry a credential: ``Authorization`` and ``Proxy-Authorization``,
#: ``Cookie``, the providers' key headers (``x-api-key``, ``api-key``, ``x-goog-api-key``) and
#: any other named like one (``X-Auth-Token``, ``X-Secret``, ``api_key``...).
_CREDENTIAL_HEADER = re.compile(
    r"auth|api[-_]?key|token|secret|password|credential|cookie|session", re.IGNORECASE
)
#: The request arguments of ``client.stream`` that ``client.build_request`` does not take.
_SEND_ONLY = ("auth", "follow_redirects")


def _origin(url: Any) -> tuple[str, str, int | None]:
    return (url.scheme, url.host, url.port)


def _follows(client: Any, kwargs: dict[str, Any]) -> bool:
    follow = kwargs.get("follow_redirects", getattr(client, "follow_redirects", False))
    return bool(follow) and hasattr(client, "send") and hasattr(client, "build_request")


def _first_request(client: Any, method: str, url: Any, kwargs: dict[str, Any]) -> Any:
    built = {k: v for k, v in kwargs.items() if k not in _SEND_ONLY}
    return client.build_request(method, url, **built)


def _next_hop(response: Any, origin: tuple[str, str, int | None], hops: int, client: Any) -> Any:
    """The request a redirect ``response`` asks for (None: it is no redirect), with every
    credential header dropped once it leaves ``origin``: httpx drops ``Authorization`` alone,
    and sent ``x-api-key`` (Anthropic's key), ``api-key`` (Azure) and ``x-goog-api-key``
    (Gemini) on to whatever host the redirect named."""
    request = response.next_request
    if request is None:
        return None
    if hops >= getattr(client, "max_redirects", 20):
        raise _client_module(client).TooManyRedirects(
            "Exceeded maximum allowed redirects.", request=request
        )
    if _origin(request.url) != origin:
        for name in [name for name in request.headers if _CREDENTIAL_HEADER.search(name)]:
            del request.headers[name]
    return request


@contextlib.contextmanager
def _open_stream(client: Any, method: str, url: Any, kwargs: dict[str, Any]) -> Generator[Any]:
    """``client.stream(method, url, **kwargs)``, following redirects (when the client or
    ``kwargs`` say so) without sending a credential header to another origin."""
    if not _follows(client, kwargs):
        with client.stream(method, url, **kwargs) as response:
            yield response
        return
    request = _first_request(client, method, url, kwargs)
    origin = _origin(request.url)
    auth = kwargs.get("auth", getattr(client, "auth", None))
    response = client.send(request, stream=True, auth=auth, follow_redirects=False)
    try:
        hops = 0
        while (request := _next_hop(response, origin, hops, client)) is not None:
            response.close()
            hops += 1
            # Auth (``auth=``) is the origin's too: not sent to another one.
            same = _origin(request.url) == origin
            response = client.send(
                request, stream=True, auth=auth if same else None, follow_redirects=False
            )
        yield response
    finally:
        response.close()


@contextlib.asynccontextmanager
async def _aopen_stream(
    client: Any, method: str, url: Any, kwargs: dict[str, Any]
) -> AsyncGenerator[Any]:
    """:func:`_open_stream` for an async client."""
    if not _follows(client, kwargs):
        async with client.stream(method, url, **kwargs) as response:
            yield response
        return
    request = _first_request(client, method, url, kwargs)
    origin = _origin(request.url)
    auth = kwargs.get("auth", getattr(client, "auth", None))
    response = await client.send(request, stream=True, auth=auth, follow_redirects=False)
    try:
        hops = 0
        while (request := _next_hop(response, origin, hops, client)) is not None:
            await response.aclose()
            hops += 1
            same = _origin(request.url) == origin
            response = await client.send(
                request, stream=True, auth=auth if same else None, follow_redirects=False
            )
        yield response
    finally:
        await response.aclose()


class _StreamBase:
    """What the sync and async streams share: options, the fold, the response."""

    def __init__(
        self,
        method: str,
        url: Any,
        *,
        provider: ProviderName,
        client: Any,
        strict: bool,
        max_event_bytes: int,
        resume: bool,
        max_reconnects: int,
        idle_timeout: float | None,
        initial_delay: float,
        max_delay: float,
        max_retries: int,
        max_message_bytes: int,
        request_kwargs: dict[str, Any],
    ) -> None:
        from .providers import check_provider_name

        try:
            # Each request is made with httpx; with httpx2 for an httpx2 client (the OpenAI and
            # Anthropic SDKs install httpx2 alone).
            _client_module(client)
        except ImportError as exc:
            raise ModuleNotFoundError(
                "sf.stream() and sf.astream() make the request with httpx, which is not "
                "installed: pip install streamfold[httpx] (or pass client= an httpx2 client, "
                "or hand sf.events / sf.fold the response of your own client)",
                name="httpx",
            ) from exc
        check_provider_name(provider)
        check_max_event_bytes(max_event_bytes)
        check_max_message_bytes(max_message_bytes)
        self._max_message_bytes = max_message_bytes
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be an int >= 0, got {max_retries!r}")
        self._max_retries = max_retries
        #: The earlier attempts of the first request that were refused (then retried).
        self._refused: list[Exception] = []
        self.method = method
        self.url = url
        self.provider: ProviderName = provider
        self._client = client
        self._strict = strict
        self._max_event_bytes = max_event_bytes
        self._resume = resume
        self._resume_options: dict[str, Any] = {
            "max_reconnects": max_reconnects,
            "idle_timeout": idle_timeout,
            "initial_delay": initial_delay,
            "max_delay": max_delay,
        }
        self._request_kwargs = _with_stream_headers(request_kwargs, provider)
        self._folder: Folder | None = None
        #: The response of the first request (``None`` until the stream is opened).
        self.response: httpx.Response | None = None
        self._closed = False
        self._entered = False
        #: The error that ended the stream, raised again by ``fold()``.
        self._error: StreamfoldError | None = None
        #: The response being read (the first one, or a reconnection's).
        self._current: httpx.Response | None = None
        #: ``close()`` came from another thread (task) while it was reading: the read it ended
        #: ends the loop, not as an error.
        self._closed_elsewhere = False

    def _options(self) -> dict[str, Any]:
        # One path with or without resume: without it, no reconnection, but the same rules
        # (an incomplete stream raises while iterating; idle_timeout applies).
        options = dict(self._resume_options)
        if not self._resume:
            options["max_reconnects"] = 0
        options.update(
            provider=self.provider,
            strict=self._strict,
            max_event_bytes=self._max_event_bytes,
            on_reconnect=self._before_reconnect,
        )
        return options

    def _before_reconnect(self, cursor: Cursor, delay: float, error: Exception | None) -> None:
        self._check_open()

    def _check_open(self) -> None:
        """Before a reconnection, again after its delay and once its response is known
        (``close()`` may come in either, and the response it would end is not known to it
        yet): the stream was closed while it read, so none is made or read."""
        if self._closed_elsewhere:
            raise _Closed

    def _timed(self, client: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
        """``kwargs`` with a read timeout of at most ``idle_timeout``: a server that accepts
        the request and sends nothing, not even its status line, is silent too (the body's
        reads are bounded by the resumable machinery)."""
        idle = self._resume_options["idle_timeout"]
        if idle is None:
            return kwargs
        httpx = _client_module(client)  # an httpx2 client compares only httpx2's Timeout

        try:
            base = httpx.Timeout(kwargs.get("timeout", client.timeout))
        except (TypeError, ValueError):  # httpx's USE_CLIENT_DEFAULT
            base = client.timeout
        read = idle if base.read is None else min(base.read, idle)
        timeout = httpx.Timeout(connect=base.connect, read=read, write=base.write, pool=base.pool)
        return {**kwargs, "timeout": timeout}

    def _silent(self, exc: Exception) -> Exception:
        """``exc``, raised while the first request waited for its response's head: httpx's
        read timeout, which ``_timed`` bounds by ``idle_timeout``, is that silence, raised as
        ``IdleTimeoutError`` (as a reconnection's is), caused by httpx's exception. A shorter
        read timeout of the caller's own (``timeout=``) fired first: that one stays httpx's."""
        from .resumable import _is_read_timeout

        idle = self._resume_options["idle_timeout"]
        if idle is None or not _is_read_timeout(exc, idle):
            return exc
        name = self.provider
        error = IdleTimeoutError.silence(name, idle, waiting_for="response")
        error.__cause__ = exc
        return error

    def _opening_failed(self, exc: BaseException) -> BaseException:
        """What ``open()`` raises for ``exc``: a silent server as ``IdleTimeoutError``; a
        ``StreamfoldError`` carries ``.partial`` (the empty message) as every error of a fold,
        and the count of requests made (``attempts``)."""
        if isinstance(exc, Exception):
            exc = self._silent(exc)
            _count_attempts(exc, self._refused, self._max_retries)
        if isinstance(exc, StreamfoldError):
            self._annotate(exc)
        return exc

    def _repeatable(self, request_kwargs: dict[str, Any]) -> bool:
        """Sending the request again cannot act twice where the first one may have acted: an
        idempotent method (RFC 9110: GET, HEAD, PUT, DELETE…), a request carrying an
        ``Idempotency-Key`` (the caller says the server deduplicates it), or a model API,
        whose POST only asks for an answer (the OpenAI and Anthropic SDKs retry its 5xx).
        Not a POST to an agent platform (``clouisle``, ``onecortex``; ``auto`` may be one),
        which starts a run whose tools act: a 500 there may come after the run started."""
        if str(self.method).upper() in _IDEMPOTENT_METHODS:
            return True
        if self.provider not in _RUN_STARTING_PROVIDERS:
            return True
        return _names_header(request_kwargs.get("headers"), "idempotency-key") or (
            _names_header(getattr(self._client, "headers", None), "idempotency-key")
        )

    def _retry_delay(self, exc: Exception, response: httpx.Response | None) -> float | None:
        """How long to wait before sending the first request again after ``exc`` (None: raise
        it). Only the first request, before a byte of its stream was read, gets here."""
        # Raised or waited, its retry_after is capped by this stream's max_delay.
        retry_after_wait(exc, float(self._resume_options["max_delay"]))
        if len(self._refused) >= self._max_retries or self._closed:
            return None
        if not self._retryable(exc, response):
            return None
        self._refused.append(exc)
        options = self._resume_options
        max_delay = float(options["max_delay"])
        retry_after = retry_after_wait(exc, max_delay)
        if retry_after is not None:
            return retry_after
        from .resumable import backoff

        return backoff(float(options["initial_delay"]), len(self._refused), max_delay)

    def _retryable(self, exc: Exception, response: httpx.Response | None) -> bool:
        httpx = _client_module(self._client)  # an httpx2 client raises httpx2's exceptions
        if isinstance(exc, StreamError) and exc.status is not None:
            # The SDKs' header: the server's own word on whether to retry wins.
            verdict = response.headers.get("x-should-retry", "") if response is not None else ""
            if verdict.lower() in ("true", "false"):
                return verdict.lower() == "true"
            if exc.status in _REFUSED_STATUSES:
                return True
            return exc.status >= 500 and self._repeatable(self._request_kwargs)
        if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)):
            return True  # the request was never sent
        if isinstance(exc, httpx.TimeoutException):
            # The server has the request and may be working on it; the wait took the whole
            # timeout (or idle_timeout) already: raised, as before.
            return False
        if isinstance(exc, (httpx.RemoteProtocolError, httpx.NetworkError)):
            # The connection failed before a response came: the request may have arrived.
            return self._repeatable(self._request_kwargs)
        return False

    @property
    def folder(self) -> Folder:
        """The fold of the events read so far."""
        if self._folder is None:
            from .folder import Folder

            self._folder = Folder(
                self.provider, strict=self._strict, max_message_bytes=self._max_message_bytes
            )
        return self._folder

    def _add(self, event: Event) -> None:
        self.folder.add(event)
        if self.provider == "auto":
            from .resumable import note_detected

            note_detected(self.folder, event)

    def snapshot(self) -> Message:
        """The message folded from the events read so far (for live UIs)."""
        return self.folder.snapshot()

    def _result(self) -> Message:
        if self._error is not None:
            # The stream ended with this error: fold() says so again, rather than that the
            # events merely stopped before the terminal event.
            raise self._error
        return self.folder.result()

    def _annotate(self, exc: StreamfoldError) -> None:
        self._error = exc
        if getattr(exc, "partial", None) is None:
            self.folder.annotate_error(exc)

    @property
    def status_code(self) -> int | None:
        return self.response.status_code if self.response is not None else None

    @property
    def headers(self) -> httpx.Headers | None:
        return self.response.headers if self.response is not None else None


class EventStream(_StreamBase):
    """A streamed HTTP request: iterate its events, fold its message. Made by :func:`stream`.

    ::

        with sf.stream("POST", url, provider="anthropic", json=body, headers=h) as s:
            for event in s:          # the events; each one also goes into the fold
                ...
            message = s.fold()       # the final message (reads whatever is left first)

    Entering the ``with`` sends the request and checks the status and content type, so HTTP
    errors raise there. Leaving it closes the response (and the client, when ``stream`` made
    one). Iterating without ``with`` opens the stream on first use and closes it at the end.
    A stream that ends (or whose connection fails) before the provider's terminal event raises
    ``IncompleteStreamError`` while iterating, with ``.partial``.
    """

    def __init__(self, method: str, url: Any, **options: Any) -> None:
        super().__init__(method, url, **options)
        _check_client(self._client, asynchronous=False)
        self._stack = contextlib.ExitStack()
        self._iterator: Iterator[AnyEvent] | None = None

    def __enter__(self) -> EventStream:
        self._entered = True
        self.open()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def open(self) -> None:
        """Send the request; raise ``StreamError`` / ``ProtocolError`` before any event."""
        if self.response is not None:
            return
        if self._closed:
            raise RuntimeError("this stream is closed")
        try:
            self.response = self._send(self._request_kwargs)
        except BaseException as exc:
            self.close()
            error = self._opening_failed(exc)
            if error is exc:
                raise
            raise error from exc

    def _send(self, kwargs: dict[str, Any]) -> httpx.Response:
        client = self._client
        if client is None:
            import httpx

            read, connect = _DEFAULT_TIMEOUT
            client = self._client = self._stack.enter_context(
                httpx.Client(timeout=httpx.Timeout(read, connect=connect), verify=_ssl_context())
            )
        while True:
            response: httpx.Response | None = None
            try:
                with contextlib.ExitStack() as attempt:
                    opened: httpx.Response = attempt.enter_context(
                        _open_stream(client, self.method, self.url, self._timed(client, kwargs))
                    )
                    response = opened
                    check_response(opened, self.provider)
                    # The stream: closed with the stream, not when this attempt ends.
                    self._stack.push(attempt.pop_all())
                    return opened
            except Exception as exc:
                # The refused response (its error body read) is closed: nothing stays open
                # during the wait, whatever ends it.
                delay = self._retry_delay(exc, response)
                if delay is None:
                    raise
            _pause(delay)
            if self._closed:  # close() came during the wait: no further request
                raise self._refused.pop()

    def _connect(self, cursor: Cursor) -> Any:
        if cursor.attempt == 0 and self.response is not None:
            self._current = self.response
            return self.response
        self._check_open()
        kwargs = _merge_cursor(self.url, self._request_kwargs, cursor, self._client)
        assert self._client is not None
        return self._tracked(
            _open_stream(self._client, self.method, self.url, self._timed(self._client, kwargs))
        )

    @contextlib.contextmanager
    def _tracked(
        self, manager: contextlib.AbstractContextManager[httpx.Response]
    ) -> Generator[httpx.Response]:
        with manager as response:
            self._current = response
            self._check_open()  # close() came while the request was made: it did not see it
            yield response

    def _make_iterator(self) -> Iterator[AnyEvent]:
        self.open()
        from .resumable import events_resumable

        return events_resumable(self._connect, **self._options())

    def events(self) -> Iterator[AnyEvent]:
        """The events not yet read (one shared iterator: a second call continues).

        Nothing once the stream is closed or read to the end.
        """
        if self._closed:
            return
        if self._iterator is None:
            self._iterator = self._make_iterator()
        iterator = self._iterator
        try:
            for event in iterator:
                self._add(event)
                yield event
        except Exception as exc:
            if self._closed_elsewhere:
                # Another thread closed the stream while this one read: the read it ended
                # ends the loop, as a close() between two events would.
                self.close()
                return
            if self._closed:
                # Another thread is closing the stream, running its generator to its end: the
                # next event was asked for meanwhile ("generator already executing").
                return
            if isinstance(exc, StreamfoldError):
                self._annotate(exc)
            self.close()
            raise
        except GeneratorExit:
            # The caller stopped iterating: inside ``with`` it may go on reading (``fold()``);
            # without it nobody else will close the response.
            if not self._entered:
                self.close()
            raise
        except BaseException:
            self.close()
            raise
        else:
            self.close()

    def __iter__(self) -> Iterator[AnyEvent]:
        return self.events()

    @property
    def text_stream(self) -> Iterator[str]:
        """The answer's text as it arrives, piece by piece: the text blocks of choice 0 (no
        reasoning, tool calls or refusals), so the pieces join to ``Message.text``. Every event
        is folded meanwhile: ``fold()`` afterwards returns the whole message (as the Anthropic
        SDK's ``stream.text_stream`` and ``get_final_message()``). Shares the iterator of
        ``events()``: the events read by one are not seen by the other."""
        return _texts(self.events())

    def fold(self) -> Message:
        """Read the rest of the stream and return the final message.

        Raises what :func:`streamfold.fold` raises: ``IncompleteStreamError`` when the
        terminal event never came, ``StreamError`` for a provider error (both with
        ``.partial``).
        """
        for _ in self.events():
            pass
        return self._result()

    def close(self) -> None:
        """Close the response (and the temporary client). Safe to call twice, and from
        another thread while one reads: its read is ended and its loop ends."""
        self._closed = True
        iterator = self._iterator
        try:
            running = getattr(iterator, "gi_running", False)
            if not running:
                close = getattr(iterator, "close", None)
                try:
                    if close is not None:
                        close()
                except ValueError:
                    # Another thread asked for its next event just now: it runs.
                    running = getattr(iterator, "gi_running", False)
                    if not running:
                        raise
            if running:
                # Another thread is inside the iterator, blocked in a read: a generator cannot
                # be closed from outside while it runs, and closing a socket does not wake a
                # read blocked on it; shutting it down does.
                self._closed_elsewhere = True
                _shutdown_read(self._current)
        finally:
            self._stack.close()


class AsyncEventStream(_StreamBase):
    """Async twin of :class:`EventStream`, made by :func:`astream` (asyncio and trio)::

    async with sf.astream("POST", url, provider="openai", json=body) as s:
        async for event in s:
            ...
        message = await s.fold()

    Use it with ``async with`` (or call ``aclose()``): a stream left before its end is closed
    there, since nothing can await a close when an abandoned object is collected. Read to its
    end, it closes itself.
    """

    def __init__(self, method: str, url: Any, **options: Any) -> None:
        super().__init__(method, url, **options)
        _check_client(self._client, asynchronous=True)
        self._stack = contextlib.AsyncExitStack()
        self._iterator: AsyncIterator[AnyEvent] | None = None

    async def __aenter__(self) -> AsyncEventStream:
        self._entered = True
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def open(self) -> None:
        """Send the request; raise ``StreamError`` / ``ProtocolError`` before any event."""
        if self.response is not None:
            return
        if self._closed:
            raise RuntimeError("this stream is closed")
        try:
            self.response = await self._send(self._request_kwargs)
        except BaseException as exc:
            await self.aclose()
            error = self._opening_failed(exc)
            if error is exc:
                raise
            raise error from exc

    async def _send(self, kwargs: dict[str, Any]) -> httpx.Response:
        client = self._client
        if client is None:
            import httpx

            read, connect = _DEFAULT_TIMEOUT
            client = self._client = await self._stack.enter_async_context(
                httpx.AsyncClient(
                    timeout=httpx.Timeout(read, connect=connect), verify=_ssl_context()
                )
            )
        while True:
            response: httpx.Response | None = None
            try:
                async with contextlib.AsyncExitStack() as attempt:
                    opened: httpx.Response = await attempt.enter_async_context(
                        _aopen_stream(client, self.method, self.url, self._timed(client, kwargs))
                    )
                    response = opened
                    await acheck_response(opened, self.provider)
                    self._stack.push_async_exit(attempt.pop_all())
                    return opened
            except Exception as exc:
                delay = self._retry_delay(exc, response)
                if delay is None:
                    raise
            await _apause(delay)
            if self._closed:
                raise self._refused.pop()

    def _connect(self, cursor: Cursor) -> Any:
        if cursor.attempt == 0 and self.response is not None:
            self._current = self.response
            return self.response
        self._check_open()
        kwargs = _merge_cursor(self.url, self._request_kwargs, cursor, self._client)
        assert self._client is not None
        return self._tracked(
            _aopen_stream(self._client, self.method, self.url, self._timed(self._client, kwargs))
        )

    @contextlib.asynccontextmanager
    async def _tracked(
        self, manager: contextlib.AbstractAsyncContextManager[httpx.Response]
    ) -> AsyncGenerator[httpx.Response]:
        async with manager as response:
            self._current = response
            self._check_open()  # aclose() came while the request was made: it did not see it
            yield response

    async def _make_iterator(self) -> AsyncIterator[AnyEvent]:
        await self.open()
        from .resumable import aevents_resumable

        return aevents_resumable(self._connect, **self._options())

    def events(self) -> AsyncIterator[AnyEvent]:
        """The events not yet read (the stream itself: a second loop continues).

        Nothing once the stream is closed or read to the end.
        """
        return self

    def __aiter__(self) -> AsyncIterator[AnyEvent]:
        return self

    async def __anext__(self) -> AnyEvent:
        # A class, not an async generator: leaving ``async for`` early abandons nothing that
        # the event loop would have to finalize (trio warns about abandoned generators).
        if self._closed:
            raise StopAsyncIteration
        if self._iterator is None:
            self._iterator = await self._make_iterator()
        try:
            event = await self._iterator.__anext__()
        except StopAsyncIteration:
            await self.aclose()
            raise
        except Exception as exc:
            if self._closed_elsewhere:
                # Another task closed the stream while this one read (see EventStream).
                await self.aclose()
                raise StopAsyncIteration from None
            if isinstance(exc, StreamfoldError):
                self._annotate(exc)
            await self.aclose()
            raise
        except BaseException:
            await self.aclose()
            raise
        self._add(event)
        return event

    @property
    def text_stream(self) -> AsyncIterator[str]:
        """The answer's text as it arrives (see ``EventStream.text_stream``)."""
        return _AsyncTexts(self)

    async def fold(self) -> Message:
        """Read the rest of the stream and return the final message (see ``EventStream``)."""
        async for _ in self:
            pass
        return self._result()

    async def aclose(self) -> None:
        """Close the response (and the temporary client). Safe to call twice, and from
        another task while one reads: its read is ended and its loop ends."""
        self._closed = True
        iterator = self._iterator
        try:
            if getattr(iterator, "ag_running", False):
                # Another task is inside the iterator, awaiting a read: an async generator
                # cannot be closed while it runs; closing the response ends that read.
                self._closed_elsewhere = True
                current = self._current
                if current is not None:
                    await current.aclose()
            else:
                aclose = getattr(iterator, "aclose", None)
                if aclose is not None:
                    await aclose()
        finally:
            await self._stack.aclose()


def _client_module(client: object) -> Any:
    """The module of ``client``'s classes: httpx2 for an ``httpx2.Client`` or ``AsyncClient``
    (the OpenAI and Anthropic SDKs' own client), else httpx. Its timeouts and exceptions are
    that module's."""
    module = _httpx_module(client, ("Client", "AsyncClient"))
    if module is not None:
        return module
    import httpx

    return httpx


def _check_client(client: object, *, asynchronous: bool) -> None:
    """Refuse the other kind of httpx client, saying which function takes it (it failed at
    the request, with a TypeError about context manager protocols)."""
    if client is None:
        return
    httpx = _client_module(client)

    if asynchronous and isinstance(client, httpx.Client):
        raise TypeError(
            "sf.astream(client=...) takes an httpx.AsyncClient, got an httpx.Client: "
            "use sf.stream with it, or pass an httpx.AsyncClient"
        )
    if not asynchronous and isinstance(client, httpx.AsyncClient):
        raise TypeError(
            "sf.stream(client=...) takes an httpx.Client, got an httpx.AsyncClient: "
            "use sf.astream with it (async with / async for), or pass an httpx.Client"
        )


class _Closed(Exception):
    """Raised into the resumable machinery when ``close()`` ended its connection."""


def _shutdown_read(response: httpx.Response | None) -> None:
    """End a read blocked on ``response``'s connection in another thread: its socket (httpx's
    ``network_stream`` extension) is shut down, which wakes the read; best effort."""
    if response is None:
        return
    network_stream = response.extensions.get("network_stream")
    get_extra_info = getattr(network_stream, "get_extra_info", None)
    sock = get_extra_info("socket") if get_extra_info is not None else None
    shutdown = getattr(sock, "shutdown", None)
    if shutdown is not None:
        import socket

        with contextlib.suppress(OSError, ValueError):
            shutdown(socket.SHUT_RDWR)


def _text_of(event: Event) -> str:
    """The answer text an event adds: a text block's delta, or the text its start carries
    (choice 0, the one ``fold()`` returns). Run on every event: its classes are read once."""
    if isinstance(event, (BlockDelta, BlockStart)) and event.kind == "text" and event.choice == 0:
        return event.text
    return ""


def _texts(events: Iterator[AnyEvent]) -> Generator[str]:
    for event in events:
        text = _text_of(event)
        if text:
            yield text


class _AsyncTexts:
    """``AsyncEventStream.text_stream``: a class, not an async generator, for the reason
    ``AsyncEventStream.__anext__`` gives (leaving the loop early abandons nothing)."""

    __slots__ = ("_stream",)

    def __init__(self, stream: AsyncEventStream) -> None:
        self._stream = stream

    def __aiter__(self) -> _AsyncTexts:
        return self

    async def __anext__(self) -> str:
        while True:
            text = _text_of(await self._stream.__anext__())
            if text:
                return text


def stream(
    method: str,
    url: Any,
    *,
    provider: ProviderName,
    client: httpx.Client | httpx2.Client | None = None,
    strict: bool = False,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    resume: bool = False,
    max_reconnects: int = 5,
    idle_timeout: float | None = None,
    initial_delay: float = 0.5,
    max_delay: float = 30.0,
    max_retries: int = 2,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    **request_kwargs: Any,
) -> EventStream:
    """Make a streamed request with httpx and read it as events or a folded message.

    ``request_kwargs`` go to ``httpx.Client.stream`` (``json=``, ``headers=``, ``params=``,
    ``timeout=``, ``auth=``…). Without ``client`` a temporary ``httpx.Client`` is made (600 s
    read timeout, 5 s connect) and closed with the stream.

    ``resume=True`` makes the stream resumable (see :func:`streamfold.events_resumable`): when
    the connection drops after the stream sent an SSE ``id`` or a provider sequence, the same
    request is sent again with ``Last-Event-ID`` / ``after_sequence`` / ``starting_after``.
    Use it for endpoints that resume that way (a Clouisle run stream, SSE endpoints honouring
    ``Last-Event-ID``); OpenAI Responses resumes on a different URL, so use
    :func:`streamfold.fold_resumable` with your own ``connect`` there. A stream that never sent
    an id or a sequence is never re-requested. ``max_reconnects``, ``idle_timeout``,
    ``initial_delay`` and ``max_delay`` are those of :func:`streamfold.events_resumable`;
    ``idle_timeout`` also bounds the wait for the first response's head (``IdleTimeoutError``,
    caused by httpx's ``ReadTimeout``).

    ``max_retries`` (2, as the OpenAI and Anthropic SDKs): a first request refused before any
    byte of its stream (408, 409, 425, 429, or a connection that could not be made) is sent
    again up to that many times, after ``retry-after-ms`` / ``Retry-After`` (capped by
    ``max_delay``), else ``initial_delay`` doubled each time with jitter. A 5xx (503 and 529
    included, or a connection lost before the response) is sent again only when doing so
    cannot act twice: an idempotent method, an ``Idempotency-Key`` header, or a model API;
    not a POST to an agent platform (``clouisle``, ``onecortex``, ``auto``). A server's
    ``x-should-retry``
    decides. Timeouts are not retried. The error finally raised is the last attempt's, its
    ``attempts`` the number of requests made. Once the stream answered, nothing is sent again
    except by ``resume=True``.

    ``max_message_bytes`` caps what the stream's fold keeps (``fold()``, ``snapshot()``; see
    :class:`streamfold.Folder`, 256 MiB by default): past it, ``ProtocolError`` with the
    partial message.
    """
    return EventStream(
        method,
        url,
        provider=provider,
        client=client,
        strict=strict,
        max_event_bytes=max_event_bytes,
        resume=resume,
        max_reconnects=max_reconnects,
        idle_timeout=idle_timeout,
        initial_delay=initial_delay,
        max_delay=max_delay,
        max_retries=max_retries,
        max_message_bytes=max_message_bytes,
        request_kwargs=request_kwargs,
    )


def astream(
    method: str,
    url: Any,
    *,
    provider: ProviderName,
    client: httpx.AsyncClient | httpx2.AsyncClient | None = None,
    strict: bool = False,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    resume: bool = False,
    max_reconnects: int = 5,
    idle_timeout: float | None = None,
    initial_delay: float = 0.5,
    max_delay: float = 30.0,
    max_retries: int = 2,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    **request_kwargs: Any,
) -> AsyncEventStream:
    """Async twin of :func:`stream` with ``httpx.AsyncClient`` (asyncio and trio)."""
    return AsyncEventStream(
        method,
        url,
        provider=provider,
        client=client,
        strict=strict,
        max_event_bytes=max_event_bytes,
        resume=resume,
        max_reconnects=max_reconnects,
        idle_timeout=idle_timeout,
        initial_delay=initial_delay,
        max_delay=max_delay,
        max_retries=max_retries,
        max_message_bytes=max_message_bytes,
        request_kwargs=request_kwargs,
    )
