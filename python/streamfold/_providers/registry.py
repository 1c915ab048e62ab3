"""Which provider class a ``provider=`` name means: the registry, the names' check (with a
"did you mean"), and the making of a provider; each module is imported on first use."""

from __future__ import annotations

import difflib
import importlib
from typing import Any, get_args

from .._events import BlockStart, MessageEnd
from .._types import ProviderName
from .base import FoldRules, Provider

__all__ = [
    "PROVIDER_NAMES",
    "check_provider_name",
    "fold_rules",
    "get_provider",
    "provider_class",
]

# name -> (module, class). Modules are imported on first use.
_REGISTRY: dict[str, tuple[str, str]] = {
    "openai": ("openai_chat", "OpenAIChat"),
    "openai-chat": ("openai_chat", "OpenAIChat"),
    "mistral": ("openai_chat", "Mistral"),
    "cohere-v2": ("cohere_v2", "CohereV2"),
    "cohere-v1": ("cohere_v1", "CohereV1"),
    "anthropic": ("anthropic", "Anthropic"),
    "openai-responses": ("openai_responses", "OpenAIResponses"),
    "gemini": ("gemini", "Gemini"),
    "onecortex": ("onecortex", "Onecortex"),
    "clouisle": ("clouisle", "Clouisle"),
}

#: Every name ``provider=`` accepts: ``_REGISTRY``'s and ``auto`` (tests/test_types.py checks).
PROVIDER_NAMES: tuple[ProviderName, ...] = get_args(ProviderName)


def check_provider_name(name: object) -> None:
    """Raise the ``ValueError`` every ``provider=`` gives for a name it does not know."""
    if name not in PROVIDER_NAMES:
        raise _unknown(name)


def _unknown(name: object) -> ValueError:
    guess = _did_you_mean(name)
    return ValueError(
        f"unknown provider {name!r}{guess}; expected one of: {', '.join(PROVIDER_NAMES)}"
    )


def _did_you_mean(name: object) -> str:
    """``" (did you mean 'anthropic'?)"`` for a name that differs from one by case, a ``_``
    or a space for a ``-`` (``"Anthropic"``, ``"openai_responses"``) or a slip of the
    keyboard (``"antropic"``); ``""`` when none is close."""
    if not isinstance(name, str):
        return ""
    folded = "-".join(name.strip().lower().replace("_", " ").replace("-", " ").split())
    if folded in PROVIDER_NAMES:
        return f" (did you mean {folded!r}?)"
    close = difflib.get_close_matches(folded, PROVIDER_NAMES, n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


#: Classes already imported: ``import_module`` costs microseconds even for a loaded module,
#: which shows on short streams (one provider is made per stream).
_CLASSES: dict[str, type[Provider]] = {}


def provider_class(name: str) -> type[Provider]:
    cls = _CLASSES.get(name)
    if cls is not None:
        return cls
    try:
        module_name, class_name = _REGISTRY[name]
    except KeyError:
        raise _unknown(name) from None
    module = importlib.import_module(f"{__package__}.{module_name}")
    loaded: type[Provider] = getattr(module, class_name)
    _CLASSES[name] = loaded
    return loaded


def get_provider(name: str, *, strict: bool = False) -> Provider:
    """A new provider instance for ``name`` (``"auto"`` detects from the first frames)."""
    if name == "auto":
        # Imported as the other providers are, on first use: it imports some of them.
        auto: type[Provider] = importlib.import_module(f"{__package__}.auto").AutoProvider
        return auto(strict=strict)
    return provider_class(name)(strict=strict)


class _EveryProvider:
    """The fold's rules of a fold that does not know its provider (a ``Folder`` made without
    a name and fed by hand): every provider's, so that its events fold as their own
    provider's fold would fold them."""

    def __init__(self) -> None:
        self._classes: tuple[type[Provider], ...] | None = None

    def classes(self) -> tuple[type[Provider], ...]:
        if self._classes is None:
            self._classes = tuple({provider_class(name): None for name in _REGISTRY})
        return self._classes

    def final_text(self, end: MessageEnd) -> str | None:
        for cls in self.classes():
            text = cls.final_text(end)
            if text is not None:
                return text
        return None

    def resends_call(self, call_id: Any, start: BlockStart) -> bool:
        return any(cls.resends_call(call_id, start) for cls in self.classes())

    def same_query(self, a: Any, b: Any) -> bool:
        return any(cls.same_query(a, b) for cls in self.classes())


_EVERY_PROVIDER = _EveryProvider()


def fold_rules(name: str) -> FoldRules:
    """The rules a fold named ``name`` follows where the event contract alone does not say
    (``Provider.final_text``, ``resends_call``, ``same_query``): its provider's; every
    provider's for a fold named no provider, ``"auto"`` (before the stream told which), or
    a name no provider has."""
    cls = _CLASSES.get(name)
    if cls is not None:
        return cls
    if name in _REGISTRY:
        return provider_class(name)
    return _EVERY_PROVIDER
