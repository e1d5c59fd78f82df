"""The Browser assets without a browser: style sheet, guide, saved queries, favourites zip,
the HTTP server that serves them, and ``sonality browse --export``."""

from __future__ import annotations

import io
import re
import socket
import urllib.request
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from sonality.cli import main
from sonality.cli.browser_assets import (
    DEFAULT_PORT,
    BrowseAssets,
    BrowseServer,
    bolt_from_store,
    browser_url,
    load_queries,
    post_connect_command,
)
from sonality.resources import resource_dir
from tests.browser.grass import parse_grass, style_for

LABELS = {
    "Persona": "{name}",
    "Snapshot": "{version}",
    "Reflection": "{outcome}",
    "User": "{id}",
    "Conversation": "{id}",
    "Episode": "{caption}",
    "Insight": "{text}",
    "Belief": "{caption}",
    "Topic": "{name}",
    "UserFact": "{text}",
    "StagedUpdate": "{signed_delta}",
    "BiographyEntry": "{text}",
}


@pytest.fixture(scope="module")
def rules() -> dict[str, dict[str, str]]:
    return parse_grass((resource_dir("browser") / "sonality.grass").read_text("utf-8"))


@pytest.fixture(scope="module")
def assets() -> BrowseAssets:
    return BrowseAssets("http://localhost:8765")


def test_grass_parses_as_the_browser_parses_it(rules: dict[str, dict[str, str]]) -> None:
    """Every block is a node/relationship selector and keeps all its declarations."""
    text = (resource_dir("browser") / "sonality.grass").read_text("utf-8")
    blocks = re.findall(r"^(\S+) \{\n(.*?)^\}", text, re.M | re.S)
    assert [selector for selector, _ in blocks] == list(rules)
    for selector, body in blocks:
        assert re.fullmatch(r"(node|relationship)(\.[A-Za-z_]+)*", selector), selector
        assert len(rules[selector]) == body.count(";"), f"{selector}: a declaration was dropped"


def test_every_label_has_a_caption_and_its_own_colour(rules: dict[str, dict[str, str]]) -> None:
    """Each node label of the model is captioned from its own properties and recognisable."""
    colours = {}
    for label, placeholder in LABELS.items():
        style = style_for(rules, "node", {label})
        assert placeholder in style.get("caption", ""), label
        colours[label] = style["color"]
    assert len(set(colours.values())) == len(colours), colours


def test_belief_colour_follows_sign_and_confidence(rules: dict[str, dict[str, str]]) -> None:
    """Favoured and opposed beliefs differ in colour, firm ones are darker and larger, retired
    ones are small and pale whatever their sign."""
    favoured = style_for(rules, "node", {"Belief", "Favoured"})
    opposed = style_for(rules, "node", {"Belief", "Opposed"})
    firm = style_for(rules, "node", {"Belief", "Favoured", "Firm"})
    retired = style_for(rules, "node", {"Belief", "Opposed", "Firm", "Retired"})
    assert favoured["caption"] == opposed["caption"] == "{caption}"
    assert len({favoured["color"], opposed["color"], firm["color"], retired["color"]}) == 4
    size = lambda style: float(style["diameter"].removesuffix("px"))  # noqa: E731
    assert size(firm) > size(favoured) > size(retired)
    assert retired["color"] == style_for(rules, "node", {"Retired"})["color"]


def test_constraints_and_evidence_edges_stand_out(rules: dict[str, dict[str, str]]) -> None:
    """Constraint facts differ from other facts; SUPPORTS and CONTRADICTS differ and show
    their delta."""
    assert (
        style_for(rules, "node", {"UserFact", "Constraint"})["color"]
        != style_for(rules, "node", {"UserFact"})["color"]
    )
    supports = style_for(rules, "relationship", {"SUPPORTS"})
    contradicts = style_for(rules, "relationship", {"CONTRADICTS"})
    assert supports["caption"] == contradicts["caption"] == "{caption}"
    assert supports["color"] != contradicts["color"]


def test_saved_queries_have_titles_and_parameters() -> None:
    """Each saved query starts with a unique `// Title` and uses only the guide's
    parameters."""
    queries = load_queries()
    assert len(queries) >= 12
    assert len({q.title for q in queries}) == len(queries)
    for query in queries:
        assert set(re.findall(r"\$(\w+)", query.body)) <= {"persona", "topic", "user"}, query.name


def test_saved_queries_list_in_guide_order() -> None:
    """The Browser lists favourites by title: titles sort in file (and guide) order."""
    titles = [q.title for q in load_queries()]
    assert titles == sorted(titles)
    assert all(re.match(r"\d\d ", title) for title in titles)


def test_guide_shows_every_saved_query(assets: BrowseAssets) -> None:
    """The guide carries every saved query verbatim (statement text), so the favourites and
    the guide never drift apart."""
    guide = assets.guide()
    assert "{{" not in guide
    runnable = _runnables(guide)
    for query in assets.queries:
        if query.is_command:
            for line in query.body.splitlines():
                assert line.rstrip(";") in runnable, line
        else:
            assert query.for_guide in runnable, query.name
    assert ":style http://localhost:8765/sonality.grass" in runnable


