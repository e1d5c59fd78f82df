"""Prometheus text for ``GET /metrics``: request counts and latency histograms by route
and status, the model's calls and tokens by component (when its usage sink keeps totals,
as ``UsageMeter`` does), and per persona the episodes by enrichment status and the lag
of its background work (read from the store at scrape time, so every process reports the
same store-wide numbers)."""

from __future__ import annotations

import bisect
from collections import defaultdict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sonality.service import Sonality

__all__ = ["BUCKETS", "Metrics"]

BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""Upper bounds (seconds) of the request latency histogram."""


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Metrics:
    """In-process counters of this server process."""

    def __init__(self) -> None:
        self._requests: dict[tuple[str, str, int], int] = defaultdict(int)
        self._buckets: dict[tuple[str, str], list[int]] = {}
        self._sums: dict[tuple[str, str], float] = defaultdict(float)
        self._sonality: Sonality | None = None

    def attach(self, sonality: Sonality) -> None:
        self._sonality = sonality

    def request(self, method: str, route: str, status: int, seconds: float) -> None:
        self._requests[(method, route, status)] += 1
        counts = self._buckets.setdefault((method, route), [0] * (len(BUCKETS) + 1))
        counts[bisect.bisect_left(BUCKETS, seconds)] += 1
        self._sums[(method, route)] += seconds

    async def render(self) -> str:
        lines = [
            "# HELP sonality_http_requests_total HTTP requests by method, route and status.",
            "# TYPE sonality_http_requests_total counter",
        ]
        for (method, route, status), n in sorted(self._requests.items()):
            lines.append(
                f'sonality_http_requests_total{{method="{method}",route="{_label(route)}",'
                f'status="{status}"}} {n}'
            )
        lines += [
            "# HELP sonality_http_request_duration_seconds HTTP request latency.",
            "# TYPE sonality_http_request_duration_seconds histogram",
        ]
        for (method, route), counts in sorted(self._buckets.items()):
            labels = f'method="{method}",route="{_label(route)}"'
            running = 0
            for bound, n in zip((*BUCKETS, float("inf")), counts, strict=True):
                running += n
                le = "+Inf" if bound == float("inf") else repr(bound)
                lines.append(
                    f'sonality_http_request_duration_seconds_bucket{{{labels},le="{le}"}} {running}'
                )
            lines.append(f"sonality_http_request_duration_seconds_count{{{labels}}} {running}")
            lines.append(
                f"sonality_http_request_duration_seconds_sum{{{labels}}} "
                f"{self._sums[(method, route)]:.6f}"
            )
        lines += await self._model_lines()
        if self._sonality is not None:
            persona_ids = [p.id for p in await self._sonality.store.list_personas()]
            lines += await self._episode_lines(persona_ids)
            lines += await self._lag_lines(persona_ids)
        return "\n".join(lines) + "\n"

    async def _model_lines(self) -> list[str]:
        sonality = self._sonality
        usage = getattr(getattr(sonality, "llm", None), "usage", None)
        snapshot = getattr(usage, "snapshot", None)
        if not callable(snapshot):
            return []
        lines = [
            "# HELP sonality_llm_calls_total Model calls of this process by component.",
            "# TYPE sonality_llm_calls_total counter",
            "# HELP sonality_llm_tokens_total Model tokens of this process by component.",
            "# TYPE sonality_llm_tokens_total counter",
        ]
        for component, total in snapshot().items():
            c = _label(component)
            lines.append(f'sonality_llm_calls_total{{component="{c}"}} {total.calls}')
            lines.append(
                f'sonality_llm_tokens_total{{component="{c}",direction="input"}} '
                f"{total.input_tokens}"
            )
            lines.append(
                f'sonality_llm_tokens_total{{component="{c}",direction="output"}} '
                f"{total.output_tokens}"
            )
        return lines

    async def _lag_lines(self, persona_ids: list[str]) -> list[str]:
        """Per persona, the age of the oldest pending episode and of the oldest unthought
        Thinker turn (0 when none), as two gauges (one store read for all of them)."""
        assert self._sonality is not None
        lags = await self._sonality.lag(persona_ids)
        lines = [
            "# HELP sonality_enrichment_lag_seconds Age of the persona's oldest pending episode.",
            "# TYPE sonality_enrichment_lag_seconds gauge",
        ]
        lines += [
            f'sonality_enrichment_lag_seconds{{persona="{_label(lag.persona_id)}"}} '
            f"{lag.episode_seconds:.3f}"
            for lag in lags
        ]
        lines += [
            "# HELP sonality_thinking_lag_seconds Age of the persona's oldest unthought turn.",
            "# TYPE sonality_thinking_lag_seconds gauge",
        ]
        lines += [
            f'sonality_thinking_lag_seconds{{persona="{_label(lag.persona_id)}"}} '
            f"{lag.turn_seconds:.3f}"
            for lag in lags
        ]
        return lines

    async def _episode_lines(self, persona_ids: list[str]) -> list[str]:
        assert self._sonality is not None
        lines = [
            "# HELP sonality_episodes Episodes in the store by persona and enrichment status.",
            "# TYPE sonality_episodes gauge",
        ]
        store = self._sonality.store
        for persona_id in persona_ids:
            for status, n in sorted((await store.count_episodes(persona_id)).items()):
                lines.append(
                    f'sonality_episodes{{persona="{_label(persona_id)}",status="{status}"}} {n}'
                )
        return lines
