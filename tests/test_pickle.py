"""Events and folded messages survive ``pickle`` and ``copy``: a message goes into caches,
queues and other processes, and it keeps the frames it came from (``raw``)."""

from __future__ import annotations

import copy
import pickle

from hypothesis import given
from hypothesis import strategies as st

import streamfold as sf

#: A stream whose message keeps a frame: logprobs on a chunk without text are a Notice, whose
#: ``raw`` is the frame.
STREAM = (
    b'data: {"choices":[{"index":0,"delta":{"content":"Hi \xc3\xa9"}}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{},"logprobs":{"content":[{"token":"x"}]}}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)


@given(
    event=st.text(min_size=1).filter(lambda s: "\n" not in s),
    data=st.text(),
    id_=st.text(),
    retry=st.none() | st.integers(0, 2**63),
)
def test_a_server_sent_event_round_trips(
    event: str, data: str, id_: str, retry: int | None
) -> None:
    ev = sf.ServerSentEvent(event=event, data=data, id=id_, retry=retry)
    for copied in (pickle.loads(pickle.dumps(ev)), copy.copy(ev), copy.deepcopy(ev)):
        assert copied == ev
        assert (copied.event, copied.data, copied.id, copied.retry) == (event, data, id_, retry)


def test_a_decoded_event_round_trips_with_its_json() -> None:
    (ev,) = sf.SSEDecoder().feed(b'event: x\nid: 7\nretry: 5\ndata: {"a": "\xc3\xa9"}\n\n')
    copied = pickle.loads(pickle.dumps(ev))
    assert copied == ev and copied.json() == {"a": "é"}


def test_a_folded_message_that_keeps_frames_pickles_and_copies() -> None:
    message = sf.fold([STREAM], provider="openai")
    assert any(isinstance(getattr(n, "raw", None), sf.ServerSentEvent) for n in message.notices)
    for copied in (pickle.loads(pickle.dumps(message)), copy.deepcopy(message)):
        assert copied == message and copied.text == "Hi é"
    events = list(sf.events([STREAM], provider="openai"))
    assert pickle.loads(pickle.dumps(events)) == events
