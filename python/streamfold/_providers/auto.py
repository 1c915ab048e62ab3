"""``provider="auto"``: detect the provider from the first frames, then hand over.

The pipeline picks the framing from the first bytes (``{``/``[``: JSON lines, else SSE) and
calls :meth:`AutoProvider.set_framing`. Frames are buffered until one of them decides; then
the chosen provider is made, a ``Notice(kind="provider_detected", data=<name>)`` is emitted
as the first event, the buffered frames are replayed into it (with their own positions), and
every later frame goes to it directly. ``chosen`` holds the chosen name.

How a frame decides (the first frame usually does; see :func:`detect`):

* JSON lines: a line with ``event_type`` is Cohere v1, the only JSON-lines provider.
* SSE, first of all: a Clouisle workflow stream's envelope (``event`` a workflow event's name,
  ``data`` an object, an integer ``sequence``) is Clouisle, with or without ``event:`` lines
  and whatever they name (a resumed workflow stream may open with ``token`` or ``debug``).
* SSE, by event name (the ``event:`` line, else the payload ``type``): ``response.*`` is
  OpenAI Responses; the hyphenated Cohere names (``message-start``, ``content-delta``, …) are
  Cohere v2; ``content_block_*``, ``message_delta``, ``message_stop`` and a ``message_start``
  whose payload has a ``message`` object are Anthropic; a payload with ``v`` is Onecortex
  (as are the names only Onecortex uses); the Clouisle names (``content_delta``,
  ``rag_context``, ``run_start``, a ``message_start`` without ``message``, the workflow
  stream's ``workflow_start``, ``node_start``, …) are Clouisle.
  ``error`` decides by its payload; ``ping`` and ``[DONE]`` decide nothing.
* SSE, by payload shape: ``choices`` (or ``object: "chat.completion.chunk"``) is Chat
  Completions: Mistral when the model is a Mistral model (``mistral-*``, ``magistral-*``,
  ``codestral-*``, ``devstral-*``, ``ministral-*``, ``pixtral-*``, ``open-mistral-*``, …), when
  ``delta.content`` is a list of chunks, or when a tool call has an ``id`` but no ``index``;
  otherwise OpenAI. ``candidates``/``usageMetadata``/``promptFeedback`` is Gemini.
  A lone ``{"error": …}`` is Gemini when the error has a Google RPC ``status``, else OpenAI.

A Chat Completions stream that names no model is OpenAI. Anything else that stays undecided
for :data:`MAX_UNDECIDED_FRAMES` frames, or to the end of the stream, raises
``ProtocolError``: a guess would be a silent wrong answer.
"""

from __future__ import annotations

from typing import Any, ClassVar

from .._errors import ProtocolError, StreamError, StreamfoldError
from .._events import Event, Notice
from .base import FoldingTarget, Framing, Provider
from .clouisle import WORKFLOW_EVENTS
from .registry import provider_class

__all__ = [
    "CHAT",
    "MAX_UNDECIDED_FRAMES",
    "AutoProvider",
    "detect",
    "detect_and_parse",
    "whole_body_error",
]

#: Frames buffered without a decision before giving up.
MAX_UNDECIDED_FRAMES = 16

#: Marks a Chat Completions chunk whose flavour (OpenAI or Mistral) is not yet known.
CHAT = "chat"

COHERE_V2_EVENTS = frozenset(
    {
        "message-start",
        "content-start",
        "content-delta",
        "content-end",
        "tool-plan-delta",
        "tool-call-start",
        "tool-call-delta",
        "tool-call-end",
        "citation-start",
        "citation-end",
        "message-end",
        "debug",
    }
)
ANTHROPIC_EVENTS = frozenset(
    {
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    }
)
ONECORTEX_EVENTS = frozenset(
    {
        "text",
        "tool_call_start",
        "tool_call_args",
        "tool_call_end",
        "tool_result",
        "step_start",
        "step_end",
        "done",
        "error",
    }
)
CLOUISLE_EVENTS = frozenset(
    {
        "message_start",
        "rag_start",
        "rag_context",
        "reasoning_start",
        "reasoning_delta",
        "reasoning_end",
        "content_delta",
        "tool_call",
        "tool_result",
        "media_result",
        "compression_start",
        "compression_end",
        "output_truncated",
        "iteration_cap_reached",
        "message_end",
        "run_start",
        "run_status",
        "input_accepted",
        "run_end",
        # workflow streams' own names (their other events are names any stream may use)
        *(name for name in WORKFLOW_EVENTS if name.startswith(("workflow_", "node_"))),
    }
)
#: Model-name prefixes of Mistral's models (docs.mistral.ai "Models").
MISTRAL_MODEL_PREFIXES = (
    "mistral-",
    "magistral-",
    "codestral-",
    "devstral-",
    "ministral-",
    "pixtral-",
    "voxtral-",
    "open-mistral-",
    "open-mixtral-",
    "open-codestral-",
    "mixtral-",
)


