"""A Neo4j database made by the code of dc77eec (migrations at the top of ``migrations/``,
the store split into ``neo4j_*`` modules) is taken over by today's runner and store
without losing anything."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from sonality.resources import resource_dir
from sonality.storage.neo4j.store import Neo4jStore
from tests.legacy import graph
from tests.legacy.reads import DIMS, FIXTURES, read_everything, recorded_reads
from tests.legacy.upgrade import added_since, go_on

pytestmark = pytest.mark.neo4j

GRAPH = json.loads((FIXTURES / "neo4j.json").read_text(encoding="utf-8"))


def _recorded_ledger() -> list[tuple[int, str]]:
    """(version, checksum) of the Migration nodes the old runner wrote."""
    nodes = [n["props"] for n in GRAPH["nodes"] if n["labels"] == ["Migration"]]
    return sorted((p["version"], p["checksum"]) for p in nodes)


def _assert_kept(now: dict[str, Any]) -> None:
    """Every schema statement, node (labels and properties) and edge of the dc77eec graph is
    still there; later migrations may only add (indexes, Migration records, backfilled
    properties) — except the episode vector index, which V0037 drops (on 5.26 it exists only
    with ``SONALITY_NEO4J_VECTOR_INDEX=on``); V0270's belief topic index is new."""
    dropped = {
        s for s in GRAPH["schema"] if s.startswith("CREATE VECTOR INDEX `episode_embedding`")
    }
    assert len(dropped) == 1
    assert set(GRAPH["schema"]) - dropped <= set(now["schema"])
    assert not any(s.startswith("CREATE VECTOR INDEX `episode_") for s in now["schema"])
    unmatched = list(now["nodes"])
    for node in GRAPH["nodes"]:
        match = next(
            n
            for n in unmatched
            if n["labels"] == node["labels"] and node["props"].items() <= n["props"].items()
        )
        unmatched.remove(match)
    assert all(n["labels"] == ["Migration"] for n in unmatched)

    def edges(g: dict[str, Any]) -> list[tuple[str, str]]:
        return sorted((r["type"], repr(r["props"])) for r in g["relationships"])

    assert edges(now) == edges(GRAPH)


@pytest.fixture
async def legacy(fresh: Any) -> Any:
    """The dc77eec graph (schema, Migration records, data) loaded into the empty database."""
    await graph.load(fresh.driver, GRAPH)
    return fresh


@pytest.mark.slow
async def test_legacy_graph_migrates_and_reads_back_unchanged(
    legacy: Any, opened: list[Neo4jStore], neo4j_uri: str, neo4j_auth: Any
) -> None:
    """migrate on the dc77eec graph accepts its recorded checksums, applies exactly the
    steps added since and keeps every index (but the vector index V0037 drops, the setting
    being off), node, edge and property it had; with SONALITY_NEO4J_VECTOR_INDEX on,
    migrate makes exactly the index it had again; every read returns what the old code
    read, either way; new writes continue its numbering and state."""
    store = await Neo4jStore.open(neo4j_uri, auth=neo4j_auth, embedding_dimensions=DIMS)
    opened.append(store)
    status = await store.schema_status()
    assert status.pending == added_since("neo4j")
    assert [(m.version, m.checksum) for m in status.applied] == _recorded_ledger()
    assert await store.migrate() == list(added_since("neo4j"))
    assert (await store.schema_status()).current
    _assert_kept(await graph.export(legacy.driver))
    assert await read_everything(store) == recorded_reads("neo4j")

    on = await Neo4jStore.open(
        neo4j_uri, auth=neo4j_auth, embedding_dimensions=DIMS, vector_index=True
    )
    opened.append(on)
    assert await on.migrate() == []
    assert set(GRAPH["schema"]) <= set((await graph.export(legacy.driver))["schema"])
    assert await read_everything(on) == recorded_reads("neo4j")
    await go_on(store)


async def test_legacy_graph_takes_a_later_migration(
    legacy: Any,
    opened: list[Neo4jStore],
    neo4j_uri: str,
    neo4j_auth: Any,
    tmp_path: Path,
) -> None:
    """A migration file added after the old layout is applied on top of its records, alone,
    and the data reads back the same."""
    folder = tmp_path / "migrations"
    shutil.copytree(resource_dir("migrations") / "neo4j", folder)
    later = f"V{max(int(p.name[1:5]) for p in folder.glob('V*.cypher')) + 1:04d}__later"
    (folder / f"{later}.cypher").write_text(
        "CREATE INDEX episode_importance IF NOT EXISTS FOR (e:Episode) ON (e.importance);\n"
    )
    store = await Neo4jStore.open(
        neo4j_uri, auth=neo4j_auth, embedding_dimensions=DIMS, migrations_dir=folder
    )
    opened.append(store)
    assert (await store.schema_status()).pending == (*added_since("neo4j"), later)
    assert await store.migrate() == [*added_since("neo4j"), later]
    assert (await store.schema_status()).current
    assert await read_everything(store) == recorded_reads("neo4j")
