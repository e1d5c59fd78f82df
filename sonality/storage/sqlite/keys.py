"""API keys on SQLite: table ``api_keys`` (the public id, the SHA-256 of the secret, the
scope, the personas and their incarnations as JSON lists). A key is stored only while
every persona it names exists in the incarnation it names (checked in the same
transaction); deleting a persona takes it from the keys (``erasure._ungrant``)."""

from __future__ import annotations

import sqlite3
from datetime import datetime

from sonality.errors import AlreadyExists, NotFoundError
from sonality.models import ApiKey
from sonality.storage import checks
from sonality.storage.sqlite import codec
from sonality.storage.sqlite.executor import SqliteAggregate, insert_statement

__all__ = ["KEY_FIELDS", "SqliteKeys", "key_from"]

KEY_FIELDS = (
    "id",
    "secret_hash",
    "scope",
    "persona_ids",
    "name",
    "created_at",
    "revoked_at",
    "incarnations",
)
_KEYS = f"SELECT {', '.join(KEY_FIELDS)} FROM api_keys"
_INSERT = insert_statement("api_keys", KEY_FIELDS)


def key_from(row: sqlite3.Row) -> ApiKey:
    """A stored key (``incarnations`` is null only before ``migrate`` bound the grants)."""
    fields = codec.decode(row)
    if fields.get("incarnations") is None:
        fields.pop("incarnations", None)
    return ApiKey.model_validate(fields)


def _get(conn: sqlite3.Connection, key_id: str) -> ApiKey:
    row = conn.execute(f"{_KEYS} WHERE id = ?", (key_id,)).fetchone()
    if row is None:
        raise NotFoundError("no such API key", key_id=key_id)
    return key_from(row)


def _create(conn: sqlite3.Connection, key: ApiKey) -> ApiKey:
    if conn.execute("SELECT 1 FROM api_keys WHERE id = ?", (key.id,)).fetchone():
        raise AlreadyExists("API key exists already", key_id=key.id)
    live = {
        str(r[0]): str(r[1])
        for pid in key.persona_ids
        for r in conn.execute("SELECT id, incarnation FROM personas WHERE id = ?", (pid,))
    }
    key = checks.grants_live(key, live)
    conn.execute(_INSERT, codec.encode(key))
    return _get(conn, key.id)


def _list(conn: sqlite3.Connection) -> list[ApiKey]:
    rows = conn.execute(f"{_KEYS} ORDER BY created_at, id")
    return [key_from(row) for row in rows]


def _revoke(conn: sqlite3.Connection, key_id: str, at: datetime) -> ApiKey:
    _get(conn, key_id)
    conn.execute(
        "UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?",
        (codec.encode_time(at), key_id),
    )
    return _get(conn, key_id)


class SqliteKeys(SqliteAggregate):
    """The ``KeyStore`` part of the SQLite store."""

    async def create_key(self, key: ApiKey) -> ApiKey:
        """Store a new key (``AlreadyExists`` if its id is taken; ``PersonaNotFound`` if a
        persona it names is gone or is another incarnation)."""
        return await self._db.write(_create, key)

    async def get_key(self, key_id: str) -> ApiKey:
        """``NotFoundError`` when unknown."""
        return await self._db.read(_get, key_id)

    async def list_keys(self) -> list[ApiKey]:
        """Every key, revoked ones too, by creation time."""
        return await self._db.read(_list)

    async def revoke_key(self, key_id: str, at: datetime) -> ApiKey:
        """Mark the key revoked (the first revocation time stays)."""
        return await self._db.write(_revoke, key_id, at)
