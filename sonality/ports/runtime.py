"""The store's dual-process runtime port: turns, narratives, monologue."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

from sonality.models import (
    AffectPlacement,
    AffectState,
    ConversationMind,
    Episode,
    EpisodeDraft,
    Narrative,
    Persona,
    RuntimeMode,
    TalkerReads,
    ThinkerReads,
    ThinkerTurn,
    ThoughtCommit,
    TurnStart,
    TurnUsage,
)

__all__ = ["RuntimeStore"]


@runtime_checkable
class RuntimeStore(Protocol):
    """The dual-process runtime: persona defaults, Thinker turns, narratives,
    monologue, affect, usage (``mind/talker.py``, ``thinker.py``, ``affect.py``)."""

    async def set_persona_runtime(
        self, persona_id: str, *, runtime_mode: RuntimeMode, affect: AffectPlacement
    ) -> Persona:
        """Set the persona's default runtime mode and affect placement."""
        ...

    async def begin_turn(self, turn: ThinkerTurn, usage: Sequence[TurnUsage]) -> ThinkerTurn:
        """Register a turn answered by ``respond`` for the Thinker, with the Talker's
        usage, in one transaction. Idempotent: a turn registered already is returned as
        stored (usage is not added twice). ``NotFoundError`` if the episode is unknown."""
        ...

    async def append_turn(
        self, draft: EpisodeDraft, start: TurnStart
    ) -> tuple[Episode, bool, ThinkerTurn]:
        """``append_episode`` and ``begin_turn`` in one transaction: the exchange
        ``respond`` answered and its turn (``start`` with the stored episode's ids and
        turn number, and the Talker's usage). The episode is idempotent on ``draft.id``
        as for ``append_episode`` (``ConflictError``, nothing written, for an id used for
        another exchange); a turn registered already is returned as stored (usage not
        added twice). Returns the episode, whether it was created, and the turn.
        ``PersonaNotFound`` when the persona is unknown."""
        ...

    async def get_thinker_turn(self, persona_id: str, episode_id: str) -> ThinkerTurn:
        """``NotFoundError`` when the episode was not answered by ``respond``."""
        ...

    async def thinker_turns(
        self,
        persona_id: str,
        conversation_id: str,
        *,
        up_to_turn: int | None = None,
        open_only: bool = False,
    ) -> list[ThinkerTurn]:
        """The conversation's registered turns (all, or up to ``up_to_turn``), by turn;
        ``open_only``: only those still to think about (``pending`` and ``failed``), what
        the Thinker's catch-up reads on every turn whatever the conversation's length."""
        ...

    async def list_thinker_retries(
        self, persona_id: str, *, stale_before: datetime
    ) -> list[ThinkerTurn]:
        """Turns to retry: ``failed`` ones and ``pending`` ones not touched since
        ``stale_before`` (their process died), by (conversation, turn)."""
        ...

    async def mark_thinker_failed(
        self, persona_id: str, episode_id: str, *, error: str, give_up: bool, at: datetime
    ) -> ThinkerTurn:
        """Count a failed Thinker attempt: ``failed`` (retried later) or, with
        ``give_up``, ``abandoned``. A turn already done is left as it is."""
        ...

    async def talker_reads(
        self,
        persona_id: str,
        user_id: str,
        conversation_id: str,
        embedding: Sequence[float] | None,
        *,
        similar_k: int,
        recent: int,
        beliefs: int = 8,
        window: int = 5,
    ) -> TalkerReads:
        """What the Talker reads, in one read unit of work: ``context_reads`` (same
        arguments), the conversation's ``conversation_mind`` with its newest monologue
        entry only (the Talker shows no older one; the history grows with the
        conversation), its ``window`` newest episodes led by its first one, and the
        persona's affect state towards the user. ``PersonaNotFound`` when the persona is
        unknown."""
        ...

    async def conversation_mind(self, persona_id: str, conversation_id: str) -> ConversationMind:
        """Current narrative, last thought-about turn and monologue history (oldest first);
        empty for a conversation the Thinker has not touched."""
        ...

    async def thinker_reads(
        self, persona_id: str, conversation_id: str, episode_id: str, *, excerpt: int
    ) -> ThinkerReads:
        """What the Thinker reads on a turn, in one read unit of work: the persona, the
        turn's episode, the conversation's ``conversation_mind`` and up to ``excerpt`` of
        its episodes before the turn's (``list_episodes(conversation_id=…,
        before=episode.seq, limit=excerpt)``). ``PersonaNotFound`` or ``NotFoundError``
        when the persona or the episode is unknown."""
        ...

    async def commit_thought(self, commit: ThoughtCommit) -> None:
        """Apply one Thinker turn in one transaction (see ``ThoughtCommit``): monologue
        entry and dropped entries, new narrative version and pruning, affect state, turn
        done. ``ConflictError`` (nothing written) when the expected state moved."""
        ...

    async def narrative_history(self, persona_id: str, conversation_id: str) -> list[Narrative]:
        """The stored narrative versions, newest first."""
        ...

    async def get_affect(self, persona_id: str, user_id: str) -> AffectState | None:
        """The persona's affect state towards the user, or None."""
        ...

    async def put_affect(self, state: AffectState) -> AffectState:
        """Store ``state`` if ``state.version`` is the stored version + 1 (1 for a first
        one; the user is created if unknown). ``ConflictError`` otherwise."""
        ...

    async def add_turn_usage(self, usage: Sequence[TurnUsage]) -> None:
        """Add these counts to the turn's per-component totals (one transaction)."""
        ...

    async def turn_usage(self, persona_id: str, conversation_id: str) -> list[TurnUsage]:
        """Usage of the conversation's turns, by (turn, component)."""
        ...
