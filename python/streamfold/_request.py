"""``Message.to_request(provider)``: the assistant turn in the shape the provider's next request
expects, so a tool loop can append it, add the tool results, and call again.

One builder per provider, each following that provider's documented request shape (cited at
each builder). What is not part of a provider's request shape is left out (Chat Completions
takes no reasoning back; Cohere v1 no citations). A tool call whose arguments are not one
complete valid value cannot be sent back as it is: that raises ``ValueError``.

What a provider made for itself goes back to that provider only: reasoning signatures and
encrypted reasoning (Anthropic ``signature`` and ``redacted_thinking``, Gemini
``thoughtSignature``, Responses ``encrypted_content`` and reasoning items), and the payloads
and citation objects kept as received. A message folded from another provider (``provider``)
goes without them: another provider cannot verify them, and may refuse a foreign field. A
message that names no provider (a ``Folder`` made without one) is taken as the target's own.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, cast

from ._types import RequestProviderName

if TYPE_CHECKING:
    from ._message import Message
    from ._parts import Block, ToolCall

__all__ = ["REQUEST_PROVIDERS", "to_request"]


def to_request(message: Message, provider: str) -> Any:
    """The assistant message for ``provider``'s next request (see the module docstring)."""
    try:
        build = _BUILDERS[provider]
    except KeyError:
        names = ", ".join(sorted(_BUILDERS))
        if not provider:
            raise ValueError(
                "no request shape: this message does not name its provider (folded by a "
                "Folder made without one); pass it, e.g. message.to_request('openai'), one of: "
                f"{names}"
            ) from None
        raise ValueError(
            f"no request shape for provider {provider!r}; pass one of: {names}"
        ) from None
    return build(message, _is_own(message.provider, provider))


#: Names of one wire format: a message folded as ``openai-chat`` is ``openai``'s own.
_SAME_FORMAT = {"openai-chat": "openai"}


def _is_own(source: str, target: str) -> bool:
    """Whether a message folded from ``source`` goes back to its own provider as ``target``:
    then the signatures and payloads only that provider reads go with it."""
    if not source:
        return True  # names no provider: the caller says whose it is
    return _SAME_FORMAT.get(source, source) == _SAME_FORMAT.get(target, target)


def _arguments(call: ToolCall) -> Any:
    # An incomplete call is refused even with arguments: they may be a prefix of the real ones.
    if call.arguments is None or not call.complete:
        raise ValueError(
            f"tool call {call.id or call.index} ({call.name}) has no valid arguments "
            f"({call.error or 'not complete'}); it cannot be sent back as it is"
        )
    return call.arguments


def _arguments_text(call: ToolCall) -> str:
    """The arguments as JSON text: as streamed, or serialized when nothing was streamed."""
    arguments = _arguments(call)
    if call.arguments_json.strip():
        return call.arguments_json
    return json.dumps(arguments, ensure_ascii=False)


def _function_calls(message: Message, *, legacy: bool = True) -> list[dict[str, Any]]:
    """The calls as ``tool_calls`` entries; without the deprecated ``function_call`` one when
    not ``legacy`` (Chat Completions sends that one back in its own shape)."""
    return [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": _arguments_text(call)},
        }
        for call in message.tool_calls
        if legacy or not call.extra.get("function_call")
    ]


