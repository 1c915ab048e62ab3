"""streamfold: the streamed responses of LLM and agent APIs as typed events and final messages.

    import streamfold as sf

    for event in sf.events(response.iter_bytes(), provider="cohere-v2"):
        ...
    message = sf.fold(response.iter_bytes(), provider="anthropic")

See the README for the full manual.
"""

from __future__ import annotations

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
)
from ._types import ProviderName
from .api import aevents, events
from .errors import (
    ConnectionLostError,
    IncompleteJsonError,
    IncompleteStreamError,
    InvalidEventJsonError,
    InvalidJsonError,
    ProtocolError,
    StreamError,
    StreamfoldError,
)
from .fold import afold, fold
from .folder import Folder
from .framing import aiter_json_lines, aiter_sse, iter_json_lines, iter_sse
from .http import AsyncEventStream, EventStream, astream, stream
from .jsonbody import events_json, fold_json
from .jsonform import event_from_dict
from .message import Block, Citation, Message, Step, ToolCall, ToolResult, Usage
from .pipeline import Pipeline
from .providers import PROVIDER_NAMES
from .relay import AsyncRelay, Relay, StreamTiming, arelay, relay
from .resumable import (
    Cursor,
    IdleTimeoutError,
    aevents_resumable,
    afold_resumable,
    events_resumable,
    fold_resumable,
)
from .writers import Writer

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