def test_guide_quotes_the_chosen_values() -> None:
    """A persona id with a quote stays one Cypher string in the :param command."""
    guide = BrowseAssets("http://localhost:1", persona="o'neil", topic="a\\b").guide()
    assert ":param persona => 'o\\'neil'" in _runnables(guide)
    assert ":param topic => 'a\\\\b'" in _runnables(guide)


def test_unknown_guide_placeholder_raises(tmp_path: Path) -> None:
    """A template naming a query that does not exist fails loudly."""
    (tmp_path / "guide").mkdir()
    (tmp_path / "queries").mkdir()
    (tmp_path / "guide" / "sonality.html").write_text("<pre>{{query:missing}}</pre>")
    with pytest.raises(ValueError, match="missing"):
        BrowseAssets("http://localhost:1", directory=tmp_path).guide()


def test_favorites_zip_holds_the_queries_in_a_folder(assets: BrowseAssets) -> None:
    """The zip the Favorites drawer imports: one Sonality/ folder, the files verbatim, and
    the same bytes every time."""
    data = assets.favorites_zip()
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = archive.namelist()
        assert names == [f"Sonality/{q.name}.cypher" for q in assets.queries]
        for query in assets.queries:
            assert archive.read(f"Sonality/{query.name}.cypher").decode() == query.text
    assert BrowseAssets("http://localhost:8765").favorites_zip() == data


def test_server_sends_cors_headers() -> None:
    """The Browser's cross-origin fetches (and their preflight) are allowed; unknown paths
    are 404."""
    with BrowseServer(port=0) as server:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/guide.html") as reply:
            assert reply.headers["Access-Control-Allow-Origin"] == "*"
            assert reply.headers["Content-Type"].startswith("text/html")
            assert server.url + "/sonality.grass" in reply.read().decode()
        preflight = urllib.request.Request(
            f"http://127.0.0.1:{server.port}/sonality.grass", method="OPTIONS"
        )
        with urllib.request.urlopen(preflight) as reply:
            assert reply.status == 204
            assert reply.headers["Access-Control-Allow-Headers"] == "*"
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(f"http://127.0.0.1:{server.port}/etc/passwd")
        assert missing.value.code == 404
        missing.value.close()


def test_browser_url_and_post_connect_command() -> None:
    """The printed URL preselects the bolt address (and no auth); the post-connect command
    applies the style and opens the guide."""
    assert (
        browser_url("http://localhost:7474", "bolt://localhost:7687", no_auth=True)
        == "http://localhost:7474/browser/?dbms=bolt://localhost:7687&preselectAuthMethod=NO_AUTH"
    )
    assert browser_url("http://h:7474/browser/", "neo4j://h:7687", no_auth=False) == (
        "http://h:7474/browser/?dbms=neo4j://h:7687"
    )
    assert post_connect_command("http://localhost:8765") == (
        "style http://localhost:8765/sonality.grass; guide http://localhost:8765/guide.html"
    )


def test_cli_export_writes_the_assets(tmp_path: Path) -> None:
    """`sonality browse --export DIR` writes style, guide, queries and favorites.zip."""
    result = CliRunner().invoke(
        main, ["browse", "--export", str(tmp_path), "--port", "9999"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "sonality.grass").read_text() == (
        resource_dir("browser") / "sonality.grass"
    ).read_text()
    assert "http://localhost:9999/sonality.grass" in (tmp_path / "guide.html").read_text()
    assert zipfile.is_zipfile(tmp_path / "favorites.zip")
    assert len(list((tmp_path / "queries").glob("*.cypher"))) == len(load_queries())


def _runnables(guide: str) -> set[str]:
    """The text the guide puts in the editor (runnable blocks) or runs (exec-topic)."""
    import html

    blocks = re.findall(r'<pre[^>]*class="[^"]*runnable[^"]*"[^>]*>(.*?)</pre>', guide, re.S)
    found = {html.unescape(b).strip() for b in blocks}
    for topic in re.findall(r'exec-topic="([^"]*)"', guide):
        for command in html.unescape(topic).split(";"):
            found.add(":" + command.strip().lstrip(":"))
    return found


def test_bolt_address_from_the_store_setting() -> None:
    """A Bolt or Neo4j store URL gives the Browser's Bolt address (port 7687 by default,
    credentials dropped); an SQLite store gives none."""
    assert bolt_from_store("bolt://db.example:7688") == "bolt://db.example:7688"
    assert bolt_from_store("neo4j+s://u:p@db.example") == "neo4j+s://db.example:7687"
    assert bolt_from_store("sqlite:///tmp/x.db") is None


def test_cli_default_port_is_the_servers() -> None:
    """`sonality browse` defaults to the asset server's own default port."""
    from sonality.cli import browse

    assert browse.DEFAULT_PORT == DEFAULT_PORT


def test_a_busy_port_is_a_configuration_error(tmp_path: Path) -> None:
    """`sonality browse` on a port another process holds exits 3 with one line naming it."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        result = CliRunner().invoke(
            main,
            ["browse", "--port", str(port)],
            env={"SONALITY_STORE": f"sqlite:///{tmp_path / 'b.db'}"},
        )
    assert result.exit_code == 3
    assert result.stderr.startswith(f"error: cannot listen on 127.0.0.1:{port}")
