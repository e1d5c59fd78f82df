"""SqliteStore specifics: migration files and their checksums, pragmas, several connections
on one file, the similarity cache across connections."""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import closing, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from sonality.errors import (
    MigrationChecksumMismatch,
    SchemaError,
    StoreError,
    StoreUnavailable,
)
from sonality.models import AppliedMigration, EpisodeDraft, Persona, Snapshot
from sonality.resources import resource_dir
from sonality.storage import migrations
from sonality.storage.migrations import MigrationStep
from sonality.storage.sqlite.migrations import DATA_TABLES, applied, apply, statements
from sonality.storage.sqlite.store import SqliteStore

DIMS = 64
T0 = datetime(2026, 1, 1, 12, tzinfo=UTC)
FOLDER = resource_dir("migrations") / "sqlite"
STEPS = migrations.discover(FOLDER, ".sql")


@contextmanager
def raw(path: Path) -> Iterator[sqlite3.Connection]:
    """A plain autocommit connection to the store's file, for inspection and tampering."""
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        yield conn


def unit(i: int) -> tuple[float, ...]:
    return tuple(1.0 if j == i else 0.0 for j in range(DIMS))


def draft(episode_id: str, *, persona_id: str = "p1", **overrides: Any) -> EpisodeDraft:
    fields: dict[str, Any] = {
        "id": episode_id,
        "persona_id": persona_id,
        "user_id": "u1",
        "conversation_id": "c1",
        "user_message": "hello",
        "agent_response": "hi",
        "created_at": T0,
    }
    return EpisodeDraft(**(fields | overrides))


async def add_persona(store: SqliteStore, persona_id: str = "p1") -> None:
    await store.create_persona(
        Persona(id=persona_id, name="P", core_identity="x", created_at=T0),
        Snapshot(persona_id=persona_id, version=1, text="I am.", created_at=T0),
    )


@pytest.fixture
async def second(sqlite_store: SqliteStore) -> AsyncIterator[SqliteStore]:
    """Another SqliteStore (own connection and thread) on the fixture store's file."""
    other = await SqliteStore.open(sqlite_store.path, embedding_dimensions=DIMS)
    try:
        yield other
    finally:
        await other.close()


async def test_steps_are_numbered_and_checksummed() -> None:
    """Schema steps ascend from 1 (gaps allowed), named VNNNN__description, sha256-checksummed."""
    versions = [s.version for s in STEPS]
    assert versions[0] == 1 and versions == sorted(set(versions))
    for step in STEPS:
        assert step.name == f"V{step.version:04d}__{step.slug}"
        path = FOLDER / step.file
        assert step.checksum == hashlib.sha256(path.read_bytes()).hexdigest()
        assert list(statements(step))


async def test_fresh_file_has_no_schema_and_data_methods_refuse(tmp_path: Path) -> None:
    """Opening creates an empty file; until migrate, data methods raise SchemaError."""
    store = await SqliteStore.open(tmp_path / "deep" / "er" / "s.db", embedding_dimensions=DIMS)
    try:
        assert store.path.is_file()
        with raw(store.path) as conn:
            assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
        status = await store.schema_status()
        assert status.applied == ()
        assert status.pending == tuple(step.name for step in STEPS)
        with pytest.raises(SchemaError, match="sonality migrate"):
            await store.list_personas()
        assert await store.migrate() == [step.name for step in STEPS]
        assert await store.list_personas() == []
    finally:
        await store.close()


