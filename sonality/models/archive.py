"""Archives: one persona as data, for export, import and copy."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from sonality import errors
from sonality.models.belief import Belief, ProvenanceEdge, StagedUpdate
from sonality.models.biography import BiographyEntry
from sonality.models.common import Frozen, Identifier
from sonality.models.episode import Episode
from sonality.models.erasure import Erasure
from sonality.models.fact import UserFact
from sonality.models.insight import Insight
from sonality.models.persona import Persona, Snapshot
from sonality.models.reflection import Reflection
from sonality.models.runtime import AffectState, MonologueEntry, Narrative, ThinkerTurn, TurnUsage

__all__ = [
    "ArchivedConversation",
    "ArchivedEpisode",
    "ArchivedReflection",
    "ArchivedUser",
    "ImportStatus",
    "Imported",
    "PersonaArchive",
]


class ArchivedUser(Frozen):
    id: Identifier
    created_at: datetime


class ArchivedConversation(Frozen):
    """A conversation with its counters: the turn and NEXT-chain head appends continue
    from, and the Thinker's (None when the Thinker never touched it)."""

    id: Identifier
    user_id: Identifier
    created_at: datetime
    last_turn: int = Field(ge=0)
    last_episode_id: Identifier | None = None
    thought_turn: int | None = None
    narrative_version: int = Field(default=0, ge=0)


class ArchivedEpisode(Frozen):
    """An episode with its place in the NEXT chain and its embedding (base64 of the
    little-endian float32 values, as both stores keep them)."""

    episode: Episode
    prev_episode_id: Identifier | None = None
    embedding: str | None = None


class ArchivedReflection(Frozen):
    reflection: Reflection
    consumed: tuple[str, ...] = ()
    """Ids of the insights it consumed, sorted."""


class PersonaArchive(Frozen):
    """Everything a store holds for one persona, with every id and counter, in a
    canonical order (``storage.archive`` writes and reads it as JSON lines). The
    reflection lease is left out: it belongs to a running worker, not to the persona."""

    persona: Persona
    episode_seq: int = Field(ge=0)
    snapshots: tuple[Snapshot, ...] = ()
    users: tuple[ArchivedUser, ...] = ()
    conversations: tuple[ArchivedConversation, ...] = ()
    episodes: tuple[ArchivedEpisode, ...] = ()
    topics: tuple[str, ...] = ()
    beliefs: tuple[Belief, ...] = ()
    staged: tuple[StagedUpdate, ...] = ()
    provenance: tuple[ProvenanceEdge, ...] = ()
    insights: tuple[Insight, ...] = ()
    facts: tuple[UserFact, ...] = ()
    reflections: tuple[ArchivedReflection, ...] = ()
    thinker_turns: tuple[ThinkerTurn, ...] = ()
    narratives: tuple[Narrative, ...] = ()
    monologue: tuple[MonologueEntry, ...] = ()
    affect: tuple[AffectState, ...] = ()
    usage: tuple[TurnUsage, ...] = ()
    erasures: tuple[Erasure, ...] = ()
    biography: tuple[BiographyEntry, ...] = ()
    """The persona's own past (with each entry's vector)."""

    @model_validator(mode="after")
    def _one_persona(self) -> Self:
        pid = self.persona.id
        parts: list[Frozen] = [
            *self.snapshots,
            *(e.episode for e in self.episodes),
            *self.beliefs,
            *self.staged,
            *self.insights,
            *self.facts,
            *(r.reflection for r in self.reflections),
            *self.thinker_turns,
            *self.narratives,
            *self.monologue,
            *self.affect,
            *self.usage,
            *self.erasures,
            *self.biography,
        ]
        if any(getattr(part, "persona_id", pid) != pid for part in parts):
            raise errors.ValidationError("an archive holds one persona's data", persona_id=pid)
        return self


class ImportStatus(StrEnum):
    IMPORTED = "imported"
    UNCHANGED = "unchanged"


class Imported(BaseModel):
    """What importing did with one persona of the file."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    persona_id: str
    status: ImportStatus
    episodes: int
    beliefs: int
