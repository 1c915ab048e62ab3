"""Which client made a response (httpx, httpx2, aiohttp, requests), looked up only in
``sys.modules``: ``import streamfold`` imports none of them."""

from __future__ import annotations

import sys
from collections.abc import (
    AsyncIterable,
    Iterable,
)
from typing import TYPE_CHECKING, Any

from .._failures import HTTPX_MODULES

if TYPE_CHECKING:
    import httpx


# -- which client made the response ---------------------------------------------------------


def httpx_module(source: object, kinds: tuple[str, ...] = ("Response",)) -> Any:
    """The module (httpx or httpx2) of which ``source`` is one of the classes ``kinds``
    (a ``Response`` unless told), or ``None``."""
    for name in HTTPX_MODULES:
        module = sys.modules.get(name)
        if module is None:
            continue
        for kind in kinds:  # a loop: this runs for every response read
            if isinstance(source, getattr(module, kind)):
                return module
    return None


def as_httpx(source: object) -> httpx.Response | None:
    if httpx_module(source) is None:
        return None
    response: httpx.Response = source  # type: ignore[assignment]
    return response


def as_aiohttp(source: object) -> Any:
    aiohttp_module = sys.modules.get("aiohttp")
    if aiohttp_module is not None and isinstance(source, aiohttp_module.ClientResponse):
        return source
    return None


def as_requests(source: object) -> Any:
    requests_module = sys.modules.get("requests")
    if requests_module is not None and isinstance(source, requests_module.Response):
        return source
    return None


def as_native(source: object) -> Any:
    """A response of ``sf.Client`` (``_transport``, a layer above), which its class declares
    (``streamfold_native``): it reads itself, ``iter_bytes()`` waiting without the GIL, or
    ``aread_chunk()`` / ``apump(feed)`` in the event loop (see ``_transport/_response.py``)."""
    if getattr(source.__class__, "streamfold_native", False) is True:
        return source
    return None


def is_response(source: object) -> bool:
    """A response of a supported client, read through its adapter (some are iterable
    themselves, as ``requests.Response``; the clients' byte iterators are plain iterables)."""
    return (
        as_native(source) is not None
        or as_httpx(source) is not None
        or as_aiohttp(source) is not None
        or as_requests(source) is not None
    )


def httpx_is_async_only(response: httpx.Response) -> bool:
    httpx = httpx_module(response)
    stream = response.stream
    return not isinstance(stream, httpx.SyncByteStream) and not response.is_stream_consumed


def not_a_response(source: object, *, asynchronous: bool = False) -> TypeError:
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
    if not asynchronous and is_async_source(source):
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


def is_async_source(source: object) -> bool:
    """Something only the async API can read: an async iterable, an awaitable (a coroutine,
    aiohttp's request) or an async context manager (``AsyncClient.stream(...)``)."""
    return (
        isinstance(source, AsyncIterable)
        or hasattr(source, "__aenter__")
        or hasattr(source, "__await__")
    )
