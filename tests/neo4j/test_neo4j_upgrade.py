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
from tests.legacy.upgrade import go_on

pytestmark = pytest.mark.neo4j

GRAPH = json.loads((FIXTURES / "neo4j.json").read_text(encoding="utf-8"))


def _recorded_ledger() -> list[tuple[int, str]]:
    """(version, checksum) of the Migration nodes the old runner wrote."""
    nodes = [n["props"] for n in GRAPH["nodes"] if n["labels"] == ["Migration"]]
    return sorted((p["version"], p["checksum"]) for p in nodes)


@pytest.fixture
async def legacy(fresh: Any) -> Any:
    """The dc77eec graph (schema, Migration records, data) loaded into the empty database."""
    await graph.load(fresh.driver, GRAPH)
    return fresh


async def test_legacy_graph_migrates_and_reads_back_unchanged(
    legacy: Any, opened: list[Neo4jStore], neo4j_uri: str, neo4j_auth: Any
) -> None:
    """migrate on the dc77eec graph accepts its recorded checksums, applies only the steps
    shipped since (schema and their ``Migration`` records), and leaves every data node and
    edge as it was; every read returns what the old code read; new writes continue its
    numbering and state."""
    store = await Neo4jStore.open(neo4j_uri, auth=neo4j_auth, embedding_dimensions=DIMS)
    opened.append(store)
    status = await store.schema_status()
    assert [(m.version, m.checksum) for m in status.applied] == _recorded_ledger()
    newer = _shipped_since(_recorded_ledger(), "cypher")
    assert status.pending == tuple(newer)
    assert await graph.export(legacy.driver) == GRAPH
    assert await store.migrate() == newer
    after = await graph.export(legacy.driver)
    assert set(GRAPH["schema"]) <= set(after["schema"])
    assert _data(after) == _data(GRAPH)
    assert await read_everything(store) == recorded_reads("neo4j")
    await go_on(store)


async def test_legacy_graph_takes_a_later_migration(
    legacy: Any,
    opened: list[Neo4jStore],
    neo4j_uri: str,
    neo4j_auth: Any,
    tmp_path: Path,
) -> None:
    """A migration file added after the old layout is applied on top of its records (after
    the steps shipped since),
    and the data reads back the same."""
    folder = tmp_path / "migrations"
    shutil.copytree(resource_dir("migrations") / "neo4j", folder)
    newer = _shipped_since(_recorded_ledger(), "cypher")
    later = f"V{max(int(p.name[1:5]) for p in folder.glob('V*.cypher')) + 1:04d}__later"
    (folder / f"{later}.cypher").write_text(
        "CREATE INDEX episode_importance IF NOT EXISTS FOR (e:Episode) ON (e.importance);\n"
    )
    store = await Neo4jStore.open(
        neo4j_uri, auth=neo4j_auth, embedding_dimensions=DIMS, migrations_dir=folder
    )
    opened.append(store)
    assert (await store.schema_status()).pending == (*newer, later)
    assert await store.migrate() == [*newer, later]
    assert (await store.schema_status()).current
    assert await read_everything(store) == recorded_reads("neo4j")


def _shipped_since(ledger: list[tuple[int, str]], suffix: str) -> list[str]:
    """Names of the shipped migration files newer than the old ledger, in order."""
    folder = resource_dir("migrations") / ("sqlite" if suffix == "sql" else "neo4j")
    newest = max(version for version, _ in ledger)
    files = sorted(folder.glob(f"V*.{suffix}"))
    return [p.name.rsplit(".", 1)[0] for p in files if int(p.name[1:5]) > newest]


def _data(export: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """The data nodes of an export and its edges named by their end nodes (the
    ``Migration`` records left out, so the comparison ignores the steps shipped since)."""
    nodes = export["nodes"]
    named = [repr(n) for n in nodes]
    edges = sorted(
        (named[r["start"]], r["type"], named[r["end"]], repr(r["props"]))
        for r in export["relationships"]
    )
    return [n for n in nodes if "Migration" not in n["labels"]], edges