def _openai(message: Message, own: bool) -> dict[str, Any]:
    # Chat Completions assistant message: content (string or null when tool_calls are given),
    # refusal, tool_calls[{id, type: "function", function: {name, arguments: JSON text}}];
    # a call streamed in the deprecated ``delta.function_call`` form goes back as
    # function_call {name, arguments} (it has no id to pair a tool message with); an audio
    # answer (delta.audio) as audio {id}, its content null.
    # https://platform.openai.com/docs/api-reference/chat/create#chat-create-messages
    out: dict[str, Any] = {"role": "assistant"}
    calls = _function_calls(message, legacy=False)
    legacy = [call for call in message.tool_calls if call.extra.get("function_call")]
    audio = next(
        (
            b.data
            for b in message.blocks
            if b.kind == "other" and isinstance(b.data, dict) and b.data.get("type") == "audio"
        ),
        None,
    )
    out["content"] = message.text or (None if calls or legacy or message.refusal or audio else "")
    if message.refusal:
        out["refusal"] = message.refusal
    if audio is not None and isinstance(audio.get("id"), str):
        # An audio answer is referred to by its id (ChatCompletionAssistantMessageParam.audio).
        out["audio"] = {"id": audio["id"]}
    if calls:
        out["tool_calls"] = calls
    if legacy:
        call = legacy[-1]
        out["function_call"] = {"name": call.name, "arguments": _arguments_text(call)}
    return out


def _mistral(message: Message, own: bool) -> dict[str, Any]:
    # Mistral AssistantMessage: {role, content, tool_calls[{id, type, function{name,
    # arguments}}], prefix}; content may be "" beside tool_calls.
    # https://docs.mistral.ai/api/#tag/chat/operation/chat_completion_v1_chat_completions_post
    # With reasoning (Magistral, reasoning_effort) the content is the list of chunks the
    # answer streamed, in block order: ThinkChunk {type: "thinking", thinking: [TextChunk],
    # closed} and TextChunk {type: "text", text}, so the next turn keeps the reasoning (as
    # @ai-sdk/mistral does since "preserve reasoning in multi-turn conversations").
    content: Any = message.text
    if message.reasoning:
        content = []
        for block in message.blocks:
            if block.kind == "reasoning" and block.text:
                thought = [{"type": "text", "text": block.text}]
                content.append({"type": "thinking", "thinking": thought, "closed": True})
            elif block.kind == "text" and block.text:
                content.append({"type": "text", "text": block.text})
    out: dict[str, Any] = {"role": "assistant", "content": content}
    calls = _function_calls(message)
    if calls:
        out["tool_calls"] = calls
    return out


def _cohere_v2(message: Message, own: bool) -> dict[str, Any]:
    # Cohere v2 AssistantMessage: {role: "assistant", tool_calls, tool_plan, content,
    # citations}; the tool-use guide appends {role, tool_plan, tool_calls} after a tool turn.
    # https://docs.cohere.com/reference/chat (messages: AssistantMessage)
    # https://docs.cohere.com/docs/tool-use-overview
    out: dict[str, Any] = {"role": "assistant"}
    calls = _function_calls(message)
    if calls:
        if message.tool_plan:
            out["tool_plan"] = message.tool_plan
        out["tool_calls"] = calls
    if message.reasoning:
        # Reasoning models take their thinking back as content items beside the text.
        content: list[dict[str, Any]] = []
        for block in message.blocks:
            if block.kind == "reasoning" and block.text:
                content.append({"type": "thinking", "thinking": block.text})
            elif block.kind == "text" and block.text:
                content.append({"type": "text", "text": block.text})
        out["content"] = content
    elif message.text or not calls:
        out["content"] = message.text
    # Each citation as citation-start delivered it ({start, end, text, sources, type?,
    # content_index?}: the Citation the request takes); one without that object (events
    # built by hand) has nothing the API would accept and is left out.
    citations = [
        c.raw for c in message.citations if own and isinstance(c.raw, dict) and "start" in c.raw
    ]
    if citations:
        out["citations"] = citations
    return out


def _cohere_v1(message: Message, own: bool) -> dict[str, Any]:
    # Cohere v1 chat_history entry: {role: "CHATBOT", message, tool_calls[{name, parameters}]};
    # the tool outputs then go in the request's tool_results [{call, outputs}].
    # https://docs.cohere.com/v1/reference/chat (chat_history: ChatMessage / ToolCall)
    out: dict[str, Any] = {"role": "CHATBOT", "message": message.text or message.tool_plan}
    if message.tool_calls:
        out["tool_calls"] = [
            {"name": call.name, "parameters": _arguments(call)} for call in message.tool_calls
        ]
    return out


