"""The Neo4j Browser assets and the small HTTP server that serves them (``sonality
browse`` wires it to the command line).

Neo4j Browser fetches remote styles (``:style <url>``) and guides (``:guide <url>``) from
the page, so they must come from an HTTP server that sends CORS headers, on a host the
Neo4j server allows (its ``browser.remote_content_hostname_whitelist`` defaults to
``guides.neo4j.com, localhost``). This module is that server: standard library only, in a
background thread, serving from ``browser/`` (shipped in the wheel):

- ``/sonality.grass``: the style sheet, as is;
- ``/guide.html``: the guide, rendered from its template with this server's address and
  the chosen persona, topic and user, the queries pasted in from ``queries/``;
- ``/favorites.zip``: the saved queries; dropped on the Browser window, they become
  favourites in a ``Sonality`` folder;
- ``/queries/<name>.cypher``: each saved query.

Nothing here talks to the database: the Browser runs the queries itself.
"""

from __future__ import annotations

import html
import io
import re
import threading
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import ClassVar
from urllib.parse import quote, urlsplit

from sonality.wiring import resource_dir

__all__ = [
    "DEFAULT_PORT",
    "BrowseAssets",
    "BrowseServer",
    "SavedQuery",
    "bolt_from_store",
    "browser_url",
    "load_queries",
    "post_connect_command",
]

DEFAULT_PORT = 8765
FAVORITES_FOLDER = "Sonality"
_PLACEHOLDER = re.compile(r"\{\{\s*([a-z_]+)(?::([A-Za-z0-9_-]+))?\s*\}\}")
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # fixed, so the same queries give the same bytes


@dataclass(frozen=True)
class SavedQuery:
    """One ``queries/<name>.cypher`` file; its first line is ``// <title>``."""

    name: str
    text: str

    @property
    def title(self) -> str:
        return self.text.splitlines()[0].removeprefix("//").strip()

    @property
    def body(self) -> str:
        """The statement without its leading comment lines."""
        lines = self.text.splitlines()
        start = next((i for i, line in enumerate(lines) if not line.startswith("//")), 0)
        return "\n".join(lines[start:]).strip()

    @property
    def is_command(self) -> bool:
        """Browser commands (``:param …``), not Cypher."""
        return self.body.startswith(":")

    @property
    def for_guide(self) -> str:
        """The title line and the statement: what a guide puts in the editor."""
        return f"// {self.title}\n{self.body}"


def load_queries(directory: Path | None = None) -> list[SavedQuery]:
    """The saved queries in ``directory`` (default: the shipped ones), by file name."""
    folder = directory if directory is not None else resource_dir("browser") / "queries"
    queries = [
        SavedQuery(path.stem, path.read_text("utf-8")) for path in sorted(folder.glob("*.cypher"))
    ]
    for query in queries:
        if not query.text.startswith("//") or not query.title:
            raise ValueError(f"{query.name}.cypher must start with a '// Title' line")
    return queries


def _cypher_string(value: str) -> str:
    """``value`` as the inside of a single-quoted Cypher string literal."""
    return value.replace("\\", "\\\\").replace("'", "\\'")


def browser_url(http_url: str, bolt_url: str, *, no_auth: bool) -> str:
    """The Neo4j Browser address that preselects ``bolt_url`` (and no authentication)."""
    base = http_url.rstrip("/")
    if not base.endswith("/browser"):
        base += "/browser"
    url = f"{base}/?dbms={quote(bolt_url, safe=':/')}"
    return url + ("&preselectAuthMethod=NO_AUTH" if no_auth else "")


def post_connect_command(base_url: str) -> str:
    """``browser.post_connect_cmd`` that applies the style and opens the guide."""
    return f"style {base_url}/sonality.grass; guide {base_url}/guide.html"


