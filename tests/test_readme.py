"""The README is the manual: every ``sf.<name>`` it mentions exists, and its runnable snippets
run."""

from __future__ import annotations

import builtins
import copy
import re
from pathlib import Path

import pytest

import streamfold as sf

README = Path(__file__).resolve().parents[1] / "README.md"


def test_every_public_name_the_readme_mentions_exists() -> None:
    names = set(re.findall(r"\bsf\.([A-Za-z_]\w*)", README.read_text("utf-8")))
    assert names, "the README mentions no sf.* name"
    missing = sorted(n for n in names if not hasattr(sf, n))
    assert missing == []
    assert set(sf.__all__) >= names


def test_framing_snippet() -> None:
    dec = sf.SSEDecoder(max_event_bytes=16 * 2**20)
    events = []
    for chunk in [b'event: add\ndata: {"a"', b": 1}\nid: 7\n\n", b"data: cut"]:
        for ev in dec.feed(chunk):
            events.append((ev.event, ev.data, ev.id, ev.retry, ev.json()))
    assert dec.close() == []
    assert dec.dropped_partial
    assert events == [("add", '{"a": 1}', "7", None, {"a": 1})]


def test_json_accumulation_snippet() -> None:
    acc = sf.JsonAccumulator()
    previews = []
    for fragment in ['{"path": "a.t', 'xt", "lines": [1, 2', "]}"]:
        acc.push(fragment)
        previews.append(copy.deepcopy(acc.partial()))  # partial() is live: copy to keep it
    assert previews[0] == {"path": "a.t"}
    assert previews[1] == {"path": "a.txt", "lines": [1]}
    assert acc.is_complete
    assert acc.value() == {"path": "a.txt", "lines": [1, 2]}


def test_every_error_class_the_docs_name_is_public() -> None:
    # `except sf.ConnectionLostError:` must work for an error docs/http.md documents.
    docs = [README, *sorted((README.parent / "docs").glob("*.md"))]
    named = {n for doc in docs for n in re.findall(r"`(\w+Error)\b", doc.read_text("utf-8"))}
    ours = sorted(n for n in named if not hasattr(builtins, n))
    assert "ConnectionLostError" in ours
    assert [n for n in ours if not hasattr(sf, n)] == []
    assert set(sf.__all__) >= set(ours)
    for name in ours:
        cls = getattr(sf, name)
        assert issubclass(cls, sf.StreamfoldError), name
        assert cls.__module__.split(".")[0] == "streamfold"
    assert issubclass(sf.ConnectionLostError, sf.IncompleteStreamError)


def _call_arguments(text: str, start: int) -> str:
    """The text between the parenthesis opened just before ``start`` and its match."""
    depth = 1
    for end in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[end], 0)
        if depth == 0:
            return text[start:end]
    raise AssertionError(f"unbalanced call at {text[start - 40 : start]!r}")


def test_every_client_a_snippet_makes_has_the_timeout_sf_stream_uses() -> None:
    # A user copies these: with httpx's default 5 s read timeout (aiohttp's 300 s in all) a
    # model that thinks for a while before its next byte cut the stream.
    import aiohttp
    import httpx

    from streamfold._client import request as http_module

    read, connect = http_module.DEFAULT_TIMEOUT
    docs = [README, *sorted((README.parent / "docs").glob("*.md"))]
    package = README.parent / "python" / "streamfold"
    texts = {doc.name: doc.read_text("utf-8") for doc in docs}
    for module in sorted(package.glob("*.py")):
        source = module.read_text("utf-8")
        texts[module.name] = source[: source.find('"""', 3) + 3]  # the module's docstring
    names = {"httpx": httpx, "aiohttp": aiohttp}
    seen: dict[str, int] = {}
    for name, text in texts.items():
        for call in re.finditer(r"\b(httpx\.(?:Async)?Client|aiohttp\.ClientSession)\(", text):
            arguments = _call_arguments(text, call.end())
            assert "timeout=" in arguments, (name, call.group(), arguments)
            if call.group(1).startswith("httpx"):
                given = eval(f"dict({arguments})", names)["timeout"]
                assert given == httpx.Timeout(read, connect=connect), (name, arguments)
            seen[call.group(1)] = seen.get(call.group(1), 0) + 1
        for call in re.finditer(r"\baiohttp\.ClientTimeout\(", text):
            given = eval(f"aiohttp.ClientTimeout({_call_arguments(text, call.end())})", names)
            assert (given.total, given.sock_read, given.sock_connect) == (None, read, connect)
        for call in re.finditer(r"\brequests\.(?:get|post|request)\(", text):
            arguments = _call_arguments(text, call.end())
            assert f"timeout=({connect:g}, {read:g})" in arguments, (name, arguments)
    assert seen.get("httpx.Client", 0) >= 3 and seen.get("aiohttp.ClientSession", 0) >= 1


def test_the_install_section_names_every_extra() -> None:
    # `pip install streamfold[requests]` is documented in docs/http.md: the README's list of
    # what to install must not leave an extra out.
    pyproject = (README.parent / "pyproject.toml").read_text("utf-8")
    section = pyproject.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    extras = set(re.findall(r"^(\w+) = ", section, re.MULTILINE))
    assert extras >= {"httpx", "aiohttp", "requests"}
    install = README.read_text("utf-8").split("## Install", 1)[1].split("\n## ", 1)[0]
    assert set(re.findall(r"pip install streamfold\[(\w+)\]", install)) == extras


def test_every_error_has_partial() -> None:
    # "All errors derive from sf.StreamfoldError. `.partial` is the message folded so far when
    # the error comes from a fold; sf.events, which folds nothing, leaves it None": a handler
    # `except sf.StreamfoldError as err: err.partial` must not raise AttributeError.
    errors: list[sf.StreamfoldError] = [sf.StreamfoldError("x")]
    for text in ('{"a": ', "]"):
        with pytest.raises(sf.StreamfoldError) as info:
            acc = sf.JsonAccumulator()
            acc.push(text)
            acc.value()
        errors.append(info.value)
    assert [type(e) for e in errors[1:]] == [sf.IncompleteJsonError, sf.InvalidJsonError]
    assert [e.partial for e in errors] == [None, None, None]
    with pytest.raises(sf.StreamfoldError) as folded:
        sf.fold([b'data: {"choices": []}\n\n'], provider="openai")
    assert isinstance(folded.value.partial, sf.Message)
