"""The README and docs/ are the manual: every ``sf.<name>`` they mention exists, the README stays
an overview, and every link between them resolves. (Their snippets run in
tests/test_docs_snippets.py.)"""

from __future__ import annotations

import builtins
import copy
import re
from pathlib import Path

import pytest

import streamfold as sf

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = [README, *sorted((ROOT / "docs").glob("*.md"))]


def test_every_public_name_the_docs_mention_exists() -> None:
    for doc in DOCS:
        names = set(re.findall(r"\bsf\.([A-Za-z_]\w*)", doc.read_text("utf-8")))
        missing = sorted(n for n in names if not hasattr(sf, n))
        assert missing == [], doc.name
        assert set(sf.__all__) >= names, doc.name
    assert re.search(r"\bsf\.fold\(", README.read_text("utf-8"))


def test_the_readme_is_an_overview() -> None:
    # The manual is docs/: the README keeps what a newcomer reads first, and links each page.
    readme = README.read_text("utf-8")
    assert len(readme.encode("utf-8")) < 12_000
    assert readme.startswith("# streamfold\n\n```\nmake demo ")
    assert "\nmake test " in readme.split("\n```\n", 2)[1] + "\n"
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"README.md"}
    linked = set(re.findall(r"\]\(docs/([\w.-]+\.md)(?:#[\w-]*)?\)", readme))
    assert pages <= linked
    index = (ROOT / "docs" / "README.md").read_text("utf-8")
    assert pages <= set(re.findall(r"\]\(([\w.-]+\.md)(?:#[\w-]*)?\)", index))


_FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"(`+).+?\1", re.DOTALL)
_LINK = re.compile(r"\]\(([^()\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text lower-cased, punctuation dropped, spaces to
    hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(text: str) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", _FENCE.sub("", text), re.MULTILINE):
        slug = _slug(heading)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def _links(text: str) -> list[str]:
    return _LINK.findall(_CODE_SPAN.sub("``", _FENCE.sub("", text)))


def test_the_anchor_rules() -> None:
    text = "# A `sf.fold_json` form: done\n```\n# not a heading\n```\n## Done\n## Done\n"
    assert _anchors(text) == {"a-sffold_json-form-done", "done", "done-1"}
    assert _links("[a](b.md) `[c](d.md)` [`e`](f.md#g)\n```\n[h](i.md)\n```\n") == [
        "b.md",
        "f.md#g",
    ]


def test_every_relative_link_resolves() -> None:
    # A page moved or a heading renamed must not leave a link pointing at nothing.
    checked = 0
    for doc in DOCS:
        text = doc.read_text("utf-8")
        for link in _links(text):
            if re.match(r"[a-z][a-z0-9+.-]*:", link):
                continue  # https:, mailto:
            path, _, anchor = link.partition("#")
            target = (doc.parent / path).resolve() if path else doc
            where = f"{doc.relative_to(ROOT)}: {link}"
            assert target.is_relative_to(ROOT), f"{where} leaves the repository"
            assert target.exists(), f"{where} names no file"
            if anchor:
                assert target.suffix == ".md", where
                assert anchor in _anchors(target.read_text("utf-8")), f"{where}: no such heading"
            checked += 1
    assert checked > 50


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


def _per_event_ratios() -> dict[tuple[str, str, str], float]:
    """(API, stream, events) -> the ratio BENCHMARKS.md's one-event-per-read tables give."""
    text = (ROOT / "BENCHMARKS.md").read_text("utf-8")
    section = text.split("### One event per read", 1)[1].split("\n### ", 1)[0]
    fold, events = section.split("**`sf.events()` at one event per read**", 1)
    events = events.split("\n**", 1)[0]
    ratios = {}
    tables = ((fold, {"fold": 4, "afold": 7}), (events, {"events": 4}))  # the ratio columns
    for table, columns in tables:
        for row in re.findall(r"^\| (?!stream \|)(?!-)(.+) \|$", table, re.MULTILINE):
            cells = row.split(" | ")
            for name, column in columns.items():
                ratio = re.search(r"\*\*([\d.]+)x\*\*", cells[column])
                assert ratio, row
                ratios[name, cells[0], cells[1]] = float(ratio.group(1))
    return ratios


def test_the_readme_performance_headline_is_benchmarks_md() -> None:
    # Nothing generates the README's table: `make bench` rewrites BENCHMARKS.md, and this says
    # when the headline no longer matches it (each figure as BENCHMARKS.md's, rounded).
    ratios = _per_event_ratios()
    readme = README.read_text("utf-8").split("## Performance", 1)[1].split("\n## ", 1)[0]
    head, *rows = re.findall(r"^\| (?!-)(.+) \|$", readme, re.MULTILINE)
    assert head.split(" | ")[1:] == ["`sf.fold`", "`sf.afold`", "`sf.events` vs framer + `orjson`"]
    streams = ["OpenAI Chat, text", "Anthropic, text", "OpenAI Chat, parallel tool calls"]
    compared = 0
    for row in rows:
        count, *cells = row.split(" | ")
        for api, cell in zip(("fold", "afold", "events"), cells, strict=True):
            shown = [figure.removesuffix("x") for figure in cell.split(" / ")]
            for stream, figure in zip(streams, shown, strict=False):
                half_unit = 0.5 * 10 ** -len(figure.partition(".")[2])
                measured = ratios[api, stream, count]
                assert abs(measured - float(figure)) <= half_unit + 1e-9, (api, stream, count)
                compared += 1
    assert compared == 4 * (3 + 3 + 2)
