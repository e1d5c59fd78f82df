"""The facade's read-only half: :class:`Reads`, the lists and lookups that only read the
store (personas, beliefs, facts, episodes, snapshots, reflections, erasures, the export,
the backlog of model work).

``Sonality`` is a ``Reads``; a ``Reads`` alone is a store and nothing else, with the same
checks and the same not-found rules, so a command that only lists (``sonality beliefs`` …)
opens it without building the model, the pipelines or their tunables, and without
importing them: what it imports stays small (see ``tests/cli``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from sonality.errors import ValidationError
from sonality.mind.inputs import (
    MAX_LIMIT,
    check_bool,
    check_choice,
    check_id,
    check_int,
    check_topic,
)
from sonality.models import (
    Backlog,
    EnrichmentStatus,
    InsightStatus,
    Lag,
    PendingWork,
    ThinkerStatus,
)
from sonality.ports.priority import background

if TYPE_CHECKING:
    from sonality.models import (
        AffectState,
        Belief,
        BiographyEntry,
        ConstraintLoad,
        Episode,
        Erasure,
        Insight,
        MonologueEntry,
        Narrative,
        Persona,
        ProvenanceEdge,
        Reflection,
        Snapshot,
        ThinkerTurn,
        TurnUsage,
        UserFact,
    )
    from sonality.ports import Store

__all__ = [
    "Reads",
]

_EVER = datetime(9999, 1, 1, tzinfo=UTC)
"""A ``stale_before`` later than any turn's last touch: every pending turn counts."""


