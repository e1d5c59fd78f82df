"""The facade's read-only half: :class:`Reads`, the lists and lookups that only read the
store (personas, beliefs, facts, episodes, snapshots, reflections, erasures, the export).

``Sonality`` is a ``Reads``; a ``Reads`` alone is a store and nothing else, with the same
checks and the same not-found rules, so a command that only lists (``sonality beliefs`` …)
opens it without building the model, the pipelines or their tunables, and without
importing them: what it imports stays small (see ``tests/cli``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from sonality.mind.inputs import (
    MAX_LIMIT,
    check_bool,
    check_choice,
    check_id,
    check_int,
    check_topic,
)
from sonality.models import InsightStatus

if TYPE_CHECKING:
    from sonality.models import (
        Belief,
        Episode,
        Erasure,
        Insight,
        Persona,
        ProvenanceEdge,
        Reflection,
        Snapshot,
        UserFact,
    )
    from sonality.ports import Store

__all__ = ["Reads"]


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
    ) -> list[Episode]:
        await self._known(persona_id)
        if user_id is not None:
            check_id(user_id, "user_id")
        if conversation_id is not None:
            check_id(conversation_id, "conversation_id")
        check_int(limit, field="limit", low=1, high=MAX_LIMIT)
        return await self.store.list_episodes(
            persona_id, user_id=user_id, conversation_id=conversation_id, limit=limit
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
