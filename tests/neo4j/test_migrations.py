"""Neo4j migrations: a fresh database gets every constraint and index, re-running is a
no-op, an edited applied file is refused, and the vector index must match the settings."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest
from neo4j.time import DateTime

from sonality.errors import MigrationChecksumMismatch, SchemaError
from sonality.resources import resource_dir
from sonality.storage.neo4j.store import Neo4jStore

pytestmark = pytest.mark.neo4j

DIMS = 64
FIRST_MIGRATIONS = [
    "V0001__constraints",
    "V0002__indexes",
    "V0003__episode_embedding_vector_index",
]
SHIPPED = resource_dir("migrations") / "neo4j"
MIGRATIONS = sorted(p.stem for p in SHIPPED.glob("V*.cypher"))
"""Every shipped migration: the first three above, then those later features added."""
VERSIONS = [int(name[1:5]) for name in MIGRATIONS]
LATER = f"V{max(VERSIONS) + 1:04d}__later"
"""A migration file newer than every shipped one."""
CONSTRAINTS = {
    "persona_id_unique",
    "episode_persona_id_unique",
    "belief_persona_topic_unique",
    "snapshot_persona_version_unique",
    "user_persona_id_unique",
    "conversation_persona_id_unique",
    "insight_id_unique",
    "user_fact_id_unique",
    "staged_update_id_unique",
    "topic_persona_name_unique",
    "migration_version_unique",
}
INDEXES = {
    "episode_persona_user",
    "episode_persona_conversation",
    "episode_persona_status",
    "episode_persona_seq",
    "insight_persona_status",
    "user_fact_persona_user",
    "staged_update_persona_committed",
    "staged_update_persona_due",
    "belief_persona",
    "snapshot_persona",
}


async def _open(
    opened: list[Neo4jStore],
    uri: str,
    auth: tuple[str, str] | None,
    *,
    dims: int = DIMS,
    migrations_dir: Path | None = None,
    vector_index: bool = False,
) -> Neo4jStore:
    store = await Neo4jStore.open(
        uri,
        auth=auth,
        embedding_dimensions=dims,
        migrations_dir=migrations_dir,
        vector_index=vector_index,
    )
    opened.append(store)
    return store


async def test_migrate_creates_the_schema_on_a_fresh_database(
    fresh: Any, opened: list[Neo4jStore], neo4j_uri: str, neo4j_auth: Any
) -> None:
    """migrate applies every file: every named constraint and index and a checksummed
    Migration record each; the vector index (opt-in) only with the setting on, then with
    the configured dimension and cosine similarity."""
    store = await _open(opened, neo4j_uri, neo4j_auth)
    assert MIGRATIONS[:3] == FIRST_MIGRATIONS
    assert list((await store.schema_status()).pending) == MIGRATIONS

    assert await store.migrate() == MIGRATIONS

    assert await fresh.constraint_names() >= CONSTRAINTS
    assert await fresh.index_names() >= INDEXES
    assert "episode_embedding" not in await fresh.index_names()
    on = await _open(opened, neo4j_uri, neo4j_auth, vector_index=True)
    assert await on.migrate() == []
    [vector_index] = await fresh.run(
        "SHOW VECTOR INDEXES YIELD name, state, labelsOrTypes, properties, options "
        "WHERE name = 'episode_embedding' RETURN *"
    )
    assert vector_index["state"] == "ONLINE"
    assert (vector_index["labelsOrTypes"], vector_index["properties"]) == (
        ["Episode"],
        ["embedding"],
    )
    config = vector_index["options"]["indexConfig"]
    assert config["vector.dimensions"] == DIMS
    assert config["vector.similarity_function"].lower() == "cosine"

    status = await store.schema_status()
    assert status.pending == ()
    assert status.current
    folder = SHIPPED
    assert [(m.version, m.checksum) for m in status.applied] == [
        (v, hashlib.sha256((folder / f"{n}.cypher").read_bytes()).hexdigest())
        for v, n in zip(VERSIONS, MIGRATIONS, strict=True)
    ]
    [record] = await fresh.records("MATCH (m:Migration {version: 1}) RETURN m AS m")
    assert isinstance(record["m"]["applied_at"], DateTime)
    assert record["m"]["name"] == "V0001__constraints"


async def test_second_migrate_applies_nothing(
    fresh: Any, opened: list[Neo4jStore], neo4j_uri: str, neo4j_auth: Any
) -> None:
    """Re-running migrate applies nothing and keeps one Migration record per file."""
    store = await _open(opened, neo4j_uri, neo4j_auth)
    await store.migrate()
    before = await fresh.index_names() | await fresh.constraint_names()
    assert await store.migrate() == []
    assert await fresh.index_names() | await fresh.constraint_names() == before
    rows = await fresh.run("MATCH (m:Migration) RETURN m.version AS v ORDER BY v")
    assert [r["v"] for r in rows] == VERSIONS


async def test_data_methods_refuse_an_unmigrated_database(
    fresh: Any, opened: list[Neo4jStore], neo4j_uri: str, neo4j_auth: Any
) -> None:
    """Opening creates no schema, and data methods raise SchemaError until migrate runs."""
    store = await _open(opened, neo4j_uri, neo4j_auth)
    assert await fresh.constraint_names() == set()
    with pytest.raises(SchemaError, match="sonality migrate"):
        await store.list_personas()
    await store.migrate()
    assert await store.list_personas() == []


async def test_an_edited_applied_migration_is_refused(
    fresh: Any,
    opened: list[Neo4jStore],
    neo4j_uri: str,
    neo4j_auth: Any,
    tmp_path: Path,
) -> None:
    """Changing an applied file makes migrate (and the schema check) raise
    MigrationChecksumMismatch naming that file; nothing more is applied."""
    folder = tmp_path / "migrations"
    shutil.copytree(SHIPPED, folder)
    store = await _open(opened, neo4j_uri, neo4j_auth, migrations_dir=folder)
    await store.migrate()

    edited = folder / "V0002__indexes.cypher"
    edited.write_text(edited.read_text() + "\n// tweaked after release\n")
    (folder / f"{LATER}.cypher").write_text(
        "CREATE INDEX later_one IF NOT EXISTS FOR (n:Episode) ON (n.importance);\n"
    )
    changed = await _open(opened, neo4j_uri, neo4j_auth, migrations_dir=folder)
    with pytest.raises(MigrationChecksumMismatch, match=r"V0002__indexes\.cypher") as caught:
        await changed.migrate()
    assert caught.value.context["file"] == "V0002__indexes.cypher"
    with pytest.raises(MigrationChecksumMismatch):
        await changed.list_personas()
    assert "later_one" not in await fresh.index_names()


async def test_schema_status_lists_pending_then_none(
    fresh: Any,
    opened: list[Neo4jStore],
    neo4j_uri: str,
    neo4j_auth: Any,
    tmp_path: Path,
) -> None:
    """schema_status reports what is pending, also a new file added after a migrate."""
    folder = tmp_path / "migrations"
    shutil.copytree(SHIPPED, folder)
    store = await _open(opened, neo4j_uri, neo4j_auth, migrations_dir=folder)
    assert (await store.schema_status()).pending == tuple(MIGRATIONS)
    await store.migrate()
    assert (await store.schema_status()).pending == ()

    (folder / f"{LATER}.cypher").write_text(
        "// a later step\nCREATE INDEX later_one IF NOT EXISTS FOR (n:Episode) ON (n.importance);\n"
    )
    later = await _open(opened, neo4j_uri, neo4j_auth, migrations_dir=folder)
    assert (await later.schema_status()).pending == (LATER,)
    with pytest.raises(SchemaError, match="sonality migrate"):
        await later.list_personas()
    assert await later.migrate() == [LATER]
    assert "later_one" in await fresh.index_names()
    assert (await later.schema_status()).pending == ()


async def test_vector_index_of_another_dimension_fails_at_open(
    fresh: Any, opened: list[Neo4jStore], neo4j_uri: str, neo4j_auth: Any
) -> None:
    """Opening with embedding_dimensions unlike the existing index's raises SchemaError
    naming both dimensions."""
    await (await _open(opened, neo4j_uri, neo4j_auth, vector_index=True)).migrate()
    with pytest.raises(SchemaError, match=r"64 dimensions.*say 32") as caught:
        await Neo4jStore.open(neo4j_uri, auth=neo4j_auth, embedding_dimensions=32)
    assert caught.value.context["index_dimensions"] == DIMS
    assert caught.value.context["configured_dimensions"] == 32


async def test_vector_index_of_another_dimension_fails_at_migrate(
    fresh: Any, opened: list[Neo4jStore], neo4j_uri: str, neo4j_auth: Any
) -> None:
    """A pre-existing episode_embedding index of another dimension stops migrate with
    SchemaError before anything is applied."""
    store = await _open(opened, neo4j_uri, neo4j_auth)
    await fresh.run(
        "CREATE VECTOR INDEX episode_embedding FOR (e:Episode) ON e.embedding "
        "OPTIONS {indexConfig: {`vector.dimensions`: 32, "
        "`vector.similarity_function`: 'cosine'}}"
    )
    with pytest.raises(SchemaError, match="episode_embedding"):
        await store.migrate()
    assert (await store.schema_status()).pending == tuple(MIGRATIONS)


async def test_unknown_applied_version_is_refused(
    fresh: Any, opened: list[Neo4jStore], neo4j_uri: str, neo4j_auth: Any
) -> None:
    """A database migrated by a newer Sonality (an unknown version) is refused."""
    store = await _open(opened, neo4j_uri, neo4j_auth)
    await store.migrate()
    await fresh.run(
        "CREATE (:Migration {version: 99, name: 'V0099__future', description: 'future', "
        "checksum: 'x', applied_at: datetime()})"
    )
    with pytest.raises(SchemaError, match="upgrade Sonality"):
        await store.migrate()
