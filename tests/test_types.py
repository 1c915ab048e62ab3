"""The public type aliases agree with what runs: ``sf.AnyEvent`` is every event class,
``sf.ProviderName`` every name ``provider=`` takes; the YAML of the GitHub workflows parses."""

from __future__ import annotations

import sys
from typing import get_args

import pytest

import streamfold as sf
from streamfold._providers.registry import _REGISTRY
from streamfold._request import REQUEST_PROVIDERS


def test_any_event_is_every_event_class() -> None:
    events_module = sys.modules["streamfold._events"]
    defined = {
        obj
        for obj in vars(events_module).values()
        if isinstance(obj, type) and issubclass(obj, sf.Event) and obj is not sf.Event
    }
    assert set(get_args(sf.AnyEvent)) == defined
    assert len(get_args(sf.AnyEvent)) == 17


def test_provider_name_is_every_name_provider_takes() -> None:
    assert sf.PROVIDER_NAMES == get_args(sf.ProviderName) == (*_REGISTRY, "auto")
    assert set(REQUEST_PROVIDERS) == set(sf.PROVIDER_NAMES) - {"auto"}


def test_an_unknown_provider_name_is_still_a_value_error_at_run_time() -> None:
    # A type checker refuses "opena1"; code that is not type-checked gets the error that lists
    # the known names, from every entry point.
    with pytest.raises(
        ValueError,
        match=r"unknown provider 'opena1' \(did you mean 'openai'\?\); expected one of: openai",
    ):
        sf.fold([b""], provider="opena1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown provider 'opena1'"):
        list(sf.events([b""], provider="opena1"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown provider 'opena1'"):
        sf.Folder("opena1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no request shape for provider 'opena1'"):
        sf.Message().to_request("opena1")  # type: ignore[call-overload]