def _by_name(name: str, payload: Any) -> str | None:
    if name.startswith("response."):
        return "openai-responses"
    if name in COHERE_V2_EVENTS:
        return "cohere-v2"
    if name == "message_start":
        return "anthropic" if isinstance(payload.get("message"), dict) else "clouisle"
    if name in ANTHROPIC_EVENTS:
        return "anthropic"
    if name == "error":
        return _by_error(payload)
    if "v" in payload and name in ONECORTEX_EVENTS:
        return "onecortex"
    if name in CLOUISLE_EVENTS:
        return "clouisle"
    if name in ONECORTEX_EVENTS:
        return "onecortex"
    return None


def _by_error(payload: dict[str, Any]) -> str | None:
    """An ``error`` event: every provider shapes it its own way."""
    if "v" in payload:
        return "onecortex"
    if "sequence_number" in payload:
        return "openai-responses"
    nested = isinstance(payload.get("error"), dict)
    if nested and payload.get("type") == "error":
        return "anthropic"
    if nested:
        return "openai"  # Groq's `event: error` with an OpenAI error object
    if "code" in payload or "message" in payload or "msg" in payload:
        return "clouisle"
    if "run_id" in payload or isinstance(payload.get("payload"), dict):
        return "clouisle"  # a run stream's envelope, the error's fields under "payload"
    return None


def _chat_flavour(payload: dict[str, Any]) -> str:
    model = payload.get("model")
    if isinstance(model, str) and model:
        return "mistral" if model.lower().startswith(MISTRAL_MODEL_PREFIXES) else "openai"
    choices = payload.get("choices")
    for choice in choices if isinstance(choices, list) else ():
        delta = choice.get("delta") if isinstance(choice, dict) else None
        if not isinstance(delta, dict):
            continue
        if isinstance(delta.get("content"), list):
            return "mistral"
        calls = delta.get("tool_calls")
        for call in calls if isinstance(calls, list) else ():
            if isinstance(call, dict) and "id" in call and "index" not in call:
                return "mistral"
    if "model" in payload or "prompt_filter_results" in payload:
        return "openai"  # Azure's first chunk: `model: ""` and prompt filter results
    return CHAT


def detect(frame: Any, *, jsonl: bool = False) -> str | None:
    """The provider one frame reveals, :data:`CHAT` for a Chat Completions chunk of unknown
    flavour, or ``None`` when the frame alone cannot tell."""
    return detect_and_parse(frame, jsonl=jsonl)[0]


def detect_and_parse(frame: Any, *, jsonl: bool) -> tuple[str | None, Any]:
    """``detect``, and the frame's data parsed (``None`` if it was not, or is not JSON): the
    chosen provider gets it with the frame rather than parsing it again."""
    if jsonl:
        if isinstance(frame, dict) and isinstance(frame.get("event_type"), str):
            return "cohere-v1", None
        return None, None
    if frame.data == "[DONE]":
        return None, None
    try:
        parsed = frame.json()
    except ValueError:
        parsed = None
    return _by_payload(frame, parsed if isinstance(parsed, dict) else {}), parsed


def _workflow_envelope(payload: dict[str, Any]) -> bool:
    """A Clouisle workflow stream event: ``{"event", "data", "node_id", "timestamp",
    "sequence"}`` with a workflow event's name in ``event`` and its fields in ``data``, whether
    an ``event:`` line names it or not (the name may be one any stream uses: ``token``)."""
    event = payload.get("event")
    return (
        event.__class__ is str  # a list or object is unhashable: no set lookup for it
        and event in WORKFLOW_EVENTS
        and isinstance(payload.get("data"), dict)
        and isinstance(payload.get("sequence"), int)
    )


def _by_payload(frame: Any, payload: dict[str, Any]) -> str | None:
    if _workflow_envelope(payload):
        # Before the name: a resumed workflow stream may open with ``debug`` (a Cohere v2
        # name) or ``token``.
        return "clouisle"
    name = frame.event
    if name == "message":
        name = payload.get("type")
    if isinstance(name, str) and name:
        found = _by_name(name, payload)
        if found is not None:
            return found
    if "choices" in payload or payload.get("object") == "chat.completion.chunk":
        return _chat_flavour(payload)
    if "candidates" in payload or "usageMetadata" in payload or "promptFeedback" in payload:
        return "gemini"
    error = payload.get("error")
    if isinstance(error, dict):
        return "gemini" if "status" in error else "openai"
    return None


