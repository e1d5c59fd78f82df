"""Prometheus text for ``GET /metrics``, written by ``prometheus_client``: request counts
and latency histograms by route and status, the model's calls and tokens by component
(when its usage sink keeps totals, as ``UsageMeter`` does), and per persona the episodes
by enrichment status and the lag of its background work.

Under ``sonality serve --workers N`` the server runs ``prometheus_client`` in its
multiprocess mode (``serve`` gives every worker one ``PROMETHEUS_MULTIPROC_DIR``), so a
scrape, whichever worker answers it, reads the sum of every worker's counters: they never
go backwards between scrapes. The store's gauges (episodes, lag) are read from the store
at scrape time, so every process reports the same store-wide numbers.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector

if TYPE_CHECKING:
    from collections.abc import Iterator

    from prometheus_client.metrics_core import Metric

    from sonality import Sonality

__all__ = ["BUCKETS", "CONTENT_TYPE", "MULTIPROCESS_ENV", "Metrics"]

BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""Upper bounds (seconds) of the request latency histogram."""
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"
"""Where ``prometheus_client`` keeps the counters of every worker process (set by
``serve`` for ``--workers`` above 1; read when ``prometheus_client`` is imported)."""

disable_created_metrics()  # type: ignore[no-untyped-call]  # the ``_created`` samples double every family for nothing here


class _Families:
    """A collector of families made at scrape time (the store's gauges)."""

    def __init__(self, families: list[Metric]) -> None:
        self._families = families

    def collect(self) -> Iterator[Metric]:
        return iter(self._families)


class Metrics:
    """The server's counters (this process's, or every worker's in multiprocess mode)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._requests = Counter(
            "sonality_http_requests",
            "HTTP requests by method, route and status.",
            ("method", "route", "status"),
            registry=self.registry,
        )
        self._latency = Histogram(
            "sonality_http_request_duration_seconds",
            "HTTP request latency.",
            ("method", "route"),
            buckets=BUCKETS,
            registry=self.registry,
        )
        self._calls = Counter(
            "sonality_llm_calls",
            "Model calls by component.",
            ("component",),
            registry=self.registry,
        )
        self._tokens = Counter(
            "sonality_llm_tokens",
            "Model tokens by component and direction.",
            ("component", "direction"),
            registry=self.registry,
        )
        self._seen: dict[str, tuple[int, int, int]] = {}
        self._sonality: Sonality | None = None

    def attach(self, sonality: Sonality) -> None:
        self._sonality = sonality

    def request(self, method: str, route: str, status: int, seconds: float) -> None:
        self._requests.labels(method, route, str(status)).inc()
        self._latency.labels(method, route).observe(seconds)
        self._sync_model()

    def _sync_model(self) -> None:
        """Move the model counters up to the usage sink's totals (a counter only grows:
        a sink that was reset starts counting from its new totals)."""
        usage = getattr(getattr(self._sonality, "llm", None), "usage", None)
        snapshot = getattr(usage, "snapshot", None)
        if not callable(snapshot):
            return
        totals: dict[str, Any] = snapshot()
        for component, total in totals.items():
            now = (int(total.calls), int(total.input_tokens), int(total.output_tokens))
            before = self._seen.get(component, (0, 0, 0))
            if now == before:
                continue
            self._seen[component] = now
            if any(n < b for n, b in zip(now, before, strict=True)):
                continue
            calls, tokens_in, tokens_out = (n - b for n, b in zip(now, before, strict=True))
            self._calls.labels(component).inc(calls)
            self._tokens.labels(component, "input").inc(tokens_in)
            self._tokens.labels(component, "output").inc(tokens_out)

    async def render(self) -> str:
        """The exposition text: the counters (every worker's in multiprocess mode), then
        the store's gauges."""
        self._sync_model()
        if os.environ.get(MULTIPROCESS_ENV):
            counters = CollectorRegistry()
            MultiProcessCollector(counters)  # type: ignore[no-untyped-call]
            text = generate_latest(counters)
        else:
            text = generate_latest(self.registry)
        if self._sonality is not None:
            gauges = CollectorRegistry()
            gauges.register(_Families(await self._store_families()))
            text += generate_latest(gauges)
        return text.decode("utf-8")

    async def _store_families(self) -> list[Metric]:
        """Per persona the episodes by enrichment status, and the age of the oldest
        pending episode and of the oldest unthought Thinker turn (0 when none)."""
        assert self._sonality is not None
        store = self._sonality.store
        persona_ids = [p.id for p in await store.list_personas()]
        episodes = GaugeMetricFamily(
            "sonality_episodes",
            "Episodes in the store by persona and enrichment status.",
            labels=("persona", "status"),
        )
        for persona_id in persona_ids:
            for status, n in sorted((await store.count_episodes(persona_id)).items()):
                episodes.add_metric((persona_id, status), n)
        enrichment = GaugeMetricFamily(
            "sonality_enrichment_lag_seconds",
            "Age of the persona's oldest pending episode.",
            labels=("persona",),
        )
        thinking = GaugeMetricFamily(
            "sonality_thinking_lag_seconds",
            "Age of the persona's oldest unthought turn.",
            labels=("persona",),
        )
        for lag in await self._sonality.lag(persona_ids):
            enrichment.add_metric((lag.persona_id,), round(lag.episode_seconds, 3))
            thinking.add_metric((lag.persona_id,), round(lag.turn_seconds, 3))
        return [episodes, enrichment, thinking]
