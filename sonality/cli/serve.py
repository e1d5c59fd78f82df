"""``sonality serve`` (the HTTP server), ``sonality mcp`` (MCP over stdio) and
``sonality key create|list|revoke`` (the server's API keys). The server package — and the
web stack and MCP SDK under it, from the ``sonality[server]`` extra — loads inside
``serve`` and ``mcp`` only."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from sonality.cli.shell import CliState, emit, json_option, lines, llm_option, run

if TYPE_CHECKING:
    from sonality.models import ApiKey

__all__ = ["key", "mcp", "serve"]


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True)
@click.option("--workers", type=click.IntRange(1, 64), default=1, show_default=True)
@click.option(
    "--no-auth", is_flag=True, help="Serve without API keys (loopback hosts only; warns)."
)
@click.option("--max-body-bytes", type=click.IntRange(1024), default=1_048_576, show_default=True)
@click.option(
    "--key-concurrency",
    type=click.IntRange(1),
    default=64,  # sonality.server.deps.KEY_CONCURRENCY (the server package loads lazily)
    show_default=True,
    help="Requests of one API key in flight at once (more get 429 with Retry-After).",
)
@click.option("--cors-origin", "cors_origins", multiple=True, help="Allow this origin (CORS).")
@click.option(
    "--record-enrich",
    type=click.Choice(["background", "inline", "off"]),
    default=None,
    help="When a record that does not say is enriched  [default: SONALITY_RECORD_ENRICH "
    "if set, else background].",
)
@llm_option
@click.pass_obj
def serve(
    state: CliState,
    host: str,
    port: int,
    workers: int,
    no_auth: bool,
    max_body_bytes: int,
    key_concurrency: int,
    cors_origins: tuple[str, ...],
    record_enrich: str | None,
    llm_spec: str | None,
) -> None:
    """Serve REST (/v1), OpenAI-compatible chat and MCP over HTTP (needs sonality[server])."""
    from sonality.errors import ConfigError

    state.settings  # noqa: B018  (bad settings fail here, before the server starts)
    try:
        from sonality.server.run import ServeOptions
        from sonality.server.run import serve as run_server
    except ImportError as exc:
        raise ConfigError(
            "the server needs the extra: pip install 'sonality[server]'", missing=exc.name
        ) from None
    run_server(
        ServeOptions(
            host=host,
            port=port,
            workers=workers,
            auth=not no_auth,
            llm_spec=llm_spec,
            max_body_bytes=max_body_bytes,
            key_concurrency=key_concurrency,
            cors_origins=cors_origins,
            record_enrich=record_enrich,
        )
    )


def _key_text(k: ApiKey) -> str:
    personas = ",".join(k.persona_ids) or "(every persona)"
    revoked = f"  revoked {k.revoked_at:%Y-%m-%d %H:%M}" if k.revoked_at else ""
    return f"{k.id}  {k.scope.value:<5}  {personas}  {k.name}{revoked}"


@click.group()
def key() -> None:
    """Create, list and revoke the server's API keys."""


@key.command("create")
@click.option(
    "--persona",
    "persona_ids",
    multiple=True,
    help="A persona the key sees (repeat for more; none: every persona, admin keys only).",
)
@click.option(
    "--scope",
    type=click.Choice(["read", "write", "admin", "metrics"]),
    default="write",
    show_default=True,
)
@click.option("--name", default="", help="A label for the key.")
@json_option
@click.pass_obj
@run
async def key_create(
    state: CliState, persona_ids: tuple[str, ...], scope: str, name: str, as_json: bool
) -> None:
    """Make an API key; the token is printed once and never stored."""
    async with state.app() as app:
        created, token = await app.create_key(scope=scope, persona_ids=persona_ids, name=name)
    data = {**created.model_dump(mode="json", exclude={"secret_hash"}), "token": token}
    emit(data, as_json, lambda: click.echo(f"{_key_text(created)}\n{token}"))


@key.command("list")
@json_option
@click.pass_obj
@run
async def key_list(state: CliState, as_json: bool) -> None:
    """List the API keys (ids and scopes; secrets are never stored)."""
    async with state.app() as app:
        keys = await app.keys()
    data = [k.model_dump(mode="json", exclude={"secret_hash"}) for k in keys]
    emit(data, as_json, lambda: lines(keys, _key_text, "no API keys yet"))


@key.command("revoke")
@click.argument("key_id")
@json_option
@click.pass_obj
@run
async def key_revoke(state: CliState, key_id: str, as_json: bool) -> None:
    """Revoke KEY_ID (every server process refuses it within seconds)."""
    async with state.app() as app:
        revoked = await app.revoke_key(key_id)
    emit(
        revoked.model_dump(mode="json", exclude={"secret_hash"}),
        as_json,
        lambda: click.echo(f"revoked {_key_text(revoked)}"),
    )


@click.command()
@llm_option
@click.pass_obj
@run
async def mcp(state: CliState, llm_spec: str | None) -> None:
    """Serve the MCP tools and resources over stdio, for a local agent (needs
    sonality[server]). Only the protocol is written to stdout; logs go to stderr."""
    from sonality.errors import ConfigError

    state.settings  # noqa: B018  (logging goes to stderr before anything runs)
    try:
        from sonality.server.mcp_tools import build
    except ImportError as exc:
        raise ConfigError(
            "MCP needs the extra: pip install 'sonality[server]'", missing=exc.name
        ) from None
    async with state.app(llm_spec=llm_spec) as app:
        await build(lambda: app).run_stdio_async()
