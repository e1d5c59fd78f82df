"""Data upgrades SQL alone cannot make, run by ``SqliteStore.migrate`` after the migration
files, in one transaction, each a no-op once done (so a run cut short is finished by the
next):

* audit subjects written before they were keyed (``subject_keyed = 0``) are re-keyed:
  ``HMAC(audit key, old SHA-256 subject)``, the form every subject has now;
* active facts without their ``active_key`` get it, and facts of one user that say the
  same are merged into the oldest (``checks.absorb``);
* API keys made before grants named incarnations are bound to the personas' current
  incarnation; a grant of a persona that no longer exists goes (``checks.without_persona``);
* snapshot versions an older Sonality's erasure flagged (``review_from_version``) are
  reverted as an erasure reverts them now (``core.erasure.plan_revert``).
"""

from __future__ import annotations

import sqlite3
from datetime import datetime

from sonality.models import ReflectionPoint, SnapshotVersion, UserFact
from sonality.storage import checks
from sonality.storage.sqlite import codec
from sonality.storage.sqlite.enrichment import FACT_FIELDS
from sonality.storage.sqlite.erasure import audit_key, revert_snapshots
from sonality.storage.sqlite.keys import KEY_FIELDS, key_from

__all__ = ["upgrade"]


def _rekey(conn: sqlite3.Connection) -> int:
    rows = conn.execute(
        "SELECT persona_id, id, subject FROM erasures WHERE subject_keyed = 0"
    ).fetchall()
    if not rows:
        return 0
    from sonality.core.erasure import keyed_subject  # the rules load only when there is work

    key = audit_key(conn)
    conn.executemany(
        "UPDATE erasures SET subject = ?, subject_keyed = 1 WHERE persona_id = ? AND id = ?",
        [(keyed_subject(key, str(r[2])), r[0], r[1]) for r in rows],
    )
    return len(rows)


def _key_facts(conn: sqlite3.Connection) -> int:
    users = conn.execute(
        "SELECT DISTINCT persona_id, user_id FROM user_facts "
        "WHERE retracted = 0 AND active_key IS NULL"
    ).fetchall()
    merged = 0
    for persona_id, user_id in users:
        rows = conn.execute(
            f"SELECT {', '.join(FACT_FIELDS)} FROM user_facts WHERE persona_id = ? "
            "AND user_id = ? AND retracted = 0 ORDER BY created_at, id",
            (persona_id, user_id),
        )
        held: dict[str, UserFact] = {}
        for fact in [UserFact.model_validate(codec.decode(r)) for r in rows]:
            key = checks.active_key(fact)
            assert key is not None
            if key not in held:
                held[key] = fact
                continue
            held[key] = checks.absorb(held[key], fact)
            conn.execute(
                "DELETE FROM user_facts WHERE persona_id = ? AND id = ?", (persona_id, fact.id)
            )
            merged += 1
        conn.executemany(
            "UPDATE user_facts SET active_key = ?, severity = ?, also_from = ? "
            "WHERE persona_id = ? AND id = ?",
            [
                (key, f.severity, codec.encode_value(f.also_from), persona_id, f.id)
                for key, f in held.items()
            ],
        )
    return merged


def _bind_keys(conn: sqlite3.Connection, now: datetime) -> int:
    rows = conn.execute(
        f"SELECT {', '.join(KEY_FIELDS)} FROM api_keys WHERE incarnations IS NULL"
    ).fetchall()
    live = {str(r[0]): str(r[1]) for r in conn.execute("SELECT id, incarnation FROM personas")}
    for key in (key_from(r) for r in rows):
        for persona_id in set(key.persona_ids) - set(live):
            key = checks.without_persona(key, persona_id, now)
        conn.execute(
            "UPDATE api_keys SET persona_ids = ?, incarnations = ?, revoked_at = ? WHERE id = ?",
            (
                codec.encode_value(key.persona_ids),
                codec.encode_value([live.get(p, "") for p in key.persona_ids]),
                None if key.revoked_at is None else codec.encode_time(key.revoked_at),
                key.id,
            ),
        )
    return len(rows)


def _revert_flagged(conn: sqlite3.Connection, now: datetime) -> int:
    flagged = conn.execute(
        "SELECT id, review_from_version FROM personas WHERE review_from_version IS NOT NULL"
    ).fetchall()
    if not flagged:
        return 0
    from sonality.core.erasure import plan_revert, tainted_versions

    for persona_id, review_from in flagged:
        snapshots = [
            SnapshotVersion.model_validate(dict(r))
            for r in conn.execute(
                "SELECT version, reason FROM snapshots WHERE persona_id = ? ORDER BY version",
                (persona_id,),
            )
        ]
        reflections = [
            ReflectionPoint.model_validate(codec.decode(r))
            for r in conn.execute(
                "SELECT id, interaction_count, started_at, snapshot_version FROM reflections "
                "WHERE persona_id = ? AND outcome = 'committed'",
                (persona_id,),
            )
        ]
        tainted = tainted_versions(snapshots, reflections, first=None, review_from=review_from)
        revert = plan_revert(snapshots, tainted, now=now)
        if revert is not None:
            revert_snapshots(conn, persona_id, revert)
        conn.execute("UPDATE personas SET review_from_version = NULL WHERE id = ?", (persona_id,))
    return len(flagged)


def upgrade(conn: sqlite3.Connection, now: datetime) -> dict[str, int]:
    """Run every data upgrade (see the module docstring) inside the caller's transaction;
    what each changed."""
    return {
        "subjects_rekeyed": _rekey(conn),
        "facts_merged": _key_facts(conn),
        "keys_bound": _bind_keys(conn, now),
        "personas_reverted": _revert_flagged(conn, now),
    }
