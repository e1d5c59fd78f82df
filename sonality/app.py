"""Wiring: turn :class:`Settings` into a ready :class:`Sonality` (the only place that
chooses adapters)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sonality.config import Settings
from sonality.errors import ConfigError

if TYPE_CHECKING:
    from sonality.ports import LLM, Store
    from sonality.service import Sonality

__all__ = ["build", "open_store", "settings_llm"]


async def open_store(settings: Settings) -> Store:
    """Open (never migrate) the store the settings name."""
    if settings.store_backend == "sqlite":
        from sonality.storage.sqlite_store import SqliteStore

        return await SqliteStore.open(
            settings.sqlite_path, embedding_dimensions=settings.embedding_dimensions
        )
    from sonality.storage.neo4j_store import Neo4jStore

    password = settings.neo4j_password.get_secret_value()
    return await Neo4jStore.open(
        settings.store,
        auth=(settings.neo4j_user, password) if password else None,
        database=settings.neo4j_database,
        embedding_dimensions=settings.embedding_dimensions,
    )


def settings_llm(settings: Settings) -> LLM | None:
    """The configured model, or None when ``SONALITY_MODEL`` is unset (degraded mode)."""
    if not settings.model:
        return None
    from sonality.llm.litellm_llm import LiteLLM

    return LiteLLM.from_settings(settings)


async def build(settings: object, *, migrate: bool | None = None) -> Sonality:
    """A ``Sonality`` that owns its store. See ``Sonality.open``."""
    from sonality.core.opinion import OpinionParams
    from sonality.llm.embedders import embedder_from_settings
    from sonality.service import Limits, Sonality

    if not isinstance(settings, Settings):
        raise ConfigError("Sonality.from_settings needs a sonality.config.Settings object")
    store = await open_store(settings)
    try:
        if migrate if migrate is not None else settings.store_backend == "sqlite":
            await store.migrate()
        return Sonality(
            store=store,
            llm=settings_llm(settings),
            embedder=embedder_from_settings(settings),
            opinion=OpinionParams(
                cooling_period=settings.cooling_period,
                max_commit_delta=settings.max_commit_delta,
            ),
            limits=Limits(
                max_message_chars=settings.max_message_chars,
                max_response_chars=settings.max_response_chars,
                context_token_budget=settings.context_token_budget,
                context_episodes=settings.context_episodes,
                enrichment_max_attempts=settings.enrichment_max_attempts,
                disagreement_window=settings.disagreement_window,
            ),
            owns_store=True,
        )
    except BaseException:
        await store.close()
        raise
