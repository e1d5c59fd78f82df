"""Minting API keys (the HTTP server's): the token is shown once, only its hash stored."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sonality.errors import ValidationError
from sonality.mind.inputs import check_id, check_text
from sonality.models import ApiKey, KeyScope, hash_secret, mint
from sonality.observability import get_logger
from sonality.ports import Store

__all__ = ["create_key"]

log = get_logger("sonality")


async def create_key(
    store: Store,
    now: datetime,
    *,
    scope: KeyScope | str,
    persona_ids: Sequence[str],
    name: str,
    max_name_chars: int,
) -> tuple[ApiKey, str]:
    """Store a new key and return it with its token. A read or write key names its
    personas, which must exist (a metrics key names none); each grant is bound to the
    persona's incarnation, so a persona made again under the same id is not opened by
    it."""
    try:
        level = KeyScope(scope)
    except ValueError:
        raise ValidationError(
            "scope must be read, write, admin or metrics", field="scope"
        ) from None
    ids = tuple(dict.fromkeys(check_id(p, "persona_id") for p in persona_ids))
    check_text(name, field="name", limit=max_name_chars, allow_empty=True)
    personas = [await store.get_persona(persona_id) for persona_id in ids]
    key_id, secret, token = mint()
    key = ApiKey(
        id=key_id,
        secret_hash=hash_secret(secret),
        scope=level,
        persona_ids=ids,
        incarnations=tuple(p.incarnation for p in personas),
        name=name,
        created_at=now,
    )
    created = await store.create_key(key)
    log.info("api_key_created", key_id=key_id, scope=level.value, personas=len(ids))
    return created, token
