"""The names of the public type aliases that are no class: what ``provider=`` takes, and what
``Message.to_request`` gives back for each provider. No imports from the package: every layer
can use them.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

__all__ = ["ProviderName", "RequestItems", "RequestMessage", "RequestProviderName"]

#: The providers whose next request takes the assistant turn as one message (a dict).
RequestProviderName: TypeAlias = Literal[
    "openai",
    "openai-chat",
    "mistral",
    "cohere-v2",
    "cohere-v1",
    "anthropic",
    "gemini",
    "onecortex",
    "clouisle",
]

#: Every name ``provider=`` accepts (``sf.PROVIDER_NAMES``, in the same order). A name outside
#: it is a type error, and at run time the ``ValueError`` that lists the known ones.
ProviderName: TypeAlias = Literal[
    "openai",
    "openai-chat",
    "mistral",
    "cohere-v2",
    "cohere-v1",
    "anthropic",
    "openai-responses",
    "gemini",
    "onecortex",
    "clouisle",
    "auto",
]

#: ``to_request`` for a provider of :data:`RequestProviderName`: one message, in that
#: provider's shape (``{"role": "assistant", "content": ...}``, Gemini's ``{"role": "model",
#: "parts": [...]}``).
RequestMessage: TypeAlias = dict[str, Any]
#: ``to_request("openai-responses")``: the Responses API's input items, to extend the input with.
RequestItems: TypeAlias = list[dict[str, Any]]
