"""The store's archive port: a persona as data."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from sonality.models import (
    PersonaArchive,
)

__all__ = ["ArchiveStore"]


@runtime_checkable
class ArchiveStore(Protocol):
    """One persona as data (``storage/archive.py`` writes it as JSON lines)."""

    async def export_persona(self, persona_id: str) -> PersonaArchive:
        """Everything the store holds for the persona, read in one transaction, in the
        archive's canonical order. ``PersonaNotFound`` when unknown."""
        ...

    async def import_persona(self, archive: PersonaArchive) -> None:
        """Write the archive into a store without that persona, ids and counters
        preserved, in one transaction. ``AlreadyExists`` when the persona exists."""
        ...
