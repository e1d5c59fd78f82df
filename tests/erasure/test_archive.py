"""Export, import and copy: a persona moves between the two backends without losing or
changing anything, and importing again changes nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sonality.errors import ConflictError, PersonaNotFound, ValidationError
from sonality.llm.embedders import HashEmbedder
from sonality.mind.archive import copy_personas
from sonality.models import ImportStatus, SelfModel
from sonality.service import Sonality
from sonality.storage.archive import TYPES
from sonality.testing import FrozenClock
from tests.conftest import EMBEDDING_DIMENSIONS
from tests.runtime import script
from tests.runtime.conftest import IDENTITY


def _app(store: Any, clock: FrozenClock, llm: Any = None) -> Sonality:
    return Sonality(
        store=store,
        llm=llm,
        embedder=HashEmbedder(EMBEDDING_DIMENSIONS),
        clock=clock,
        count_tokens=lambda text: max(1, len(text) // 4),
    )


async def _lived(app: Sonality, clock: FrozenClock) -> None:
    """A persona with every kind of record: answered turns of two users (Thinker turns,
    monologue, narratives, affect, usage, beliefs, evidence, facts, insights), a second
    snapshot, a corrected fact, an erased exchange, a self-model and a biography."""
    self_model = SelfModel(traits=("dry humour",), values=("honesty",), goals=("learn Welsh",))
    await app.create_persona(
        "ada",
        name="Ada",
        core_identity=IDENTITY,
        self_model=self_model,
        biography=["I grew up by the sea.", "My first job was in a bakery."],
    )
    for i in range(1, 7):
        clock.advance(minutes=1)
        user, conversation = ("u1", "c1") if i % 3 else ("u2", "c2")
        await app.respond(
            "ada", user_id=user, conversation_id=conversation, message=script.message(i)
        )
        await app.drain("ada")
    await app.set_affect("ada", user_id="u2", relationship="colleague", hard_goals=["be kind"])
    await app.rollback_snapshot("ada", 1)
    episodes = await app.episodes("ada", user_id="u1")
    await app.delete_episode("ada", episode_id=episodes[-1].id)


@pytest.mark.neo4j
async def test_export_import_into_the_other_backend_exports_the_same_bytes(
    sqlite_store: Any, neo4j_store: Any, t0: Any
) -> None:
    """export (SQLite) → import (Neo4j) → export (Neo4j) is byte for byte the first
    export, and back again; every record type of the format is exercised."""
    clock = FrozenClock(t0)
    source = _app(sqlite_store, clock, script.scripted())
    await _lived(source, clock)
    first = await source.export("ada")
    kinds = {json.loads(line).get("type") for line in first.splitlines()}
    missing = set(TYPES) - kinds - {"staged", "reflection"}
    assert not missing, f"the scenario lacks {missing}"

    target = _app(neo4j_store, clock)
    [result] = await target.import_(first)
    assert result.status is ImportStatus.IMPORTED
    assert await target.export("ada") == first
    assert (await target.persona("ada")).self_model.goals == ("learn Welsh",)
    assert [b.model_dump() for b in await target.beliefs("ada")] == [
        b.model_dump() for b in await source.beliefs("ada")
    ]

    await source.delete_persona("ada")
    with pytest.raises(PersonaNotFound):
        await source.persona("ada")
    back = await target.export("ada")
    [again] = await source.import_(back)
    assert again.status is ImportStatus.IMPORTED
    exported = (await source.export("ada")).splitlines()
    # the deletion's audit record stayed in the SQLite store, and now joins the persona's
    extra = [line for line in exported if line not in first.splitlines()]
    assert [json.loads(line)["data"]["kind"] for line in extra] == ["persona"]
    assert [line for line in exported if line not in extra] == first.splitlines()


async def test_importing_twice_stores_nothing_twice_and_other_data_is_refused(
    store: Any, t0: Any
) -> None:
    """A second import of the same file reports `unchanged` and leaves the export as it
    was; an archive that differs from the held persona is a conflict that writes nothing."""
    clock = FrozenClock(t0)
    app = _app(store, clock, script.scripted())
    await _lived(app, clock)
    text = await app.export("ada")
    [result] = await app.import_(text)
    assert result.status is ImportStatus.UNCHANGED
    assert await app.export("ada") == text

    changed = text.replace('"name":"Ada"', '"name":"Adah"', 1)
    assert changed != text
    with pytest.raises(ConflictError, match="already exists with other data"):
        await app.import_(changed)
    assert await app.export("ada") == text


async def test_a_bad_archive_line_is_one_error_naming_it_and_writes_nothing(
    sqlite_store: Any, t0: Any
) -> None:
    """Invalid JSON or a record that fails its model stops the import before any write,
    naming the line."""
    clock = FrozenClock(t0)
    app = _app(sqlite_store, clock, script.scripted())
    await _lived(app, clock)
    lines = (await app.export("ada")).replace('"ada"', '"bob"').splitlines()
    broken = [*lines[:3], "{not json", *lines[3:]]
    with pytest.raises(ValidationError, match="line 4: not JSON"):
        await app.import_(broken)
    bad_episode = [
        line.replace('"created_at":"', '"created_at":"not a time ', 1)
        if '"type":"episode"' in line
        else line
        for line in lines
    ]
    with pytest.raises(ValidationError, match="bad episode record"):
        await app.import_(bad_episode)
    assert [p.id for p in await app.personas()] == ["ada"]


@pytest.mark.neo4j
async def test_copy_moves_every_persona_between_stores(
    sqlite_store: Any, neo4j_store: Any, t0: Any
) -> None:
    """copy_personas writes what export + import would, and copying again is unchanged."""
    clock = FrozenClock(t0)
    source = _app(sqlite_store, clock, script.scripted())
    await _lived(source, clock)
    await source.create_persona("bob", name="Bob", core_identity="I am Bob.")
    results = await copy_personas(sqlite_store, neo4j_store)
    assert sorted((r.persona_id, r.status) for r in results) == [
        ("ada", ImportStatus.IMPORTED),
        ("bob", ImportStatus.IMPORTED),
    ]
    target = _app(neo4j_store, clock)
    assert await target.export(["ada", "bob"]) == await source.export(["ada", "bob"])
    again = await copy_personas(sqlite_store, neo4j_store)
    assert {r.status for r in again} == {ImportStatus.UNCHANGED}


async def test_import_and_copy_stay_idempotent_after_the_target_deleted_the_persona(
    store: Any, t0: Any, tmp_path: Any, opened: list[Any]
) -> None:
    """The issue's fifth item: a target that once deleted a persona keeps the audit record
    of it, and that record is the target's history, not the persona's data. Importing the
    export again imports it; importing or copying once more is ``unchanged``, however many
    times the target deleted it before."""
    from sonality.storage.sqlite.store import SqliteStore

    clock = FrozenClock(t0)
    source_store = await SqliteStore.open(
        tmp_path / "source.db", embedding_dimensions=EMBEDDING_DIMENSIONS
    )
    opened.append(source_store)
    await source_store.migrate()
    source = _app(source_store, clock, script.scripted())
    await _lived(source, clock)
    text = await source.export("ada")

    target = _app(store, clock)
    for _ in range(2):
        [imported] = await target.import_(text)
        assert imported.status is ImportStatus.IMPORTED
        [again] = await target.import_(text)
        assert again.status is ImportStatus.UNCHANGED
        assert {r.status for r in await copy_personas(source_store, store)} == {
            ImportStatus.UNCHANGED
        }
        await target.delete_persona("ada")
    kinds = [e.kind.value for e in await target.erasures("ada")]
    assert kinds.count("persona") == 2  # the target's own records of both deletions
    [copied] = await copy_personas(source_store, store)
    assert copied.status is ImportStatus.IMPORTED
    [unchanged] = await copy_personas(source_store, store)
    assert unchanged.status is ImportStatus.UNCHANGED
