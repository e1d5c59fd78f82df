"""Progress on stderr that log lines do not break.

:class:`Progress` draws one status line (a bar on a terminal, a plain line every tenth of
the way otherwise). :meth:`Progress.log_stream` is a file-like object to hand to
``configure_logging(stream=…)``: each complete log line clears the bar, is written, and
the bar is drawn again below it, so logs and progress never share a line.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]

_WIDTH = 28


def _clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


class Progress:
    """One progress line on ``stream`` (stderr by default); ``enabled=False`` is silent."""

    def __init__(self, stream: TextIO | None = None, *, enabled: bool = True) -> None:
        self._out = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self._tty = bool(getattr(self._out, "isatty", lambda: False)())
        self._label = ""
        self._total = 0
        self._done = 0
        self._failed = 0
        self._started = time.monotonic()
        self._drawn = False
        self._last_decile = -1
        self._last_line = ""

    # the task ----------------------------------------------------------------------------

    def start(self, label: str, total: int, *, done: int = 0) -> None:
        """Begin counting ``total`` units (``done`` of them finished earlier)."""
        self._label, self._total, self._done, self._failed = label, total, done, 0
        self._started = time.monotonic()
        self._last_decile = -1
        self._draw(force=True)

    def advance(self, n: int = 1, *, failed: bool = False) -> None:
        self._done += n
        if failed:
            self._failed += n
        self._draw()

    def finish(self) -> None:
        self._draw(force=True)
        if self._tty and self._drawn and self.enabled:
            self._out.write("\n")
            self._out.flush()
        self._drawn = False

    # drawing -----------------------------------------------------------------------------

    def _line(self) -> str:
        total = max(self._total, 1)
        share = min(1.0, self._done / total)
        elapsed = time.monotonic() - self._started
        eta = ""
        if 0 < self._done < self._total:
            eta = f" eta {_clock(elapsed / self._done * (self._total - self._done))}"
        failed = f" ({self._failed} failed)" if self._failed else ""
        if self._tty:
            filled = int(share * _WIDTH)
            bar = "#" * filled + "-" * (_WIDTH - filled)
            return (
                f"{self._label} [{bar}] {self._done}/{self._total}{failed} {_clock(elapsed)}{eta}"
            )
        return (
            f"{self._label}: {self._done}/{self._total} ({share:.0%}){failed} "
            f"elapsed {_clock(elapsed)}{eta}"
        )

    def _clear(self) -> None:
        if self._tty and self._drawn:
            self._out.write("\r\x1b[2K")

    def _draw(self, *, force: bool = False) -> None:
        if not self.enabled or not self._label:
            return
        if self._tty:
            self._clear()
            self._out.write(self._line())
            self._drawn = True
            self._out.flush()
            return
        decile = int(10 * self._done / max(self._total, 1))
        line = self._line()
        if (force or decile != self._last_decile) and line != self._last_line:
            self._last_decile = decile
            self._last_line = line
            self._out.write(line + "\n")
            self._out.flush()

    def write_lines(self, text: str) -> None:
        """Write complete lines above the progress line (what log output goes through)."""
        self._clear()
        self._out.write(text)
        if self._tty and self._drawn and self.enabled:
            self._out.write(self._line())
        self._out.flush()

    def log_stream(self) -> _LogStream:
        """A stream for ``configure_logging(stream=…)`` that keeps logs off the bar."""
        return _LogStream(self)

    def isatty(self) -> bool:
        return self._tty


class _LogStream:
    """Buffers writes until a newline, then hands whole lines to the progress line."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._buffer = ""

    def write(self, text: str) -> int:
        self._buffer += text
        if "\n" in self._buffer:
            complete, _, self._buffer = self._buffer.rpartition("\n")
            self._progress.write_lines(complete + "\n")
        return len(text)

    def flush(self) -> None:
        return None

    def isatty(self) -> bool:
        return self._progress.isatty()
