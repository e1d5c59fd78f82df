"""What an erasure removes leaves the SQLite file too: ``secure_delete`` zeroes the freed
content and the WAL is checkpointed and truncated before ``forget_user`` returns, so a scan
of the file (and its ``-wal``) finds none of the forgotten user's words."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from sonality.llm.embedders import HashEmbedder
from sonality.service import Sonality
from sonality.testing import FrozenClock
from tests.conftest import EMBEDDING_DIMENSIONS
from tests.erasure.conftest import IDENTITY
from tests.erasure.scripted import Script, message, scripted, token

SECRET = "Quokkaberry allergy"
"""A fact only u1 told (with ``[u1:`` it is all the text of u1 the scan looks for)."""


def _scan(path: Path) -> bytes:
    """The bytes of the database file and of its write-ahead log (if any), lower-cased."""
    found = path.read_bytes()
    wal = path.with_name(path.name + "-wal")
    if wal.exists():
        found += wal.read_bytes()
    return found.lower()


async def test_a_scan_of_the_file_after_forget_finds_none_of_the_users_text(
    sqlite_store: Any, t0: Any
) -> None:
    """u1's messages, facts, insights, Thinker monologue and narratives, and a snapshot
    that quotes u1, are all on disk before; after forget_user neither the file nor the WAL
    holds ``[u1:`` or the fact, while u2's text is still there."""
    clock = FrozenClock(t0)
    app = Sonality(
        store=sqlite_store,
        llm=scripted(Script()),
        embedder=HashEmbedder(EMBEDDING_DIMENSIONS),
        clock=clock,
        count_tokens=lambda text: max(1, len(text) // 4),
    )
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    for n in range(1, 13):
        clock.advance(minutes=1)
        user = "u1" if n % 2 else "u2"
        fact = f"{SECRET} number {n}" if user == "u1" else None
        said = message(user, n, "tea", "supports", fact)
        if n % 3:
            await app.record(
                "ada",
                user_id=user,
                conversation_id=f"{user}-c",
                message=said,
                response="Noted.",
            )
        else:
            await app.respond("ada", user_id=user, conversation_id=f"{user}-r", message=said)
            await app.drain("ada")
    await app.enrich_pending("ada")
    await app.reflect("ada", force=True)
    assert token("u1") in (await app.snapshot("ada")).text
    before = _scan(sqlite_store.path)
    assert token("u1").encode() in before and SECRET.lower().encode() in before

    await app.forget_user("ada", user_id="u1")

    after = _scan(sqlite_store.path)
    assert token("u1").encode() not in after
    assert SECRET.lower().encode() not in after
    assert token("u2").encode() in after
    with sqlite3.connect(sqlite_store.path) as conn:  # the file is a sound database
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    setting = await sqlite_store._db.read(
        lambda conn: conn.execute("PRAGMA secure_delete").fetchone()[0]
    )
    assert setting == 1
