"""Every recorded capture (../shared/captures, when present) and every shipped example stream,
as ``(id, provider, body)``: what the round-trip tests of events, messages and writers run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import streamfold as sf
from conftest import CAPTURE_PROVIDER, capture_files, capture_id
from streamfold._cli.demo import EXAMPLES, load_example
from streamfold._types import ProviderName


@dataclass(frozen=True)
class Case:
    id: str
    provider: ProviderName
    body: bytes

    def fold(self) -> tuple[sf.Message, BaseException | None]:
        """The fold, or the partial of the error it raised, with that error."""
        try:
            return sf.fold([self.body], provider=self.provider), None
        except sf.StreamfoldError as exc:
            partial = getattr(exc, "partial", None)
            assert isinstance(partial, sf.Message), exc
            return partial, exc


def cases() -> list[Case]:
    found = [
        Case(capture_id(p), CAPTURE_PROVIDER[p.parent.name], p.read_bytes())
        for p in capture_files()
    ]
    # An example's provider is the name auto-detection gives it: one of ProviderName.
    found += [
        Case(f"example/{e.file}", cast("ProviderName", e.provider), load_example(e.file).data)
        for e in EXAMPLES
    ]
    return found


CASES = cases()
