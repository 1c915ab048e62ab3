"""The ``streamfold`` command (also ``python -m streamfold``).

``streamfold inspect PATH|-``
    Read a saved stream (a file, or ``-`` for stdin, read live) and show its timeline, the
    folded message and any warnings; ``--json`` prints the message as one JSON object;
    ``--timing`` analyses arrival times (``curl -N ... | streamfold inspect - --timing``);
    ``--save FILE`` keeps the bytes with their arrival times for a later
    ``streamfold inspect FILE --timing``.

``streamfold demo``
    Run ``inspect`` over the example streams shipped in the package, then print a summary.

Exit codes of ``inspect`` (and of ``demo``: 0 when every example behaved as expected, else 1):

====  ===========================================================================
0     the stream completed: the provider's terminal event was seen
1     the provider reported an error inside the stream (the partial message is shown)
2     usage error, unreadable input, unwritable output (a full disk, a closed stdout),
      or input that is not a stream of the provider
3     the stream ended without its terminal event: cut connection or truncated input
4     the bytes broke the provider's format partway (protocol error)
130   interrupted before any input arrived
====  ===========================================================================

No traceback is ever shown for bad input; set ``STREAMFOLD_DEBUG=1`` to see one for a bug.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO

from .._core import __version__
from .._providers import PROVIDER_NAMES
from .demo import run_demo
from .inspect import Inspection, Outcome, inspect_stream
from .render import Style, color_wanted, render_inspection, render_json, visible
from .timing import (
    Arrival,
    Recording,
    RecordingError,
    RecordingWriter,
    is_recording,
    parse_recording,
    read_live,
)

__all__ = ["build_parser", "load_input", "main"]

_EXIT_CODES = """\
exit codes:
  0    the stream completed (the provider's terminal event was seen)
  1    the provider reported an error inside the stream (partial message shown)
  2    usage error, unreadable input or unwritable output, or not a stream of the
       given provider
  3    the stream ended without its terminal event (cut connection, truncated input)
  4    the bytes broke the provider's format partway (protocol error)
  70   internal error (a bug in streamfold: please report it)
  130  interrupted (Ctrl-C) before any input arrived; once some has, Ctrl-C ends the
       input and what arrived is inspected (exit code as above)
"""

_DEMO_EXIT_CODES = """\
exit codes:
  0    every example behaved as its catalogue says (whatever each one's own exit code)
  1    some example did not (named at the end)
  2    usage error, or output that cannot be written
  70   internal error (a bug in streamfold: please report it)
  130  interrupted (Ctrl-C)
"""

#: Exit code for an internal error (sysexits.h ``EX_SOFTWARE``).
_EXIT_INTERNAL = 70
_EXIT_INTERRUPTED = 130


class InputError(Exception):
    """The input could not be read; the message is shown as is."""


class OutputError(Exception):
    """The output could not be written (a full disk, a closed stdout); shown as is."""


class _Output:
    """Standard output for the commands: a write that fails is an :class:`OutputError` (exit
    2, said plainly), not an internal error; a reader that went away stays a quiet stop."""

    def __init__(self, stream: IO[str] | None) -> None:
        if stream is None:  # started with stdout closed (`>&-`)
            raise OutputError("cannot write the output: standard output is closed")
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise
        except (OSError, ValueError) as exc:  # ValueError: I/O operation on closed file
            raise OutputError(f"cannot write the output: {_reason(exc)}") from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except (OSError, ValueError) as exc:
            raise OutputError(f"cannot write the output: {_reason(exc)}") from None


def _reason(exc: Exception) -> str:
    return (exc.strerror if isinstance(exc, OSError) else None) or str(exc)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="streamfold",
        description="Inspect streamed LLM/agent API responses (SSE, JSON lines).",
        epilog=_EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"streamfold {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    inspect = commands.add_parser(
        "inspect",
        help="show the timeline, folded message and warnings of a saved or live stream",
        description="Show the timeline, the folded message and the warnings of a stream.",
        epilog=_EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    inspect.add_argument(
        "path",
        metavar="PATH|-",
        help="a saved response body or a --save recording; '-' reads stdin live",
    )
    inspect.add_argument(
        "--provider",
        "-p",
        default="auto",
        choices=PROVIDER_NAMES,
        metavar="NAME",
        help=f"wire format: {', '.join(PROVIDER_NAMES)} (default: auto, detected and shown)",
    )
    inspect.add_argument(
        "--events", action="store_true", help="list every event, not one line per block"
    )
    inspect.add_argument(
        "--json", action="store_true", help="print the folded message as one JSON object"
    )
    inspect.add_argument(
        "--timing",
        action="store_true",
        help="analyse arrival times: first byte/event/token, gaps, rates, bursts, stalls",
    )
    inspect.add_argument(
        "--save",
        metavar="FILE",
        help="write the bytes with their arrival times (JSON lines) for a later --timing",
    )
    inspect.add_argument(
        "--strict",
        action="store_true",
        help="treat protocol violations as errors instead of warnings",
    )
    _add_color(inspect)
    inspect.set_defaults(handler=_cmd_inspect)

    demo = commands.add_parser(
        "demo",
        help="run inspect over the example streams shipped in the package",
        description="Run inspect over the example streams shipped in the package (offline).",
        epilog=_DEMO_EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_color(demo)
    demo.set_defaults(handler=_cmd_demo)
    return parser


def _add_color(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the output (default: auto, only on a terminal and without NO_COLOR)",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            # A terminal or pipe without UTF-8 gets '?' instead of a UnicodeEncodeError.
            reconfigure(errors="replace")
    # Arrival times count from here: the closest this process gets to when the request began.
    started = time.monotonic()
    args = build_parser().parse_args(argv)
    args.started = started
    try:
        code: int = args.handler(args)
    except KeyboardInterrupt:
        _error("interrupted")
        return _EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`| head`); stop quietly, and keep Python from complaining
        # about the unflushable stdout at exit.
        _drop_stdout()
        return 0
    except OutputError as exc:
        _error(str(exc))
        _drop_stdout()
        return Outcome.BAD_INPUT.exit_code
    except Exception as exc:
        if os.environ.get("STREAMFOLD_DEBUG"):
            raise
        _error(
            f"internal error: {type(exc).__name__}: {exc} "
            "(set STREAMFOLD_DEBUG=1 for the traceback, and please report it)"
        )
        return _EXIT_INTERNAL
    return code


def _error(message: str) -> None:
    # A message may quote the stream (a provider's error text): its controls are escaped.
    print(f"streamfold: {visible(message)}", file=sys.stderr, flush=True)


def _drop_stdout() -> None:
    """Point stdout at /dev/null, so that Python's own flush at exit has nothing to fail on."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


# -- inspect ---------------------------------------------------------------------------------


def _cmd_inspect(args: argparse.Namespace) -> int:
    try:
        with _save_target(args.save, args.path) as save:
            recording = load_input(args.path, save=save, started=args.started)
    except InputError as exc:
        _error(str(exc))
        return Outcome.BAD_INPUT.exit_code
    source = "stdin" if args.path == "-" else args.path
    inspection = inspect_stream(
        recording,
        source=source,
        provider=args.provider,
        strict=args.strict,
        every_event=args.events,
        timing=args.timing,
    )
    return _report(inspection, args)


def _report(inspection: Inspection, args: argparse.Namespace) -> int:
    if inspection.outcome is Outcome.BAD_INPUT:
        # Nothing of the stream was understood: a folded message would only mislead.
        _error(inspection.explanation or "not a stream")
        return inspection.exit_code
    out = _Output(sys.stdout)
    if args.json:
        out.write(render_json(inspection))
    else:
        style = Style(color_wanted(args.color, sys.stdout))
        out.write(render_inspection(inspection, style))
    out.flush()
    if inspection.explanation:
        _error(inspection.explanation)
    return inspection.exit_code


@contextlib.contextmanager
def _save_target(save: str | None, source: str) -> Iterator[IO[bytes] | None]:
    if save is None:
        yield None
        return
    target = Path(save)
    if source != "-":
        with contextlib.suppress(OSError):
            if target.exists() and target.samefile(source):
                raise InputError(f"--save {save}: that is the input file; choose another name")
    try:
        fp = target.open("wb")
    except OSError as exc:
        raise InputError(f"--save {save}: cannot write: {exc.strerror or exc}") from None
    try:
        with fp:
            yield fp
    except OSError as exc:  # reading raises InputError: an OSError here is the file's (ENOSPC)
        raise InputError(f"--save {save}: cannot write: {exc.strerror or exc}") from None


def load_input(
    path: str, *, save: IO[bytes] | None = None, started: float | None = None
) -> Recording:
    """Read ``path`` (``-`` = stdin, live and timed) as a :class:`Recording`.

    A file in the recording format keeps its recorded arrival times; any other file is one
    chunk that arrived at once (``live`` false). Live arrival times count from ``started``
    (a ``time.monotonic()`` value; default: when reading starts).
    """
    if path == "-":
        return _load_stdin(save, started)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    if is_recording(data):
        recording = _parse(data, path)
    else:
        recording = Recording([Arrival(0.0, data)], end=0.0, header={"live": False})
    if save is not None:
        _write_recording(save, recording, source=path)
    return recording


def _load_stdin(save: IO[bytes] | None, started: float | None) -> Recording:
    arrivals: list[Arrival] = []
    writer = RecordingWriter(save, source="stdin") if save is not None else None
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):
        raise InputError("cannot read stdin: it is closed or not a file") from None
    if os.isatty(fd):
        _error("reading the stream from the terminal; end it with Ctrl-D")
    end: float | None = None
    live = read_live(fd, start=started)
    try:
        while True:
            try:
                arrival = next(live)
            except StopIteration:
                break
            except OSError as exc:  # only the read: a failed --save write is the file's
                raise InputError(f"cannot read stdin: {exc.strerror or exc}") from None
            if not arrival.data:
                end = arrival.t
                break
            arrivals.append(arrival)
            if writer is not None:
                writer.add(arrival)
    except KeyboardInterrupt:
        if not arrivals:
            raise
        _error("interrupted: inspecting what arrived so far")
    data = b"".join(a.data for a in arrivals)
    if is_recording(data):
        # A recording piped in: its own times count, and --save keeps them.
        recording = _parse(data, "stdin")
        if save is not None:
            save.seek(0)
            save.truncate()
            _write_recording(save, recording, source="stdin")
        return recording
    if writer is not None and end is not None:
        writer.end(end)
    return Recording(arrivals, end=end, header={"live": True, "source": "stdin"})


def _parse(data: bytes, source: str) -> Recording:
    try:
        return parse_recording(data)
    except RecordingError as exc:
        raise InputError(f"{source} looks like a streamfold recording, but {exc}") from None


def _write_recording(save: IO[bytes], recording: Recording, *, source: str) -> None:
    writer = RecordingWriter(save, source=source, live=recording.live)
    for arrival in recording.arrivals:
        writer.add(arrival)
    if recording.end is not None:
        writer.end(recording.end)


# -- demo ------------------------------------------------------------------------------------


def _cmd_demo(args: argparse.Namespace) -> int:
    out = _Output(sys.stdout)
    style = Style(color_wanted(args.color, sys.stdout))
    code = run_demo(out, style)
    out.flush()
    return code


if __name__ == "__main__":  # pragma: no cover - `python -m streamfold._cli.main`
    raise SystemExit(main())
