"""The ``KeyStore`` contract on both real stores: keys are stored by id with the hash
only, listed, revoked once (the first time stays), and unknown ids are ``NotFoundError``."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from sonality.core.keys import hash_secret
from sonality.errors import AlreadyExists, NotFoundError
from sonality.models import ApiKey, KeyScope


def _key(key_id: str, t0: datetime, **fields: Any) -> ApiKey:
    base: dict[str, Any] = {
        "id": key_id,
        "secret_hash": hash_secret(key_id * 2),
        "scope": KeyScope.READ,
        "persona_ids": ("ada", "bea"),
        "name": "reader",
        "created_at": t0,
    }
    return ApiKey(**(base | fields))


async def test_keys_round_trip(store: Any, t0: datetime) -> None:
    """A created key reads back equal, by id and in the list (by creation time)."""
    first = await store.create_key(_key("k1", t0))
    second = await store.create_key(
        _key("k0", t0 + timedelta(seconds=1), scope=KeyScope.ADMIN, persona_ids=())
    )
    assert first == _key("k1", t0)
    assert await store.get_key("k0") == second
    assert [k.id for k in await store.list_keys()] == ["k1", "k0"]


async def test_a_taken_key_id_is_refused(store: Any, t0: datetime) -> None:
    """Creating a key whose id exists raises ``AlreadyExists`` and keeps the first."""
    await store.create_key(_key("k1", t0))
    with pytest.raises(AlreadyExists):
        await store.create_key(_key("k1", t0, name="other"))
    assert (await store.get_key("k1")).name == "reader"


async def test_revocation_keeps_the_first_time(store: Any, t0: datetime) -> None:
    """Revoking sets ``revoked_at``; revoking again keeps the first time."""
    await store.create_key(_key("k1", t0))
    once = await store.revoke_key("k1", t0 + timedelta(hours=1))
    twice = await store.revoke_key("k1", t0 + timedelta(hours=2))
    assert once.revoked_at == twice.revoked_at == t0 + timedelta(hours=1)
    assert (await store.get_key("k1")).revoked_at == t0 + timedelta(hours=1)


async def test_unknown_keys_are_not_found(store: Any, t0: datetime) -> None:
    """Reading or revoking an unknown key raises ``NotFoundError`` and creates nothing."""
    with pytest.raises(NotFoundError):
        await store.get_key("nope")
    with pytest.raises(NotFoundError):
        await store.revoke_key("nope", t0)
    assert await store.list_keys() == []