class BrowseAssets:
    """The files served, rendered for one base URL and one choice of persona/topic/user."""

    def __init__(
        self,
        base_url: str,
        *,
        persona: str = "ada",
        topic: str = "nuclear_power",
        user: str = "sam",
        directory: Path | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.persona = persona
        self.topic = topic
        self.user = user
        self.directory = directory if directory is not None else resource_dir("browser")

    @cached_property
    def queries(self) -> list[SavedQuery]:
        return load_queries(self.directory / "queries")

    def style(self) -> str:
        return (self.directory / "sonality.grass").read_text("utf-8")

    def guide(self) -> str:
        """The guide template with every ``{{…}}`` filled; an unknown one raises."""
        template = (self.directory / "guide" / "sonality.html").read_text("utf-8")
        by_name = {q.name: q for q in self.queries}
        values = {
            "base_url": self.base_url,
            "persona": _cypher_string(self.persona),
            "topic": _cypher_string(self.topic),
            "user": _cypher_string(self.user),
        }

        def fill(match: re.Match[str]) -> str:
            key, arg = match.group(1), match.group(2)
            if key == "query" and arg in by_name:
                return html.escape(by_name[arg].for_guide, quote=False)
            if key in values and arg is None:
                return html.escape(values[key])
            raise ValueError(f"unknown guide placeholder {match.group(0)!r}")

        return _PLACEHOLDER.sub(fill, template)

    def favorites_zip(self) -> bytes:
        """The saved queries in a ``Sonality/`` folder: the Browser turns a dropped zip
        into favourites, one folder per zip folder, each named by its first line."""
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for query in self.queries:
                info = zipfile.ZipInfo(f"{FAVORITES_FOLDER}/{query.name}.cypher", _ZIP_TIME)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                archive.writestr(info, query.text)
        return buffer.getvalue()

    def files(self) -> dict[str, tuple[bytes, str]]:
        """URL path → (body, content type) for everything served."""
        text = "text/plain; charset=utf-8"
        served = {
            "/sonality.grass": (self.style().encode(), text),
            "/guide.html": (self.guide().encode(), "text/html; charset=utf-8"),
            "/favorites.zip": (self.favorites_zip(), "application/zip"),
        }
        for query in self.queries:
            served[f"/queries/{query.name}.cypher"] = (query.text.encode(), text)
        served["/"] = (self._index().encode(), "text/html; charset=utf-8")
        return served

    def export(self, destination: Path) -> list[Path]:
        """Write every served file under ``destination``; returns the paths written."""
        written = []
        for url_path, (body, _) in self.files().items():
            path = destination / (url_path.lstrip("/") or "index.html")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(body)
            written.append(path)
        return written

    def _index(self) -> str:
        base = html.escape(self.base_url)
        items = "".join(
            f'<li><a href="{base}/queries/{q.name}.cypher">{html.escape(q.title)}</a></li>'
            for q in self.queries
        )
        return (
            "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Sonality for Neo4j "
            "Browser</title></head><body><h1>Sonality for Neo4j Browser</h1><p>In Neo4j "
            f"Browser run <code>:style {base}/sonality.grass</code> and <code>:guide "
            f"{base}/guide.html</code>. Drop <a href='{base}/favorites.zip'>favorites.zip</a>"
            f" on the Browser window to keep the queries.</p><ul>{items}</ul></body></html>"
        )


class _Handler(BaseHTTPRequestHandler):
    server: _AssetServer
    cors: ClassVar[Mapping[str, str]] = {
        "Access-Control-Allow-Origin": "*",
        "Access-Control-Allow-Methods": "GET, HEAD, OPTIONS",
        # the Browser fetches guides with pragma and cache-control request headers
        "Access-Control-Allow-Headers": "*",
        "Access-Control-Max-Age": "600",
    }

    def do_OPTIONS(self) -> None:
        self.send_response(HTTPStatus.NO_CONTENT)
        self._headers(0, None)

    def do_GET(self) -> None:
        self._reply(head=False)

    def do_HEAD(self) -> None:
        self._reply(head=True)

    def _reply(self, *, head: bool) -> None:
        found = self.server.files.get(urlsplit(self.path).path)
        if found is None:
            body, ctype = b"not found\n", "text/plain; charset=utf-8"
            self.send_response(HTTPStatus.NOT_FOUND)
        else:
            body, ctype = found
            self.send_response(HTTPStatus.OK)
        self._headers(len(body), ctype)
        if not head:
            self.wfile.write(body)

    def _headers(self, length: int, ctype: str | None) -> None:
        for name, value in self.cors.items():
            self.send_header(name, value)
        if ctype is not None:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(length))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the Browser polls nothing, and a request log would only be noise."""


class _AssetServer(ThreadingHTTPServer):
    daemon_threads = True
    files: dict[str, tuple[bytes, str]]


class BrowseServer:
    """The asset server on ``host:port`` (0 picks a free port), in a background thread.

    ``url`` names it as ``http://localhost:<port>``: the host Neo4j allows by default.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        persona: str = "ada",
        topic: str = "nuclear_power",
        user: str = "sam",
        directory: Path | None = None,
    ) -> None:
        self._httpd = _AssetServer((host, port), _Handler)
        self.port = int(self._httpd.server_address[1])
        self.url = f"http://localhost:{self.port}"
        self.assets = BrowseAssets(
            self.url, persona=persona, topic=topic, user=user, directory=directory
        )
        self._httpd.files = self.assets.files()
        self._thread: threading.Thread | None = None

    def start(self) -> BrowseServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="sonality-browse", daemon=True
        )
        self._thread.start()
        return self

    def wait(self) -> None:
        """Block until :meth:`stop` (or Ctrl-C in the caller)."""
        if self._thread is not None:
            while self._thread.is_alive():
                self._thread.join(0.5)

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> BrowseServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def bolt_from_store(store: str) -> str | None:
    """The Bolt address in a ``SONALITY_STORE`` URL (``bolt://``, ``neo4j://`` and their
    TLS forms, port 7687 unless given), or None for any other store."""
    parts = urlsplit(store)
    if parts.scheme not in ("bolt", "neo4j", "bolt+s", "neo4j+s", "bolt+ssc", "neo4j+ssc"):
        return None
    host = parts.hostname or "localhost"
    return f"{parts.scheme}://{host}:{parts.port or 7687}"