def _redacted_data(block: Block) -> Any:
    data = block.data
    if isinstance(data, dict):
        return data.get("data")
    return data


def _is_redacted(block: Block) -> bool:
    return block.kind == "reasoning" and block.data is not None and not block.text


def _is_typed(value: Any) -> bool:
    """A provider payload: an object naming its own ``type``."""
    return isinstance(value, dict) and isinstance(value.get("type"), str)


def _raw_block(block: Block) -> dict[str, Any] | None:
    """A block kept as its provider payload (server tools, unknown kinds): sent back as is."""
    data = block.data
    return data if _is_typed(data) else None


def _anthropic(message: Message, own: bool) -> dict[str, Any]:
    # Messages API assistant turn: content blocks in order; thinking blocks keep their
    # signature, redacted_thinking its data, tool_use {id, name, input}; empty text blocks
    # are rejected, so none is sent.
    # https://docs.anthropic.com/en/api/messages (content block params)
    # https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking#preserving-thinking-blocks
    # Another provider's reasoning is left out: the API verifies thinking by its signature,
    # and refuses a thinking block without one.
    content: list[dict[str, Any]] = []
    for block in message.blocks:
        kind = block.kind
        item: dict[str, Any] | None
        if kind == "text":
            item = _anthropic_text(block, own)
        elif kind == "reasoning":
            item = _anthropic_thinking(block) if own else None
        elif kind == "tool_call" and block.tool_call is not None:
            call = block.tool_call
            item = {"type": "tool_use", "id": call.id, "name": call.name, "input": _arguments(call)}
            # A call made by a server tool (programmatic tool calling) says so: ``caller``.
            item.update((k, v) for k, v in call.extra.items() if k in ("caller", "toolset_name"))
        elif kind == "server_tool":
            item = _anthropic_server_tool(block) if own else None
        else:
            item = _raw_block(block) if own else None
        if item is not None:
            content.append(item)
    return {"role": "assistant", "content": content}


def _citation_objects(block: Block) -> list[dict[str, Any]]:
    """The block's citations as the provider sent them, in the order they came: Anthropic's
    ``citations_delta`` objects (a web search's ``encrypted_index`` must go back), Responses'
    ``output_text.annotation.added`` annotations (``url_citation``, ``file_citation``…, the
    order ``output_item.done`` lists them in). A citation without such an object (events
    built by hand) has nothing the API would accept and is left out."""
    return [c.raw for c in block.citations if _is_typed(c.raw)]


_DOCUMENT_CITATION = ("type", "cited_text", "document_index", "document_title")
_BLOCK_RANGE = ("start_block_index", "end_block_index")

#: The fields the Messages API takes back in a text block's citation, per citation type
#: (``TextCitationParam``: anthropic-sdk-python ``types/citation_char_location_param.py``,
#: ``citation_page_location_param.py``, ``citation_content_block_location_param.py``,
#: ``citation_web_search_result_location_param.py``,
#: ``citation_search_result_location_param.py``). A response's citation may carry more: the
#: document locations have ``file_id`` (a document given by Files API id) in the response
#: models only, and the API refuses fields its request schema lacks ("Extra inputs are not
#: permitted"). A type not listed here is sent as it came.
ANTHROPIC_CITATION_FIELDS: dict[str, frozenset[str]] = {
    "char_location": frozenset((*_DOCUMENT_CITATION, "start_char_index", "end_char_index")),
    "page_location": frozenset((*_DOCUMENT_CITATION, "start_page_number", "end_page_number")),
    "content_block_location": frozenset((*_DOCUMENT_CITATION, *_BLOCK_RANGE)),
    "web_search_result_location": frozenset(
        ("type", "cited_text", "encrypted_index", "title", "url")
    ),
    "search_result_location": frozenset(
        ("type", "cited_text", "search_result_index", "source", "title", *_BLOCK_RANGE)
    ),
}


