"""The retry policy of ``sf.stream``'s first request: which refusals are sent again, how long
to wait, and how the error finally raised says how many requests were made."""

from __future__ import annotations

import contextlib
import time

from .._errors import StreamError
from .._io.asynclib import sleep

#: RFC 9110 section 9.2.2.
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"})
#: Providers whose POST starts an agent run (tools that act, resources created): a 5xx or a
#: connection lost before the response may come after the run started, so it is not sent
#: again unless the request is idempotent. ``auto`` may be one of them.
RUN_STARTING_PROVIDERS = frozenset({"clouisle", "onecortex", "auto"})


def pause(seconds: float) -> None:
    """The wait between two attempts of ``stream()``'s first request."""
    time.sleep(seconds)


async def apause(seconds: float) -> None:
    """The wait between two attempts of ``astream()``'s first request (asyncio or trio)."""
    await sleep(seconds)


def count_attempts(exc: Exception, refused: list[Exception], max_retries: int) -> None:
    """Say on the error the first request finally raised how many requests were made:
    ``attempts`` (1 when none was retried), and a note (Python 3.11+) naming the earlier
    ones' errors."""
    attempts = len(refused) + 1
    with contextlib.suppress(AttributeError, TypeError):
        exc.attempts = attempts  # type: ignore[attr-defined]
    if not refused:
        return
    earlier = ", ".join(describe_refusal(e) for e in refused)
    add_note = getattr(exc, "add_note", None)
    if add_note is not None:
        add_note(
            f"streamfold: request {attempts} of at most {max_retries + 1} (max_retries="
            f"{max_retries}); the earlier {'one' if len(refused) == 1 else len(refused)} "
            f"failed: {earlier}"
        )


def describe_refusal(exc: Exception) -> str:
    if isinstance(exc, StreamError) and exc.status is not None:
        return f"HTTP {exc.status}"
    return type(exc).__name__


# END
