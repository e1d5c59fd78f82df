"""Neo4j Browser in a real headless Chromium (Debian's ``chromium``, driven by Playwright;
never a downloaded browser build) against a dev server holding the sample graph.

The Browser must connect without auth, apply the style and open the guide by itself (the
server's post-connect command), set the parameters and run the belief graph query from the
guide, and draw Belief nodes captioned with topic and position, coloured by sign as the
style sheet says, with coloured SUPPORTS/CONTRADICTS edges. Screenshots go to
``.artifacts/browser/``.
"""

from __future__ import annotations

import base64
import json
import os
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from neo4j import AsyncGraphDatabase
from playwright.async_api import Page, Route, async_playwright, expect

from sonality.cli.browser_assets import BrowseServer, browser_url
from sonality.resources import resource_dir
from tests.browser.grass import parse_grass, style_for
from tests.conftest import ROOT

pytestmark = [pytest.mark.browser, pytest.mark.neo4j]

CHROMIUM = os.environ.get("SONALITY_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = ROOT / ".artifacts" / "browser"
TIMEOUT_MS = 60_000
expect.set_options(timeout=TIMEOUT_MS)
BELIEFS_QUERY = (resource_dir("browser") / "queries" / "03-beliefs-graph.cypher").read_text("utf-8")


@pytest.fixture(scope="module")
async def page() -> AsyncIterator[Page]:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"no Chromium at {CHROMIUM}: run tools/install-chromium.sh (make chromium)")
    args = ["--disable-dev-shm-usage"] + (["--no-sandbox"] if os.geteuid() == 0 else [])
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=args)
        context = await browser.new_context(viewport={"width": 1440, "height": 900})
        context.set_default_timeout(TIMEOUT_MS)
        tab = await context.new_page()
        await tab.route("**/*", _local_only)
        try:
            yield tab
        finally:
            await browser.close()


async def _local_only(route: Route) -> None:
    """Hermetic: the Browser's calls home (fonts, telemetry, update checks) fail at once."""
    if urlsplit(route.request.url).hostname in ("localhost", "127.0.0.1"):
        await route.continue_()
    else:
        await route.abort()


async def _expected(bolt_uri: str) -> dict[str, Any]:
    """What the guide's belief query returns, read through the driver."""
    async with AsyncGraphDatabase.driver(bolt_uri) as driver:
        records, _, _ = await driver.execute_query(
            BELIEFS_QUERY, {"persona": "ada"}, database_="neo4j"
        )
    beliefs = {r["b"]["topic"]: r["b"] for r in records}
    edges = {r["edge"].element_id: r["edge"] for r in records if r["edge"] is not None}
    nodes = {r["p"].element_id for r in records} | {r["b"].element_id for r in records}
    nodes |= {r["e"].element_id for r in records if r["e"] is not None}
    return {"beliefs": beliefs, "edges": edges, "nodes": len(nodes)}