#: Top-level keys of an error body beside its message (an HTTP error's JSON, sent with 200).
ERROR_KEYS = frozenset({"message", "detail", "msg", "code", "type", "status", "id", "request_id"})


def _completion(payload: dict[str, Any]) -> tuple[str, str, bool] | None:
    """``(what it is, its provider, whether fold_json reads it)`` when ``payload`` is a
    provider's non-streamed answer, whole."""
    kind = payload.get("object")
    if kind == "chat.completion" or (
        isinstance(payload.get("choices"), list)
        and any(isinstance(c, dict) and "message" in c for c in payload["choices"])
    ):
        return "a Chat Completions response (chat.completion)", "openai", False
    if kind == "response" and "output" in payload:
        return "an OpenAI Responses response", "openai-responses", False
    if payload.get("type") == "message" and "content" in payload:
        return "an Anthropic Messages response", "anthropic", False
    if "candidates" in payload or "promptFeedback" in payload:
        return "a Gemini generateContent response", "gemini", False
    if isinstance(payload.get("message"), dict) and "finish_reason" in payload:
        return "a Cohere v2 chat response", "cohere-v2", False
    if isinstance(payload.get("text"), str) and ("generation_id" in payload or "meta" in payload):
        return "a Cohere v1 chat response", "cohere-v1", False
    if "result" in payload and isinstance(payload.get("events", []), list):
        return "an Onecortex JSON answer", "onecortex", True
    if payload.get("code") == 0 and isinstance(payload.get("data"), list):
        return "a Clouisle catch-up (the run's events as one body)", "clouisle", True
    return None


def _error_object(payload: dict[str, Any]) -> tuple[str, Any] | None:
    """``(message, code)`` when ``payload`` is an error body: ``{"error": …}`` (OpenAI,
    Anthropic, Gemini), ``{"message": …}`` (Cohere), ``{"detail": …}``, ``{"code", "msg"}``."""
    error = payload.get("error")
    if error is not None:
        if isinstance(error, dict):
            message = error.get("message", error)
            code = error.get("code", error.get("type", error.get("status")))
            return str(message), code
        return str(error), payload.get("code", payload.get("type"))
    if payload.keys() <= ERROR_KEYS:
        for key in ("message", "detail", "msg"):
            message = payload.get(key)
            if isinstance(message, str) and message:
                code = payload.get("code", payload.get("type", payload.get("status")))
                return message, code
    return None


def whole_body_error(payload: Any, *, position: int = 0) -> StreamfoldError | None:
    """The error for a body that is one JSON document, not a stream (a host that ignored
    ``"stream": true`` and answered whole, or an error object sent with status 200): a
    ``StreamError`` with the error's own message, or a ``ProtocolError`` saying what the body
    is and what to do; ``None`` when it is neither."""
    if not isinstance(payload, dict):
        return None
    error = _error_object(payload)
    if error is not None:
        message, code = error
        return StreamError(
            message,
            code=code if isinstance(code, (str, int)) and not isinstance(code, bool) else None,
            provider="auto",
            raw=payload,
            position=position,
        )
    completion = _completion(payload)
    if completion is None:
        return None
    what, provider, whole = completion
    todo = (
        f"read it with sf.fold_json(body, provider={provider!r})"
        if whole
        else f'send "stream": true in the request (provider={provider!r} reads its stream)'
    )
    return ProtocolError(
        f"auto: the body is one JSON document, {what}, not a stream: {todo}",
        provider="auto",
        position=position,
        raw=payload,
    )


