"""The native HTTP client (``sf.Client``): the request, the body's decoding and its wait in
Rust; Python woken for what it reads. See ``docs/http.md``."""

from __future__ import annotations

from .._errors import (
    ConnectError,
    ConnectTimeout,
    DecodingError,
    HTTPError,
    InvalidURL,
    LocalProtocolError,
    NetworkError,
    PoolTimeout,
    ReadError,
    ReadTimeout,
    RemoteProtocolError,
    StreamClosed,
    TimeoutException,
    TooManyRedirects,
    TransportError,
    UnsupportedProtocol,
)
from ._client import Client, shared_client
from ._request import merge_cursor
from ._response import Response

__all__ = [
    "Client",
    "ConnectError",
    "ConnectTimeout",
    "DecodingError",
    "HTTPError",
    "InvalidURL",
    "LocalProtocolError",
    "NetworkError",
    "PoolTimeout",
    "ReadError",
    "ReadTimeout",
    "RemoteProtocolError",
    "Response",
    "StreamClosed",
    "TimeoutException",
    "TooManyRedirects",
    "TransportError",
    "UnsupportedProtocol",
    "merge_cursor",
    "shared_client",
]
