"""CLI tests configure logging like a real entry point; put the defaults back afterwards.
``either_env`` runs a test on each backend with the ``env`` fixture of its module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import structlog


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    yield
    structlog.reset_defaults()


@pytest.fixture(params=["sqlite", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def either_env(request: pytest.FixtureRequest, env: dict[str, str]) -> dict[str, str]:
    """``env`` on each backend: the SQLite file, or the emptied Neo4j server."""
    if request.param == "sqlite":
        return env
    request.getfixturevalue("neo4j_store")  # empties the database
    neo = {**env, "SONALITY_STORE": request.getfixturevalue("neo4j_uri")}
    auth = request.getfixturevalue("neo4j_auth")
    if auth:
        neo["SONALITY_NEO4J_USER"], neo["SONALITY_NEO4J_PASSWORD"] = auth
    return neo