async def test_wal_mode_and_foreign_keys_are_on(sqlite_store: SqliteStore) -> None:
    """The file is in WAL mode; the store's connection enforces foreign keys."""
    with raw(sqlite_store.path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    pragmas = await sqlite_store._db.run(
        lambda c: (
            c.execute("PRAGMA foreign_keys").fetchone()[0],
            c.execute("PRAGMA synchronous").fetchone()[0],
            c.execute("PRAGMA busy_timeout").fetchone()[0],
        )
    )
    assert pragmas[0] == 1
    assert pragmas[1] == 1  # NORMAL
    assert pragmas[2] > 0


async def test_edited_step_raises_checksum_mismatch_naming_it(
    sqlite_store: SqliteStore, second: SqliteStore
) -> None:
    """A recorded checksum that differs from the step's raises MigrationChecksumMismatch."""
    with raw(sqlite_store.path) as conn:
        conn.execute("UPDATE schema_migrations SET checksum = ? WHERE version = 1", ("0" * 64,))
    with pytest.raises(MigrationChecksumMismatch) as caught:
        await sqlite_store.migrate()
    assert caught.value.context["file"] == STEPS[0].file
    assert STEPS[0].file in str(caught.value)
    with pytest.raises(MigrationChecksumMismatch):
        await second.list_personas()


async def test_unknown_newer_step_is_refused(
    sqlite_store: SqliteStore, second: SqliteStore
) -> None:
    """A database migrated by a newer Sonality (unknown step) raises SchemaError."""
    with raw(sqlite_store.path) as conn:
        conn.execute(
            "INSERT INTO schema_migrations VALUES (999, 'future', ?, ?)",
            ("f" * 64, T0.isoformat()),
        )
    with pytest.raises(SchemaError, match="upgrade"):
        await second.list_personas()


class RawLedger:
    """The runner's Ledger over a plain connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    async def applied(self) -> list[AppliedMigration]:
        return applied(self.conn)

    async def apply(self, step: MigrationStep) -> bool:
        return apply(self.conn, step)


async def test_failed_step_rolls_back_alone(tmp_path: Path) -> None:
    """Each step is its own transaction: a failing step leaves earlier steps applied, itself not."""
    folder = tmp_path / "steps"
    folder.mkdir()
    (folder / "V0001__good.sql").write_text("CREATE TABLE a (x INTEGER);\n")
    (folder / "V0002__bad.sql").write_text(
        "CREATE TABLE b (x INTEGER);\nINSERT INTO nowhere VALUES (1);\n"
    )
    steps = migrations.discover(folder, ".sql")
    with raw(tmp_path / "m.db") as conn:
        with pytest.raises(sqlite3.OperationalError):
            await migrations.migrate(RawLedger(conn), steps)
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert tables == {"schema_migrations", "a"}
        status = migrations.status("sqlite", applied(conn), steps)
        assert [m.version for m in status.applied] == [1]
        assert status.pending == ("V0002__bad",)


async def test_other_embedding_dimensions_are_refused(sqlite_store: SqliteStore) -> None:
    """Opening a migrated file with other embedding dimensions makes data methods fail."""
    other = await SqliteStore.open(sqlite_store.path, embedding_dimensions=DIMS * 2)
    try:
        with pytest.raises(SchemaError, match="dimensions"):
            await other.list_personas()
        assert (await other.schema_status()).current
    finally:
        await other.close()


async def test_two_instances_on_one_file_see_each_others_writes(
    sqlite_store: SqliteStore, second: SqliteStore
) -> None:
    """Two SqliteStores on one file share data; numbering continues across them."""
    await add_persona(sqlite_store)
    assert [p.id for p in await second.list_personas()] == ["p1"]
    first, _ = await second.append_episode(draft("e1"))
    following, _ = await sqlite_store.append_episode(draft("e2"))
    assert (first.seq, following.seq, following.turn) == (1, 2, 2)
    assert [e.id for e in await second.list_episodes("p1")] == ["e2", "e1"]


async def test_concurrent_writers_on_one_file_serialise(
    sqlite_store: SqliteStore, second: SqliteStore
) -> None:
    """Appends racing through two connections still get distinct consecutive turns."""
    await add_persona(sqlite_store)
    stores = (sqlite_store, second)
    results = await asyncio.gather(
        *(stores[i % 2].append_episode(draft(f"e{i}")) for i in range(20))
    )
    assert sorted(e.turn for e, _ in results) == list(range(1, 21))


async def test_similarity_cache_sees_other_connections(
    sqlite_store: SqliteStore, second: SqliteStore
) -> None:
    """Embeddings written through another connection are found by the next search."""
    await add_persona(sqlite_store)
    await sqlite_store.append_episode(draft("e1", embedding=unit(0)))
    assert len(await sqlite_store.similar_episodes("p1", "u1", unit(1), k=5)) == 1
    await second.append_episode(draft("e2", embedding=unit(1)))
    await second.set_episode_embedding("p1", "e1", unit(2))
    ranked = await sqlite_store.similar_episodes("p1", "u1", unit(2), k=5)
    assert [(e.id, round(s, 4)) for e, s in ranked] == [("e1", 1.0), ("e2", 0.0)]


async def test_similarity_cache_survives_delete_all_elsewhere(
    sqlite_store: SqliteStore, second: SqliteStore
) -> None:
    """After another connection's delete_all and re-insert of the same ids, search is fresh."""
    await add_persona(sqlite_store)
    await sqlite_store.append_episode(draft("e1", embedding=unit(0)))
    await sqlite_store.append_episode(draft("e2", embedding=unit(1)))
    assert len(await sqlite_store.similar_episodes("p1", "u1", unit(0), k=5)) == 2
    await second.delete_all()
    await add_persona(second)
    await second.append_episode(draft("e1", embedding=unit(3)))
    ranked = await sqlite_store.similar_episodes("p1", "u1", unit(3), k=5)
    assert [(e.id, round(s, 4)) for e, s in ranked] == [("e1", 1.0)]


async def test_delete_all_covers_every_data_table(sqlite_store: SqliteStore) -> None:
    """DATA_TABLES names every table but the migration ledger and store_meta."""
    with raw(sqlite_store.path) as conn:
        tables = {
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        }
    assert tables - set(DATA_TABLES) == {"schema_migrations", "store_meta"}
    assert set(DATA_TABLES) <= tables


async def test_closed_store_raises_store_unavailable(tmp_path: Path) -> None:
    """After close (idempotent) every call raises StoreUnavailable."""
    store = await SqliteStore.open(tmp_path / "s.db", embedding_dimensions=DIMS)
    await store.close()
    await store.close()
    with pytest.raises(StoreUnavailable):
        await store.ping()


async def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    """Opening a file that is not SQLite raises a StoreError, not a sqlite3 error."""
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not a database, just some bytes" * 100)
    with pytest.raises(StoreError):
        await SqliteStore.open(path, embedding_dimensions=DIMS)


async def test_lag_reads_stop_at_the_head_of_an_index(sqlite_store: SqliteStore) -> None:
    """Both heads of ``oldest_pending`` are searched through an index kept in the order
    asked for: no temporary sort of the pending episodes or turns, whatever their number."""
    from sonality.storage.sqlite import episodes

    with raw(sqlite_store.path) as conn:
        for sql in (episodes._OLDEST_EPISODE, episodes._OLDEST_TURN):
            plan = " | ".join(row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", ("p1",)))
            assert "USING" in plan and "INDEX" in plan, plan
            assert "TEMP B-TREE" not in plan, plan


async def test_a_write_waiting_for_the_lock_leaves_the_reads_free(
    sqlite_store: SqliteStore,
) -> None:
    """While another process holds the file's write lock, an append waits for it without
    holding the store's worker thread: this store's reads answer meanwhile, and the append
    goes through once the lock is released."""
    await add_persona(sqlite_store)
    with raw(sqlite_store.path) as other:
        other.execute("BEGIN IMMEDIATE")
        appending = asyncio.create_task(sqlite_store.append_episode(draft("e1")))
        await asyncio.sleep(0.2)
        started = asyncio.get_running_loop().time()
        assert [p.id for p in await sqlite_store.list_personas()] == ["p1"]
        assert asyncio.get_running_loop().time() - started < 0.5
        assert not appending.done()
        await asyncio.sleep(1.0)
        other.execute("COMMIT")
    episode, created = await asyncio.wait_for(appending, timeout=5)
    assert created and episode.seq == 1


async def test_a_write_gives_up_on_the_lock_after_the_busy_timeout(tmp_path: Path) -> None:
    """A write lock held past the store's busy timeout fails the write with
    StoreUnavailable (busy), and nothing is written."""
    store = await SqliteStore.open(tmp_path / "s.db", embedding_dimensions=DIMS, busy_timeout=0.3)
    try:
        await store.migrate()
        await add_persona(store)
        with raw(store.path) as other:
            other.execute("BEGIN IMMEDIATE")
            started = asyncio.get_running_loop().time()
            with pytest.raises(StoreUnavailable, match="busy"):
                await store.append_episode(draft("e1"))
            assert asyncio.get_running_loop().time() - started < 3
            other.execute("ROLLBACK")
        assert await store.list_episodes("p1") == []
    finally:
        await store.close()


async def test_similarity_cache_keeps_within_its_budget_and_answers_alike(
    sqlite_store: SqliteStore,
) -> None:
    """With a budget of about one user's rows, searches over six users answer what a
    store with room for all answers, and the cache never holds more than its budget."""
    await add_persona(sqlite_store)
    for u in range(6):
        for i in range(20):
            await sqlite_store.append_episode(
                draft(f"e{u}-{i}", user_id=f"u{u}", embedding=unit((u + i) % DIMS))
            )
    roomy = {u: await sqlite_store.similar_episodes("p1", f"u{u}", unit(u), k=3) for u in range(6)}
    cache = sqlite_store._db.vectors
    one = cache.used // len(cache)  # every user holds the same number of rows
    cache.clear()
    cache.max_bytes = one * 3 // 2
    for _ in range(2):
        for u in range(6):
            found = await sqlite_store.similar_episodes("p1", f"u{u}", unit(u), k=3)
            assert [(e.id, s) for e, s in found] == [(e.id, s) for e, s in roomy[u]]
            assert cache.used <= cache.max_bytes and len(cache) <= 1
    assert cache.evicted >= 5


@pytest.mark.parametrize(
    ("sql", "params", "index"),
    [
        ("_STRONGEST", ["p1", 8], "beliefs_by_strength"),
        ("_UNEMBEDDED", ["p1", 8], "beliefs_unembedded"),
    ],
)
async def test_context_belief_reads_search_their_indexes(
    sqlite_store: SqliteStore, sql: str, params: list[Any], index: str
) -> None:
    """The strongest and the unembedded beliefs are read through their own indexes (a
    SEARCH to a limit), never a pass over every belief of the persona."""
    from sonality.storage.sqlite import context

    with raw(sqlite_store.path) as conn:
        plan = conn.execute("EXPLAIN QUERY PLAN " + getattr(context, sql), params).fetchall()
    details = " ".join(str(row[-1]) for row in plan)
    assert f"SEARCH beliefs USING INDEX {index} (persona_id=?" in details, details
    assert "SCAN" not in details and "TEMP B-TREE" not in details, details


async def test_episode_pages_seek_to_the_cursor(sqlite_store: SqliteStore) -> None:
    """Every listing statement seeks its index to the seq cursor (``seq<?``): a page far
    back costs what the first one does."""
    from sonality.storage.sqlite.episodes import _LIST_EPISODES

    with raw(sqlite_store.path) as conn:
        for (by_user, by_conversation), sql in _LIST_EPISODES.items():
            filters = ["u1"] * by_user + ["c1"] * by_conversation
            plan = conn.execute(
                "EXPLAIN QUERY PLAN " + sql, ["p1", *filters, 5, None, None, 3]
            ).fetchall()
            details = " ".join(str(row[-1]) for row in plan)
            assert "SEARCH episodes USING INDEX" in details and "seq<?" in details, details
            assert "TEMP B-TREE" not in details, details
