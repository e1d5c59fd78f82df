"""Erasure: forgetting a user or an exchange, and undoing its effect."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Self

from pydantic import Field, model_validator

from sonality import errors
from sonality.models.belief import Belief, ProvenanceEdge, StagedUpdate
from sonality.models.common import Frozen, Identifier
from sonality.models.episode import Episode, EvidenceAssessment
from sonality.models.persona import Persona

__all__ = [
    "Erasure",
    "ErasureCommit",
    "ErasureKind",
    "ErasureState",
    "ReflectionPoint",
    "ReplayedEpisode",
    "SnapshotRevert",
    "SnapshotVersion",
    "StoredEvidence",
    "UserErasure",
    "UserErasureStatus",
]


class ErasureKind(StrEnum):
    USER = "user"
    EPISODE = "episode"
    PERSONA = "persona"


class Erasure(Frozen):
    """The audit record of one erasure. It holds no user text and no id in clear:
    ``subject`` is an HMAC-SHA256, under the store's own audit key, of the SHA-256 of
    ``persona_id``, ``kind`` and the erased id joined by NUL bytes
    (``core.erasure.erasure_subject``), so an operator of the store who knows the id can
    check that it was erased (``Sonality.erasure_subject``) and a reader of the records
    alone cannot confirm a guess."""

    id: str
    persona_id: Identifier
    kind: ErasureKind
    subject: str
    created_at: datetime
    episodes: int = Field(default=0, ge=0)
    """Episodes removed (every status)."""
    facts: int = Field(default=0, ge=0)
    insights: int = Field(default=0, ge=0)
    beliefs_changed: int = Field(default=0, ge=0)
    """Beliefs whose state the replay of the remaining evidence changed."""
    beliefs_removed: int = Field(default=0, ge=0)
    """Beliefs no remaining evidence supports, removed."""
    review_from_version: int | None = None
    """The oldest snapshot version the erasure removed because it may quote what was
    erased (the snapshot reverted to the newest clean version, or the core identity);
    None when no version was removed."""


class UserErasureStatus(StrEnum):
    ERASED = "erased"
    """The user was there and is erased now."""
    ERASED_BEFORE = "erased_before"
    """The user is not there, and this persona's audit records hold an erasure of them."""
    ABSENT = "absent"
    """The persona never met the user (or holds no record of erasing them)."""


class UserErasure(Frozen):
    """What forgetting a user everywhere did in one persona."""

    persona_id: Identifier
    status: UserErasureStatus
    erasure: Erasure | None = None
    """The audit record of the erasure made now (``erased`` only)."""


class StoredEvidence(Frozen):
    """One enriched episode as the opinion rules saw it: what the replay of
    ``core.erasure`` runs the rules over again (the user's message only for the
    repetition rule of ``core.influence``; the response is never read)."""

    episode_id: Identifier
    user_id: Identifier
    conversation_id: Identifier
    seq: int
    interaction_index: int
    user_message: str = ""
    evidence: EvidenceAssessment | None = None
    defaulted: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()
    importance: int | None = None
    disagreement: bool | None = None


class ReflectionPoint(Frozen):
    """A committed reflection as the replay needs it: where it happened, when, what it
    wrote and what its decay review advised (``Reflection.advice``)."""

    id: str
    interaction_count: int = Field(ge=0)
    started_at: datetime
    snapshot_version: int | None = None
    advice: tuple[str, ...] = ()


class SnapshotVersion(Frozen):
    """A stored snapshot version without its text: what an erasure judges it by."""

    version: int = Field(ge=1)
    reason: str = "initial"


class ErasureState(Frozen):
    """What an erasure reads, in one transaction: the persona, the episodes it removes
    (every status, by ``seq``), every enriched episode of the persona (the evidence, by
    interaction index), the beliefs (retired ones too), the committed reflections (by
    interaction count) and how many facts and insights go with the removed episodes."""

    persona: Persona
    removed: tuple[Episode, ...]
    evidence: tuple[StoredEvidence, ...]
    beliefs: tuple[Belief, ...]
    reflections: tuple[ReflectionPoint, ...]
    snapshots: tuple[SnapshotVersion, ...] = ()
    """Every stored snapshot version, oldest first (the newest is CURRENT)."""
    facts: int = 0
    insights: int = 0


