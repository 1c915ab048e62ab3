"""The non-streaming form of a provider's events: ``fold_json`` / ``events_json``.

Two agent platforms also answer with the events of a run as one JSON body:

* Clouisle's catch-up, ``GET /api/v1/agents/{agent_id}/chat/runs/{run_id}/events?after_sequence=N``
  ("the same buffered events" as ``…/stream?after_sequence=N``): ``{"code": 0, "data": [event,
  …], "msg": …}``. A client that reconnects, or opens a finished run, reads it; a run still
  going continues with its live stream from the catch-up's highest sequence
  (``fold_resumable(connect, provider="clouisle", catch_up=body)``).
* Onecortex's answer to a JSON caller: "the tool calls, results and steps in ``events``, and
  the text whole in ``result``".

Each provider turns the body into the frames its stream sends for the same events
(``Provider.body_frames``), and the one provider module reads them as it reads the stream: the
message, the events and the errors are those of ``fold`` / ``events`` on the equivalent stream
(``IncompleteStreamError`` for a run that has not ended, ``StreamError`` for an error event,
``.partial`` kept). Positions in errors count the body's events.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .._engine.driver import FoldDriver
from .._engine.pipeline import Pipeline
from .._errors import IncompleteStreamError, ProtocolError, StreamfoldError
from .._events import AnyEvent
from .._message import Message
from .._providers import Provider
from .._types import ProviderName

__all__ = ["events_json", "fold_json", "json_body_frames"]

#: The providers whose non-streaming form is read.
JSON_PROVIDERS = ("clouisle", "onecortex")


def _parsed(body: object, provider: str) -> Any:
    """``body`` as parsed JSON: bytes and text are parsed; anything else is taken as parsed."""
    if isinstance(body, (bytes, bytearray, memoryview, str)):
        text = body if isinstance(body, str) else bytes(body).decode("utf-8", "replace")
        if text.startswith("\ufeff"):
            # A UTF-8 BOM: json.loads (and response.json()) skip it in bytes, as the stream's
            # decoder does; in text it was an error.
            text = text[1:]
        try:
            return json.loads(text)
        except ValueError as exc:
            position = getattr(exc, "pos", None)
            raise ProtocolError(
                f"{provider}: the body is not JSON ({exc})", provider=provider, position=position
            ) from None
    if body is not None and not isinstance(body, (dict, list, int, float)):
        hint = " (pass response.json() or response.content)" if hasattr(body, "json") else ""
        raise TypeError(
            f"body must be the parsed JSON, or its bytes or text, got "
            f"{type(body).__module__}.{type(body).__qualname__}{hint}"
        )
    return body


def json_body_frames(body: object, provider: Provider) -> list[Any]:
    """The frames ``provider``'s stream sends for the events of ``body`` (parsed JSON, or its
    bytes or text): what ``fold_json`` runs the provider over."""
    name = provider.concrete_name
    if name not in JSON_PROVIDERS:
        raise ValueError(
            f"provider {name!r} has no JSON form of its events that streamfold reads: "
            f"fold_json reads provider={' or '.join(map(repr, JSON_PROVIDERS))}"
        )
    try:
        return provider.body_frames(_parsed(body, name))
    except RecursionError:
        # json.loads / json.dumps of a value nested past Python's recursion limit: the stream's
        # JSON parser refuses such data too (a ProtocolError, "recursion limit exceeded").
        raise ProtocolError(
            f"{name}: the body is nested too deeply to be read (recursion limit exceeded)",
            provider=name,
        ) from None


def _incomplete(pipeline: Pipeline, frames: int) -> IncompleteStreamError:
    provider = pipeline.provider
    name = pipeline.provider_name
    message = (
        f"{name}: the JSON body's {frames} events end without the provider's terminal event; "
        "the answer is not whole yet"
    )
    if provider.sequence is not None:
        param = provider.resume_param or "after_sequence"
        message += (
            f" (the run is still going: continue with its stream from {param}="
            f"{provider.sequence}, as fold_resumable(connect, provider={name!r}, "
            "catch_up=body) does)"
        )
    return IncompleteStreamError(message, provider=name, position=frames)


def events_json(
    body: object, provider: ProviderName, *, strict: bool = False
) -> Iterator[AnyEvent]:
    """Yield the events of a provider's non-streaming body: those ``events`` yields for the
    equivalent stream, with the same errors after them (``StreamError`` for an error event,
    ``IncompleteStreamError`` when the body ends before the terminal event)."""
    pipeline = Pipeline(provider, strict=strict)
    frames = json_body_frames(body, pipeline.provider)
    yield from pipeline.feed_frames(frames)
    pipeline.raise_pending()
    yield from pipeline.close()
    pipeline.raise_pending()
    if not pipeline.provider.terminal_seen:
        raise _incomplete(pipeline, len(frames))


def fold_json(body: object, provider: ProviderName, *, strict: bool = False) -> Message:
    """Fold a provider's non-streaming body into the message ``fold`` returns for the
    equivalent stream.

    ``body`` is the parsed JSON (``response.json()``), or its bytes or text; ``provider`` is
    ``"clouisle"`` (a run's catch-up, ``…/chat/runs/{run_id}/events``) or ``"onecortex"`` (a
    JSON caller's answer). Errors carry ``.partial``: ``IncompleteStreamError`` for a run that
    has not ended (its message says the sequence to continue from), ``StreamError`` for an
    error event or an error answer, ``ProtocolError`` for a body that is not the provider's
    form.
    """
    pipeline = Pipeline(provider, strict=strict)
    run = FoldDriver.over(pipeline, strict=strict)
    folder = run.folder
    try:
        frames = json_body_frames(body, pipeline.provider)
    except StreamfoldError as exc:  # the body is not the provider's form, or an error answer
        folder.annotate_error(exc)
        raise
    try:
        run(pipeline.feed_frames(frames))
        pipeline.raise_pending()
        run(pipeline.close())
        pipeline.raise_pending()
    except StreamfoldError as exc:
        run.annotate(exc)
        raise
    if not folder.complete:
        incomplete = _incomplete(pipeline, len(frames))
        run.annotate(incomplete)
        raise incomplete
    return run.result()
