"""The store's context port: what a context reads in one go."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from sonality.models import (
    ConstraintLoad,
    ContextReads,
)

__all__ = ["ContextStore"]


@runtime_checkable
class ContextStore(Protocol):
    """What ``context`` reads, in one unit of work."""

    async def context_reads(
        self,
        persona_id: str,
        user_id: str,
        embedding: Sequence[float] | None,
        *,
        similar_k: int,
        recent: int,
        beliefs: int = 8,
    ) -> ContextReads:
        """Persona, CURRENT snapshot, the user's active facts, the beliefs to show (the
        ``beliefs`` active ones whose topic is most similar to ``embedding``, the
        ``beliefs`` strongest, and up to ``beliefs`` whose topic is not embedded yet, each
        through an index: never every belief of the persona), the user's ``similar_k``
        episodes most similar to ``embedding`` (none when it is ``None`` or ``similar_k``
        is 0) and their ``recent`` latest, all in one unit of work (SQLite: one read
        transaction; Neo4j: usually one statement, each committing on its own).
        ``PersonaNotFound`` when the persona is unknown."""
        ...

    async def set_topic_embeddings(
        self, persona_id: str, embeddings: Mapping[str, Sequence[float]]
    ) -> int:
        """Store the embeddings of the persona's belief topics (topic -> vector of the
        store's dimension; ``ValidationError`` otherwise); a topic with no belief is
        skipped. Returns how many beliefs took one."""
        ...

    async def heavy_constraints(
        self, persona_id: str, *, min_chars: int, line_chars: int = 0, limit: int
    ) -> list[ConstraintLoad]:
        """The persona's users whose active constraints add up to at least ``min_chars``
        characters, counting ``line_chars`` more for each (the line a context gives it),
        the longest first, at most ``limit`` (``doctor``)."""
        ...
