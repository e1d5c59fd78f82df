"""Pieces the benchmarks share: percentiles, the Neo4j dev server, and filling a store
with raw history through ``Store.append_episode`` (the write ``record`` does first)."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sonality.llm.embedders import HashEmbedder
from sonality.models import EpisodeDraft
from sonality.ports import Store

ROOT = Path(__file__).resolve().parent.parent


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def load_devserver() -> Any:
    """tools/neo4j-devserver/devserver.py as a module (it is a script, not a package)."""
    path = ROOT / "tools" / "neo4j-devserver" / "devserver.py"
    spec = importlib.util.spec_from_file_location("sonality_devserver", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["sonality_devserver"] = module
    spec.loader.exec_module(module)
    return module


async def fill(
    store: Store,
    persona: str,
    start: int,
    stop: int,
    text: Callable[[int], str],
    *,
    dimensions: int = 256,
    concurrency: int = 16,
) -> None:
    """Raw exchanges ``start``..``stop - 1`` of ``persona`` with embeddings, spread over
    50 users and 200 conversations, written by ``concurrency`` concurrent writers."""
    embedder = HashEmbedder(dimensions)
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    queue = iter(range(start, stop))

    async def worker() -> None:
        for i in queue:
            message = text(i)
            [vector] = await embedder.embed([message])
            await store.append_episode(
                EpisodeDraft(
                    id=f"fill-{i}",
                    persona_id=persona,
                    user_id=f"u{i % 50}",
                    conversation_id=f"c{i % 200}",
                    user_message=message,
                    agent_response="Noted.",
                    created_at=t0 + timedelta(minutes=i),
                    embedding=vector,
                )
            )

    await asyncio.gather(*(worker() for _ in range(concurrency)))