def _anthropic_citation(citation: dict[str, Any]) -> dict[str, Any]:
    """A citation as the request takes it: its response-only fields left out."""
    fields = ANTHROPIC_CITATION_FIELDS.get(citation["type"])
    if fields is None or citation.keys() <= fields:
        return citation
    return {key: value for key, value in citation.items() if key in fields}


def _anthropic_text(block: Block, own: bool) -> dict[str, Any] | None:
    """A text block with its citations: the web search ``encrypted_index`` (and a document
    citation's location) must go back for the next turn to keep them, so each citation object
    goes back as ``citations_delta`` delivered it, less the fields only a response has
    (``ANTHROPIC_CITATION_FIELDS``). An empty text block is rejected: ``None``."""
    if not block.text:
        return None
    item: dict[str, Any] = {"type": "text", "text": block.text}
    citations = _citation_objects(block) if own else []
    if citations:
        item["citations"] = [_anthropic_citation(c) for c in citations]
    return item


def _anthropic_thinking(block: Block) -> dict[str, Any]:
    """``thinking`` with its signature, or ``redacted_thinking`` with its data: the API checks
    both when the turn comes back, so they are sent unchanged."""
    if _is_redacted(block):
        return {"type": "redacted_thinking", "data": _redacted_data(block)}
    thinking: dict[str, Any] = {"type": "thinking", "thinking": block.text}
    if block.signature is not None:
        thinking["signature"] = block.signature
    return thinking


def _anthropic_server_tool(block: Block) -> dict[str, Any] | None:
    """A provider-run tool block as received, under its own type and with all its fields
    (``mcp_tool_use`` keeps ``server_name``; a ``*_tool_result`` its ``tool_use_id`` and
    content): a result refers to its use by id, so the use must go back as it was. The start
    carries ``input: {}``; the input that streamed after it replaces it."""
    raw = _raw_block(block)
    call = block.tool_call
    if call is None:
        return raw  # arrived whole, or no input streamed: the start's own input stands
    if raw is None:
        # No payload kept (events built by hand): the generic server tool use.
        raw = {"type": "server_tool_use", "id": call.id, "name": call.name}
    return {**raw, "input": _arguments(call)}


def _item_id(block: Block) -> str | None:
    extra = block.extra
    for key in ("item_id", "id"):
        value = extra.get(key)
        if isinstance(value, str):
            return value
    return None


def _openai_responses(message: Message, own: bool) -> list[dict[str, Any]]:
    # Responses API input items, as the output items were: reasoning {type, id, summary[
    # {type: "summary_text", text}], encrypted_content}, message {type, id, role, status,
    # phase?, content[{type: "output_text", text, annotations} | {type: "refusal", refusal}]}
    # (annotations as received: ``_citation_objects``),
    # function_call {type, call_id, name, arguments: JSON text, id}.
    # https://platform.openai.com/docs/api-reference/responses/create#responses-create-input
    # https://platform.openai.com/docs/guides/function-calling (append output, then outputs)
    items: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None  # the item consecutive blocks extend

    for block in message.blocks:
        kind = block.kind
        item_id = _item_id(block) if own else None  # another API's ids refer to nothing here
        if kind == "reasoning":
            if not own:
                continue  # another provider's reasoning: no item of this API to refer to
            final = block.data
            if isinstance(final, dict) and final.get("type") == "reasoning":
                # The item as output_item.done gave it: summary parts, encrypted content.
                current = final
                items.append(final)
                continue
            if item_id is None:
                continue  # a reasoning item without its id cannot be referenced
            current = {"type": "reasoning", "id": item_id, "summary": []}
            if block.text:
                current["summary"].append({"type": "summary_text", "text": block.text})
            if block.signature is not None:
                current["encrypted_content"] = block.signature
            items.append(current)
        elif kind in ("text", "refusal"):
            part: dict[str, Any] = (
                {
                    "type": "output_text",
                    "text": block.text,
                    "annotations": _citation_objects(block) if own else [],
                }
                if kind == "text"
                else {"type": "refusal", "refusal": block.text}
            )
            if current is None or current["type"] != "message" or current.get("id") != item_id:
                current = {"type": "message", "role": "assistant", "content": []}
                if item_id is not None:
                    current["id"] = item_id
                    current["status"] = "completed"
                phase = block.extra.get("phase")
                if phase is not None:
                    # "preserve and resend phase on all assistant messages" (gpt-5.3-codex+)
                    current["phase"] = phase
                items.append(current)
            current["content"].append(part)
        elif kind == "tool_call" and block.tool_call is not None:
            call = block.tool_call
            item: dict[str, Any] = {
                "type": "function_call",
                "call_id": call.id,
                "name": call.name,
                "arguments": _arguments_text(call),
            }
            if item_id is not None and item_id != call.id:
                item["id"] = item_id
            items.append(item)
            current = item
        elif own:
            raw = _raw_block(block)
            if raw is not None:
                items.append(raw)
                current = raw
    return items


