"""A slow, obviously correct reading of a JSON prefix, following the documented semantics of
``JsonAccumulator.partial()`` and ``partial_with_changes()``. For the tests only.

The whole prefix is re-read by recursive descent at every call, which is what the
accumulator must never do; here it is the point: nothing is carried over, so nothing can drift.
Positions are indices into the Python ``str``; :func:`byte_offset` converts them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "MAX_DEPTH",
    "Invalid",
    "Reading",
    "byte_offset",
    "first_invalid",
    "read",
    "reference_changes",
    "reference_partial",
]

MAX_DEPTH = 512
_WS = " \t\n\r"
_HEX = "0123456789abcdefABCDEF"
_DIGITS = "0123456789"
_SIMPLE_ESCAPES = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}
_MISSING: Any = object()

Path = tuple[str | int, ...]
Change = tuple[Path, str, str | None]


class Invalid(Exception):
    """The prefix stops being valid at character index ``at``."""

    def __init__(self, at: int) -> None:
        super().__init__(at)
        self.at = at


class _End(Exception):
    """The prefix ended inside a token."""


@dataclass
class Reading:
    #: The partial value (``None`` when no value has begun or been finished).
    value: Any
    #: The text is one complete JSON value, as ``json.loads`` would accept it.
    complete: bool
    #: ``(position, kind, path)`` for every ``set`` and ``completed``, in text order.
    log: list[tuple[int, str, Path]] = field(default_factory=list)
    #: String values by the position of their opening quote: path and visible text.
    strings: dict[int, tuple[Path, str]] = field(default_factory=dict)
    #: The opening quote of the string value the prefix ends in, if any.
    open_string: int | None = None


class _Reader:
    def __init__(self, text: str) -> None:
        self.s = text
        self.n = len(text)
        self.i = 0
        self.log: list[tuple[int, str, Path]] = []
        self.strings: dict[int, tuple[Path, str]] = {}
        self.open_string: int | None = None
        #: The prefix ended right after a digit that may end the root number.
        self.number_may_end = False

    def at_end(self) -> bool:
        return self.i >= self.n

    def ws(self) -> None:
        while self.i < self.n and self.s[self.i] in _WS:
            self.i += 1

    def value(self, path: Path, depth: int) -> tuple[Any, bool]:
        """A value: ``(value or _MISSING, finished)``."""
        self.ws()
        if self.at_end():
            return _MISSING, False
        c = self.s[self.i]
        if c == "{":
            return self.object(path, depth)
        if c == "[":
            return self.array(path, depth)
        if c == '"':
            return self.string_value(path)
        if c == "-" or c in _DIGITS:
            return self.number(path)
        for word, val in (
            ("true", True),
            ("false", False),
            ("null", None),
            ("NaN", float("nan")),
            ("Infinity", float("inf")),
        ):
            if c == word[0]:
                return self.word(word, val, path)
        raise Invalid(self.i)

    def enter(self, path: Path, depth: int) -> None:
        if depth == MAX_DEPTH:
            raise Invalid(self.i)
        self.log.append((self.i, "set", path))
        self.i += 1

    def close(self, path: Path) -> None:
        self.log.append((self.i, "completed", path))
        self.i += 1

    def object(self, path: Path, depth: int) -> tuple[Any, bool]:
        self.enter(path, depth)
        out: dict[str, Any] = {}
        self.ws()
        if self.at_end():
            return out, False
        if self.s[self.i] == "}":
            self.close(path)
            return out, True
        while True:
            self.ws()
            if self.at_end():
                return out, False
            if self.s[self.i] != '"':
                raise Invalid(self.i)
            key, done = self.string()
            if not done:
                return out, False
            self.ws()
            if self.at_end():
                return out, False
            if self.s[self.i] != ":":
                raise Invalid(self.i)
            self.i += 1
            item, done = self.value((*path, key), depth + 1)
            if item is not _MISSING:
                out[key] = item
            if not done:
                return out, False
            self.ws()
            if self.at_end():
                return out, False
            c = self.s[self.i]
            if c == ",":
                self.i += 1
            elif c == "}":
                self.close(path)
                return out, True
            else:
                raise Invalid(self.i)

    def array(self, path: Path, depth: int) -> tuple[Any, bool]:
        self.enter(path, depth)
        out: list[Any] = []
        self.ws()
        if self.at_end():
            return out, False
        if self.s[self.i] == "]":
            self.close(path)
            return out, True
        while True:
            item, done = self.value((*path, len(out)), depth + 1)
            if item is not _MISSING:
                out.append(item)
            if not done:
                return out, False
            self.ws()
            if self.at_end():
                return out, False
            c = self.s[self.i]
            if c == ",":
                self.i += 1
            elif c == "]":
                self.close(path)
                return out, True
            else:
                raise Invalid(self.i)

    def string_value(self, path: Path) -> tuple[Any, bool]:
        start = self.i
        self.log.append((start, "set", path))
        text, done = self.string()
        self.strings[start] = (path, text)
        if done:
            self.log.append((self.i - 1, "completed", path))
        else:
            self.open_string = start
        return text, done

    def string(self) -> tuple[str, bool]:
        """A string from its opening quote: the visible text and whether it closed."""
        s, n = self.s, self.n
        self.i += 1
        out: list[str] = []
        high: int | None = None  # a \\u high surrogate that may still pair
        while True:
            if self.i >= n:
                return "".join(out), False
            c = s[self.i]
            if c == "\\":
                if self.i + 1 >= n:
                    return "".join(out), False
                e = s[self.i + 1]
                if e == "u":
                    digits = s[self.i + 2 : self.i + 6]
                    for k, h in enumerate(digits):
                        if h not in _HEX:
                            raise Invalid(self.i + 2 + k)
                    if len(digits) < 4:
                        return "".join(out), False
                    unit = int(digits, 16)
                    self.i += 6
                    if high is not None:
                        if 0xDC00 <= unit <= 0xDFFF:
                            out.append(chr(0x10000 + ((high - 0xD800) << 10) + (unit - 0xDC00)))
                            high = None
                            continue
                        out.append(chr(high))
                        high = None
                    if 0xD800 <= unit <= 0xDBFF:
                        high = unit
                    else:
                        out.append(chr(unit))
                    continue
                if e not in _SIMPLE_ESCAPES:
                    raise Invalid(self.i + 1)
                piece = _SIMPLE_ESCAPES[e]
                self.i += 2
            elif c == '"':
                self.i += 1
                if high is not None:
                    out.append(chr(high))
                return "".join(out), True
            elif ord(c) < 0x20:
                raise Invalid(self.i)
            else:
                piece = c
                self.i += 1
            if high is not None:
                out.append(chr(high))
                high = None
            out.append(piece)

    def digits(self) -> None:
        if self.at_end():
            raise _End
        if self.s[self.i] not in _DIGITS:
            raise Invalid(self.i)
        while self.i < self.n and self.s[self.i] in _DIGITS:
            self.i += 1

    def number(self, path: Path) -> tuple[Any, bool]:
        s, start = self.s, self.i
        try:
            if s[self.i] == "-":
                self.i += 1
                if self.at_end():
                    raise _End
                if s[self.i] == "I":
                    return self.word("Infinity", float("-inf"), path)
            if self.at_end():
                raise _End
            if s[self.i] == "0":
                self.i += 1
            else:
                self.digits()
            if self.i < self.n and s[self.i] == ".":
                self.i += 1
                self.digits()
            if self.i < self.n and s[self.i] in "eE":
                self.i += 1
                if self.i < self.n and s[self.i] in "+-":
                    self.i += 1
                self.digits()
        except _End:
            return _MISSING, False
        if self.at_end():
            # It could still grow: left out, but a text that is just this number is complete.
            self.number_may_end = path == ()
            return _MISSING, False
        self.log.append((self.i, "set", path))
        self.log.append((self.i, "completed", path))
        return json.loads(s[start : self.i]), True

    def word(self, word: str, val: Any, path: Path) -> tuple[Any, bool]:
        for ch in word:
            if self.at_end():
                return _MISSING, False
            if self.s[self.i] != ch:
                raise Invalid(self.i)
            self.i += 1
        self.log.append((self.i - 1, "set", path))
        self.log.append((self.i - 1, "completed", path))
        return val, True


def read(text: str) -> Reading:
    """Read a prefix; raises :class:`Invalid` at its first character that can never be valid."""
    r = _Reader(text)
    val, done = r.value((), 0)
    if done:
        r.ws()
        if not r.at_end():
            raise Invalid(r.i)
    complete = done or r.number_may_end
    return Reading(
        value=None if val is _MISSING else val,
        complete=complete,
        log=r.log,
        strings=r.strings,
        open_string=r.open_string,
    )


def reference_partial(text: str) -> Any:
    return read(text).value


def first_invalid(text: str) -> int | None:
    """The index of the first character after which no text can be valid JSON, if any."""
    try:
        read(text)
    except Invalid as e:
        return e.at
    return None


def reference_changes(text: str, before: int, after: int) -> list[Change]:
    """What ``partial_with_changes()`` reports at ``text[:after]`` when the previous call saw
    ``text[:before]``: the open string's growth first, then every ``set`` and ``completed``
    whose position lies in between, in text order."""
    old, new = read(text[:before]), read(text[:after])
    changes: list[Change] = []
    if old.open_string is not None:
        path, seen = old.strings[old.open_string]
        _, now = new.strings[old.open_string]
        if len(now) > len(seen):
            changes.append((path, "grew", now[len(seen) :]))
    changes.extend((path, kind, None) for pos, kind, path in new.log if before <= pos < after)
    return changes


def byte_offset(text: str, index: int) -> int:
    """The UTF-8 byte offset of a character index."""
    return len(text[:index].encode("utf-8", "surrogatepass"))