class AutoProvider(Provider):
    """Detects the provider from the first frames and delegates to it."""

    name: ClassVar[str] = "auto"
    framing: ClassVar[Framing] = "auto"

    def __init__(self, *, strict: bool = False) -> None:
        self._inner: Provider | None = None
        self._position = -1
        self._terminal_seen = False
        self._sequence: int | None = None
        super().__init__(strict=strict)
        #: The chosen provider's name, once decided.
        self.chosen: str | None = None
        self._jsonl = False
        self._chat = False
        self._buffer: list[tuple[int, Any]] = []

    @property
    def concrete_name(self) -> str:
        return self.chosen or self.name

    def set_framing(self, framing: str) -> None:
        """Called by the pipeline when the bytes turn out to be JSON lines."""
        self._jsonl = framing == "jsonl"

    # The chosen provider's state is this provider's state.

    @property
    def position(self) -> int:
        inner = self._inner
        return self._position if inner is None else inner.position

    @position.setter
    def position(self, value: int) -> None:
        inner = self._inner
        if inner is None:
            self._position = value
        else:
            inner.position = value

    @property
    def terminal_seen(self) -> bool:
        inner = self._inner
        return self._terminal_seen if inner is None else inner.terminal_seen

    @terminal_seen.setter
    def terminal_seen(self, value: bool) -> None:
        self._terminal_seen = value

    @property
    def sequence(self) -> int | None:
        inner = self._inner
        return self._sequence if inner is None else inner.sequence

    @sequence.setter
    def sequence(self, value: int | None) -> None:
        inner = self._inner
        if inner is None:
            self._sequence = value
        else:
            inner.sequence = value

    def folding_target(self) -> FoldingTarget | None:
        inner = self._inner
        return None if inner is None else inner.folding_target()

    @property
    def resume_param(self) -> str | None:
        inner = self._inner
        return None if inner is None else inner.resume_param

    @property
    def provider(self) -> Provider | None:
        """The chosen provider instance, once decided."""
        return self._inner

    # -- frames ------------------------------------------------------------------------------

    def handle_frames(self, frames: list[Any], out: list[Event]) -> None:
        """The pipeline's loop over one chunk's frames: frame by frame until the provider is
        known, then the chosen provider's own loop (``handle_frames``, with its inline reading
        of the commonest frames), so that ``auto`` costs about what naming the provider does."""
        inner = self._inner
        if inner is None:
            first = self.position + 1
            for k, frame in enumerate(frames):
                self.position = first + k
                self.handle(frame, out)
                if self._inner is not None:
                    if k + 1 < len(frames):
                        self._inner_frames(frames[k + 1 :], out)
                    return
            return
        self._inner_frames(frames, out)

    def _inner_frames(self, frames: list[Any], out: list[Event]) -> None:
        inner = self._inner
        assert inner is not None
        handle_frames = getattr(inner, "handle_frames", None)
        if handle_frames is not None:
            handle_frames(frames, out)
            return
        handle = inner.handle
        first = inner.position + 1
        for k, frame in enumerate(frames):
            inner.position = first + k
            handle(frame, out)

    def handle(self, frame: Any, out: list[Event]) -> None:
        inner = self._inner
        if inner is not None:
            inner.handle(frame, out)
            return
        self._buffer.append((self.position, frame))
        found, parsed = detect_and_parse(frame, jsonl=self._jsonl)
        if found == CHAT:
            self._chat = True
        elif found is not None:
            self._choose(found, frame, out, parsed)
            return
        if self._jsonl:
            if self.position == 0:
                whole = whole_body_error(frame)
                if whole is not None:
                    raise whole
            raise self.protocol_error(
                "a JSON-lines stream whose lines are not Cohere v1 events (no event_type); "
                "pass provider= explicitly",
                event=None,
                raw=frame,
            )
        if len(self._buffer) >= MAX_UNDECIDED_FRAMES:
            self._undecided(frame, out)

    def finish(self, out: list[Event]) -> None:
        if self._inner is None and self._buffer:
            self._undecided(self._buffer[-1][1], out)
        if self._inner is not None:
            self._inner.finish(out)

    def _undecided(self, frame: Any, out: list[Event]) -> None:
        if self._chat:
            self._choose("openai", frame, out)
            return
        names = sorted({getattr(f, "event", "?") for _, f in self._buffer})
        raise self.protocol_error(
            f"cannot tell the provider from the first {len(self._buffer)} frames "
            f"(event names {names}); pass provider= explicitly",
            event=getattr(frame, "event", None),
            raw=frame,
        )

    def _choose(self, name: str, frame: Any, out: list[Event], parsed: Any = None) -> None:
        """Make the chosen provider and replay the buffered frames into it; ``parsed`` is the
        data of ``frame`` (the deciding one, buffered last), when detection parsed it."""
        inner = provider_class(name)(strict=self.strict)
        self.chosen = name
        out.append(
            Notice(
                kind="provider_detected",
                message=f"auto: detected {name} at frame {self.position}",
                data=name,
                raw=frame,
            )
        )
        buffered, self._buffer = self._buffer, []
        self._inner = inner
        # Later chunks skip this method: the pipeline binds `provider.handle` per chunk, and
        # looks up `handle_frames` on it (the chosen provider's own loop, where it has one).
        self.handle = inner.handle  # type: ignore[method-assign]
        inner_frames = getattr(inner, "handle_frames", None)
        if inner_frames is not None:
            self.handle_frames = inner_frames  # type: ignore[method-assign]
        for position, buffered_frame in buffered:
            inner.position = position
            if parsed is not None and buffered_frame is frame:
                inner.preparsed = (frame, parsed)
            inner.handle(buffered_frame, out)
        inner.preparsed = None