class Reads:
    """Checked reads of one store (every argument checked before anything is read)."""

    store: Store

    def __init__(self, store: Store) -> None:
        self.store = store

    async def _known(self, persona_id: str) -> str:
        """``persona_id`` once checked and found: every read of a persona's data raises
        ``PersonaNotFound`` (exit 4) for an unknown persona rather than answering empty."""
        await self.store.get_persona(check_id(persona_id, "persona_id"))
        return persona_id

    # personas ---------------------------------------------------------------------------
    async def persona(self, persona_id: str) -> Persona:
        return await self.store.get_persona(check_id(persona_id, "persona_id"))

    async def personas(self) -> list[Persona]:
        return await self.store.list_personas()

    async def oversized_constraints(
        self, persona_id: str, *, limit: int = 20
    ) -> list[ConstraintLoad]:
        """The persona's users (at most ``limit``) whose active constraints alone pass the
        4,000 tokens past which every context shows them in one compact line (counted with
        ``cl100k_base``, as every budget is): what ``doctor`` warns about."""
        from sonality.llm.tokens import count_tokens
        from sonality.mind.context import oversized_constraints

        check_id(persona_id, "persona_id")
        limit = check_int(limit, field="limit", low=0, high=MAX_LIMIT)
        return await oversized_constraints(self.store, persona_id, count_tokens, limit=limit)

    async def biography(self, persona_id: str, *, limit: int = MAX_LIMIT) -> list[BiographyEntry]:
        """The persona's own past (its biography entries), oldest first."""
        check_id(persona_id, "persona_id")
        limit = check_int(limit, field="limit", low=0, high=MAX_LIMIT)
        return await self.store.biography(persona_id, limit=limit)

    async def snapshot(self, persona_id: str) -> Snapshot:
        return await self.store.current_snapshot(check_id(persona_id, "persona_id"))

    async def snapshots(self, persona_id: str) -> Sequence[Snapshot]:
        return await self.store.snapshot_history(await self._known(persona_id))

    # memory -----------------------------------------------------------------------------
    async def beliefs(self, persona_id: str, *, include_retired: bool = False) -> list[Belief]:
        check_bool(include_retired, field="include_retired")
        return await self.store.list_beliefs(
            await self._known(persona_id), include_retired=include_retired
        )

    async def evidence(self, persona_id: str, topic: str) -> list[tuple[ProvenanceEdge, Episode]]:
        """The episodes that moved a belief, with their deltas, oldest first."""
        return await self.store.belief_evidence(await self._known(persona_id), check_topic(topic))

    async def facts(self, persona_id: str, *, user_id: str) -> list[UserFact]:
        from sonality.mind.context import order_facts

        facts = await self.store.list_facts(
            await self._known(persona_id), check_id(user_id, "user_id")
        )
        return list(order_facts(facts))

    async def episodes(
        self,
        persona_id: str,
        *,
        user_id: str | None = None,
        conversation_id: str | None = None,
        limit: int = 20,
        before: int | None = None,
    ) -> list[Episode]:
        """Newest first, ``limit`` at a time: the next page is ``before=`` the last
        episode's ``seq`` (each page is read through an index from its cursor)."""
        await self._known(persona_id)
        if user_id is not None:
            check_id(user_id, "user_id")
        if conversation_id is not None:
            check_id(conversation_id, "conversation_id")
        check_int(limit, field="limit", low=1, high=MAX_LIMIT)
        if before is not None:
            check_int(before, field="before", low=0, high=(1 << 63) - 1)
        return await self.store.list_episodes(
            persona_id,
            user_id=user_id,
            conversation_id=conversation_id,
            limit=limit,
            before=before,
        )

    async def insights(
        self, persona_id: str, *, status: InsightStatus | str | None = None
    ) -> list[Insight]:
        pid = await self._known(persona_id)
        wanted = None if status is None else check_choice(status, InsightStatus, field="status")
        return await self.store.list_insights(pid, status=wanted)

    async def reflections(self, persona_id: str, *, limit: int = 20) -> list[Reflection]:
        """Reflection attempts, newest first."""
        pid = await self._known(persona_id)
        return await self.store.list_reflections(
            pid, limit=check_int(limit, field="limit", low=1, high=MAX_LIMIT)
        )

    async def backlog(self, persona_id: str) -> Backlog:
        """What the persona's stored work still waits for from a model: episodes to
        enrich, insights to retry, turns to think about (pending, and given up or failed)."""
        pid = await self._known(persona_id)
        episodes = await self.store.count_episodes(pid)
        insights = await self.store.count_insight_retries(pid)
        turns = [t.status for t in await self.store.list_thinker_retries(pid, stale_before=_EVER)]
        return Backlog(
            persona_id=pid,
            enrichment_pending=episodes.get(EnrichmentStatus.PENDING.value, 0),
            enrichment_failed=episodes.get(EnrichmentStatus.FAILED.value, 0),
            insights_pending=insights.get("pending", 0),
            insights_failed=insights.get("failed", 0),
            thinking_pending=turns.count(ThinkerStatus.PENDING),
            thinking_failed=turns.count(ThinkerStatus.FAILED),
        )

    async def lag(
        self, persona_ids: Sequence[str] | None = None, *, now: datetime | None = None
    ) -> list[Lag]:
        """How far behind each persona's background work is (every persona by default):
        the age, as of ``now`` (the wall clock by default), of its oldest pending episode
        and of its oldest unthought Thinker turn, 0 for an empty queue. One read of two
        index entries per persona, whatever the backlog; an unknown id reads as empty.

        Its reads are background work (:mod:`sonality.ports.priority`): a monitor asks it
        (``/readyz`` on every poll, ``/metrics`` on every scrape), so it gives way to the
        calls users wait on for at most 50 ms, and never ranks first in the store's
        warm-up after an outage."""
        if isinstance(persona_ids, str):
            raise ValidationError("persona_ids must be a list of ids", field="persona_ids")
        with background():
            if persona_ids is None:
                ids = [p.id for p in await self.store.list_personas()]
            else:
                ids = list(dict.fromkeys(check_id(p, "persona_id") for p in persona_ids))
            oldest = await self.store.oldest_pending(ids)
        at = now or datetime.now(UTC)
        return [Lag.at(o, at) for o in oldest]

    # the dual-process runtime's state -------------------------------------------------------
    async def pending(self, persona_id: str, *, conversation_id: str | None = None) -> PendingWork:
        """What the store holds as pending background work of the persona, whichever
        process will do it: episodes not enriched yet, and Thinker turns not thought about
        yet (of ``conversation_id``, or of every conversation)."""
        pid = await self._known(persona_id)
        episodes = (await self.store.count_episodes(pid)).get(EnrichmentStatus.PENDING.value, 0)
        if conversation_id is not None:
            turns = await self.store.thinker_turns(
                pid, check_id(conversation_id, "conversation_id"), open_only=True
            )
        else:  # every failed turn and every pending one
            turns = await self.store.list_thinker_retries(pid, stale_before=_EVER)
        waiting = sum(t.status is ThinkerStatus.PENDING for t in turns)
        return PendingWork(episodes=episodes, turns=waiting)

    async def narrative(self, persona_id: str, *, conversation_id: str) -> Narrative | None:
        """The conversation's latest committed narrative, or None."""
        mind = await self.store.conversation_mind(
            await self._known(persona_id), check_id(conversation_id, "conversation_id")
        )
        return mind.narrative

    async def narratives(self, persona_id: str, *, conversation_id: str) -> list[Narrative]:
        """The stored narrative versions, newest first."""
        return await self.store.narrative_history(
            await self._known(persona_id), check_id(conversation_id, "conversation_id")
        )

    async def monologue(self, persona_id: str, *, conversation_id: str) -> list[MonologueEntry]:
        """The conversation's bounded inner-monologue history, oldest first."""
        mind = await self.store.conversation_mind(
            await self._known(persona_id), check_id(conversation_id, "conversation_id")
        )
        return list(mind.monologue)

    async def thinker_turns(self, persona_id: str, *, conversation_id: str) -> list[ThinkerTurn]:
        """Where the Thinker is with each turn of the conversation."""
        return await self.store.thinker_turns(
            await self._known(persona_id), check_id(conversation_id, "conversation_id")
        )

    async def turn_usage(self, persona_id: str, *, conversation_id: str) -> list[TurnUsage]:
        """Model calls, tokens and cost per turn and component (talker, monologue,
        controller, enrichment, affect)."""
        return await self.store.turn_usage(
            await self._known(persona_id), check_id(conversation_id, "conversation_id")
        )

    async def affect_state(self, persona_id: str, *, user_id: str) -> AffectState | None:
        """The persona's affective state towards the user (None before any)."""
        return await self.store.get_affect(
            await self._known(persona_id), check_id(user_id, "user_id")
        )

    # erasures and the export -------------------------------------------------------------
    async def erasures(self, persona_id: str) -> list[Erasure]:
        """The persona's erasure audit records, oldest first (also after its deletion).
        ``PersonaNotFound`` when the persona neither exists nor left any record."""
        records = await self.store.list_erasures(check_id(persona_id, "persona_id"))
        if not records:
            await self._known(persona_id)
        return records

    async def export(self, persona_id: str | Sequence[str]) -> str:
        """The persona (or personas, in order) as canonical JSON lines, every node kind with
        its id: ``import_`` into any store gives it back, and exporting it there gives the
        same bytes. ``PersonaNotFound`` for an unknown persona."""
        from sonality.mind.archive import export_lines

        ids = [persona_id] if isinstance(persona_id, str) else list(persona_id)
        lines = await export_lines(self.store, [check_id(p, "persona_id") for p in ids])
        return "".join(f"{line}\n" for line in lines)
