"""Data upgrades Cypher alone cannot make, run by ``Neo4jStore.migrate`` after the
migration files, in one transaction, each a no-op once done (so a run cut short is
finished by the next):

* audit subjects written before they were keyed (no ``subject_keyed``) are re-keyed:
  ``HMAC(audit key, old SHA-256 subject)``, the form every subject has now;
* active facts without their ``active_key`` get it, and facts of one user that say the
  same are merged into the oldest (``checks.absorb``);
* API keys made before grants named incarnations are bound to the personas' current
  incarnation; a grant of a persona that no longer exists goes (``checks.without_persona``);
* snapshot versions an older Sonality's erasure flagged (``review_from_version``) are
  reverted as an erasure reverts them now (``core.erasure.plan_revert``).
"""

from __future__ import annotations

from datetime import datetime

from neo4j import AsyncManagedTransaction

from sonality.models import ReflectionPoint, UserFact
from sonality.storage import checks
from sonality.storage.neo4j import codec
from sonality.storage.neo4j.cypher import Query
from sonality.storage.neo4j.erasure import (
    audit_key,
    fact_from,
    revert_snapshots,
    snapshot_versions,
)
from sonality.storage.neo4j.executor import fetch
from sonality.storage.neo4j.keys import key_from

__all__ = ["upgrade"]


async def _rekey(tx: AsyncManagedTransaction) -> int:
    rows = await fetch(tx, Query.UPGRADE_UNKEYED_SUBJECTS)
    if not rows:
        return 0
    from sonality.core.erasure import keyed_subject  # the rules load only when there is work

    key = await audit_key(tx)
    keyed = [{**r, "subject": keyed_subject(key, str(r["subject"]))} for r in rows]
    await fetch(tx, Query.UPGRADE_REKEY_SUBJECTS, rows=keyed)
    return len(rows)


async def _key_facts(tx: AsyncManagedTransaction) -> int:
    merged = 0
    for user in await fetch(tx, Query.UPGRADE_UNKEYED_FACT_USERS):
        pid = str(user["persona_id"])
        rows = await fetch(tx, Query.FACT_LIST, persona_id=pid, user_id=user["user_id"])
        held: dict[str, UserFact] = {}
        gone: list[str] = []
        for fact in (fact_from(r["fact"]) for r in rows):
            key = checks.active_key(fact)
            assert key is not None
            if key in held:
                held[key] = checks.absorb(held[key], fact)
                gone.append(fact.id)
            else:
                held[key] = fact
        keyed = [
            {"id": f.id, "active_key": k, "severity": f.severity, "also_from": list(f.also_from)}
            for k, f in held.items()
        ]
        await fetch(tx, Query.UPGRADE_KEY_FACTS, persona_id=pid, merged=gone, rows=keyed)
        merged += len(gone)
    return merged


async def _bind_keys(tx: AsyncManagedTransaction, now: datetime) -> int:
    keys = [key_from(r["key"]) for r in await fetch(tx, Query.UPGRADE_UNBOUND_KEYS)]
    if not keys:
        return 0
    live = {
        str(r["id"]): str(r["incarnation"] or "")
        for r in await fetch(tx, Query.UPGRADE_INCARNATIONS)
    }
    rows = []
    for key in keys:
        for persona_id in set(key.persona_ids) - set(live):
            key = checks.without_persona(key, persona_id, now)
        rows.append(
            {
                "id": key.id,
                "persona_ids": list(key.persona_ids),
                "incarnations": [live.get(p, "") for p in key.persona_ids],
                "revoked_at": None if key.revoked_at is None else codec.time_in(key.revoked_at),
            }
        )
    await fetch(tx, Query.KEY_UNGRANT, rows=rows)
    return len(rows)


async def _revert_flagged(tx: AsyncManagedTransaction, now: datetime) -> int:
    flagged = await fetch(tx, Query.UPGRADE_FLAGGED_PERSONAS)
    if not flagged:
        return 0
    from sonality.core.erasure import plan_revert, tainted_versions

    for row in flagged:
        pid, review_from = str(row["id"]), int(row["review_from_version"])
        snapshots = await snapshot_versions(tx, pid)
        reflections = [
            ReflectionPoint.model_validate(codec.decode(r["reflection"], ReflectionPoint))
            for r in await fetch(tx, Query.ERASURE_REFLECTIONS, persona_id=pid)
        ]
        tainted = tainted_versions(snapshots, reflections, first=None, review_from=review_from)
        revert = plan_revert(snapshots, tainted, now=now)
        if revert is not None:
            await revert_snapshots(tx, pid, revert)
        await fetch(tx, Query.ERASURE_CLEAR_REVIEW, persona_id=pid, **{"from": review_from})
    return len(flagged)


async def upgrade(tx: AsyncManagedTransaction, now: datetime) -> dict[str, int]:
    """Run every data upgrade (see the module docstring) in the caller's transaction; what
    each changed."""
    return {
        "subjects_rekeyed": await _rekey(tx),
        "facts_merged": await _key_facts(tx),
        "keys_bound": await _bind_keys(tx, now),
        "personas_reverted": await _revert_flagged(tx, now),
    }
