"""A slow, obviously correct SSE decoder, written step by step from the WHATWG HTML standard,
§9.2.6 "Interpreting an event stream". It sees the whole stream at once: no chunks, no state
carried between calls, no speed tricks. The quotations are the spec's own words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: The spec leaves the range of the reconnection time to the user agent; streamfold saturates.
MAX_RETRY = 2**64 - 1


@dataclass(frozen=True)
class RefEvent:
    event: str
    data: str
    id: str
    retry: int | None


@dataclass
class RefResult:
    events: list[RefEvent] = field(default_factory=list)
    last_event_id: str = ""
    retry: int | None = None
    #: A block that a blank line would have dispatched was cut off by the end of the stream.
    dropped_partial: bool = False


def interpret(stream: bytes) -> RefResult:
    result = _interpret(stream)
    # "Once the end of the file is reached, any pending data must be discarded." Whether there
    # was an event in it: would one more blank line have dispatched something?
    closed = _interpret(stream + b"\n\n")
    result.dropped_partial = len(closed.events) > len(result.events)
    return result


def _interpret(stream: bytes) -> RefResult:
    # "Streams must be decoded using the UTF-8 decode algorithm", which "strips one leading
    # UTF-8 Byte Order Mark (BOM), if any"; errors become U+FFFD.
    text = stream.decode("utf-8", errors="replace")
    if text.startswith("\ufeff"):
        text = text[1:]

    # "a U+000D CARRIAGE RETURN U+000A LINE FEED (CRLF) character pair, a single U+000A LINE
    # FEED (LF) character not preceded by a U+000D CARRIAGE RETURN (CR) character, and a single
    # U+000D CARRIAGE RETURN (CR) character not followed by a U+000A LINE FEED (LF) character
    # being the ways in which a line can end." What follows the last line end is not a line.
    *lines, _unterminated = re.split("\r\n|\r|\n", text)

    # "a data buffer, an event type buffer, and a last event ID buffer ... must be initialized
    # to the empty string."
    data_buffer = ""
    event_type_buffer = ""
    last_event_id_buffer = ""
    result = RefResult()
    retry_in_block: int | None = None

    def process_field(name: str, value: str) -> None:
        nonlocal data_buffer, event_type_buffer, last_event_id_buffer, retry_in_block
        # "Field names must be compared literally, with no case folding performed."
        if name == "event":
            event_type_buffer = value
        elif name == "data":
            data_buffer += value + "\n"
        elif name == "id":
            if "\0" not in value:
                last_event_id_buffer = value
        elif name == "retry" and value and all(c in "0123456789" for c in value):
            result.retry = min(int(value), MAX_RETRY)
            retry_in_block = result.retry
        # "Otherwise: The field is ignored."

    def dispatch() -> None:
        nonlocal data_buffer, event_type_buffer, retry_in_block
        # 1. "Set the last event ID string of the event source to the value of the last event
        #    ID buffer."
        result.last_event_id = last_event_id_buffer
        retry, retry_in_block = retry_in_block, None
        # 2. "If the data buffer is an empty string, set the data buffer and the event type
        #    buffer to the empty string and return."
        if data_buffer == "":
            data_buffer = event_type_buffer = ""
            return
        # 3. "If the data buffer's last character is a U+000A LINE FEED (LF) character, then
        #    remove the last character from the data buffer."
        if data_buffer.endswith("\n"):
            data_buffer = data_buffer[:-1]
        # 5./6. type "message" unless the event type buffer is not empty.
        event_type = event_type_buffer or "message"
        result.events.append(RefEvent(event_type, data_buffer, result.last_event_id, retry))
        # 7. "Set the data buffer and the event type buffer to the empty string."
        data_buffer = event_type_buffer = ""

    for line in lines:
        if line == "":
            dispatch()
        elif line.startswith(":"):
            continue
        elif ":" in line:
            name, _, value = line.partition(":")
            if value.startswith(" "):
                value = value[1:]
            process_field(name, value)
        else:
            process_field(line, "")
    return result
