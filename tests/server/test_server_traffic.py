"""The server under traffic, on each store: ``record`` answers after the durable write and
enriches in the background unless told otherwise; one key's concurrent requests are
admitted up to ``--key-concurrency`` (64) and every refusal is a 429 that says when to
retry; the lag of the background work shows in ``/readyz`` (degraded past
``SONALITY_LAG_DEGRADED_SECONDS``, still 200, naming no persona) and per persona in
``/metrics``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.server.conftest import PLAIN_HTTP, Served, start

PERSONAS = ("tide", "busy", "slow")


@pytest.fixture(scope="module")
def tide(served: Served) -> Iterator[Served]:
    """Personas of this module; what they leave pending is enriched on the way out."""
    with served.client() as c:
        for pid in PERSONAS:
            r = c.post("/v1/personas", json={"id": pid, "name": pid, "core_identity": "Calm."})
            assert r.status_code == 201, r.text
    yield served
    with served.client() as c:
        for pid in PERSONAS:
            assert c.post(f"/v1/personas/{pid}/enrich").status_code == 200


def _record(c: httpx.Client, pid: str, n: int, **extra: object) -> dict[str, object]:
    r = c.post(
        f"/v1/personas/{pid}/record",
        json={
            "user_id": "u1",
            "conversation_id": "c1",
            "message": f"Nuclear power, point {n}.",
            "response": "Noted.",
            **extra,
        },
    )
    assert r.status_code == 200, r.text
    [recorded] = r.json()
    episode: dict[str, object] = recorded["episode"]
    return episode


def test_record_enriches_in_the_background_unless_told(tide: Served) -> None:
    """Without ``enrich`` the episode comes back pending (the server's default is
    background) and the persona's lane enriches it; ``"inline"`` (or true) waits for it."""
    with tide.client() as c:
        assert _record(c, "tide", 1)["enrichment_status"] == "pending"
        drained = c.post("/v1/personas/tide/drain", json={"max_seconds": 60}).json()
        assert drained == {"drained": True, "pending_episodes": 0, "pending_turns": 0}
        [first] = c.get("/v1/personas/tide/episodes", params={"limit": 1}).json()
        assert first["enrichment_status"] == "enriched"
        assert _record(c, "tide", 2, enrich="inline")["enrichment_status"] == "enriched"
        assert _record(c, "tide", 3, enrich=True)["enrichment_status"] == "enriched"
        assert _record(c, "tide", 4, enrich="off")["enrichment_status"] == "pending"


def test_one_key_gets_64_requests_at_once_and_429s_say_when_to_retry(tide: Served) -> None:
    """70 requests of one key held open at once (each waits 3 s for work nobody does):
    64 are served, and each of the 6 others is refused at once with 429, ``busy`` and
    ``Retry-After: 1``; the next request is served again."""
    with tide.client() as c:
        _record(c, "busy", 1, enrich="off")  # pending, and nobody will enrich it

    async def burst() -> list[httpx.Response]:
        limits = httpx.Limits(max_connections=100, max_keepalive_connections=100)
        headers = {"Authorization": f"Bearer {tide.admin}"}
        async with httpx.AsyncClient(
            base_url=tide.url, headers=headers, limits=limits, timeout=60, verify=PLAIN_HTTP
        ) as http:
            body = {"everywhere": True, "max_seconds": 3}
            return await asyncio.gather(
                *(http.post("/v1/personas/busy/drain", json=body) for _ in range(70))
            )

    responses = asyncio.run(burst())
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] * 64 + [429] * 6, statuses
    for refused in (r for r in responses if r.status_code == 429):
        assert refused.headers["retry-after"] == "1"
        assert refused.json()["kind"] == "busy" and refused.json()["detail"]["limit"] == 64
    with tide.client() as c:
        assert c.get("/v1/personas/busy/episodes").status_code == 200


@pytest.fixture(scope="module")
def impatient(tide: Served) -> Iterator[Served]:
    """A second server on the same store whose lag bound is one second."""
    env = {**tide.env, "SONALITY_LAG_DEGRADED_SECONDS": "1"}
    server = start(env, tide.log.with_name(f"impatient-{tide.backend}.log"))
    server.admin = tide.admin
    try:
        yield server
    finally:
        server.stop()


def test_a_fresh_server_counts_no_request_of_its_own(impatient: Served) -> None:
    """The request the server routes to itself at startup (so FastAPI builds its route
    models before the first real request) is neither counted nor logged."""
    with impatient.client() as c:
        text = c.get("/metrics").text
    counted = {
        (sample.labels["route"], sample.labels["status"])
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "sonality_http_requests_total"
    }
    assert counted <= {("/healthz", "200")}, counted
    assert "warm-up" not in impatient.logs()


def _lag_gauges(server: Served, persona: str) -> dict[str, float]:
    with server.client() as c:
        text = c.get("/metrics").text
    return {
        sample.name: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name.endswith("_lag_seconds") and sample.labels.get("persona") == persona
    }


def test_lag_degrades_readiness_and_shows_per_persona(impatient: Served) -> None:
    """An episode left pending for over a second: /readyz answers 200 ``degraded`` with
    the lag check ``behind``, the oldest ages and no persona id; /metrics has the
    persona's enrichment lag past a second. Once enriched, its gauges read 0."""
    with impatient.client() as c:
        _record(c, "slow", 1, enrich="off")
    time.sleep(1.5)
    with impatient.client("") as anyone:
        ready = anyone.get("/readyz")
    assert ready.status_code == 200
    body = ready.json()
    assert body["status"] == "degraded" and body["checks"]["lag"] == "behind"
    assert body["lag"]["bound_seconds"] == 1 and body["lag"]["personas_behind"] >= 1
    assert body["lag"]["episode_seconds"] >= 1.5
    assert "slow" not in ready.text
    gauges = _lag_gauges(impatient, "slow")
    assert gauges["sonality_enrichment_lag_seconds"] >= 1.5
    assert gauges["sonality_thinking_lag_seconds"] == 0
    with impatient.client() as c:
        assert c.post("/v1/personas/slow/enrich").json()["enriched"] == 1
    assert _lag_gauges(impatient, "slow") == {
        "sonality_enrichment_lag_seconds": 0,
        "sonality_thinking_lag_seconds": 0,
    }
