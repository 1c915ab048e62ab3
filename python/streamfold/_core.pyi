"""The native core. Users import from ``streamfold``, never from here."""

from collections.abc import Callable, Sequence
from typing import Any, Literal, final

__all__ = [
    "JsonAccumulator",
    "JsonChange",
    "JsonLinesDecoder",
    "NativeClient",
    "NativeHub",
    "NativeStream",
    "NumberedCut",
    "ReadClock",
    "SSEDecoder",
    "ServerSentEvent",
    "SlotBuilder",
    "TemplateCut",
    "TextBuffer",
    "__version__",
    "_bench_str_from_utf8",
    "encode_sse",
    "encode_sse_comment",
    "json_frame",
    "learn_cut",
    "register_errors",
    "register_transport_errors",
]

__version__: str

def _bench_str_from_utf8(data: bytes, cpython: bool = False, repeat: int = 1) -> str: ...
def register_errors(
    protocol: type[Exception],
    invalid_event_json: type[Exception],
    invalid_json: type[Exception],
    incomplete_json: type[Exception],
) -> None: ...
def register_transport_errors(*classes: type[Exception]) -> None: ...
def json_frame(head: bytes, text: str, tail: bytes) -> bytes:
    """``head`` + ``text`` escaped as the inside of a JSON string + ``tail``."""

def encode_sse(
    data: str, *, event: str | None = None, id: str | None = None, retry: int | None = None
) -> bytes:
    """One server-sent event as ``text/event-stream`` bytes (see docs/sse.md)."""

def encode_sse_comment(text: str) -> bytes:
    """A comment (a keep-alive such as ``: ping``) as ``text/event-stream`` bytes."""

def learn_cut(
    data: bytes, path: Sequence[str | int], text: str, padding_keys: Sequence[str]
) -> tuple[str, str, int, str] | None: ...

@final
class ServerSentEvent:
    def __new__(
        cls,
        event: str | None = None,
        data: str | None = None,
        id: str | None = None,
        retry: int | None = None,
    ) -> ServerSentEvent: ...
    @property
    def event(self) -> str: ...
    @property
    def data(self) -> str: ...
    @property
    def id(self) -> str: ...
    @property
    def retry(self) -> int | None: ...
    @property
    def data_bytes(self) -> bytes: ...
    def json(self) -> Any:
        """The data parsed as JSON; data that is not JSON raises
        ``streamfold.InvalidEventJsonError`` (a ``ProtocolError`` and a
        ``json.JSONDecodeError``)."""
    def encode(self) -> bytes:
        """The event as ``text/event-stream`` bytes (see ``streamfold.encode_sse``)."""
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class SSEDecoder:
    def __new__(cls, *, max_event_bytes: int = 16777216) -> SSEDecoder: ...
    def feed(self, chunk: bytes | bytearray | memoryview) -> list[ServerSentEvent]: ...
    def close(self) -> list[ServerSentEvent]: ...
    @property
    def last_event_id(self) -> str: ...
    @property
    def retry(self) -> int | None: ...
    @property
    def dropped_partial(self) -> bool: ...
    @property
    def position(self) -> int: ...
    @property
    def max_event_bytes(self) -> int: ...
    def arm(
        self,
        cut: TemplateCut | NumberedCut,
        event: str,
        sink: TextBuffer | JsonAccumulator | Callable[[str], object],
        refused: Callable[[str, BaseException], object] | None = None,
        *,
        room: int = ...,
        sequence: int | None = None,
        clock: ReadClock | None = None,
    ) -> None: ...
    def arm_events(
        self,
        cut: TemplateCut | NumberedCut,
        event: str,
        build: SlotBuilder,
        block: tuple[int, str, int],
        *,
        sequence: int | None = None,
    ) -> None: ...
    def feed_events(self, chunk: object) -> tuple[list[Any], list[ServerSentEvent]] | None: ...
    def take_events(self) -> list[Any]: ...
    def disarm(self) -> None: ...
    @property
    def armed(self) -> bool: ...
    def feed_folding(self, chunk: object) -> list[ServerSentEvent] | None: ...
    def feed_stepping(self, chunk: bytes | bytearray | memoryview) -> list[ServerSentEvent]: ...
    def resume(self) -> list[ServerSentEvent] | None: ...
    def take_folded(self) -> tuple[int, int, int, int | None]: ...

@final
class JsonLinesDecoder:
    def __new__(cls, *, max_line_bytes: int = 16777216) -> JsonLinesDecoder: ...
    def feed(self, chunk: bytes | bytearray | memoryview) -> list[Any]: ...
    def close(self) -> list[Any]: ...
    @property
    def position(self) -> int: ...
    @property
    def max_line_bytes(self) -> int: ...

