"""A SQLite file made by the code of dc77eec (schema kept as SQL in Python strings) is taken
over by today's migration files and runner without losing anything."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from sonality.resources import resource_dir
from sonality.storage.sqlite.store import SqliteStore
from tests.legacy.reads import DIMS, FIXTURES, read_everything, recorded_reads
from tests.legacy.upgrade import LEDGER, added_since, go_on


@pytest.fixture
def legacy_file(tmp_path: Path) -> Path:
    """The dc77eec store, restored from its SQL dump into a fresh file."""
    path = tmp_path / "dc77eec.db"
    with closing(sqlite3.connect(path)) as conn:
        conn.executescript((FIXTURES / "sqlite.sql").read_text(encoding="utf-8"))
    return path


async def test_shipped_files_keep_the_checksums_recorded_before() -> None:
    """The .sql files are byte for byte the scripts the old layout checksummed."""
    files = sorted((resource_dir("migrations") / "sqlite").glob("V*.sql"))
    found = [(int(p.name[1:5]), hashlib.sha256(p.read_bytes()).hexdigest()) for p in files]
    assert found[: len(LEDGER["sqlite"])] == LEDGER["sqlite"]


async def test_legacy_file_migrates_and_reads_back_unchanged(
    legacy_file: Path, opened: list[SqliteStore]
) -> None:
    """migrate on the dc77eec file accepts its ledger and applies exactly the steps added
    since; every read returns what the old code read; new writes continue its numbering and
    state."""
    store = await SqliteStore.open(legacy_file, embedding_dimensions=DIMS)
    opened.append(store)
    before = await store.schema_status()
    assert before.pending == added_since("sqlite")
    assert [(m.version, m.checksum) for m in before.applied] == LEDGER["sqlite"]
    assert await store.migrate() == list(added_since("sqlite"))
    assert (await store.schema_status()).current
    assert await read_everything(store) == recorded_reads("sqlite")
    await go_on(store)


async def test_legacy_file_takes_a_later_migration(
    legacy_file: Path, opened: list[SqliteStore], tmp_path: Path
) -> None:
    """A migration file added after the old layout is applied on top of its ledger, alone,
    and the data reads back the same."""
    folder = tmp_path / "migrations"
    shutil.copytree(resource_dir("migrations") / "sqlite", folder)
    later = f"V{max(int(p.name[1:5]) for p in folder.glob('V*.sql')) + 1:04d}__later"
    (folder / f"{later}.sql").write_text(
        "CREATE INDEX episodes_by_importance ON episodes (persona_id, importance);\n"
    )
    store = await SqliteStore.open(legacy_file, embedding_dimensions=DIMS, migrations_dir=folder)
    opened.append(store)
    assert (await store.schema_status()).pending == (*added_since("sqlite"), later)
    assert await store.migrate() == [*added_since("sqlite"), later]
    assert (await store.schema_status()).current
    assert await read_everything(store) == recorded_reads("sqlite")
