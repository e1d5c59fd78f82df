"""Contract: migrate is explicit and idempotent; delete_all empties data but keeps schema."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from factories import add_episode, add_persona, make_commit, vector

from sonality.models import AppliedMigration


async def test_schema_is_current_after_migrate(store: Any) -> None:
    """A migrated store reports its backend, no pending steps, and checksummed applied steps."""
    status = await store.schema_status()
    assert status.backend == store.backend
    assert status.current
    assert status.pending == ()
    assert status.applied
    versions = [m.version for m in status.applied]
    assert versions == sorted(versions)
    for migration in status.applied:
        assert isinstance(migration, AppliedMigration)
        assert len(migration.checksum) == 64
        assert migration.applied_at.utcoffset() == timedelta(0)


async def test_migrate_twice_is_a_no_op(store: Any) -> None:
    """migrate on a current store applies nothing and leaves the ledger unchanged."""
    before = await store.schema_status()
    assert await store.migrate() == []
    assert await store.schema_status() == before


async def test_delete_all_removes_data_and_keeps_schema(store: Any) -> None:
    """After delete_all the store is empty, still current, and numbering starts over."""
    await add_persona(store)
    episode = await add_episode(store, "e1")
    await store.commit_enrichment(make_commit(episode, expected=0))
    before = await store.schema_status()
    await store.delete_all()
    assert await store.list_personas() == []
    assert await store.list_episodes("p1") == []
    assert await store.list_beliefs("p1", include_retired=True) == []
    assert await store.list_facts("p1", "u1") == []
    assert await store.schema_status() == before
    await add_persona(store)
    again = await add_episode(store, "e1")
    assert again.turn == 1
    assert await store.list_insights("p1") == []


async def test_search_after_delete_all_sees_only_new_embeddings(store: Any) -> None:
    """Episodes re-created with old ids after delete_all are searched with their new vectors."""
    await add_persona(store)
    await add_episode(store, "e1", embedding=vector(1, 0))
    await add_episode(store, "e2", embedding=vector(0, 1))
    assert len(await store.similar_episodes("p1", "u1", vector(1, 0), k=5)) == 2
    await store.delete_all()
    await add_persona(store)
    await add_episode(store, "e1", embedding=vector(0, 1))
    [(episode, score)] = await store.similar_episodes("p1", "u1", vector(1, 0), k=5)
    assert episode.id == "e1"
    assert score == pytest.approx(0.0, abs=1e-4)
