"""A Neo4j database as JSON data and back: its constraint and index statements, its nodes
(labels, properties) and relationships. Temporal values are tagged ``{"$datetime": iso}``;
an ``Episode.embedding`` is written back as the float32 vector property it was.

Used to save the graph the dc77eec code built (``build_dc77eec.py``) and to load it into
an empty test database (``tests/neo4j/test_legacy_upgrade.py``).
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any, LiteralString, cast

from neo4j import AsyncDriver
from neo4j.time import DateTime

DATABASE = "neo4j"
_NAME = re.compile(r"^[A-Za-z][A-Za-z_]*$")


def tag(value: Any) -> Any:
    """A Neo4j property value as JSON."""
    if isinstance(value, DateTime):
        return {"$datetime": value.iso_format()}
    if isinstance(value, list):
        return [tag(v) for v in value]
    assert value is None or isinstance(value, bool | int | float | str), type(value)
    return value


def untag(value: Any) -> Any:
    """The Neo4j property value a :func:`tag` result stands for."""
    if isinstance(value, dict):
        return DateTime.from_iso_format(value["$datetime"])
    if isinstance(value, list):
        return [untag(v) for v in value]
    return value


async def _rows(driver: AsyncDriver, query: str, **params: Any) -> list[dict[str, Any]]:
    records, _, _ = await driver.execute_query(
        cast(LiteralString, query), params, database_=DATABASE
    )
    return [r.data() for r in records]


async def export(driver: AsyncDriver) -> dict[str, Any]:
    """The whole database: schema statements, nodes, relationships (stable order)."""
    constraints = await _rows(
        driver, "SHOW CONSTRAINTS YIELD name, createStatement RETURN * ORDER BY name"
    )
    indexes = await _rows(
        driver,
        "SHOW INDEXES YIELD name, type, owningConstraint, createStatement "
        "WHERE type <> 'LOOKUP' AND owningConstraint IS NULL RETURN * ORDER BY name",
    )
    nodes = await _rows(
        driver,
        "MATCH (n) RETURN elementId(n) AS id, labels(n) AS labels, properties(n) AS props",
    )
    rels = await _rows(
        driver,
        "MATCH (a)-[r]->(b) RETURN elementId(a) AS start, type(r) AS type, "
        "properties(r) AS props, elementId(b) AS end",
    )
    tagged = sorted(
        (
            {
                "id": n["id"],
                "labels": sorted(n["labels"]),
                "props": {k: tag(v) for k, v in sorted(n["props"].items())},
            }
            for n in nodes
        ),
        key=lambda n: (n["labels"], repr(n["props"])),
    )
    index = {n.pop("id"): i for i, n in enumerate(tagged)}
    edges = sorted(
        (
            {
                "start": index[r["start"]],
                "type": r["type"],
                "end": index[r["end"]],
                "props": {k: tag(v) for k, v in sorted(r["props"].items())},
            }
            for r in rels
        ),
        key=lambda r: (r["start"], r["type"], r["end"], repr(r["props"])),
    )
    return {
        "schema": [c["createStatement"] for c in constraints]
        + [i["createStatement"] for i in indexes],
        "nodes": tagged,
        "relationships": edges,
    }


async def load(driver: AsyncDriver, graph: dict[str, Any]) -> None:
    """Recreate an :func:`export` in an empty database without schema."""
    for statement in graph["schema"]:
        await _rows(driver, statement)
    await _rows(driver, "CALL db.awaitIndexes(300)")
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    for i, node in enumerate(graph["nodes"]):
        props = {k: untag(v) for k, v in node["props"].items()}
        embedding = props.pop("embedding", None)
        groups[tuple(node["labels"])].append({"i": i, "props": props, "embedding": embedding})
    for labels, rows in groups.items():
        assert all(_NAME.match(label) for label in labels), labels
        await _rows(
            driver,
            f"UNWIND $rows AS row CREATE (n:{':'.join(labels)}) SET n = row.props, "
            "n._legacy = row.i WITH n, row WHERE row.embedding IS NOT NULL "
            "CALL db.create.setNodeVectorProperty(n, 'embedding', row.embedding)",
            rows=rows,
        )
    types: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rel in graph["relationships"]:
        props = {k: untag(v) for k, v in rel["props"].items()}
        types[rel["type"]].append({"start": rel["start"], "end": rel["end"], "props": props})
    for rel_type, rows in types.items():
        assert _NAME.match(rel_type), rel_type
        await _rows(
            driver,
            "UNWIND $rows AS row MATCH (a {_legacy: row.start}) MATCH (b {_legacy: row.end}) "
            f"CREATE (a)-[r:{rel_type}]->(b) SET r = row.props",
            rows=rows,
        )
    await _rows(driver, "MATCH (n) REMOVE n._legacy")
