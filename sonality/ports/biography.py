"""The store's biography port: the persona's own past, recalled by meaning."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from sonality.models import BiographyEntry

__all__ = ["BiographyStore"]


@runtime_checkable
class BiographyStore(Protocol):
    """Biographical entries of a persona (seed 002), at most ``cap`` per persona. Every
    method is scoped by persona; entries are never rewritten, only added and removed."""

    async def add_biography(
        self, persona_id: str, entries: list[BiographyEntry], *, cap: int
    ) -> list[tuple[BiographyEntry, bool]]:
        """Store ``entries`` in one transaction. Each comes back with ``True`` when it was
        written, or as the entry the persona already holds that says the same (same
        words, or a near-identical embedding: ``storage.checks.held_biography``) with
        ``False``. ``PersonaNotFound`` when the persona is unknown; ``ValidationError``
        (nothing written) when the new entries would pass ``cap``."""
        ...

    async def biography(self, persona_id: str, *, limit: int) -> list[BiographyEntry]:
        """The persona's entries with their vectors, oldest first, at most ``limit``."""
        ...

    async def remove_biography(self, persona_id: str, entry_id: str) -> BiographyEntry:
        """Delete one entry and return it; ``NotFoundError`` when the persona has no such
        entry."""
        ...
