"""streamfold: the streamed responses of LLM and agent APIs as typed events and final messages.

    import streamfold as sf

    for event in sf.events(response.iter_bytes(), provider="cohere-v2"):
        ...
    message = sf.fold(response.iter_bytes(), provider="anthropic")

The manual is in docs/ (docs/README.md); the layers in docs/ARCHITECTURE.md.
"""

from __future__ import annotations

import contextlib

from ._client.stream import AsyncEventStream, EventStream, astream, stream
from ._core import (
    JsonAccumulator,
    JsonChange,
    JsonLinesDecoder,
    ServerSentEvent,
    SSEDecoder,
    encode_sse,
    encode_sse_comment,
)
from ._core import __version__ as __version__
from ._engine.folder import Folder
from ._engine.pipeline import Pipeline
from ._errors import (
    ConnectionLostError,
    IncompleteJsonError,
    IncompleteStreamError,
    InvalidEventJsonError,
    InvalidJsonError,
    ProtocolError,
    StreamError,
    StreamfoldError,
)
from ._events import (
    AnyEvent,
    BlockDelta,
    BlockEnd,
    BlockStart,
    CitationAdded,
    Event,
    MediaAdded,
    MessageDelta,
    MessageEnd,
    MessageStart,
    Notice,
    RunStatus,
    SignatureDelta,
    SourcesAdded,
    StepEnd,
    StepStart,
    ToolResultAdded,
    Unknown,
    UsageUpdate,
    event_from_dict,
)
from ._message import Block, Citation, Message, Step, StreamTiming, ToolCall, ToolResult, Usage
from ._providers import PROVIDER_NAMES
from ._read.events import aevents, events
from ._read.fold import afold, fold
from ._read.framing import aiter_json_lines, aiter_sse, iter_json_lines, iter_sse
from ._read.jsonbody import events_json, fold_json
from ._relay import AsyncRelay, Relay, arelay, relay
from ._resume.drivers import (
    Cursor,
    IdleTimeoutError,
    aevents_resumable,
    afold_resumable,
    events_resumable,
    fold_resumable,
)
from ._transport import Client
from ._types import ProviderName
from ._writers import Writer

__all__ = [
    "PROVIDER_NAMES",
    "AnyEvent",
    "AsyncEventStream",
    "AsyncRelay",
    "Block",
    "BlockDelta",
    "BlockEnd",
    "BlockStart",
    "Citation",
    "CitationAdded",
    "Client",
    "ConnectionLostError",
    "Cursor",
    "Event",
    "EventStream",
    "Folder",
    "IdleTimeoutError",
    "IncompleteJsonError",
    "IncompleteStreamError",
    "InvalidEventJsonError",
    "InvalidJsonError",
    "JsonAccumulator",
    "JsonChange",
    "JsonLinesDecoder",
    "MediaAdded",
    "Message",
    "MessageDelta",
    "MessageEnd",
    "MessageStart",
    "Notice",
    "Pipeline",
    "ProtocolError",
    "ProviderName",
    "Relay",
    "RunStatus",
    "SSEDecoder",
    "ServerSentEvent",
    "SignatureDelta",
    "SourcesAdded",
    "Step",
    "StepEnd",
    "StepStart",
    "StreamError",
    "StreamTiming",
    "StreamfoldError",
    "ToolCall",
    "ToolResult",
    "ToolResultAdded",
    "Unknown",
    "Usage",
    "UsageUpdate",
    "Writer",
    "aevents",
    "aevents_resumable",
    "afold",
    "afold_resumable",
    "aiter_json_lines",
    "aiter_sse",
    "arelay",
    "astream",
    "encode_sse",
    "encode_sse_comment",
    "event_from_dict",
    "events",
    "events_json",
    "events_resumable",
    "fold",
    "fold_json",
    "fold_resumable",
    "iter_json_lines",
    "iter_sse",
    "relay",
    "stream",
]


# The public names say they are streamfold's, not a private module's (as httpx does): that is
# what tracebacks, reprs, pickles and documentation tools show. The Rust classes say so
# themselves (``#[pyclass(module = "streamfold")]``).
def _claim(names: list[str]) -> None:
    namespace = globals()
    for name in names:
        obj = namespace[name]
        if isinstance(obj, type) or callable(obj):
            with contextlib.suppress(AttributeError, TypeError):
                obj.__module__ = "streamfold"


_claim(__all__)
