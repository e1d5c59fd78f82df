"""``/metrics`` of a ``sonality serve --workers 2`` on each store, read with
``prometheus_client``'s own parser, through a ``metrics`` key: every family parses with
its samples and no family is repeated or ``unknown``; the counters, summed over both
workers whichever answers, never go backwards across 20 scrapes; and the metrics key
reads this and nothing else."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.server.conftest import Served, cli, start

SCRAPES = 20


@pytest.fixture(scope="module")
def pair(served: Served) -> Iterator[tuple[Served, str]]:
    """Two workers on one port, a persona with some traffic, and a metrics key."""
    log = served.log.with_name(f"workers-{served.backend}.log")
    server = start(served.env, log, "--workers", "2")
    server.admin = served.admin
    metrics_key = cli(served.env, "key", "create", "--scope", "metrics", "--name", "scraper")
    try:
        with server.client() as c:
            r = c.post("/v1/personas", json={"id": "tally", "name": "T", "core_identity": "x"})
            assert r.status_code == 201, r.text
            for i in range(6):
                said = {"user_id": "u", "conversation_id": "c", "message": f"Nuclear {i}."}
                assert c.post("/v1/personas/tally/respond", json=said).status_code == 200
            assert c.get("/openapi.json").status_code == 200
            big = c.post("/v1/personas/tally/record", content=b"x" * 2_000_000)
            assert big.status_code == 413
        yield server, metrics_key["token"]
    finally:
        server.stop()


def _totals(text: str) -> tuple[dict[str, str], dict[str, float]]:
    """Each family's type, and the sum of each counter family's samples."""
    families = list(text_string_to_metric_families(text))
    names = Counter(f.name for f in families)
    assert not [n for n, k in names.items() if k > 1], names
    kinds = {f.name: f.type for f in families}
    assert "unknown" not in kinds.values(), kinds
    for family in families:
        assert family.samples, family.name
    sums = {
        f.name: sum(s.value for s in f.samples if s.name.endswith("_total"))
        for f in families
        if f.type == "counter"
    }
    return kinds, sums


def test_two_workers_scrape_cleanly_and_never_go_backwards(pair: tuple[Served, str]) -> None:
    """20 scrapes (each lands on either worker, and each one's own requests count too):
    every one parses cleanly, has the request, model and store families, and no counter
    total is ever below the one before."""
    server, token = pair
    previous: dict[str, float] = {}
    with server.client(token) as scraper:
        for _ in range(SCRAPES):
            r = scraper.get("/metrics")
            assert r.status_code == 200, r.text
            kinds, sums = _totals(r.text)
            assert kinds["sonality_http_requests"] == "counter"
            assert kinds["sonality_http_request_duration_seconds"] == "histogram"
            assert kinds["sonality_llm_calls"] == kinds["sonality_llm_tokens"] == "counter"
            assert kinds["sonality_episodes"] == "gauge"
            assert kinds["sonality_enrichment_lag_seconds"] == "gauge"
            for name, total in sums.items():
                assert total >= previous.get(name, 0), (name, total, previous)
            previous = sums
    # both workers' respond calls are in the sum: 6 of them, and this test's scrapes
    assert previous["sonality_http_requests"] >= 6 + SCRAPES - 1


def test_a_metrics_key_reads_metrics_and_nothing_else(pair: tuple[Served, str]) -> None:
    """The scraper's key cannot list personas, read a persona, forget a user or export."""
    server, token = pair
    with server.client(token) as scraper:
        assert scraper.get("/metrics").status_code == 200
        assert scraper.get("/v1/personas").status_code == 403
        assert scraper.get("/v1/personas/tally/beliefs").status_code == 403
        assert scraper.delete("/v1/users/u").status_code == 403
        assert scraper.get("/v1/personas/tally/export").status_code == 403
        assert scraper.get("/v1/models").status_code == 403


def test_requests_the_router_never_saw_are_labelled_by_route(pair: tuple[Served, str]) -> None:
    """``/openapi.json`` (a plain Starlette route) and a 413 refused before routing count
    under their route, not ``(unmatched)``."""
    server, token = pair
    with server.client(token) as scraper:
        text = scraper.get("/metrics").text
    routes = {
        (s.labels["route"], s.labels["status"])
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == "sonality_http_requests_total"
    }
    assert ("/openapi.json", "200") in routes
    assert ("/v1/personas/{persona_id}/record", "413") in routes
    assert not [r for r in routes if r[0] == "(unmatched)"], routes
