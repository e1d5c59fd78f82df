"""API keys on Neo4j: ``(:ApiKey {id, secret_hash, scope, persona_ids, incarnations, name,
created_at, revoked_at})``, outside every persona's graph (a key may name several
personas). A key is stored only while every persona it names exists in the incarnation it
names (checked in the same transaction); deleting a persona takes it from the keys
(``erasure._ungrant``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from neo4j import AsyncManagedTransaction
from neo4j.exceptions import ConstraintError

from sonality.errors import AlreadyExists, ConflictError, NotFoundError
from sonality.models import ApiKey
from sonality.storage import checks
from sonality.storage.neo4j import codec
from sonality.storage.neo4j.cypher import Query
from sonality.storage.neo4j.executor import Neo4jAggregate, fetch, fetch_one

__all__ = ["Neo4jKeys", "key_from"]


def key_from(props: Any) -> ApiKey:
    return ApiKey.model_validate(codec.decode(props, ApiKey))


async def _create(tx: AsyncManagedTransaction, key: ApiKey) -> ApiKey:
    rows = await fetch(tx, Query.KEY_LIVE, opt={"persona_ids": list(key.persona_ids)})
    key = checks.grants_live(key, {str(r["id"]): str(r["incarnation"] or "") for r in rows})
    row = await fetch_one(tx, Query.KEY_CREATE, key=codec.encode(key, drop_none=True))
    assert row is not None  # CREATE always returns its node
    return key_from(row["key"])


async def _revoke(tx: AsyncManagedTransaction, key_id: str, at: datetime) -> ApiKey:
    row = await fetch_one(tx, Query.KEY_REVOKE, key_id=key_id, at=codec.time_in(at))
    if row is None:
        raise NotFoundError("no such API key", key_id=key_id)
    return key_from(row["key"])


class Neo4jKeys(Neo4jAggregate):
    """The ``KeyStore`` part of the Neo4j store."""

    async def create_key(self, key: ApiKey) -> ApiKey:
        """Store a new key (``AlreadyExists`` if its id is taken; ``PersonaNotFound`` if a
        persona it names is gone or is another incarnation)."""
        try:
            return await self._db.write("create_key", _create, key)
        except ConflictError as exc:
            if isinstance(exc.__cause__, ConstraintError):
                raise AlreadyExists("API key exists already", key_id=key.id) from exc
            raise

    async def get_key(self, key_id: str) -> ApiKey:
        """``NotFoundError`` when unknown."""
        rows = await self._db.fetch("get_key", Query.KEY_GET, key_id=key_id)
        if not rows:
            raise NotFoundError("no such API key", key_id=key_id)
        return key_from(rows[0]["key"])

    async def list_keys(self) -> list[ApiKey]:
        """Every key, revoked ones too, by creation time."""
        rows = await self._db.fetch("list_keys", Query.KEY_LIST)
        return [key_from(r["key"]) for r in rows]

    async def revoke_key(self, key_id: str, at: datetime) -> ApiKey:
        """Mark the key revoked (the first revocation time stays)."""
        return await self._db.write("revoke_key", _revoke, key_id, at)
