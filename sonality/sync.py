"""``SonalitySync``: the facade for callers without an event loop (scripts, notebooks,
WSGI apps, threads).

It runs one :class:`~sonality.service.Sonality` on an event loop of its own, in a daemon
thread, and turns every coroutine method into a blocking call with the same name,
arguments and result: ``SonalitySync(Settings()).record("ada", user_id=…, …)``. Calls
from several threads are served one after another on that loop. Close it (or use it as a
context manager) to close the store and stop the thread. Inside ``async`` code, use
``Sonality`` itself: calling ``SonalitySync`` from the event loop's own thread would
block it.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from types import TracebackType
from typing import Any, Self, TypeVar

from sonality.service import Sonality

__all__ = ["SonalitySync"]

T = TypeVar("T")


class SonalitySync:
    """Blocking wrapper of :class:`Sonality` (see the module docstring).

    ``SonalitySync(settings)`` opens the deployment the settings name, as
    ``Sonality.open(settings, migrate=…)`` does; ``SonalitySync(build=fn)`` runs
    ``fn()`` (a coroutine function returning a ``Sonality``) on the wrapper's loop, for
    explicit parts: ``SonalitySync(build=lambda: _make(store_path))``."""

    def __init__(
        self,
        settings: object | None = None,
        *,
        migrate: bool | None = None,
        build: Callable[[], Coroutine[Any, Any, Sonality]] | None = None,
    ) -> None:
        if (settings is None) == (build is None):
            from sonality.errors import ConfigError

            raise ConfigError("SonalitySync needs settings or build=, not both or neither")
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="sonality-sync", daemon=True
        )
        self._thread.start()
        opener = build if build is not None else (lambda: Sonality.open(settings, migrate=migrate))
        try:
            self.app: Sonality = self._call(opener())
        except BaseException:
            self._stop()
            raise

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        if not self._thread.is_alive():
            coro.close()
            raise RuntimeError("this SonalitySync is closed")
        future: Future[T] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return future.result()

    def __getattr__(self, name: str) -> Any:
        """Every public method of ``Sonality``: coroutine methods run to completion on the
        wrapper's loop; plain ones (``count_tokens``…) are passed through."""
        if name.startswith("_"):
            raise AttributeError(name)
        member = getattr(self.app, name)
        if not inspect.iscoroutinefunction(member):
            return member

        def blocking(*args: Any, **kwargs: Any) -> Any:
            return self._call(member(*args, **kwargs))

        blocking.__name__ = name
        blocking.__doc__ = member.__doc__
        return blocking

    def close(self) -> None:
        """Close the app (and its store) and stop the loop's thread. Idempotent."""
        if not self._thread.is_alive():
            return
        try:
            self._call(self.app.close())
        finally:
            self._stop()

    def _stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
