"""Every query in the Browser guide (and so every saved query) runs through the driver,
without errors or unexpected warnings, against the sample graph recorded through the
public API, and answers what its slide says."""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from neo4j import AsyncDriver, AsyncGraphDatabase

from sonality.cli.browser_assets import BrowseAssets
from tests.browser import sample

pytestmark = pytest.mark.neo4j

GUIDE = BrowseAssets("http://localhost:8765").guide()
RUNNABLE = [
    html.unescape(text).strip()
    for text in re.findall(r'<pre[^>]*class="[^"]*runnable[^"]*"[^>]*>(.*?)</pre>', GUIDE, re.S)
]
CYPHER = [text for text in RUNNABLE if not text.startswith(":")]
PARAMS = dict(
    re.findall(r"^:param (\w+) => (.+)$", "\n".join(RUNNABLE), re.M)  # name, Cypher literal
)

# Names the reflection work is adding: unknown to a store that has not reflected yet, so
# Neo4j warns about them (01N50 label, 01N51 relationship type, 01N52 property key).
PENDING_NAMES = {
    "Reflection",
    "CONSUMED",
    "PRODUCED",
    "trigger",
    "outcome",
    "detail",
    "started_at",
    "snapshot_version",
    "episodes_read",
    "beliefs_decayed",
    "beliefs_retired",
    "retention_ratio",
    "unique_ratio",
    "health",
    "duration_ms",
}


def _title(statement: str) -> str:
    return statement.splitlines()[0].removeprefix("//").split()[0]


@pytest.fixture(scope="module")
async def driver(
    sample_store: Any, neo4j_uri: str, neo4j_auth: tuple[str, str] | None
) -> AsyncIterator[AsyncDriver]:
    async with AsyncGraphDatabase.driver(neo4j_uri, auth=neo4j_auth) as drv:
        yield drv


@pytest.fixture(scope="module")
async def params(driver: AsyncDriver) -> dict[str, Any]:
    """The guide's own :param values, evaluated by the server as the Browser does."""
    values = {}
    for name, literal in PARAMS.items():
        records, _, _ = await driver.execute_query(f"RETURN {literal} AS v", database_="neo4j")
        values[name] = records[0]["v"]
    return values


async def _run(driver: AsyncDriver, statement: str, params: dict[str, Any]) -> list[Any]:
    records, summary, _ = await driver.execute_query(statement, params, database_="neo4j")
    for status in summary.gql_status_objects:
        if not status.is_notification:
            continue
        named = set(re.findall(r"`([^`]+)`", status.status_description))
        assert status.gql_status in {"01N50", "01N51", "01N52"} and named <= PENDING_NAMES, (
            f"{_title(statement)}: {status.gql_status} {status.status_description}"
        )
    return records


def test_guide_sets_every_parameter_the_queries_use() -> None:
    """The guide's :param commands cover every $parameter of its queries."""
    used = {name for statement in CYPHER for name in re.findall(r"\$(\w+)", statement)}
    assert used == set(PARAMS) == {"persona", "topic", "user"}
    assert len(CYPHER) >= 12


@pytest.mark.parametrize("statement", CYPHER, ids=_title)
async def test_guide_query_runs(
    driver: AsyncDriver, params: dict[str, Any], statement: str
) -> None:
    """The query runs without error for the sample persona and for one with no data."""
    await _run(driver, statement, params)
    await _run(driver, statement, params | {"persona": "bo", "user": "nobody"})


async def _query(driver: AsyncDriver, params: dict[str, Any], number: int) -> list[Any]:
    [statement] = [s for s in CYPHER if s.startswith(f"// {number:02d} ")]
    return await _run(driver, statement, params)


async def test_beliefs_rank_by_weight(driver: AsyncDriver, params: dict[str, Any]) -> None:
    """Slide 2: active beliefs by |position| x confidence, the retired one last."""
    rows = await _query(driver, params, 2)
    assert rows[-1]["status"] == "retired"
    weights = [row["weight"] for row in rows[:-1]]
    assert weights == sorted(weights, reverse=True)
    assert {row["topic"] for row in rows} >= {"nuclear_power", "cryptocurrency"}


async def test_beliefs_graph_has_evidence_edges(
    driver: AsyncDriver, params: dict[str, Any]
) -> None:
    """Slide 2's graph: the persona, its beliefs, SUPPORTS and CONTRADICTS edges."""
    rows = await _query(driver, params, 3)
    edges = {row["edge"].type for row in rows if row["edge"] is not None}
    assert edges == {"SUPPORTS", "CONTRADICTS"}
    assert {row["b"]["topic"] for row in rows} == {
        "nuclear_power",
        "remote_work",
        "public_transit",
        "cryptocurrency",
        "astrology",
    }


async def test_evidence_for_and_against(driver: AsyncDriver, params: dict[str, Any]) -> None:
    """Slide 3: both sides of nuclear power, each with the message's excerpt."""
    rows = await _query(driver, params, 4)
    assert [row["side"] for row in rows] == ["for", "against"]
    assert rows[0]["episode"] == "sample-02" and rows[1]["episode"] == "sample-03"
    assert rows[1]["excerpt"].startswith("Everyone knows nuclear is dangerous")


async def test_evidence_confirming_an_opposed_stance_is_for_it(
    driver: AsyncDriver, params: dict[str, Any]
) -> None:
    """Slide 3's sides are relative to the stance held now: the crypto-mining figure
    opposes cryptocurrency (a CONTRADICTS edge, negative delta) and the persona opposes it
    too, so that evidence is listed *for* its stance, with the delta's sign kept."""
    rows = await _query(driver, params | {"topic": "cryptocurrency"}, 4)
    [row] = [r for r in rows if r["episode"] == "lee-02"]
    assert row["stance"] < 0 and row["delta"] < 0
    assert row["side"] == "for"


async def test_belief_history_ends_at_the_current_position(
    driver: AsyncDriver, params: dict[str, Any]
) -> None:
    """Slide 4: the running position after the last commit is the belief's position."""
    for topic in ("nuclear_power", "remote_work"):
        rows = await _query(driver, params | {"topic": topic}, 6)
        assert len(rows) >= 2
        assert rows[-1]["position_after"] == pytest.approx(rows[-1]["position_now"], abs=1e-4)
        assert [r["interaction"] for r in rows] == sorted(r["interaction"] for r in rows)


async def test_pending_insights_and_snapshots(driver: AsyncDriver, params: dict[str, Any]) -> None:
    """Slides 5 and 7: the scripted insights are pending; both snapshot versions show,
    newest first, each beside the text it replaced."""
    insights = await _query(driver, params, 7)
    assert len(insights) == sum(1 for v in sample.VERDICTS.values() if v.insight)
    snapshots = await _query(driver, params, 10)
    assert [row["version"] for row in snapshots] == [2, 1]
    assert snapshots[0]["previous_text"] == snapshots[1]["text"]
    assert await _query(driver, params, 8) == []  # no reflection yet: no rows, no error


async def test_user_facts_constraints_first(driver: AsyncDriver, params: dict[str, Any]) -> None:
    """Slide 8: Sam's constraints come before the preference."""
    rows = await _query(driver, params, 12)
    assert [row["kind"] for row in rows] == ["constraint", "constraint", "preference"]
