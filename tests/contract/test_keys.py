"""The ``KeyStore`` contract on both real stores: keys are stored by id with the hash
only, listed, revoked once (the first time stays), and unknown ids are ``NotFoundError``;
a key grants persona incarnations that exist, and deleting a persona takes exactly its
grants away."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from sonality.errors import AlreadyExists, NotFoundError, PersonaNotFound
from sonality.models import ApiKey, Erasure, ErasureKind, KeyScope, hash_secret
from tests.contract.factories import add_persona

BOUND = ("i-ada", "i-bea")
"""The incarnations of the personas the keys name."""


@pytest.fixture(autouse=True)
async def personas(store: Any) -> None:
    """The personas the keys of these tests name."""
    await add_persona(store, "ada", incarnation="i-ada")
    await add_persona(store, "bea", incarnation="i-bea")


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
    assert first == _key("k1", t0, incarnations=BOUND)
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


async def test_a_key_grants_only_personas_that_exist_as_named(store: Any, t0: datetime) -> None:
    """A key naming an unknown persona, or a persona in another incarnation than the one
    it names (deleted and made again since), is refused with ``PersonaNotFound``."""
    with pytest.raises(PersonaNotFound):
        await store.create_key(_key("k1", t0, persona_ids=("ada", "nobody")))
    with pytest.raises(PersonaNotFound):
        await store.create_key(_key("k2", t0, incarnations=("i-ada", "i-old")))
    assert await store.list_keys() == []


async def test_deleting_a_persona_takes_exactly_its_grants(store: Any, t0: datetime) -> None:
    """After a persona is deleted: a key that named it and another keeps the other; a key
    that named only it is revoked (its list kept, so it never reads as a global key); a
    global admin key and keys of other personas are untouched."""
    both = await store.create_key(_key("both", t0))
    only = await store.create_key(_key("only", t0, persona_ids=("ada",)))
    other = await store.create_key(_key("other", t0, persona_ids=("bea",)))
    admin = await store.create_key(_key("admin", t0, scope=KeyScope.ADMIN, persona_ids=()))
    later = t0 + timedelta(minutes=5)
    record = Erasure(
        id="era_1", persona_id="ada", kind=ErasureKind.PERSONA, subject="x", created_at=later
    )
    await store.delete_persona("ada", record)

    kept = await store.get_key("both")
    assert (kept.persona_ids, kept.incarnations, kept.revoked_at) == (("bea",), ("i-bea",), None)
    gone = await store.get_key("only")
    assert gone.revoked_at == later and gone.persona_ids == only.persona_ids
    assert await store.get_key("other") == other
    assert await store.get_key("admin") == admin
    assert both.persona_ids == ("ada", "bea")