@final
class JsonChange:
    def __new__(
        cls, path: tuple[str | int, ...], kind: str, text: str | None = None
    ) -> JsonChange: ...
    @property
    def path(self) -> tuple[str | int, ...]: ...
    @property
    def kind(self) -> Literal["set", "grew", "completed"]: ...
    @property
    def text(self) -> str | None: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class JsonAccumulator:
    def __new__(cls) -> JsonAccumulator: ...
    def push(self, fragment: str) -> None: ...
    @property
    def text(self) -> str: ...
    @property
    def is_complete(self) -> bool: ...
    def value(self) -> Any: ...
    def partial(self) -> Any: ...
    def partial_with_changes(self) -> tuple[Any, list[JsonChange]]: ...
    def __sizeof__(self) -> int: ...

@final
class TextBuffer:
    def __new__(cls) -> TextBuffer: ...
    def append(self, fragment: str) -> None: ...
    def text(self) -> str: ...
    def __len__(self) -> int: ...
    def __bool__(self) -> bool: ...

@final
class ReadClock:
    """``ReadClock(now=None)``: the arrival times of one fold's reads, in seconds since it was
    made; ``now`` is a clock to read instead of the monotonic one. The fold that reads on it
    says its room first (``follow``)."""

    def __new__(cls, now: Callable[[], float] | None = None) -> ReadClock: ...
    def follow(self, room: int) -> None: ...
    def arrive(self) -> None: ...
    def pin(self, at: float) -> None: ...
    def handled(self, room: int) -> None: ...
    def times_so_far(
        self,
    ) -> tuple[float | None, float | None, float | None, float | None, int]: ...

@final
class SlotBuilder:
    """``SlotBuilder(cls, names, fixed).build(*values)``: ``object.__new__(cls)``, then
    ``object.__setattr__`` of each name in ``names`` to its value and of each ``fixed`` pair."""

    def __new__(
        cls,
        type_: type,
        names: Sequence[str],
        fixed: Sequence[tuple[str, Any]],
        defaults: dict[str, Any] | None = None,
        /,
    ) -> SlotBuilder: ...
    def build(self, *values: Any) -> Any: ...
    def fill(self, obj: Any, *values: Any) -> None: ...
    def init(self, obj: Any, kwargs: dict[str, Any], /) -> bool: ...

@final
class TemplateCut:
    """``TemplateCut(prefix, rest).read(frame)``: the body of a frame whose data is ``prefix``
    + a JSON string body + ``rest`` (+ spaces and ``}`` when ``padded_end``; + an alphanumeric
    padding value and ``padding_end`` when that is given), else ``None`` (see
    ``providers/_chunk_template``)."""

    def __new__(
        cls,
        prefix: bytes,
        rest: bytes,
        padded_end: bool = False,
        padding_end: bytes | None = None,
    ) -> TemplateCut: ...
    def read(self, frame: object) -> str | None: ...

@final
class NumberedCut:
    """``NumberedCut(prefix, middle, rest).read(frame)``: ``(number, body)`` of a frame whose data
    is ``prefix`` + an unsigned integer as JSON writes it (at most 2**64 - 1) + ``middle`` + a
    JSON string body + ``rest`` (padded as for ``TemplateCut``), else ``None``; with ``middle``
    ``None``, the data has no number (``prefix`` + body + ``rest``) and ``number`` is ``None``
    (see ``providers/_chunk_template``)."""

    def __new__(
        cls,
        prefix: bytes,
        middle: bytes | None,
        rest: bytes,
        padded_end: bool = False,
        padding_end: bytes | None = None,
    ) -> NumberedCut: ...
    def read(self, frame: object) -> tuple[int | None, str] | None: ...

@final
class NativeClient:
    def __new__(
        cls,
        *,
        verify: bool,
        ca_pem: bytes | None,
        identity_pem: bytes | None,
        proxy: str | None,
        connect_timeout: float | None,
        http2: bool,
    ) -> NativeClient: ...
    def start(
        self,
        method: str,
        url: str,
        headers: Sequence[tuple[str, bytes]],
        body: bytes | None,
        read_timeout: float | None,
        max_redirects: int,
        hub: NativeHub | None = None,
    ) -> NativeStream: ...
    def close(self) -> None: ...
    @staticmethod
    def check_headers(headers: Sequence[tuple[str, bytes]]) -> None: ...

@final
class NativeHub:
    def __new__(cls, fd: int) -> NativeHub: ...
    def drain(self) -> list[int]: ...
    def close(self) -> None: ...

#: A response's head: status, reason, HTTP version, header pairs, URL.
_Head = tuple[int, str, str, list[tuple[str, str]], str]

@final
class NativeStream:
    @property
    def id(self) -> int: ...
    def try_head(self) -> _Head | None: ...
    def wait_head(self) -> _Head: ...
    def read(self) -> bytes: ...
    def try_read(self) -> bytes | None: ...
    def try_read_marked(self) -> tuple[bytes, list[tuple[int, float]]] | None: ...
    def set_batch(self, batch: int) -> None: ...
    def complete(self) -> bool: ...
    def close(self) -> None: ...
