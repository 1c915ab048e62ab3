"""Making ``sf.stream``'s request: its headers, the resumed request's cursor, and redirects
that keep credentials with the origin they were given for."""

from __future__ import annotations

import contextlib
import re
from collections.abc import (
    AsyncGenerator,
    Generator,
)
from typing import TYPE_CHECKING, Any

from .. import _transport
from .._io.checks import SSE_TYPES, expected_types
from .._io.detect import httpx_module
from .._transport import Client as NativeClient
from .._transport import merge_cursor as native_merge_cursor

if TYPE_CHECKING:
    from .._resume.drivers import Cursor


#: Timeouts (read, connect) of the shared client ``stream()`` uses without ``client=`` (the
#: ``sf.Client`` defaults): LLM streams can be silent for minutes (reasoning models), so reads
#: get the OpenAI and Anthropic SDKs' 600 s; connecting gets 5 s.
DEFAULT_TIMEOUT = (600.0, 5.0)


# -- stream(): make the request, get the events ----------------------------------------------


def merge_cursor(
    url: Any, request_kwargs: dict[str, Any], cursor: Cursor, client: object = None
) -> dict[str, Any]:
    if client.__class__ is NativeClient:
        return native_merge_cursor(url, request_kwargs, cursor.params, cursor.headers)
    # The client's own module: an httpx2 client reads httpx's Headers as a plain mapping, and
    # encodes its values in ASCII (a non-ASCII SSE id raised UnicodeEncodeError reconnecting).
    httpx = client_module(client)

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


def with_stream_headers(request_kwargs: dict[str, Any], provider: str) -> dict[str, Any]:
    """``request_kwargs`` with the headers httpx-sse's ``connect_sse`` sends (``Accept:
    text/event-stream``, ``Cache-Control: no-store``), each unless ``headers=`` names it
    already, in any case. ``Accept`` only for the providers that stream SSE: Cohere v1 streams
    JSON lines and ``auto`` may be it, so theirs stays httpx's ``*/*``."""
    pairs = header_pairs(request_kwargs.get("headers"))
    named = header_names(pairs)
    wanted = [("Cache-Control", "no-store")]
    if provider != "auto" and expected_types(provider) == SSE_TYPES:
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
        raise client_module(client).TooManyRedirects(
            "Exceeded maximum allowed redirects.", request=request
        )
    if _origin(request.url) != origin:
        for name in [name for name in request.headers if _CREDENTIAL_HEADER.search(name)]:
            del request.headers[name]
    return request


def open_stream(
    client: Any, method: str, url: Any, kwargs: dict[str, Any]
) -> contextlib.AbstractContextManager[Any]:
    """``client.stream(method, url, **kwargs)``, following redirects (when the client or
    ``kwargs`` say so) without sending a credential header to another origin. Without
    redirects it is the client's own context manager: nothing of this module's stays with
    the open stream."""
    if not _follows(client, kwargs):
        return client.stream(method, url, **kwargs)  # type: ignore[no-any-return]
    return _followed(client, method, url, kwargs)


@contextlib.contextmanager
def _followed(client: Any, method: str, url: Any, kwargs: dict[str, Any]) -> Generator[Any]:
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


def aopen_stream(
    client: Any, method: str, url: Any, kwargs: dict[str, Any]
) -> contextlib.AbstractAsyncContextManager[Any]:
    """:func:`open_stream` for an async client."""
    if not _follows(client, kwargs):
        return client.stream(method, url, **kwargs)  # type: ignore[no-any-return]
    return _afollowed(client, method, url, kwargs)


@contextlib.asynccontextmanager
async def _afollowed(
    client: Any, method: str, url: Any, kwargs: dict[str, Any]
) -> AsyncGenerator[Any]:
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


def header_pairs(headers: Any) -> list[tuple[Any, Any]]:
    """``headers`` (None, a dict, pairs, httpx's or httpx2's ``Headers``) as name/value pairs,
    repeated names kept."""
    if headers is None:
        return []
    if hasattr(headers, "multi_items"):
        return list(headers.multi_items())
    if hasattr(headers, "items"):
        return list(headers.items())
    return list(headers)


def header_names(pairs: list[tuple[Any, Any]]) -> set[str]:
    """The lower-cased names of header ``pairs`` (bytes names read as Latin-1, as HTTP does)."""
    return {
        (name.decode("latin-1") if isinstance(name, bytes) else str(name)).lower()
        for name, _ in pairs
    }


def names_header(headers: Any, name: str) -> bool:
    """Whether ``headers`` (a dict, pairs, ``httpx.Headers``, None) has ``name``, any case."""
    return name in header_names(header_pairs(headers))


def client_module(client: object) -> Any:
    """The module of ``client``'s classes: httpx2 for an ``httpx2.Client`` or ``AsyncClient``
    (the OpenAI and Anthropic SDKs' own client), ``streamfold._transport`` for an
    ``sf.Client``, else httpx. Its timeouts and exceptions are that module's."""
    if client.__class__ is NativeClient:
        return _transport
    module = httpx_module(client, ("Client", "AsyncClient"))
    if module is not None:
        return module
    import httpx

    return httpx


def check_client(client: object, *, asynchronous: bool) -> None:
    """Refuse the other kind of httpx client, saying which function takes it (it failed at
    the request, with a TypeError about context manager protocols)."""
    if client is None or client.__class__ is NativeClient:
        return  # one sf.Client serves both
    httpx = client_module(client)

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
