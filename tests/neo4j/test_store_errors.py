"""Neo4jStore's error boundary: driver exceptions become Sonality errors that name the
operation and status code but never the query's parameters. Needs no server."""

from __future__ import annotations

import socket

import pytest
from neo4j.exceptions import (
    AuthError,
    ClientError,
    ConnectionAcquisitionTimeoutError,
    ConstraintError,
    CypherSyntaxError,
    DatabaseError,
    Neo4jError,
    ServiceUnavailable,
    SessionExpired,
    TransientError,
)

from sonality.errors import (
    AlreadyExists,
    ConfigError,
    ConflictError,
    StoreError,
    StoreUnavailable,
)
from sonality.storage.neo4j.executor import translate_errors
from sonality.storage.neo4j.store import Neo4jStore

SECRET = "user said: my password is hunter2"


def server_error(code: str) -> Neo4jError:
    """The driver's error for a status code, as it builds one from a server failure."""
    return Neo4jError._hydrate_neo4j(code=code, message=SECRET)


@pytest.mark.parametrize(
    ("raised", "expected"),
    [
        (ServiceUnavailable(SECRET), StoreUnavailable),
        (SessionExpired(SECRET), StoreUnavailable),
        (AuthError(SECRET), StoreUnavailable),
        (ConstraintError(SECRET), ConflictError),
        (server_error("Neo.TransientError.Transaction.DeadlockDetected"), ConflictError),
        (server_error("Neo.TransientError.General.DatabaseUnavailable"), StoreUnavailable),
        (TransientError(SECRET), StoreUnavailable),
        (ConnectionAcquisitionTimeoutError(SECRET), StoreUnavailable),
        (CypherSyntaxError(SECRET), StoreError),
        (ClientError(SECRET), StoreError),
        (DatabaseError(SECRET), StoreError),
    ],
    ids=lambda v: (
        (getattr(v, "code", None) or type(v).__name__) if isinstance(v, Exception) else v.__name__
    ),
)
async def test_driver_errors_are_translated(raised: Exception, expected: type) -> None:
    """Each driver error maps to its Sonality error, which names the operation and does not
    repeat the server's message (it may quote stored values): a contended transaction is a
    conflict, a database starting or stopping is unavailable."""
    with pytest.raises(expected) as caught:
        async with translate_errors("list_things"):
            raise raised
    assert caught.value.context["operation"] == "list_things"
    assert "hunter2" not in str(caught.value)
    assert caught.value.__cause__ is raised


async def test_constraint_violation_can_name_the_taken_id() -> None:
    """A caller can turn a uniqueness violation into AlreadyExists naming the id."""
    with pytest.raises(AlreadyExists, match="p1"):
        async with translate_errors(
            "create", on_constraint=lambda: AlreadyExists("taken", persona_id="p1")
        ):
            raise ConstraintError(SECRET)


async def test_sonality_errors_pass_through() -> None:
    """Errors raised on purpose inside a unit of work are not rewrapped."""
    error = ConflictError("moved on", persona_id="p1")
    with pytest.raises(ConflictError) as caught:
        async with translate_errors("commit"):
            raise error
    assert caught.value is error


async def test_open_on_a_closed_port_raises_store_unavailable() -> None:
    """Opening a store where nothing listens raises StoreUnavailable, not a driver error."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(StoreUnavailable):
        await Neo4jStore.open(f"bolt://127.0.0.1:{port}", embedding_dimensions=8)


@pytest.mark.parametrize(
    ("uri", "dims"),
    [("http://127.0.0.1:7687", 8), ("bolt://127.0.0.1:7687", 0), ("bolt://127.0.0.1:7687", 5000)],
)
async def test_bad_settings_raise_config_error(uri: str, dims: int) -> None:
    """An unusable URI or an impossible embedding dimension raises ConfigError."""
    with pytest.raises(ConfigError):
        await Neo4jStore.open(uri, embedding_dimensions=dims)
