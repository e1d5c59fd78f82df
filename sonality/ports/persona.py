"""The store's persona port."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from sonality.models import (
    BiographyEntry,
    Persona,
    Snapshot,
)

__all__ = ["PersonaStore"]


@runtime_checkable
class PersonaStore(Protocol):
    """Personas and their versioned snapshots."""

    async def create_persona(
        self, persona: Persona, snapshot: Snapshot, biography: Sequence[BiographyEntry] = ()
    ) -> Persona:
        """Create the persona with its first snapshot and its ``biography`` entries (told
        apart already, at most the cap), in one transaction. ``AlreadyExists`` if the id is
        taken."""
        ...

    async def get_persona(self, persona_id: str) -> Persona:
        """``PersonaNotFound`` when unknown."""
        ...

    async def list_personas(self) -> list[Persona]: ...

    async def append_snapshot(self, snapshot: Snapshot) -> Snapshot:
        """Add version ``snapshot.version``, which must be current + 1 (``ConflictError``
        otherwise); it becomes CURRENT and links PREVIOUS to the old one."""
        ...

    async def current_snapshot(self, persona_id: str) -> Snapshot: ...
    async def snapshot_history(self, persona_id: str) -> list[Snapshot]:
        """Newest first."""
        ...
