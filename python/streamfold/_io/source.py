"""Where the bytes come from: any iterable of bytes, or an HTTP client's response.

``sync_byte_chunks`` / ``async_byte_chunks`` are context managers yielding an iterator of
bytes and closing whatever they opened when the caller stops early or raises.
A response is told apart from an iterable by its class (``detect``), without importing any
client library.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from .aio import NativeBody, async_response_chunks
from .detect import is_response
from .sync import sync_response_chunks

if TYPE_CHECKING:
    from typing import TypeAlias

    import aiohttp
    import httpx
    import httpx2
    import requests

    from .._transport import Response as NativeResponse

    #: What the sync API reads (``events``, ``fold``): an iterable of bytes chunks (a list, a
    #: file, ``response.iter_bytes()``) or the response of a sync HTTP client. A ``str`` or a
    #: whole ``bytes`` body is refused (``[body]`` is one chunk).
    Chunks: TypeAlias = (
        Iterable[bytes | bytearray | memoryview]
        | httpx.Response
        | httpx2.Response
        | requests.Response
        | NativeResponse
    )
    #: What the async API reads (``aevents``, ``afold``): an async iterable of bytes chunks or
    #: the response of an async HTTP client.
    AsyncChunks: TypeAlias = (
        AsyncIterable[bytes | bytearray | memoryview]
        | httpx.Response
        | httpx2.Response
        | aiohttp.ClientResponse
        | NativeResponse
    )
else:
    # At run time (``typing.get_type_hints``) the clients need not be installed.
    Chunks = AsyncChunks = Any

__all__ = ["async_byte_chunks", "looks_like_response", "refuse_str", "sync_byte_chunks"]


def refuse_str(source: object) -> None:
    """Refuse a ``str`` or a whole ``bytes`` body where an iterable of bytes chunks belongs,
    saying what to pass (iterating either would give characters or ints)."""
    if isinstance(source, (str, bytes, bytearray, memoryview)):
        kind = type(source).__name__
        raise TypeError(
            f"expected an iterable of bytes chunks, got {kind}: wrap a whole body as [body]"
            if kind != "str"
            else "expected an iterable of bytes chunks, got str: pass the raw response bytes "
            "(httpx: response.iter_bytes())"
        )


def sync_byte_chunks(
    source: Any, provider: str
) -> contextlib.AbstractContextManager[Iterator[bytes]]:
    """A context manager yielding an iterator of the source's bytes chunks, closing what it
    opened on exit."""
    cls = source.__class__
    if cls is list or cls is tuple:
        # Most short calls pass their body as ``[body]``: nothing to check, open or close.
        return contextlib.nullcontext(iter(source))
    refuse_str(source)
    if cls.__module__ == "builtins" and hasattr(cls, "__iter__"):
        # An iterator or generator of the language's own (``iter(reads)``, a generator
        # function's): not a response, nothing to probe. A plain class here, not a
        # ``contextlib`` generator: on a stream of a few events the generator-based manager
        # and the ``Iterable`` check cost as much as folding a frame.
        return _Iterating(source)
    return _opened_chunks(source, provider)


class _Iterating:
    """Iterate ``source``; on exit, close the iterator if it can be closed (a generator's
    ``finally`` then runs when the caller stops early)."""

    __slots__ = ("_iterator",)

    def __init__(self, source: Iterable[bytes]) -> None:
        self._iterator = iter(source)

    def __enter__(self) -> Iterator[bytes]:
        return self._iterator

    def __exit__(self, *exc_info: object) -> None:
        close = getattr(self._iterator, "close", None)
        if close is not None:
            close()


@contextlib.contextmanager
def _opened_chunks(source: Any, provider: str) -> Iterator[Iterator[bytes]]:
    if (
        not isinstance(source, Iterable)
        or looks_like_response(source)
        # aiohttp's request is iterable too (a legacy `yield from`), of futures, not bytes:
        # an async context manager or awaitable is refused, naming the async twins.
        or (
            type(source).__module__ != "builtins"
            and (hasattr(source, "__aenter__") or hasattr(source, "__await__"))
        )
    ):
        with sync_response_chunks(source, provider) as it:
            yield it
        return
    with _Iterating(source) as iterator:
        yield iterator


def async_byte_chunks(
    source: Any, provider: str
) -> contextlib.AbstractAsyncContextManager[AsyncIterator[bytes]]:
    """The async twin of :func:`sync_byte_chunks`."""
    refuse_str(source)
    cls = source.__class__
    if (cls.__module__ == "builtins" and hasattr(cls, "__aiter__")) or cls is NativeBody:
        # An async generator (as ``_Iterating``), or a native body its stream opened and checked.
        return _AsyncIterating(source)
    return _opened_async_chunks(source, provider)


class _AsyncIterating:
    """Iterate ``source`` asynchronously; on exit, ``aclose`` the iterator if it has one."""

    __slots__ = ("_iterator",)

    def __init__(self, source: AsyncIterable[bytes]) -> None:
        self._iterator = aiter(source)

    async def __aenter__(self) -> AsyncIterator[bytes]:
        return self._iterator

    async def __aexit__(self, *exc_info: object) -> None:
        aclose = getattr(self._iterator, "aclose", None)
        if aclose is not None:
            await aclose()


@contextlib.asynccontextmanager
async def _opened_async_chunks(source: Any, provider: str) -> AsyncIterator[AsyncIterator[bytes]]:
    if not isinstance(source, AsyncIterable) or looks_like_response(source):
        async with async_response_chunks(source, provider) as it:
            yield it
        return
    async with _AsyncIterating(source) as iterator:
        yield iterator


def looks_like_response(source: object) -> bool:
    # A list, a generator (most sources) is told apart at once.
    return type(source).__module__ != "builtins" and is_response(source)
