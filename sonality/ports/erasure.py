"""The store's erasure port: forgetting and its audit."""

from __future__ import annotations

from typing import Protocol

from sonality.models import (
    Erasure,
    ErasureCommit,
    ErasureState,
    UserFact,
)

__all__ = ["ErasureStore"]


class ErasureStore(Protocol):
    """Forgetting and correcting: erasures with their replayed opinions, snapshot review,
    fact corrections, persona deletion, and the audit records (``mind/erasure.py``)."""

    async def erasure_state(
        self, persona_id: str, *, user_id: str | None = None, episode_id: str | None = None
    ) -> ErasureState:
        """What erasing the user's episodes (or the one episode) reads, in one read
        transaction. ``PersonaNotFound``; ``NotFoundError`` when the persona has no such
        user or episode."""
        ...

    async def commit_erasure(self, commit: ErasureCommit) -> None:
        """Apply an erasure in one transaction (see ``ErasureCommit``). ``ConflictError``
        (nothing written) when the persona's interaction count moved."""
        ...

    async def purge_snapshots(
        self, persona_id: str, *, from_version: int, below_version: int
    ) -> int:
        """After a reflection that rewrote versions an older Sonality flagged: delete
        snapshot versions ``from_version`` up to (not including) ``below_version``, keep
        the PREVIOUS chain whole, and clear the persona's ``review_from_version`` if it is
        still ``from_version``. Returns how many versions went."""
        ...

    async def audit_key(self) -> bytes:
        """The store's own secret that keys audit subjects (made on first use, kept)."""
        ...

    async def get_fact(self, persona_id: str, fact_id: str) -> UserFact:
        """Any fact of the persona, retracted or not (``NotFoundError`` when unknown)."""
        ...

    async def correct_fact(self, fact: UserFact) -> UserFact:
        """Replace the stored fact ``fact.id`` (same user and episode) with ``fact``'s
        kind, text, severity and retraction, in one transaction; when another active fact
        of the user says the same, merge into that one instead (``checks.corrected_fact``)
        and return it. ``NotFoundError`` when unknown."""
        ...

    async def add_fact(self, fact: UserFact) -> UserFact:
        """Store ``fact`` in one transaction and return it as stored; when its user
        already holds an active fact that says the same (``checks.held_fact``), return
        that one and write nothing. ``NotFoundError`` (nothing written) when
        ``fact.episode_id`` is not an episode of ``fact.user_id``."""
        ...

    async def delete_persona(self, persona_id: str, record: Erasure) -> None:
        """Remove the persona and everything it owns, in one transaction, keeping the
        audit records and adding ``record``; every API key loses its grant of the persona
        (``checks.without_persona``: a key left with none is revoked).
        ``PersonaNotFound`` when unknown."""
        ...

    async def list_erasures(self, persona_id: str) -> list[Erasure]:
        """The persona's erasure records, oldest first (kept after the persona is
        deleted)."""
        ...
