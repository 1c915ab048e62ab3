"""A slow pure-Python stand-in for the Rust ``JsonAccumulator``, used only while the native
class is missing from ``streamfold._core`` (a build without it).

Same API and semantics, none of the speed: ``value()`` and ``partial()`` re-read the whole
text. The fold imports the accumulator through :data:`streamfold._accumulator.JsonAccumulator`,
which prefers the native class.
"""

from __future__ import annotations

import json
from typing import Any

from .errors import IncompleteJsonError, InvalidJsonError

__all__ = ["JsonAccumulator"]

_WS = " \t\r\n"
_MISSING: Any = object()
_LITERALS = {"true": True, "false": False, "null": None}


class JsonAccumulator:
    """Fragments of one JSON text in, the value out."""

    __slots__ = ("_pieces",)

    def __init__(self) -> None:
        self._pieces: list[str] = []

    def push(self, fragment: str) -> None:
        self._pieces.append(fragment)

    @property
    def text(self) -> str:
        if len(self._pieces) > 1:
            self._pieces[:] = ["".join(self._pieces)]
        return self._pieces[0] if self._pieces else ""

    @property
    def is_complete(self) -> bool:
        try:
            self.value()
        except (IncompleteJsonError, InvalidJsonError):
            return False
        return True

    def value(self) -> Any:
        text = self.text
        if not text.strip(_WS):
            raise IncompleteJsonError("empty JSON text", offset=len(text), expected="a value")
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            if exc.pos >= len(text.rstrip(_WS)) or exc.msg.startswith("Unterminated"):
                raise IncompleteJsonError(
                    f"incomplete JSON text: {exc.msg}", offset=exc.pos, expected="more input"
                ) from None
            raise InvalidJsonError(
                f"invalid JSON text: {exc.msg} at byte {exc.pos}", offset=exc.pos
            ) from None

    def partial(self) -> Any:
        value, _done = _Partial(self.text).value()
        return None if value is _MISSING else value


class _Partial:
    """Best-effort reading of a JSON prefix: finished keys and items, unfinished strings as
    their prefix, unfinished numbers and literals left out."""

    __slots__ = ("i", "s")

    def __init__(self, s: str) -> None:
        self.s = s
        self.i = 0

    def ws(self) -> bool:
        s, n = self.s, len(self.s)
        while self.i < n and s[self.i] in _WS:
            self.i += 1
        return self.i < n

    def value(self) -> tuple[Any, bool]:
        if not self.ws():
            return _MISSING, False
        ch = self.s[self.i]
        if ch == "{":
            return self.obj()
        if ch == "[":
            return self.arr()
        if ch == '"':
            return self.string()
        return self.scalar()

    def obj(self) -> tuple[Any, bool]:
        self.i += 1
        out: dict[str, Any] = {}
        while True:
            if not self.ws():
                return out, False
            if self.s[self.i] == "}":
                self.i += 1
                return out, True
            if self.s[self.i] == ",":
                self.i += 1
                continue
            key, done = self.string()
            if not done or not self.ws():
                return out, False
            if self.s[self.i] != ":":
                return out, False
            self.i += 1
            val, done = self.value()
            if val is not _MISSING:
                out[key] = val
            if not done:
                return out, False

    def arr(self) -> tuple[Any, bool]:
        self.i += 1
        out: list[Any] = []
        while True:
            if not self.ws():
                return out, False
            if self.s[self.i] == "]":
                self.i += 1
                return out, True
            if self.s[self.i] == ",":
                self.i += 1
                continue
            val, done = self.value()
            if val is not _MISSING:
                out.append(val)
            if not done:
                return out, False

    def string(self) -> tuple[Any, bool]:
        s, start = self.s, self.i
        if s[start : start + 1] != '"':
            return _MISSING, False
        j = start + 1
        n = len(s)
        while j < n:
            c = s[j]
            if c == "\\":
                j += 2
                continue
            if c == '"':
                self.i = j + 1
                try:
                    return json.loads(s[start : j + 1]), True
                except json.JSONDecodeError:
                    return _MISSING, False
            j += 1
        self.i = n
        body = s[start + 1 :]
        # Drop an escape cut in the middle (``\`` or ``\u12``) before reading the prefix.
        cut = body.rfind("\\")
        if cut != -1 and (len(body) - cut < 2 or (body[cut + 1] == "u" and len(body) - cut < 6)):
            body = body[:cut]
        try:
            return json.loads('"' + body + '"'), False
        except json.JSONDecodeError:
            return _MISSING, False

    def scalar(self) -> tuple[Any, bool]:
        s, n, j = self.s, len(self.s), self.i
        while j < n and s[j] not in _WS + ",]}":
            j += 1
        token = s[self.i : j]
        self.i = j
        if token in _LITERALS:
            return _LITERALS[token], True
        if j >= n:
            return _MISSING, False
        try:
            return json.loads(token), True
        except json.JSONDecodeError:
            return _MISSING, False