async def test_browser_shows_captioned_coloured_beliefs(
    page: Page, browser_devserver: Any, browser_graph: Any, browse_server: BrowseServer
) -> None:
    """The Browser connects without auth, gets style and guide on connect, runs the guide's
    belief query and draws captioned Belief nodes coloured by sign, with evidence edges;
    the favourites zip dropped on it becomes a Sonality folder of the saved queries."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    expected = await _expected(browser_devserver.bolt_uri)
    rules = parse_grass(browse_server.assets.style())
    timings: dict[str, float] = {}
    started = time.monotonic()

    def lap(name: str) -> None:
        timings[name] = round(time.monotonic() - started, 2)

    try:
        await page.goto(
            browser_url(browser_devserver.http_uri, browser_devserver.bolt_uri, no_auth=True)
        )
        lap("page_loaded")
        guide = page.get_by_test_id("guidesDrawer")
        await expect(guide.get_by_text("What a persona believes, and why").first).to_be_visible()
        style_frame = page.get_by_test_id("frameCommand").filter(
            has_text=f":style {browse_server.url}/sonality.grass"
        )
        await expect(style_frame).to_have_count(1)
        lap("connected_style_and_guide")

        await guide.get_by_test_id("sonality-params").click()
        params = page.get_by_test_id("multi-statement-list-icon")
        await expect(params.and_(page.get_by_title("Status: success"))).to_have_count(3)
        await guide.get_by_test_id("pagination-3").click()
        await guide.get_by_test_id("beliefs-graph").click()
        await expect(page.get_by_test_id("activeEditor")).to_contain_text("03 Beliefs")
        await page.get_by_test_id("editor-Run").click()
        frame = page.get_by_test_id("frame").first
        await expect(frame.locator("svg g.node")).to_have_count(expected["nodes"])
        await expect(frame.locator("svg g.relationship").first).to_be_visible()
        await page.wait_for_timeout(1500)  # let the force layout settle for the screenshot
        lap("graph_drawn")
        await page.screenshot(path=ARTIFACTS / "guide.png")

        drawn = await frame.locator("svg g.node").evaluate_all(
            """gs => gs.map(g => ({
                 text: Array.from(g.querySelectorAll('text.caption'))
                            .map(t => t.textContent.trim()).join(' '),
                 fill: g.querySelector('circle.b-outline').getAttribute('fill'),
               }))"""
        )
        edge_fills = await frame.locator("svg g.relationship path.b-outline").evaluate_all(
            "ps => ps.map(p => p.getAttribute('fill'))"
        )
        edge_texts = await frame.locator("svg g.relationship text").all_text_contents()

        fills = {}
        for topic, belief in expected["beliefs"].items():
            [node] = [d for d in drawn if d["text"].startswith(topic)]
            # the store captions beliefs "topic +0.04": signed, two decimals
            signed = ("+" if belief["position"] > 0 else "") + repr(round(belief["position"], 2))
            assert signed in node["text"], (topic, node["text"])
            labels = set(belief.labels)
            assert node["fill"] == style_for(rules, "node", labels)["color"], (topic, labels)
            fills[topic] = node["fill"]
        assert fills["nuclear_power"] != fills["cryptocurrency"] != fills["astrology"]
        beliefs = expected["beliefs"]
        assert beliefs["cryptocurrency"]["position"] < 0 < beliefs["nuclear_power"]["position"]
        for kind in ("SUPPORTS", "CONTRADICTS"):
            assert style_for(rules, "relationship", {kind})["color"] in edge_fills, kind
        deltas = {
            ("+" if edge["delta"] >= 0 else "") + repr(round(edge["delta"], 3))
            for edge in expected["edges"].values()
        }
        assert deltas & set(edge_texts), (deltas, edge_texts)

        await _drop_file(page, "favorites.zip", browse_server.assets.favorites_zip())
        await page.get_by_test_id("navigationFavorites").click()
        await page.get_by_test_id("savedScriptsFolder-Sonality").click()
        titles = page.get_by_test_id("savedScriptListItem")
        await expect(titles).to_have_count(len(browse_server.assets.queries))
        assert await titles.all_inner_texts() == [q.title for q in browse_server.assets.queries]
        lap("favourites_imported")

        await frame.get_by_title("Fullscreen", exact=True).click()
        await page.get_by_label("zoom-to-fit").click()
        await page.wait_for_timeout(1000)
        await page.screenshot(path=ARTIFACTS / "beliefs.png")
        lap("screenshots")
    except BaseException:
        await page.screenshot(path=ARTIFACTS / "failure.png")
        raise
    finally:
        (ARTIFACTS / "timing.json").write_text(json.dumps(timings, indent=2) + "\n")


async def _drop_file(page: Page, name: str, data: bytes) -> None:
    """Drop a file on the Browser window, as a user dragging it from their desktop."""
    await page.evaluate(
        """([name, b64]) => {
             const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
             const files = new DataTransfer();
             files.items.add(new File([bytes], name));
             const target = document.querySelector('[data-testid="main"]');
             for (const type of ['dragenter', 'dragover', 'drop']) {
               target.dispatchEvent(new DragEvent(type, {
                 dataTransfer: files, bubbles: true, cancelable: true}));
             }
           }""",
        [name, base64.b64encode(data).decode()],
    )
