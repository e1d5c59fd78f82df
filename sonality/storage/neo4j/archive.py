"""One persona as data on Neo4j: its nodes and edges read into a
:class:`~sonality.models.PersonaArchive` in one read transaction, and an archive written
back in one write transaction with every id, counter and edge, the display labels and
captions the Browser styles use included.

Edges that follow from the data are not archived but rebuilt: NEXT from each episode's
``prev_episode_id``, PREVIOUS between consecutive snapshot and narrative versions, CURRENT
to the newest snapshot, MENTIONS from an episode's topics, and the ownership edges
(TALKS_WITH, HAD, HAS_EPISODE, HOLDS, ABOUT, YIELDED, STAGED, HAS_FACT, FROM, REFLECTED,
PRODUCED, CONSUMED, NARRATIVE, AFTER, THOUGHT, AFFECT, USAGE, REMEMBERS).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from neo4j import AsyncManagedTransaction

from sonality.errors import AlreadyExists, PersonaNotFound
from sonality.models import (
    ArchivedConversation,
    ArchivedEpisode,
    ArchivedReflection,
    ArchivedUser,
    Belief,
    Erasure,
    Insight,
    PersonaArchive,
    ProvenanceEdge,
    Reflection,
    Snapshot,
    StagedUpdate,
    UserFact,
)
from sonality.storage import archive as fmt
from sonality.storage import checks, shapes
from sonality.storage.neo4j import codec
from sonality.storage.neo4j.biography import entries as biography_entries
from sonality.storage.neo4j.biography import put_entries
from sonality.storage.neo4j.cypher import Query
from sonality.storage.neo4j.enrichment import belief_props, fact_props
from sonality.storage.neo4j.episodes import episode_from
from sonality.storage.neo4j.executor import Neo4jAggregate, count, fetch, fetch_one
from sonality.storage.neo4j.personas import persona_from
from sonality.storage.neo4j.runtime import (
    _affect_from,
    _affect_props,
    _entry_from,
    _narrative_from,
    _turn_from,
    _usage_from,
)

__all__ = ["Neo4jArchive"]


def _rows(rows: list[dict[str, Any]], key: str) -> list[Any]:
    return [row[key] for row in rows]


async def _export(tx: AsyncManagedTransaction, persona_id: str) -> PersonaArchive:
    pid = {"persona_id": persona_id}
    head = await fetch_one(tx, Query.ARCHIVE_PERSONA, **pid)
    if head is None:
        raise PersonaNotFound("no such persona", persona_id=persona_id)

    async def read(query: Query, key: str) -> list[Any]:
        return _rows(await fetch(tx, query, **pid), key)

    def model(cls: Any, props: Mapping[str, Any]) -> Any:
        return cls.model_validate(codec.decode(props, cls))

    episodes = await fetch(tx, Query.ARCHIVE_EPISODES, **pid)
    reflections = await fetch(tx, Query.ARCHIVE_REFLECTIONS, **pid)
    return fmt.canonical(
        PersonaArchive(
            persona=persona_from(head["persona"]),
            episode_seq=int(head["episode_seq"] or 0),
            snapshots=tuple(
                model(Snapshot, s) for s in await read(Query.SNAPSHOT_HISTORY, "snapshot")
            ),
            users=tuple(model(ArchivedUser, u) for u in await read(Query.ARCHIVE_USERS, "user")),
            conversations=tuple(
                model(ArchivedConversation, c)
                for c in await read(Query.ARCHIVE_CONVERSATIONS, "conversation")
            ),
            episodes=tuple(
                ArchivedEpisode(
                    episode=episode_from(row["episode"]),
                    prev_episode_id=row["prev_episode_id"],
                    embedding=fmt.encode_embedding(row["episode"].get("embedding")),
                )
                for row in episodes
            ),
            topics=tuple(await read(Query.ARCHIVE_TOPICS, "name")),
            beliefs=tuple(
                model(Belief, b)
                for b in _rows(
                    await fetch(tx, Query.BELIEF_LIST, **pid, include_retired=True), "belief"
                )
            ),
            staged=tuple(
                model(StagedUpdate, s) for s in await read(Query.ARCHIVE_STAGED, "staged")
            ),
            provenance=tuple(
                ProvenanceEdge.model_validate(row)
                for row in await fetch(tx, Query.ARCHIVE_PROVENANCE, **pid)
            ),
            insights=tuple(
                model(Insight, i)
                for i in _rows(
                    await fetch(tx, Query.INSIGHT_LIST, **pid, opt={"status": None}), "insight"
                )
            ),
            facts=tuple(model(UserFact, f) for f in await read(Query.ARCHIVE_FACTS, "fact")),
            reflections=tuple(
                ArchivedReflection(
                    reflection=model(Reflection, row["reflection"]),
                    consumed=tuple(sorted(row["consumed"])),
                )
                for row in reflections
            ),
            thinker_turns=tuple(
                _turn_from(t) for t in await read(Query.ARCHIVE_THINKER_TURNS, "turn")
            ),
            narratives=tuple(
                _narrative_from(n) for n in await read(Query.ARCHIVE_NARRATIVES, "narrative")
            ),
            monologue=tuple(_entry_from(m) for m in await read(Query.ARCHIVE_MONOLOGUE, "entry")),
            affect=tuple(_affect_from(a) for a in await read(Query.ARCHIVE_AFFECT, "affect")),
            usage=tuple(_usage_from(u) for u in await read(Query.ARCHIVE_USAGE, "usage")),
            erasures=tuple(model(Erasure, e) for e in await read(Query.ERASURE_LIST, "erasure")),
            biography=tuple(await biography_entries(tx, persona_id, checks.NO_CURSOR)),
        )
    )


def _episode_props(item: ArchivedEpisode) -> dict[str, Any]:
    fields = shapes.stored_episode(item.episode)
    fields["created_at"] = codec.time_in(item.episode.created_at)
    return {k: v for k, v in fields.items() if v is not None}


def _plain(model: Any) -> dict[str, Any]:
    return codec.encode(model, drop_none=True)


async def _import(tx: AsyncManagedTransaction, archive: PersonaArchive, dimensions: int) -> None:
    persona = archive.persona
    pid = persona.id
    ids = {"persona_id": pid}
    if await fetch_one(tx, Query.PERSONA_GET, persona_id=pid) is not None:
        raise AlreadyExists("persona exists already", persona_id=pid)
    plain = codec.encode(persona, exclude={"self_model"}, drop_none=True)
    plain |= shapes.self_model_fields(persona)
    props = {**plain, "persona_id": pid, "episode_seq": archive.episode_seq}
    await fetch(tx, Query.ARCHIVE_PUT_PERSONA, persona=props)
    snapshots = [_plain(s) for s in archive.snapshots]
    await fetch(tx, Query.ARCHIVE_PUT_SNAPSHOTS, **ids, snapshots=snapshots)
    users = [_plain(u) for u in archive.users]
    await fetch(tx, Query.ARCHIVE_PUT_USERS, **ids, users=users)
    conversations = []
    for conversation in archive.conversations:
        row = _plain(conversation)
        if conversation.thought_turn is None:  # the Thinker's counters start with it
            row.pop("narrative_version", None)
        conversations.append(row)
    wrote = await count(tx, Query.ARCHIVE_PUT_CONVERSATIONS, **ids, conversations=conversations)
    checks.wrote_all("a conversation names an unknown user", pid, len(conversations), wrote)
    episodes = [_episode_props(e) for e in archive.episodes]
    wrote = await count(tx, Query.ARCHIVE_PUT_EPISODES, **ids, episodes=episodes)
    checks.wrote_all("an episode names an unknown conversation", pid, len(episodes), wrote)
    for item in archive.episodes:
        if item.embedding is not None:
            vector = checks.embedding(fmt.decode_embedding(item.embedding), dimensions)
            await fetch(
                tx, Query.EPISODE_SET_EMBEDDING, **ids, episode_id=item.episode.id, embedding=vector
            )
    await fetch(tx, Query.ARCHIVE_PUT_TOPICS, **ids, topics=list(archive.topics))
    links = [
        {"id": e.episode.id, "prev_episode_id": e.prev_episode_id, "topics": list(e.episode.topics)}
        for e in archive.episodes
    ]
    await fetch(tx, Query.ARCHIVE_LINK_EPISODES, **ids, episodes=links)
    if archive.beliefs:
        await fetch(tx, Query.BELIEF_UPSERT, beliefs=[belief_props(b) for b in archive.beliefs])
    staged = [codec.encode(s) for s in archive.staged]
    wrote = await count(tx, Query.ENRICHMENT_CREATE_STAGED, **ids, staged=staged)
    checks.wrote_all("a staged update names an unknown episode", pid, len(staged), wrote)
    edges = [codec.encode(e) for e in archive.provenance]
    wrote = await count(tx, Query.BELIEF_SUPPORTS, **ids, edges=edges)
    wrote += await count(tx, Query.BELIEF_CONTRADICTS, **ids, edges=edges)
    checks.wrote_all("an edge names an unknown episode or belief", pid, len(edges), wrote)
    insights = [codec.encode(i) for i in archive.insights]
    wrote = await count(tx, Query.ARCHIVE_PUT_INSIGHTS, **ids, insights=insights)
    checks.wrote_all("an insight names an unknown episode", pid, len(insights), wrote)
    facts = [fact_props(f) for f in archive.facts]
    wrote = await count(tx, Query.ENRICHMENT_CREATE_FACTS, **ids, facts=facts)
    checks.wrote_all("a fact names an unknown user or episode", pid, len(facts), wrote)
    reflections = [
        {"reflection": _plain(r.reflection), "consumed": list(r.consumed)}
        for r in archive.reflections
    ]
    await fetch(tx, Query.ARCHIVE_PUT_REFLECTIONS, **ids, reflections=reflections)
    turns = [codec.encode(t) for t in archive.thinker_turns]
    await fetch(tx, Query.ARCHIVE_PUT_THINKER, **ids, turns=turns)
    narratives = [codec.encode(n) for n in archive.narratives]
    await fetch(tx, Query.ARCHIVE_PUT_NARRATIVES, **ids, narratives=narratives)
    await fetch(tx, Query.ARCHIVE_LINK_NARRATIVES, **ids)
    entries = [codec.encode(m) for m in archive.monologue]
    await fetch(tx, Query.ARCHIVE_PUT_MONOLOGUE, **ids, entries=entries)
    states = [_affect_props(a) for a in archive.affect]
    await fetch(tx, Query.ARCHIVE_PUT_AFFECT, **ids, states=states)
    usage = [codec.encode(u) for u in archive.usage]
    await fetch(tx, Query.ARCHIVE_PUT_USAGE, **ids, rows=usage)
    erasures = [_plain(e) for e in archive.erasures]
    await fetch(tx, Query.ARCHIVE_PUT_ERASURES, **ids, erasures=erasures)
    await put_entries(tx, pid, archive.biography, len(archive.biography))


class Neo4jArchive(Neo4jAggregate):
    """The ``ArchiveStore`` part of the Neo4j store."""

    async def export_persona(self, persona_id: str) -> PersonaArchive:
        """Everything of the persona, read in one transaction."""
        return await self._db.read("export_persona", _export, persona_id)

    async def import_persona(self, archive: PersonaArchive) -> None:
        """Write the archive in one transaction (``AlreadyExists`` if the persona does)."""
        await self._db.write("import_persona", _import, archive, self._db.embedding_dimensions)
