"""An OpenAI-compatible streaming endpoint served from another provider's stream.

``make_app(upstream_url, provider="anthropic", to="openai")`` is a Starlette app whose
``POST /v1/chat/completions`` reads the upstream provider's stream and answers with the same
answer as Chat Completions chunks, as it arrives: ``sf.arelay`` parses, folds and writes in
one pass. When the upstream fails, the client gets an OpenAI error chunk; when the client goes
away, the upstream request is closed. ``app.state.messages`` collects each folded message
(for billing, logs or storage).

Run it (``pip install starlette uvicorn httpx``)::

    UPSTREAM_URL=https://… uvicorn relay_app:app

tests/test_relay.py runs it under uvicorn on loopback with httpx as the client.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

import streamfold as sf


def make_app(upstream_url: str, *, provider: str = "anthropic", to: str = "openai") -> Starlette:
    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # 600 s per read, 5 s to connect: a model can think for minutes before its next byte.
        async with httpx.AsyncClient(timeout=httpx.Timeout(600, connect=5)) as client:
            app.state.client = client
            yield

    async def chat(request: Request) -> StreamingResponse:
        client: httpx.AsyncClient = request.app.state.client
        body: Any = await request.json()
        upstream = await client.send(
            client.build_request("POST", upstream_url, json=body), stream=True
        )
        relay = sf.arelay(upstream, provider=provider, to=to)

        async def downstream() -> AsyncIterator[bytes]:
            async with relay:  # the upstream is closed however this ends
                async for chunk in relay:
                    yield chunk
            request.app.state.messages.append(relay.message)

        return StreamingResponse(
            downstream(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"}
        )

    app = Starlette(
        routes=[Route("/v1/chat/completions", chat, methods=["POST"])], lifespan=lifespan
    )
    app.state.messages = []
    return app


app = make_app(os.environ.get("UPSTREAM_URL", "http://127.0.0.1:8001/v1/messages"))
