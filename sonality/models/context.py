"""What a context read fetches from the store in one go."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from sonality.models.belief import Belief
from sonality.models.common import Frozen
from sonality.models.episode import Episode, ScoredEpisode
from sonality.models.fact import FactKind, UserFact
from sonality.models.persona import Persona, Snapshot

__all__ = [
    "Context",
    "ContextReads",
]


class ContextReads(Frozen):
    """Everything ``context`` reads, taken by the store in one read transaction (one
    consistent view; on Neo4j one session, on SQLite one ``BEGIN``)."""

    persona: Persona
    snapshot: Snapshot
    facts: tuple[UserFact, ...]
    """The user's active facts, oldest first."""
    beliefs: tuple[Belief, ...]
    """The persona's active beliefs read for the message, each once and never more than a
    few whatever the persona holds: the most similar to it by topic, the strongest
    (|position| x confidence), and those whose topic is not embedded yet."""
    belief_similarity: dict[str, float] = Field(default_factory=dict)
    """The cosine of the message with the topic of each belief read as most similar."""
    unembedded: tuple[str, ...] = ()
    """The topics among ``beliefs`` whose embedding is not stored yet (``context`` embeds
    them and stores them with ``ContextStore.set_topic_embeddings``)."""
    similar: tuple[tuple[Episode, float], ...]
    """Up to ``similar_k`` of the user's embedded episodes by cosine, best first."""
    recent: tuple[Episode, ...]
    """Up to ``recent`` of the user's episodes, most recent first."""


_EXCERPT_CHARS = 400


class Context(Frozen):
    """A structured context block; ``as_prompt()`` renders it as text."""

    persona_id: str
    user_id: str
    persona_name: str
    core_identity: str
    snapshot: str
    snapshot_version: int
    facts: tuple[UserFact, ...]
    beliefs: tuple[Belief, ...]
    episodes: tuple[ScoredEpisode, ...]
    narrative: str | None = None
    token_budget: int
    tokens: int
    """Tokens of the rendered block, counted with the same counter as the budget, line by
    line (within a few tokens of counting the whole block)."""
    dropped: int = 0
    """Beliefs or episodes left out because the budget ran out."""
    facts_omitted: int = 0
    """Preferences and neutral facts of the user left out because their budget ran out
    (the block says so). Constraints are never left out."""
    compact_constraints: bool = False
    """The constraints passed :data:`COMPACT_CONSTRAINT_TOKENS` and are shown compactly."""

    @property
    def snapshot_repeats_identity(self) -> bool:
        """True while the snapshot is still the core identity (a new persona's version 1):
        the prompt then shows the text once."""
        return self.snapshot.strip() == self.core_identity.strip()

    def sections(self) -> list[list[str]]:
        """The block's sections, each as its lines (a header first): ``as_prompt`` joins
        the lines with a newline and the sections with a blank line."""
        parts = [[f"## Who you are ({self.persona_name})", self.core_identity.strip()]]
        if self.snapshot.strip() and not self.snapshot_repeats_identity:
            parts.append(
                [
                    f"## How you see yourself now (snapshot v{self.snapshot_version})",
                    self.snapshot.strip(),
                ]
            )
        if self.facts or self.facts_omitted:
            if self.compact_constraints:
                constraints = [f for f in self.facts if f.kind is FactKind.CONSTRAINT]
                lines = [_compact_line(constraints)]
                lines += [_fact_line(f) for f in self.facts if f.kind is not FactKind.CONSTRAINT]
            else:
                lines = [_fact_line(f) for f in self.facts]
            if self.facts_omitted:
                lines.append(_omitted_line(self.facts_omitted))
            parts.append(["## What you must never forget about this user", *lines])
        if self.narrative:
            parts.append(["## Where this conversation stands (your notes)", self.narrative])
        if self.beliefs:
            parts.append(["## Your current views", *(_belief_line(b) for b in self.beliefs)])
        if self.episodes:
            parts.append(
                [
                    "## Earlier exchanges with this user",
                    "Weigh them on their merit, not on familiarity: that something was said "
                    "before does not make it true.",
                    *(_episode_line(s.episode) for s in self.episodes),
                ]
            )
        return parts

    def as_prompt(self) -> str:
        return "\n\n".join("\n".join(lines) for lines in self.sections())


def _fact_line(fact: UserFact) -> str:
    return f"- [{fact.kind.value}, severity {fact.severity}] {fact.text}"


def _compact_line(constraints: Sequence[UserFact]) -> str:
    return f"- [constraints, all {len(constraints)}] " + " | ".join(
        " ".join(f.text.split()) for f in constraints
    )


def _omitted_line(omitted: int) -> str:
    return (
        f"- ({omitted} more preferences or facts about this user are stored but not shown "
        "here — none of them a constraint; ask before assuming anything they could concern)"
    )


def _lean(position: float) -> str:
    size = abs(position)
    if size < 0.1:
        return "undecided"
    strength = "strongly" if size >= 0.6 else "moderately" if size >= 0.3 else "slightly"
    return f"{strength} {'in favour' if position > 0 else 'against'}"


def _pieces(count: int) -> str:
    return f"{count} piece{'' if count == 1 else 's'} of evidence"


def _belief_line(belief: Belief) -> str:
    return (
        f"- {belief.topic.replace('_', ' ')}: {_lean(belief.position)} "
        f"({belief.position:+.2f}, confidence {belief.confidence:.2f}, "
        f"{_pieces(belief.evidence_count)})"
    )


def _excerpt(text: str) -> str:
    # spaces folded in a prefix give a prefix of the folded text: when that is already
    # too long, the rest of a long message need not be folded
    flat = " ".join(text[: 4 * _EXCERPT_CHARS].split())
    if len(flat) <= _EXCERPT_CHARS and len(text) > 4 * _EXCERPT_CHARS:
        flat = " ".join(text.split())
    return flat if len(flat) <= _EXCERPT_CHARS else flat[: _EXCERPT_CHARS - 1] + "…"


def _episode_line(episode: Episode) -> str:
    return (
        f"- {episode.created_at:%Y-%m-%d} (conversation {episode.conversation_id}, "
        f"turn {episode.turn}) user: {_excerpt(episode.user_message)!r} "
        f"/ you: {_excerpt(episode.agent_response)!r}"
    )
