"""What the async code needs of the running async library (asyncio or trio, told apart at run
time, neither imported before it is needed), and the backoff between two attempts."""

from __future__ import annotations

import random
import sys

__all__ = ["async_library", "backoff", "sleep"]

#: The backoff doubles at most this many times (far past any ``max_delay``): 2 ** 1024 is an
#: int no float holds, and the 1,025th failure in a row raised OverflowError.
MAX_DOUBLINGS = 64
#: Up to this share of a computed backoff is added at random.
JITTER = 0.25


def backoff(base: float, failures: int, max_delay: float) -> float:
    """The wait after ``failures`` failures in a row (1 for the first): ``base`` doubled for
    each one after the first, up to ``MAX_DOUBLINGS`` times, plus up to ``JITTER`` of it at
    random, at most ``max_delay`` (and never below 0). Shared by the reconnections here and
    ``sf.stream``'s first-request retries."""
    delay = base * 2 ** min(failures - 1, MAX_DOUBLINGS)
    return float(max(0.0, min(max_delay, delay * (1 + JITTER * random.random()))))


def async_library() -> str:
    trio = sys.modules.get("trio")
    if trio is not None:
        try:
            trio.lowlevel.current_task()
        except RuntimeError:
            pass
        else:
            return "trio"
    return "asyncio"


async def sleep(seconds: float) -> None:
    if async_library() == "trio":
        import trio

        await trio.sleep(seconds)
    else:
        import asyncio

        await asyncio.sleep(seconds)
