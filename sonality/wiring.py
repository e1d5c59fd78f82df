"""Wiring: turn :class:`Settings` into the parts of a deployment (the only place that
chooses adapters and reads configuration).

:func:`open_parts` opens the store the settings name (migrating it when asked), picks the
model and the embedder, fills the tunables from the settings, and returns the complete
:class:`~sonality.mind.parts.Parts`; ``Sonality.open`` builds the facade from them with
``Sonality(**parts)``. Nothing here imports the facade.

It is also the faces' one door below the facade (``cli/`` and ``server/`` import only
``sonality``, ``sonality.models``, ``sonality.errors`` and this module; see
``tests/test_layers.py``): the store's port type and the few entry-point helpers they use
(logging set-up, shipped files, the prompt names, the token counter, the archive copy,
the ingest reader) are re-exported at the end, lazily, so importing this module loads none
of them.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sonality.config import Settings, default_store_url, legacy_store_path
from sonality.errors import ConfigError
from sonality.lazy import lazy_attributes
from sonality.observability import get_logger
from sonality.ports import LLM, PromptSource, UsageSink

if TYPE_CHECKING:
    from sonality.config import redact_url as redact_url
    from sonality.llm.prompts import Prompt as Prompt
    from sonality.llm.tokens import count_tokens as count_tokens
    from sonality.mind.archive import copy_personas as copy_personas
    from sonality.mind.ingest import read_exchanges as read_exchanges
    from sonality.mind.parts import Parts
    from sonality.mind.reads import Reads as Reads
    from sonality.mind.reflection import ReflectionParams
    from sonality.observability import configure_logging as configure_logging
    from sonality.observability import quiet as quiet
    from sonality.ports import Store as Store
    from sonality.resources import resource_dir as resource_dir

__all__ = [
    "Prompt",
    "Reads",
    "Store",
    "configure_logging",
    "copy_personas",
    "count_tokens",
    "load_llm_factory",
    "open_parts",
    "open_reads",
    "open_store",
    "quiet",
    "read_exchanges",
    "redact_url",
    "reflection_params",
    "resource_dir",
    "settings_llm",
]

log = get_logger("sonality.wiring")


async def open_store(settings: Settings, *, create: bool = True) -> Store:
    """Open (never migrate) the store the settings name; ``create=False`` creates nothing
    (a missing SQLite file is ``StoreUnavailable``), for diagnostics."""
    if settings.store_backend == "sqlite":
        from sonality.storage.sqlite.store import SqliteStore

        # only a file named sonality.db can be the default: no platformdirs import otherwise
        default = settings.sqlite_path.name == "sonality.db"
        if create and default and settings.store == default_store_url():
            await asyncio.to_thread(_move_legacy_store, settings.sqlite_path)
        return await SqliteStore.open(
            settings.sqlite_path,
            embedding_dimensions=settings.embedding_dimensions,
            create=create,
            cache_mb=settings.cache_mb,
        )
    from sonality.storage.neo4j.store import Neo4jStore

    password = settings.neo4j_password.get_secret_value()
    return await Neo4jStore.open(
        settings.store,
        auth=(settings.neo4j_user, password) if password else None,
        database=settings.neo4j_database,
        embedding_dimensions=settings.embedding_dimensions,
        vector_index=settings.neo4j_vector_index,
        cache_mb=settings.cache_mb,
        retry_seconds=settings.neo4j_retry_seconds,
        connect_seconds=settings.neo4j_connect_seconds,
    )


def _move_legacy_store(path: Path) -> None:
    """Move the default store from its old place (``config.legacy_store_path``) to
    ``path`` on first use, with its WAL files, unless ``path`` exists already."""
    import shutil

    old = legacy_store_path()
    if path.exists() or not old.is_file():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        source = old.with_name(old.name + suffix)
        if source.exists():
            shutil.move(source, path.with_name(path.name + suffix))
    log.warning("default_store_moved", old=str(old), new=str(path))


def settings_llm(settings: Settings) -> LLM | None:
    """The configured model, or None when ``SONALITY_MODEL`` is unset (degraded mode)."""
    if not settings.model:
        return None
    from sonality.llm.litellm_llm import LiteLLM

    return LiteLLM.from_settings(settings)


def reflection_params(settings: Settings) -> ReflectionParams:
    """The reflection tunables the settings name."""
    from sonality.core.triggers import TriggerParams
    from sonality.mind.reflection import ReflectionParams

    return ReflectionParams(
        triggers=TriggerParams(
            reflection_every=settings.reflection_every,
            event_shift_threshold=settings.event_shift_threshold,
        ),
        snapshot_min_chars=settings.snapshot_min_chars,
        snapshot_min_retention=settings.snapshot_min_retention,
        snapshot_max_growth=settings.snapshot_max_growth,
        snapshot_max_chars=settings.snapshot_max_chars,
        snapshot_retention=settings.snapshot_retention,
        lease_seconds=settings.lease_seconds,
        decay_review=settings.decay_review,
    )


def load_llm_factory(spec: str, settings: Settings) -> LLM:
    """The LLM built by the plug-in ``spec`` (``package.module:callable``): the callable is
    imported and called with the settings, and must return an object satisfying the
    ``LLM`` port — ``model``, ``prompts`` (with ``fixed_text``), ``usage`` (with
    ``record``), ``structured`` and ``text`` — such as a ``sonality.testing.ScriptedLLM``
    or your own adapter. ``ConfigError`` names what is missing."""
    import importlib

    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ConfigError("an LLM factory is written package.module:callable", spec=spec)
    try:
        factory = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise ConfigError("cannot import the LLM factory", spec=spec, error=str(exc)) from None
    llm = factory(settings)
    missing = _llm_gaps(llm)
    if missing or not isinstance(llm, LLM):
        raise ConfigError(
            "the LLM factory did not return an LLM: it lacks " + ", ".join(missing),
            spec=spec,
            missing=missing,
        )
    return llm


_LLM_MEMBERS = ("model", "prompts", "usage", "structured", "text")


def _llm_gaps(candidate: object) -> list[str]:
    """The members of the ``LLM`` port ``candidate`` lacks (empty when it has them all)."""
    gaps = [name for name in _LLM_MEMBERS if not hasattr(candidate, name)]
    if gaps or not isinstance(candidate, LLM):
        return gaps
    if not isinstance(candidate.prompts, PromptSource):
        gaps.append("prompts.fixed_text")
    if not isinstance(candidate.usage, UsageSink):
        gaps.append("usage.record")
    gaps.extend(
        name
        for name, member in (("structured", candidate.structured), ("text", candidate.text))
        if not callable(member)
    )
    return gaps


async def open_parts(
    settings: object,
    *,
    migrate: bool | None = None,
    llm: LLM | None = None,
    owner: str | None = None,
) -> Parts:
    """The parts of a deployment that owns its store (``owns_store``). See
    ``Sonality.open``: ``migrate`` applies pending schema steps first (by default only
    for the embedded SQLite file); ``llm`` replaces the model the settings name;
    ``owner`` names this process's reflection leases."""
    from sonality.core.opinion import OpinionParams
    from sonality.llm.embedders import embedder_from_settings
    from sonality.mind.parts import EnrichMode, Limits, RuntimeSettings, assemble

    if not isinstance(settings, Settings):
        raise ConfigError("Sonality.from_settings needs a sonality.config.Settings object")
    store = await _open_migrated(settings, migrate)
    try:
        return assemble(
            store=store,
            llm=llm if llm is not None else settings_llm(settings),
            embedder=embedder_from_settings(settings),
            opinion=OpinionParams(
                cooling_period=settings.cooling_period,
                max_commit_delta=settings.max_commit_delta,
                influence_window=settings.influence_window,
                user_influence_budget=settings.user_influence_budget,
                max_window_delta=settings.max_window_delta,
                repeat_similarity=settings.repeat_similarity,
            ),
            limits=Limits(
                max_message_chars=settings.max_message_chars,
                max_response_chars=settings.max_response_chars,
                context_token_budget=settings.context_token_budget,
                context_episodes=settings.context_episodes,
                context_fact_tokens=settings.context_fact_tokens,
                enrichment_max_attempts=settings.enrichment_max_attempts,
                disagreement_window=settings.disagreement_window,
                record_enrich=EnrichMode(settings.record_enrich),
                record_deadline_seconds=settings.record_deadline_seconds,
                respond_deadline_seconds=settings.respond_deadline_seconds,
                enrich_concurrency=settings.enrich_concurrency,
            ),
            runtime=RuntimeSettings(shutdown_seconds=settings.shutdown_seconds),
            owns_store=True,
            reflection=reflection_params(settings),
            owner=owner,
        )
    except BaseException:
        await store.close()
        raise


