"""``sonality browse``: serve the Neo4j Browser style, guide and saved queries
(:mod:`sonality.cli.browser_assets`) and print the Browser address to open."""

from __future__ import annotations

from pathlib import Path

import click

from sonality.cli.shell import CliState

__all__ = ["DEFAULT_PORT", "browse"]

DEFAULT_PORT = 8765
"""``sonality.cli.browser_assets.DEFAULT_PORT``, repeated so that ``--help`` does not load the
HTTP server (a test keeps the two equal)."""


@click.command()
@click.option("--persona", default="ada", show_default=True, help="Persona the guide starts on.")
@click.option("--topic", default="nuclear_power", show_default=True, help="Topic to start on.")
@click.option("--user", "user_id", default="sam", show_default=True, help="User to start on.")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(0, 65535))
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--browser",
    "browser_http",
    default=None,
    help="Where Neo4j serves its Browser [default: http://<bolt host>:7474].",
)
@click.option(
    "--bolt",
    default=None,
    help="Bolt URL the Browser connects to [default: SONALITY_STORE if it is a bolt:// or "
    "neo4j:// URL, else bolt://localhost:7687].",
)
@click.option(
    "--no-auth/--auth",
    "no_auth",
    default=None,
    help="Preselect 'no authentication' [default: when SONALITY_NEO4J_PASSWORD is empty].",
)
@click.option(
    "--export",
    "export_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write the style, guide, queries and favorites.zip there and exit.",
)
@click.pass_obj
def browse(
    state: CliState,
    persona: str,
    topic: str,
    user_id: str,
    port: int,
    host: str,
    browser_http: str | None,
    bolt: str | None,
    no_auth: bool | None,
    export_dir: Path | None,
) -> None:
    """Serve the Neo4j Browser style, guide and saved queries; print the Browser URL."""
    from urllib.parse import urlsplit

    from sonality.cli.browser_assets import (
        BrowseAssets,
        BrowseServer,
        bolt_from_store,
        browser_url,
        post_connect_command,
    )
    from sonality.errors import ConfigError

    if export_dir is not None:
        assets = BrowseAssets(
            f"http://localhost:{port}", persona=persona, topic=topic, user=user_id
        )
        for path in assets.export(export_dir):
            click.echo(f"wrote {path}")
        return
    settings = state.settings
    bolt_url = bolt or bolt_from_store(settings.store) or "bolt://localhost:7687"
    if browser_http is None:
        browser_http = f"http://{urlsplit(bolt_url).hostname or 'localhost'}:7474"
    if no_auth is None:
        no_auth = not settings.neo4j_password.get_secret_value()
    try:
        server = BrowseServer(host=host, port=port, persona=persona, topic=topic, user=user_id)
    except OSError as exc:
        raise ConfigError(
            f"cannot listen on {host}:{port}: {exc.strerror}; choose another --port"
        ) from None
    base = server.url
    click.echo(f"Neo4j Browser   {browser_url(browser_http, bolt_url, no_auth=no_auth)}")
    click.echo(f"style           :style {base}/sonality.grass")
    click.echo(f"guide           :guide {base}/guide.html")
    click.echo(f"favourites      {base}/favorites.zip  (drop it on the Browser window)")
    click.echo(f"post-connect    {post_connect_command(base)}")
    click.echo(f"serving on {base} (persona {persona}); Ctrl-C stops")
    with server:
        try:
            server.wait()
        except KeyboardInterrupt:
            click.echo("stopped")