class ReplayedEpisode(Frozen):
    """A remaining enriched episode's place after the replay."""

    episode_id: Identifier
    interaction_index: int = Field(ge=1)
    disagreement: bool


class SnapshotRevert(Frozen):
    """How an erasure takes the snapshot back to before the erased material: the versions
    that may quote it go, and when CURRENT is one of them a new CURRENT ``version`` is
    written with the text of version ``source`` (None: the core identity), ``reason``
    ``rollback:<source>`` or ``rollback:core``."""

    removed: tuple[int, ...]
    version: int | None = None
    source: int | None = None
    created_at: datetime

    @property
    def reason(self) -> str:
        return f"rollback:{self.source if self.source is not None else 'core'}"


class ErasureCommit(Frozen):
    """Everything one erasure changes, applied by the store in one transaction.

    Removes ``episode_ids`` with everything hanging off them (insights, facts no other
    exchange backs, staged updates, provenance edges, Thinker turns, monologue entries and
    narratives written from their turn on, usage, what an affect state read from them),
    relinking each conversation's NEXT chain around them and dropping conversations left
    empty; with ``user_id``, also the user, its conversations and its affect state.
    Then, from interaction ``replay_from`` on (None: no enriched episode was removed, so
    no opinion moves), it replaces the staged updates and provenance edges with the
    replayed ones, re-indexes the remaining episodes, writes the changed beliefs, removes
    the unsupported ones and sets the persona's counters; last, it reverts the snapshot
    versions ``snapshots`` names. The store checks that the persona is still at
    ``expected_interaction_count`` and ``expected_snapshot_version`` (``ConflictError``
    otherwise, nothing written)."""

    record: Erasure
    user_id: Identifier | None = None
    episode_ids: tuple[Identifier, ...]
    expected_interaction_count: int = Field(ge=0)
    replay_from: int | None = None
    episodes: tuple[ReplayedEpisode, ...] = ()
    staged: tuple[StagedUpdate, ...] = ()
    """Staged updates born at or after ``replay_from``, or committed then, or pending."""
    provenance: tuple[ProvenanceEdge, ...] = ()
    """Provenance edges committed at or after ``replay_from``."""
    beliefs: tuple[Belief, ...] = ()
    removed_beliefs: tuple[str, ...] = ()
    reflections: tuple[ReflectionPoint, ...] = ()
    """Committed reflections whose interaction count moved or whose advice lost the items
    that depended on the erased episodes, with the new count and advice."""
    snapshots: SnapshotRevert | None = None
    """The snapshot versions that go (and the new CURRENT), or None when none may quote
    the erased material."""
    expected_snapshot_version: int | None = None
    """CURRENT's version as read: the store refuses the commit (``ConflictError``) when it
    moved, as when the interaction count did."""
    interaction_count: int = Field(ge=0)
    disagreement_window: tuple[bool, ...] = ()
    shift_since_reflection: float = Field(default=0.0, ge=0)
    last_reflection_at: int = Field(default=0, ge=0)
    last_reflection_attempt_at: int = Field(default=0, ge=0)
    review_from_version: int | None = None

    @property
    def persona_id(self) -> str:
        return self.record.persona_id

    @model_validator(mode="after")
    def _one_persona(self) -> Self:
        pid = self.record.persona_id
        owners = {b.persona_id for b in self.beliefs} | {s.persona_id for s in self.staged}
        if owners - {pid}:
            raise errors.ValidationError(
                "an erasure commit may only touch its own persona", persona_id=pid
            )
        if self.replay_from is None and (self.staged or self.provenance or self.episodes):
            raise errors.ValidationError(
                "an erasure that replays nothing rewrites no opinion", persona_id=pid
            )
        return self