#: Gemini media parts, kept as ``other`` blocks in their place.
_GEMINI_MEDIA = frozenset(("inlineData", "fileData"))


def _gemini(message: Message, own: bool) -> dict[str, Any]:
    # Gemini Content {role: "model", parts}: text parts, thought parts {text, thought: true},
    # functionCall parts {functionCall: {name, args, id?}}, code execution and media
    # (inlineData, fileData) parts as received;
    # every thoughtSignature goes back on the part it came with.
    # https://ai.google.dev/api/caching#Content  https://ai.google.dev/api/caching#Part
    # https://ai.google.dev/gemini-api/docs/thought-signatures
    parts: list[dict[str, Any]] = []
    for block in message.blocks:
        kind = block.kind
        part: dict[str, Any]
        signature = block.signature if own else None
        if kind in ("text", "reasoning"):
            if not block.text and signature is None:
                continue
            part = {"text": block.text}
            if kind == "reasoning":
                part["thought"] = True
        elif kind == "tool_call" and block.tool_call is not None:
            call = block.tool_call
            function_call: dict[str, Any] = {"name": call.name, "args": _arguments(call)}
            if call.id is not None:
                function_call["id"] = call.id
            part = {"functionCall": function_call}
            if own:
                signature = signature or call.extra.get("thoughtSignature")
        elif (
            own
            and isinstance(block.data, dict)
            and (
                kind == "server_tool"
                or (kind == "other" and _GEMINI_MEDIA.intersection(block.data))
            )
        ):
            # executableCode / codeExecutionResult (server_tool), inlineData / fileData
            # (other): the part as received (its own thoughtSignature included), in its place
            # in the turn.
            parts.append(block.data)
            continue
        else:
            continue
        if signature is not None:
            part["thoughtSignature"] = signature
        parts.append(part)
    return {"role": "model", "parts": parts}


def _plain(message: Message, own: bool) -> dict[str, Any]:
    # Onecortex and Clouisle run the agent server-side and take a prompt, not a transcript;
    # for a caller that keeps its own history the turn is a plain {role, content}.
    return {"role": "assistant", "content": message.text}


_BUILDERS: dict[str, Callable[[Message, bool], Any]] = {
    "openai": _openai,
    "openai-chat": _openai,
    "mistral": _mistral,
    "cohere-v2": _cohere_v2,
    "cohere-v1": _cohere_v1,
    "anthropic": _anthropic,
    "openai-responses": _openai_responses,
    "gemini": _gemini,
    "onecortex": _plain,
    "clouisle": _plain,
}

#: Every provider name ``to_request`` accepts (every ``ProviderName`` but ``auto``).
REQUEST_PROVIDERS = cast(
    "tuple[RequestProviderName | Literal['openai-responses'], ...]", tuple(_BUILDERS)
)
