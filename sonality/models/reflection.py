"""Reflections: their outcomes and the commit that writes one."""

from __future__ import annotations

import difflib
from datetime import datetime
from enum import StrEnum
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from sonality import errors
from sonality.models.belief import Belief
from sonality.models.common import Frozen, Identifier
from sonality.models.persona import Snapshot

__all__ = [
    "LEASE_HELD",
    "NO_MODEL",
    "HealthCode",
    "HealthWarning",
    "Reflection",
    "ReflectionCommit",
    "ReflectionLease",
    "ReflectionOutcome",
    "ReflectionReport",
    "word_diff",
]


class ReflectionOutcome(StrEnum):
    COMMITTED = "committed"
    """A new snapshot (or an unchanged one) was committed with everything else."""
    REJECTED = "rejected"
    """Validation refused the new snapshot; the old one stays, insights stay pending."""
    FAILED = "failed"
    """The model or the store failed; nothing but this record was written."""


class ReflectionLease(Frozen):
    """Who holds a persona's reflection lease, and until when (a lease past its expiry is
    taken over by the next worker that reflects)."""

    persona_id: Identifier
    owner: str
    expires_at: datetime


class Reflection(Frozen):
    """One reflection attempt, stored as a ``Reflection`` node whatever its outcome."""

    id: str
    persona_id: Identifier
    trigger: str
    """``periodic``, ``event``, ``manual`` or ``idle``."""
    outcome: ReflectionOutcome
    reason: str | None = None
    """Why it was rejected or failed (a short code such as ``shrunk``); None when committed."""
    detail: str | None = None
    """The numbers or error behind ``reason``."""
    started_at: datetime
    finished_at: datetime
    interaction_count: int = Field(ge=0)
    """The persona's interaction count the reflection read (and, committed, reflected up to)."""
    snapshot_version: int | None = None
    """The version this reflection produced; None when it produced none."""
    previous_version: int = Field(ge=0)
    """The CURRENT version when the reflection started."""
    retention_ratio: float | None = None
    unique_ratio: float | None = None
    health: tuple[str, ...] = ()
    """Health warning codes (``sonality.core.health.HealthCode`` values)."""
    insights_consumed: int = 0
    episodes_read: int = 0
    beliefs_decayed: int = 0
    beliefs_retired: int = 0
    llm_calls: int = 0
    duration_ms: float = 0.0
    owner: str = ""
    """The worker (process) that ran it: its lease owner id."""
    advice: tuple[str, ...] = ()
    """What the belief-decay review advised beyond the arithmetic, as
    ``<verdict>:<topic>`` (``decay:tea``, ``forget:tea``): an erasure applies it again
    where it did not depend on the erased episodes (``core.erasure``)."""

    @field_validator("advice")
    @classmethod
    def _advice(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for item in value:
            verdict, _, topic = item.partition(":")
            if verdict not in ("decay", "forget") or not topic:
                raise ValueError("advice items look like decay:<topic> or forget:<topic>")
        return value


class ReflectionCommit(Frozen):
    """Everything a successful reflection changes, applied by the store in one transaction.

    The store checks that ``lease_owner`` still holds the persona's reflection lease
    (``LeaseHeld`` otherwise) and that the CURRENT snapshot is still
    ``expected_snapshot_version`` (``ConflictError`` otherwise), and writes nothing if
    either moved.
    """

    reflection: Reflection
    snapshot: Snapshot | None
    """The new version (``expected_snapshot_version + 1``), or None to keep the current."""
    expected_snapshot_version: int
    consumed_insight_ids: tuple[str, ...] = ()
    """Exactly the pending insights the reflection read; later ones stay pending."""
    beliefs: tuple[Belief, ...] = ()
    """Decayed or retired beliefs. Each is applied only if the stored belief was not
    reinforced meanwhile (same ``last_reinforced_at`` and ``evidence_count``)."""
    last_reflection_at: int
    shift_consumed: float = Field(default=0.0, ge=0)
    """The ``shift_since_reflection`` read at the start; subtracted, so shifts committed
    during the reflection still count toward the next one."""
    lease_owner: str
    keep_snapshots: int = Field(default=0, ge=0)
    """Snapshot retention: keep this many newest versions (0 keeps all)."""

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        pid = self.reflection.persona_id
        if self.reflection.outcome is not ReflectionOutcome.COMMITTED:
            raise errors.ValidationError("only a committed reflection is committed", persona_id=pid)
        owners = {b.persona_id for b in self.beliefs}
        owners |= {self.snapshot.persona_id} if self.snapshot is not None else set()
        if owners - {pid}:
            raise errors.ValidationError(
                "a reflection commit may only touch its own persona", persona_id=pid
            )
        if (
            self.snapshot is not None
            and self.snapshot.version != self.expected_snapshot_version + 1
        ):
            raise errors.ValidationError(
                "the new snapshot must be version current + 1",
                persona_id=pid,
                version=self.snapshot.version,
            )
        return self


def word_diff(old: str, new: str) -> list[tuple[str, str]]:
    """Word-level diff as ``(op, text)`` runs: ``=`` kept, ``-`` removed, ``+`` added.

    Each run joins consecutive words with single spaces; a replacement is a ``-`` run
    followed by a ``+`` run. Joining the ``=`` and ``+`` runs rebuilds ``new``'s words.
    """
    old_words = old.split()
    new_words = new.split()
    matcher = difflib.SequenceMatcher(a=old_words, b=new_words, autojunk=False)
    runs: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            runs.append(("=", " ".join(old_words[i1:i2])))
            continue
        if i2 > i1:
            runs.append(("-", " ".join(old_words[i1:i2])))
        if j2 > j1:
            runs.append(("+", " ".join(new_words[j1:j2])))
    return runs


class HealthCode(StrEnum):
    VOCABULARY_COLLAPSE = "vocabulary_collapse"
    SNAPSHOT_TOO_SHORT = "snapshot_too_short"
    POSSIBLE_SYCOPHANCY = "possible_sycophancy"
    RARELY_CHALLENGED = "rarely_challenged"
    OSSIFICATION = "ossification"
    NO_BELIEF_GROWTH = "no_belief_growth"


class HealthWarning(Frozen):
    code: HealthCode
    message: str
    value: float
    """The measured quantity that tripped the warning (a ratio, a rate or a count)."""


LEASE_HELD = "another worker is reflecting"
"""The ``reason`` of a report skipped because another worker holds the persona's lease
(``sonality reflect`` then exits with ``LeaseHeld``'s code, 9)."""


class ReflectionReport(BaseModel):
    """What one ``reflect`` call decided and did (``--json`` prints it)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    persona_id: str
    trigger: str
    """The trigger kind: periodic, event, manual, idle, or cooldown / none when skipped."""
    outcome: str
    """``committed``, ``rejected``, ``failed``, ``skipped``, or ``accepted`` (a dry run
    that would have committed)."""
    reason: str | None = None
    detail: str | None = None
    dry_run: bool = False
    reflection_id: str | None = None
    snapshot_version: int | None = None
    """The CURRENT version after the call."""
    previous_version: int | None = None
    old_snapshot: str | None = None
    new_snapshot: str | None = None
    """The model's text (also when rejected)."""
    retention_ratio: float | None = None
    unique_ratio: float | None = None
    health: tuple[HealthWarning, ...] = ()
    beliefs_decayed: tuple[str, ...] = ()
    beliefs_retired: tuple[str, ...] = ()
    decay_review: str | None = None
    """What the belief-decay review did: ``applied``, ``fallback`` (the model failed: every
    belief retained), ``nothing_stale``, ``off``, or None when no decay ran."""
    advice: tuple[tuple[str, str], ...] = ()
    """(topic, verdict) of every DECAY or FORGET verdict the review gave."""
    insights_consumed: int = 0
    episodes_read: int = 0
    llm_calls: int = 0
    duration_ms: float = 0.0

    @property
    def rewrote(self) -> bool:
        """True when this call committed a new snapshot version."""
        return self.outcome == "committed" and self.snapshot_version != self.previous_version

    def diff(self) -> list[tuple[str, str]]:
        """Word diff from the old to the new snapshot (empty without a new text)."""
        if self.old_snapshot is None or self.new_snapshot is None:
            return []
        return word_diff(self.old_snapshot, self.new_snapshot)


NO_MODEL = "no model configured"
"""The reason of a reflection that could not run: no model is configured (the CLI exits 3)."""
