"""``sf.Client``: the native HTTP client."""

from __future__ import annotations

import os
import threading
from types import TracebackType
from typing import Any

from .._core import NativeClient
from .._errors import ClientConfigError
from ._request import merge_headers, prepare
from ._response import Response
from ._wake import current_hub

__all__ = ["Client", "shared_client"]

#: LLM streams can be silent for minutes (reasoning models): reads wait as long as the OpenAI
#: and Anthropic SDKs' 600 s; connecting gets 5 s.
DEFAULT_TIMEOUT = 600.0
DEFAULT_CONNECT_TIMEOUT = 5.0

_UNSET: Any = object()


def _read_file(path: Any, what: str) -> bytes:
    try:
        with open(os.fspath(path), "rb") as file:
            return file.read()
    except (OSError, TypeError) as exc:
        raise ClientConfigError(f"{what}: cannot read {path!r}: {exc}") from exc


class Client:
    """An HTTP client in streamfold's Rust core (reqwest, tokio, rustls) for streamed requests.

    ``sf.stream(..., client=sf.Client())`` and ``sf.astream(...)`` read through it (they use a
    shared one when no client is given). One client serves every thread and event loop (asyncio
    or trio) at once, its connections pooled; HTTP/1.1, and HTTP/2 where the server offers it
    (ALPN). Bodies are decoded (gzip, br) in the core.

    ``headers``: sent with every request (a request's own headers win). ``verify``: the
    system's trust store (True), a CA bundle file (PEM) to trust instead, or False (no check).
    ``cert``: a client certificate, a PEM file holding certificate and key, or a
    ``(certfile, keyfile)`` pair. ``proxy``: every request through this proxy URL; without it
    ``HTTPS_PROXY`` / ``HTTP_PROXY`` / ``ALL_PROXY`` / ``NO_PROXY`` apply. ``timeout``: the
    longest wait for a response's head and then for each read of its body (None: no limit);
    ``connect_timeout``: for making a connection. Redirects are not followed unless
    ``follow_redirects=True`` (at most ``max_redirects``), and a credential header
    (``Authorization``, ``x-api-key``, ``api-key``, ``x-goog-api-key``, ``Cookie``, any named
    like one) is never sent on to another origin.
    """

    def __init__(
        self,
        *,
        headers: Any = None,
        verify: bool | str | os.PathLike[str] = True,
        cert: str | os.PathLike[str] | tuple[str, str] | None = None,
        proxy: str | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        connect_timeout: float | None = DEFAULT_CONNECT_TIMEOUT,
        follow_redirects: bool = False,
        max_redirects: int = 20,
        http2: bool = True,
    ) -> None:
        ca_pem = None
        if verify is not True and verify is not False:
            ca_pem = _read_file(verify, "verify= (a CA bundle)")
        identity = None
        if cert is not None:
            if isinstance(cert, tuple):
                identity = _read_file(cert[0], "cert=") + b"\n" + _read_file(cert[1], "cert=")
            else:
                identity = _read_file(cert, "cert=")
        if isinstance(max_redirects, bool) or not isinstance(max_redirects, int):
            raise TypeError(f"max_redirects must be an int, got {max_redirects!r}")
        if max_redirects < 0:
            raise ValueError(f"max_redirects must be >= 0, got {max_redirects}")
        self._native = NativeClient(
            verify=verify is not False,
            ca_pem=ca_pem,
            identity_pem=identity,
            proxy=proxy,
            connect_timeout=connect_timeout,
            http2=http2,
        )
        # Checked now, so a bad value fails here rather than at the first request.
        self.headers = merge_headers(headers)
        NativeClient.check_headers(self.headers)
        self.timeout = timeout
        self.follow_redirects = follow_redirects
        self.max_redirects = max_redirects
        self.is_closed = False

    def stream(self, method: str, url: Any, **kwargs: Any) -> _Opening:
        """A streamed request, as a context manager (``with`` or ``async with``) giving its
        :class:`Response` once the head has come; the response is closed on exit.

        ``params``, ``headers``, ``json`` / ``content`` / ``data``, ``timeout`` (this request's
        read timeout), ``follow_redirects``."""
        return _Opening(self, method, url, kwargs)

    def _start(
        self, method: str, url: Any, kwargs: dict[str, Any], hub: Any
    ) -> tuple[Any, float | None]:
        if self.is_closed:
            raise RuntimeError("this sf.Client is closed")
        target, headers, body = prepare(url, self.headers, kwargs)
        timeout = kwargs.get("timeout", _UNSET)
        timeout = self.timeout if timeout is _UNSET else timeout
        follow = kwargs.get("follow_redirects", self.follow_redirects)
        native = self._native.start(
            str(method).upper(),
            target,
            headers,
            body,
            timeout,
            self.max_redirects if follow else 0,
            hub,
        )
        return native, timeout

    def close(self) -> None:
        """Drop the pooled connections; streams still open finish on their own."""
        self.is_closed = True
        self._native.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<sf.Client{' closed' if self.is_closed else ''}>"


class _Opening:
    """``Client.stream(...)``: sends on entering (``with`` or ``async with``)."""

    __slots__ = ("_args", "_client", "_response")

    def __init__(self, client: Client, method: str, url: Any, kwargs: dict[str, Any]) -> None:
        self._client = client
        self._args = (method, url, kwargs)
        self._response: Response | None = None

    def __enter__(self) -> Response:
        native, timeout = self._client._start(*self._args, None)
        try:
            head = native.wait_head()
        except BaseException:
            native.close()
            raise
        self._response = Response(native, head, None, timeout)
        return self._response

    def __exit__(self, *exc: object) -> None:
        if self._response is not None:
            self._response.close()

    async def __aenter__(self) -> Response:
        hub = current_hub()
        native, timeout = self._client._start(*self._args, hub.native)
        hub.attach()
        try:
            head = native.try_head()
            if head is None:
                head = await hub.wait(native.id, native.try_head)
        except BaseException:
            native.close()
            hub.detach(native.id)
            raise
        self._response = Response(native, head, hub, timeout)
        return self._response

    async def __aexit__(self, *exc: object) -> None:
        if self._response is not None:
            self._response.close()


#: The shared client, once made (a list: no ``global`` statement to replace it).
_shared: list[Client] = []
_shared_lock = threading.Lock()


def shared_client() -> Client:
    """The client ``sf.stream`` / ``sf.astream`` use when given none, made on first use (and
    again if someone closed it)."""
    if _shared and not _shared[0].is_closed:
        return _shared[0]
    with _shared_lock:
        if not _shared or _shared[0].is_closed:
            _shared[:] = [Client()]
        return _shared[0]
