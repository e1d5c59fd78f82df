"""API keys on SQLite: table ``api_keys`` (the public id, the SHA-256 of the secret, the
scope and the personas as a JSON list)."""

from __future__ import annotations

import sqlite3
from datetime import datetime

from sonality.errors import AlreadyExists, NotFoundError
from sonality.models import ApiKey
from sonality.storage.sqlite import codec
from sonality.storage.sqlite.executor import SqliteAggregate, insert_statement

__all__ = ["SqliteKeys"]

_FIELDS = ("id", "secret_hash", "scope", "persona_ids", "name", "created_at", "revoked_at")
_KEYS = f"SELECT {', '.join(_FIELDS)} FROM api_keys"
_INSERT = insert_statement("api_keys", _FIELDS)


def _get(conn: sqlite3.Connection, key_id: str) -> ApiKey:
    row = conn.execute(f"{_KEYS} WHERE id = ?", (key_id,)).fetchone()
    if row is None:
        raise NotFoundError("no such API key", key_id=key_id)
    return ApiKey.model_validate(codec.decode(row))


def _create(conn: sqlite3.Connection, key: ApiKey) -> ApiKey:
    if conn.execute("SELECT 1 FROM api_keys WHERE id = ?", (key.id,)).fetchone():
        raise AlreadyExists("API key exists already", key_id=key.id)
    conn.execute(_INSERT, codec.encode(key))
    return _get(conn, key.id)


def _list(conn: sqlite3.Connection) -> list[ApiKey]:
    rows = conn.execute(f"{_KEYS} ORDER BY created_at, id")
    return [ApiKey.model_validate(codec.decode(row)) for row in rows]


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
        """Store a new key (``AlreadyExists`` if its id is taken)."""
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
