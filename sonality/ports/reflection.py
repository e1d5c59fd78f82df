"""The store's reflection port: snapshots, insights, leases and commits."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol, runtime_checkable

from sonality.models import (
    Episode,
    ProvenanceEdge,
    Reflection,
    ReflectionCommit,
    ReflectionLease,
)

__all__ = ["ReflectionStore"]


@runtime_checkable
class ReflectionStore(Protocol):
    """The reflection's lease, its one-transaction commit, attempts and reads
    (``mind/reflection.py``)."""

    async def acquire_lease(
        self, persona_id: str, owner: str, *, now: datetime, ttl_seconds: float
    ) -> bool:
        """Take (or renew) the persona's reflection lease for ``owner`` until
        ``now + ttl_seconds``, atomically. True when ``owner`` holds it afterwards: it was
        free, expired (taken over), or already ``owner``'s. ``PersonaNotFound`` if unknown."""
        ...

    async def release_lease(self, persona_id: str, owner: str) -> None:
        """Give the lease up if ``owner`` still holds it (otherwise do nothing)."""
        ...

    async def get_lease(self, persona_id: str) -> ReflectionLease | None:
        """The persona's lease as stored (expired or not), or None when nobody holds it."""
        ...

    async def commit_reflection(self, commit: ReflectionCommit) -> None:
        """Apply a successful reflection in one transaction (see ``ReflectionCommit``):
        new snapshot, ``Reflection`` record linked to the insights it consumed and the
        snapshot it produced, decayed beliefs, the persona's reflection markers, snapshot
        retention. ``LeaseHeld`` / ``ConflictError`` (nothing written) when the lease or
        the CURRENT version moved."""
        ...

    async def record_reflection(self, reflection: Reflection, *, attempt_at: int) -> None:
        """Store a rejected or failed attempt and set the persona's
        ``last_reflection_attempt_at`` to ``attempt_at``; nothing else changes."""
        ...

    async def list_reflections(self, persona_id: str, *, limit: int = 20) -> list[Reflection]:
        """The persona's reflections, newest first (by ``started_at``)."""
        ...

    async def list_shifts(
        self, persona_id: str, *, since_interaction: int, limit: int = 20
    ) -> list[ProvenanceEdge]:
        """Provenance edges committed after interaction ``since_interaction``, newest
        first (the persona's recent opinion shifts)."""
        ...

    async def episodes_since(
        self, persona_id: str, *, since_interaction: int, limit: int = 10
    ) -> list[Episode]:
        """Enriched episodes with ``interaction_index > since_interaction``, newest first
        (by interaction index); an index lookup however long the history is."""
        ...
