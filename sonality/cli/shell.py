"""What every command shares: :class:`CliState` (the object in ``ctx.obj``, and the one
way to open the app), the group that turns errors into exit codes, the shared options, and
:func:`emit`, which prints a result as JSON or text.

Only click and the standard library are imported at module level: the app, the settings
and everything under them load inside the commands, so ``sonality --help`` stays fast.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager
from functools import wraps
from typing import TYPE_CHECKING, Any, ClassVar, ParamSpec, TypeVar

import click

if TYPE_CHECKING:
    from sonality import Settings, Sonality
    from sonality.wiring import Reads, Store

__all__ = [
    "INTERRUPTED",
    "CliState",
    "SonalityGroup",
    "Unsuccessful",
    "emit",
    "json_option",
    "lines",
    "llm_option",
    "persona_option",
    "run",
]

INTERRUPTED = 130
"""Exit status after Ctrl-C: 128 + SIGINT, as shells report it."""

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


class CliState:
    """The object carried in ``ctx.obj``: the settings (read and checked on first use, when
    logging is configured too) and the ways a command opens what it works on."""

    def __init__(self, verbosity: int = 0) -> None:
        self._settings: Settings | None = None
        self.verbosity = verbosity
        """-1 with ``-q`` (warnings only, no progress bars), 1 with ``-v`` (debug events,
        shown during bars too), 0 otherwise (``SONALITY_LOG_LEVEL``)."""

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            from pydantic import ValidationError as PydanticValidationError

            from sonality import Settings
            from sonality.errors import ConfigError
            from sonality.wiring import configure_logging

            try:
                self._settings = Settings()
            except PydanticValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"]).upper()
                message = str(first["msg"]).removeprefix("Value error, ")
                raise ConfigError(f"bad setting SONALITY_{where}: {message}") from None
            level = {-1: "WARNING", 1: "DEBUG"}.get(self.verbosity, self._settings.log_level)
            configure_logging(self._settings.log_format, level)
        return self._settings

    @asynccontextmanager
    async def app(
        self,
        *,
        llm_spec: str | None = None,
        owner: str | None = None,
        with_model: bool = True,
    ) -> AsyncIterator[Sonality]:
        """The app built from the settings, closed on the way out. ``llm_spec``
        (``package.module:callable``, from ``--llm``) replaces the model the settings name;
        ``owner`` names this process's reflection leases. ``with_model=False`` leaves the
        model out (reads, erasures, moves never call it), so litellm is not imported."""
        from sonality import Sonality
        from sonality.wiring import load_llm_factory

        settings = self.settings
        if not with_model:
            settings = settings.model_copy(update={"model": None})
        llm = load_llm_factory(llm_spec, settings) if llm_spec else None
        app = await Sonality.open(settings, llm=llm, owner=owner)
        try:
            yield app
        finally:
            await app.close()

    @asynccontextmanager
    async def reads(self) -> AsyncIterator[Reads]:
        """The facade's read-only half (``sonality.mind.reads.Reads``) over the store the
        settings name, closed on the way out: what the listing commands use. It builds,
        and imports, neither the model nor the pipelines that ``app`` assembles."""
        from sonality.wiring import open_reads

        reads = await open_reads(self.settings)
        try:
            yield reads
        finally:
            await reads.store.close()

    @asynccontextmanager
    async def store(self, *, create: bool = True) -> AsyncIterator[Store]:
        """The bare store (opened, never migrated), for the schema commands; with
        ``create=False`` nothing is created (``doctor``)."""
        from sonality.wiring import open_store

        store = await open_store(self.settings, create=create)
        try:
            yield store
        finally:
            await store.close()


class Unsuccessful(Exception):
    """The command did its work and the answer is "no": migrations are pending
    (``migrate --check``), the store is unhealthy (``doctor``), a reflection was rejected
    or failed (``reflect``). Its output already says why; nothing more is printed and the
    exit status is 1, as those commands document."""

    exit_code: ClassVar[int] = 1


class SonalityGroup(click.Group):
    """Turns Sonality's errors into one line on stderr and their kind's exit code.

    Anything else (a bug) propagates with its traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        from sonality.errors import SonalityError

        try:
            return super().invoke(ctx)
        except SonalityError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except Unsuccessful as exc:
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            ctx.exit(INTERRUPTED)


def run(fn: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, R]:
    """Run an async command body on a fresh event loop."""

    @wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        import asyncio

        return asyncio.run(fn(*args, **kwargs))

    return wrapper


def emit(data: Any, as_json: bool, text: Callable[[], None]) -> None:
    """Print a result: ``data`` as JSON on stdout with ``--json``, else call ``text``."""
    if as_json:
        import json

        click.echo(json.dumps(_plain(data), indent=2, ensure_ascii=False, default=str))
    else:
        text()


def _plain(data: Any) -> Any:
    from pydantic import BaseModel

    if isinstance(data, BaseModel):
        return data.model_dump(mode="json")
    if isinstance(data, dict):
        return {k: _plain(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_plain(v) for v in data]
    return data


def lines(items: Sequence[T], render: Callable[[T], str], empty: str) -> None:
    """One line per item, or ``empty`` when there is none."""
    for item in items:
        click.echo(render(item))
    if not items:
        click.echo(empty)


json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON on stdout.")
persona_option = click.option("--persona", "persona_id", required=True, help="Persona id.")
llm_option = click.option(
    "--llm",
    "llm_spec",
    metavar="MODULE:CALLABLE",
    help="Build the model with this factory (called with the settings) instead of SONALITY_MODEL.",
)