async def open_reads(settings: Settings, *, migrate: bool | None = None) -> Reads:
    """The facade's read-only half over the store the settings name, opened and migrated
    as ``open_parts`` does it, and nothing else: no model, no pipelines, no tunables (the
    listing commands). The caller closes ``reads.store``."""
    from sonality.mind.reads import Reads

    return Reads(await _open_migrated(settings, migrate))


async def _open_migrated(settings: Settings, migrate: bool | None) -> Store:
    """The store, with pending schema steps applied when ``migrate`` says so (by default
    for the embedded SQLite file only: the application owns it)."""
    store = await open_store(settings)
    try:
        if migrate if migrate is not None else settings.store_backend == "sqlite":
            await store.migrate()
    except BaseException:
        await store.close()
        raise
    return store


# what the faces use from below the facade, imported on first use ----------------------
_FOR_THE_FACES = {
    "Prompt": "sonality.llm.prompts",
    "Reads": "sonality.mind.reads",
    "Store": "sonality.ports",
    "configure_logging": "sonality.observability",
    "copy_personas": "sonality.mind.archive",
    "count_tokens": "sonality.llm.tokens",
    "quiet": "sonality.observability",
    "read_exchanges": "sonality.mind.ingest",
    "redact_url": "sonality.config",
    "resource_dir": "sonality.resources",
}


def __getattr__(name: str) -> Any:
    """Import a re-exported name on first use (``sonality --help`` loads none of them)."""
    return _import_on_first_use(name)


_import_on_first_use = lazy_attributes("sonality.wiring", _FOR_THE_FACES, globals())
