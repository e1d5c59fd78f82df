"""``sonality``: a thin command-line shell over the facade.

Each command builds the app from settings, calls the facade, and maps errors to exit
codes with one clear line (no traceback). Heavy modules (litellm, the drivers) are imported
inside commands, so ``sonality --help`` stays fast. ``--json`` prints machine-readable
output on stdout; logs go to stderr.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable, Coroutine
from functools import wraps
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import click

from sonality import __version__

if TYPE_CHECKING:
    from sonality.config import Settings
    from sonality.service import Sonality

__all__ = ["main"]

P = ParamSpec("P")
R = TypeVar("R")


class CliState:
    """The object carried in ``ctx.obj``: settings, built on first use."""

    def __init__(self) -> None:
        self._settings: Settings | None = None

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            from pydantic import ValidationError as PydanticValidationError

            from sonality.config import Settings
            from sonality.errors import ConfigError
            from sonality.observability import configure_logging

            try:
                self._settings = Settings()
            except PydanticValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"]).upper()
                raise ConfigError(f"bad setting SONALITY_{where}: {first['msg']}") from None
            configure_logging(self._settings.log_format, self._settings.log_level)
        return self._settings


class SonalityGroup(click.Group):
    """Turns Sonality's errors into one line on stderr and the branch's exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        from sonality.errors import SonalityError, exit_code_for

        try:
            return super().invoke(ctx)
        except SonalityError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(exit_code_for(exc))
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            ctx.exit(130)


def run(fn: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, R]:
    """Run an async command body on a fresh event loop."""

    @wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        return asyncio.run(fn(*args, **kwargs))

    return wrapper


async def with_app(state: CliState, body: Callable[[Sonality], Awaitable[R]]) -> R:
    from sonality.service import Sonality

    async with Sonality.from_settings(state.settings) as app:
        return await body(app)


def emit(data: Any, as_json: bool, text: Callable[[], None]) -> None:
    if as_json:
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


json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON on stdout.")
persona_option = click.option("--persona", "persona_id", required=True, help="Persona id.")


@click.group(cls=SonalityGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sonality")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Sonality: long-term personality and memory for LLM agents.

    Configuration comes from SONALITY_* environment variables (see README). The default
    store is an embedded SQLite file in your user data directory.
    """
    ctx.obj = CliState()


# schema ---------------------------------------------------------------------------------


@main.command()
@click.option("--check", is_flag=True, help="Apply nothing; exit 1 when migrations are pending.")
@json_option
@click.pass_obj
@run
async def migrate(state: CliState, check: bool, as_json: bool) -> None:
    """Apply pending schema migrations to the configured store."""
    from sonality.wiring import open_store

    store = await open_store(state.settings)
    try:
        status = await store.schema_status()
        if check:
            emit(
                {"backend": status.backend, "pending": list(status.pending)},
                as_json,
                lambda: click.echo(
                    f"{len(status.pending)} pending: {', '.join(status.pending)}"
                    if status.pending
                    else "schema is current"
                ),
            )
            if status.pending:
                raise SystemExit(1)
            return
        applied = await store.migrate()
    finally:
        await store.close()
    emit(
        {"backend": status.backend, "applied": applied},
        as_json,
        lambda: click.echo("\n".join(f"applied {name}" for name in applied) or "nothing to apply"),
    )


@main.command()
@json_option
@click.option("--call-model", is_flag=True, help="Also send one tiny request to the model.")
@click.pass_obj
@run
async def doctor(state: CliState, as_json: bool, call_model: bool) -> None:
    """Check the store, the schema, pending enrichment and the model settings."""
    from sonality.errors import SonalityError
    from sonality.wiring import open_store

    settings = state.settings
    report: dict[str, Any] = {
        "version": __version__,
        "store": {"backend": settings.store_backend, "url": _redact(settings.store)},
        "model": {"configured": bool(settings.model), "name": settings.model},
        "embedding": {
            "model": settings.embedding_model or "built-in hashed embedder",
            "dimensions": settings.embedding_dimensions,
        },
    }
    healthy = True
    try:
        store = await open_store(settings)
    except SonalityError as exc:
        report["store"].update(reachable=False, error=str(exc))
        healthy = False
    else:
        try:
            await store.ping()
            status = await store.schema_status()
            report["store"].update(reachable=True)
            report["schema"] = {"current": status.current, "pending": list(status.pending)}
            healthy &= status.current
            if status.current:
                pending: dict[str, dict[str, int]] = {}
                for persona in await store.list_personas():
                    pending[persona.id] = await store.count_episodes(persona.id)
                report["episodes"] = pending
        except SonalityError as exc:
            report["store"].update(reachable=False, error=str(exc))
            healthy = False
        finally:
            await store.close()
    if call_model and settings.model:
        report["model"]["reachable"] = await _ping_model(settings)
        healthy &= bool(report["model"]["reachable"])

    def text() -> None:
        store_info = report["store"]
        click.echo(f"sonality {__version__}")
        click.echo(
            f"store      {store_info['backend']} {store_info['url']} "
            f"{'reachable' if store_info.get('reachable') else 'UNREACHABLE'}"
            + (f" ({store_info['error']})" if "error" in store_info else "")
        )
        if "schema" in report:
            schema = report["schema"]
            click.echo(
                "schema     "
                + ("current" if schema["current"] else f"PENDING: {', '.join(schema['pending'])}")
            )
        for pid, counts in report.get("episodes", {}).items():
            click.echo(
                f"persona    {pid}: {counts['enriched']} enriched, {counts['pending']} pending, "
                f"{counts['failed']} failed"
            )
        model = report["model"]
        click.echo(
            "model      "
            + (model["name"] if model["configured"] else "not configured (set SONALITY_MODEL)")
            + ("" if "reachable" not in model else f" reachable={model['reachable']}")
        )
        click.echo(f"embedding  {report['embedding']['model']}")

    emit(report, as_json, text)
    if not healthy:
        raise SystemExit(1)


def _redact(url: str) -> str:
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://***@{rest.split('@', 1)[1]}"
    return url


async def _ping_model(settings: Settings) -> bool:
    from sonality.errors import LLMError
    from sonality.wiring import settings_llm

    llm = settings_llm(settings)
    assert llm is not None
    try:
        await llm.text("ping", {}, component="doctor")
    except LLMError:
        return False
    return True


from sonality import cli_memory as _cli_memory  # noqa: E402  (registers the commands)

_cli_memory.register(main)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
