"""Pydantic models shared by every layer.

Models crossing a boundary are frozen: a function that changes something returns a new
object (``belief.model_copy(update=...)``). Times are timezone-aware UTC datetimes.
Interaction indexes (``interaction_count``, ``due_at``, ``last_reinforced_at``) count
*enriched* interactions of a persona, so a run that was degraded and later caught up ends
in the same state as one that never failed.

The commit objects (``EnrichmentCommit``, ``ReflectionCommit``, ``ThoughtCommit``) check
their own consistency when built: every part belongs to the commit's persona (and turn),
and a new version follows the one expected. A violation is a programming error at the
store's boundary, so it raises :class:`sonality.errors.ValidationError` itself (pydantic
passes exceptions other than ``ValueError`` through unwrapped).
"""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from sonality import errors

__all__ = [
    "ID_PATTERN",
    "AffectPlacement",
    "AffectState",
    "ApiKey",
    "AppliedMigration",
    "ArchivedConversation",
    "ArchivedEpisode",
    "ArchivedReflection",
    "ArchivedUser",
    "Belief",
    "BeliefStatus",
    "ComponentUsage",
    "ContextReads",
    "ConversationMind",
    "Direction",
    "EnrichmentBacklog",
    "EnrichmentCommit",
    "EnrichmentState",
    "EnrichmentStatus",
    "Episode",
    "EpisodeDraft",
    "Erasure",
    "ErasureCommit",
    "ErasureKind",
    "ErasureState",
    "EvidenceAssessment",
    "FactKind",
    "Frozen",
    "Generation",
    "GoalStatus",
    "HardGoal",
    "Identifier",
    "Insight",
    "InsightCommit",
    "InsightState",
    "InsightStatus",
    "KeyScope",
    "Lag",
    "MonologueEntry",
    "Narrative",
    "OldestPending",
    "PendingWork",
    "Persona",
    "PersonaArchive",
    "ProvenanceEdge",
    "ReasoningType",
    "Reflection",
    "ReflectionCommit",
    "ReflectionLease",
    "ReflectionOutcome",
    "ReflectionPoint",
    "ReplayedEpisode",
    "RuntimeMode",
    "SchemaStatus",
    "ScoredEpisode",
    "SelfModel",
    "Snapshot",
    "SnapshotRevert",
    "SnapshotVersion",
    "SoftGoal",
    "StagedInfluence",
    "StagedUpdate",
    "StoredEvidence",
    "TalkerReads",
    "ThinkerStatus",
    "ThinkerTurn",
    "ThoughtCommit",
    "TurnStart",
    "TurnUsage",
    "UserErasure",
    "UserErasureStatus",
    "UserFact",
    "UserFactDraft",
    "UserInfluence",
    "VectorIndexStatus",
    "normalise_topic",
    "validate_identifier",
]

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$"
"""Ids of personas, users, conversations and episodes: 1-128 characters, letters, digits
and ``_ . : @ -``, starting with a letter or digit. The whole id must match (``fullmatch``:
a trailing newline is not part of a valid id)."""

_ID_RE = re.compile(ID_PATTERN)
_TOPIC_RE = re.compile(r"[^a-z0-9]+")


def validate_identifier(value: str, *, kind: str = "id") -> str:
    """Return ``value`` if it is a valid id, else raise ``ValueError`` naming the rule."""
    if not isinstance(value, str) or not _ID_RE.fullmatch(value):
        raise ValueError(
            f"invalid {kind} {value!r}: use 1-128 letters, digits or _ . : @ -, "
            "starting with a letter or digit"
        )
    return value


def normalise_topic(raw: str) -> str:
    """Canonical topic key: lowercase ASCII words joined by ``_`` (``"Nuclear Power!"`` →
    ``"nuclear_power"``). Empty results raise ``ValueError``."""
    key = _TOPIC_RE.sub("_", raw.strip().lower()).strip("_")[:64].strip("_")
    if not key:
        raise ValueError(f"topic {raw!r} has no letters or digits")
    return key


Identifier = Annotated[str, AfterValidator(validate_identifier)]


class Frozen(BaseModel):
    """Base of the shared models: immutable, strict about unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Generation(Frozen):
    """How a model generates for one prompt: its sampling temperature and the most tokens
    it may write (a prompt file's front matter; None leaves the provider's default)."""

    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, ge=1)


class EnrichmentStatus(StrEnum):
    PENDING = "pending"
    ENRICHED = "enriched"
    FAILED = "failed"


class Direction(StrEnum):
    SUPPORTS = "supports"
    OPPOSES = "opposes"
    NEUTRAL = "neutral"

    @property
    def sign(self) -> int:
        return {"supports": 1, "opposes": -1, "neutral": 0}[self.value]


class ReasoningType(StrEnum):
    EMPIRICAL = "empirical"
    LOGICAL = "logical"
    EXPERT = "expert"
    ANECDOTAL = "anecdotal"
    EMOTIONAL = "emotional"
    SOCIAL_PRESSURE = "social_pressure"
    """Insistence, demands, threats, shaming: pressure instead of reasons."""
    APPEAL_TO_POPULARITY = "appeal_to_popularity"
    """"Everyone knows", "most people think": numbers instead of reasons."""
    NONE = "none"


class BeliefStatus(StrEnum):
    ACTIVE = "active"
    RETIRED = "retired"


class InsightStatus(StrEnum):
    PENDING = "pending"
    CONSUMED = "consumed"


class InsightState(StrEnum):
    """Where an enriched episode's insight extraction stands (``Episode.insight_status``)."""

    EXTRACTED = "extracted"
    """The model's insight reply was read (an insight, or none to draw)."""
    PENDING = "pending"
    """The insight could not be extracted yet; ``enrich`` and the worker retry it."""
    FAILED = "failed"
    """Every retry failed; ``sonality enrich --retry-failed`` tries again."""


class FactKind(StrEnum):
    CONSTRAINT = "constraint"
    PREFERENCE = "preference"
    FACT = "fact"


class RuntimeMode(StrEnum):
    """Which Thinker modules run after each answer of ``respond`` (MIRROR's ablations)."""

    BASELINE = "baseline"
    """The Talker alone, with the conversation window (episodes are still enriched)."""
    THREADS = "threads"
    """Inner monologue only; its latest threads are given to the Talker."""
    CONTROLLER = "controller"
    """Cognitive controller only, fed by the episode's enrichment."""
    FULL = "full"
    """Inner monologue, then the cognitive controller."""

    @property
    def monologue(self) -> bool:
        return self in (RuntimeMode.THREADS, RuntimeMode.FULL)

    @property
    def controller(self) -> bool:
        return self in (RuntimeMode.CONTROLLER, RuntimeMode.FULL)


class AffectPlacement(StrEnum):
    """Where the affective stages (seed 002) run: not at all, before the Talker answers
    (slower, more faithful) or in the Thinker, for the next turn (fast)."""

    OFF = "off"
    TALKER = "talker"
    THINKER = "thinker"


class SelfModel(Frozen):
    """The persona's semantic self-model (seed 002's fixed identity): traits, values and
    its own long-term goals, in short natural-language items. Set when the persona is
    created and never rewritten (reflection changes the snapshot, not this); the affect
    stages read it directly, without retrieval."""

    traits: tuple[str, ...] = ()
    values: tuple[str, ...] = ()
    goals: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.traits or self.values or self.goals)


class Persona(Frozen):
    id: Identifier
    name: str
    core_identity: str
    interaction_count: int = 0
    last_reflection_at: int = 0
    """Interaction index of the last committed reflection."""
    disagreement_window: tuple[bool, ...] = ()
    """The last (at most 50) enriched interactions: did the user disagree with a held stance?"""
    shift_since_reflection: float = 0.0
    """Sum of |committed position changes| since the last reflection (event trigger)."""
    last_reflection_attempt_at: int = 0
    """Interaction index of the last reflection attempt, committed or not: a rejected or
    failed attempt starts a cooldown too, so it is not retried on every scan."""
    created_at: datetime
    runtime_mode: RuntimeMode = RuntimeMode.FULL
    """Default Thinker configuration of ``respond`` (overridable per call)."""
    affect: AffectPlacement = AffectPlacement.OFF
    """Whether and where the affective stages run in ``respond``."""
    self_model: SelfModel = SelfModel()
    """Traits, values and goals fixed at creation (immutable, like ``core_identity``)."""
    incarnation: str = ""
    """Random, made when the persona is created (or imported): API keys grant a persona
    incarnation, so a persona created later under the same id is a stranger to them. Not
    part of an export."""
    review_from_version: int | None = None
    """Only in stores written before erasures reverted snapshots at once: snapshot versions
    from this one on may quote erased material. ``migrate`` reverts them (as an erasure
    does now) and clears it; a reflection meeting it rewrites from the last version before
    them, or from the core identity. None otherwise."""

    @property
    def disagreement_rate(self) -> float:
        w = self.disagreement_window
        return sum(w) / len(w) if w else 0.0


class Snapshot(Frozen):
    persona_id: Identifier
    version: int
    text: str
    reason: str = "initial"
    """Why this version exists: ``initial``, ``reflection``, ``rollback:<N>`` (the text of
    version N again, by ``rollback_snapshot`` or by an erasure that removed the versions
    after it) or ``rollback:core`` (an erasure found no clean version: the core identity)."""
    created_at: datetime


class EpisodeDraft(Frozen):
    """A raw exchange as the application handed it over, before enrichment."""

    id: Identifier
    persona_id: Identifier
    user_id: Identifier
    conversation_id: Identifier
    user_message: str
    agent_response: str
    created_at: datetime
    embedding: tuple[float, ...] | None = None


class EvidenceAssessment(Frozen):
    """How strong the user's message is as evidence, judged in the third person."""

    score: float = Field(ge=0.0, le=1.0)
    reasoning_type: ReasoningType = ReasoningType.NONE
    source_reliability: float = Field(default=0.0, ge=0.0, le=1.0)
    internal_consistency: float = Field(default=0.0, ge=0.0, le=1.0)
    novelty: float = Field(default=0.0, ge=0.0, le=1.0)
    topics: tuple[str, ...] = ()
    direction: Direction = Direction.NEUTRAL


class Episode(Frozen):
    id: Identifier
    persona_id: Identifier
    user_id: Identifier
    conversation_id: Identifier
    turn: int
    """Position in the conversation, 1-based."""
    seq: int
    """Position among all the persona's episodes, 1-based: the order of enrichment."""
    user_message: str
    agent_response: str
    created_at: datetime
    enrichment_status: EnrichmentStatus = EnrichmentStatus.PENDING
    enrichment_attempts: int = 0
    enrichment_error: str | None = None
    interaction_index: int | None = None
    """Set when enriched: the persona's interaction count after this exchange."""
    evidence: EvidenceAssessment | None = None
    defaulted: tuple[str, ...] = ()
    """Enrichment fields the model missed or got out of range, replaced by defaults."""
    topics: tuple[str, ...] = ()
    importance: int | None = None
    insight: str | None = None
    insight_status: InsightState | None = None
    """Set when enriched: whether the insight part is extracted or still to retry."""
    insight_attempts: int = 0
    """Failed insight retries since the episode was enriched."""
    disagreement: bool | None = None


class ScoredEpisode(Frozen):
    episode: Episode
    similarity: float
    recency: float
    importance: float
    score: float


class Belief(Frozen):
    persona_id: Identifier
    topic: str
    position: float = Field(ge=-1.0, le=1.0)
    confidence: float = Field(ge=0.0, le=1.0)
    """The confidence now: earned by evidence, then faded by decay (``core.decay``)."""
    evidence_count: int = Field(ge=0)
    uncertainty: float = Field(ge=0.0, le=1.0)
    last_reinforced_at: int
    """Interaction index of the last committed update."""
    status: BeliefStatus = BeliefStatus.ACTIVE
    created_at: datetime
    updated_at: datetime
    moves_at: tuple[int, ...] = ()
    """Interaction indexes of the commits that moved the position within the last
    influence window (``core.opinion``: the cap on the net move per window)."""
    moves_from: tuple[float, ...] = ()
    """The position held before each move in ``moves_at``, in the same order."""
    reinforced_confidence: float = Field(default=0.0, ge=0.0, le=1.0)
    """The confidence the belief had when it was last reinforced: what decay starts from,
    so decay is a function of this and the gap, never of an earlier decayed value. Left
    out (or None), it is ``confidence``: a belief built from new evidence."""

    @model_validator(mode="before")
    @classmethod
    def _reinforced_is_current_by_default(cls, data: Any) -> Any:
        missing = isinstance(data, dict) and data.get("reinforced_confidence") is None
        if missing and "confidence" in data:
            return {**data, "reinforced_confidence": data["confidence"]}
        return data

    @model_validator(mode="after")
    def _moves_pair_up(self) -> Self:
        if len(self.moves_at) != len(self.moves_from):
            raise ValueError("moves_at and moves_from must have the same length")
        return self


class StagedUpdate(Frozen):
    """A signed opinion delta waiting out its cooling period."""

    id: str
    persona_id: Identifier
    topic: str
    signed_delta: float
    staged_at: int
    due_at: int
    episode_id: Identifier
    committed_at: int | None = None


class ProvenanceEdge(Frozen):
    """``(:Episode)-[:SUPPORTS|CONTRADICTS {delta}]->(:Belief)`` written when a staged delta
    commits into the belief."""

    episode_id: Identifier
    topic: str
    delta: float
    committed_at: int

    @property
    def kind(self) -> str:
        """The edge type: the pole of the topic the delta pushed toward."""
        return "SUPPORTS" if self.delta >= 0 else "CONTRADICTS"

    def side(self, position: float) -> str:
        """``for`` or ``against`` the stance at ``position`` (the belief's position now):
        whether the delta pushed the way the belief leans; ``no stance`` at 0."""
        if position == 0 or self.delta == 0:
            return "no stance"
        return "for" if (self.delta > 0) == (position > 0) else "against"


class Insight(Frozen):
    id: str
    persona_id: Identifier
    episode_id: Identifier
    text: str
    status: InsightStatus = InsightStatus.PENDING
    created_at: datetime


class UserInfluence(Frozen):
    """One staged delta drawn from a user's episode, with that episode's message: what
    the per-user influence budget and the repetition rule read (``core.influence``)."""

    episode_id: Identifier
    topic: str
    signed_delta: float
    staged_at: int
    message: str


class StagedInfluence(UserInfluence):
    """A :class:`UserInfluence` row with the user it counts against and the staged delta's
    id (what orders rows of one interaction): the form a backlog pass carries in memory."""

    user_id: Identifier
    staged_id: str


class UserFactDraft(Frozen):
    kind: FactKind
    text: str
    severity: int = Field(default=1, ge=1, le=5)
    """1 = trivia, 5 = safety-critical (allergy, trauma trigger, phobia, physical limit)."""
    same_as: str | None = None
    """The id of a fact the user already has that this one restates in other words (the
    model said so): the draft merges into it instead of becoming a second fact."""


class UserFact(Frozen):
    id: str
    persona_id: Identifier
    user_id: Identifier
    kind: FactKind
    text: str
    severity: int = Field(ge=1, le=5)
    episode_id: Identifier
    """The user's exchange the fact comes from."""
    created_at: datetime
    retracted: bool = False
    also_from: tuple[Identifier, ...] = ()
    """Other exchanges of the user that back the fact (a correction merged a fact drawn
    from them into this one): erasing ``episode_id`` leaves the fact backed by these."""


class EnrichmentState(Frozen):
    """Everything planning the enrichment of a persona's next episodes reads, taken in one
    read (``Store.enrichment_state``) and then carried from one episode to the next in
    memory (``core.backlog``), as the one-by-one path would read it again each time."""

    persona: Persona
    beliefs: tuple[Belief, ...]
    """The beliefs read, retired ones included: every one (``enrichment_state``), or none
    (``enrichment_backlog``) and then those of the topics planning needs."""
    staged: tuple[StagedUpdate, ...]
    """The uncommitted staged deltas."""
    facts: tuple[UserFact, ...]
    """The active facts of the users asked for."""
    influence: tuple[StagedInfluence, ...]
    """The staged deltas of those users' episodes staged after the interaction asked for."""


class EnrichmentBacklog(Frozen):
    """What an enrichment pass reads before it asks the model, in one read
    (``Store.enrichment_backlog``): the persona's oldest pending episodes and the state
    their commits are planned from."""

    episodes: tuple[Episode, ...]
    """Up to the limit asked for, oldest first (by ``seq``): the order enrichment follows."""
    state: EnrichmentState
    """The persona and what planning reads, for the episodes' users and the influence
    window of the persona's next interaction (``enrichment_state``)."""
    pending: int | None = None
    """How many of the persona's episodes are pending in all (when asked for)."""

    @property
    def persona(self) -> Persona:
        return self.state.persona


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


class TalkerReads(Frozen):
    """Everything the Talker reads before it speaks, in one read transaction
    (``RuntimeStore.talker_reads``)."""

    context: ContextReads
    mind: ConversationMind
    window: tuple[Episode, ...]
    """The conversation's newest episodes, oldest first, led by its first episode when
    that is not among them."""
    affect: AffectState | None = None
    """The persona's affect state towards the user (None: none stored)."""


class EnrichmentCommit(Frozen):
    """Everything one enriched interaction changes, applied by the store in one transaction.

    The store checks ``expected_interaction_count`` against the persona, that the
    episode is still pending and (when given) ``expected_reflection_at``; if any moved, it
    raises ``ConflictError`` and writes nothing.
    """

    persona_id: Identifier
    episode_id: Identifier
    expected_interaction_count: int
    expected_reflection_at: int | None = None
    """The persona's ``last_reflection_at`` the plan read: a reflection committed since
    (it decays beliefs the plan may have read) refuses the commit. None: not checked."""
    interaction_count: int
    disagreement_window: tuple[bool, ...]
    evidence: EvidenceAssessment | None
    defaulted: tuple[str, ...]
    topics: tuple[str, ...]
    importance: int
    disagreement: bool
    insight: Insight | None
    insight_pending: bool = False
    """The insight could not be extracted now: the episode's ``insight_status`` becomes
    pending and ``enrich`` retries that part alone later (``InsightCommit``)."""
    facts: tuple[UserFact, ...]
    merged_facts: tuple[UserFact, ...] = ()
    """Facts the user already had that this interaction disclosed again (in the same or
    other words): their new severity and ``also_from`` (this episode added), nothing else."""
    staged: tuple[StagedUpdate, ...]
    """New staged deltas born in this interaction."""
    committed_staged_ids: tuple[str, ...]
    """Earlier staged deltas that came due now and were netted into beliefs."""
    beliefs: tuple[Belief, ...]
    """New state of every belief touched (created or updated)."""
    provenance: tuple[ProvenanceEdge, ...]
    shift_total: float = 0.0
    """Sum of |position change| this interaction (feeds the event trigger)."""

    @model_validator(mode="after")
    def _one_persona(self) -> Self:
        owners = {b.persona_id for b in self.beliefs}
        owners |= {s.persona_id for s in self.staged} | {f.persona_id for f in self.facts}
        owners |= {f.persona_id for f in self.merged_facts}
        owners |= {self.insight.persona_id} if self.insight is not None else set()
        if owners - {self.persona_id}:
            raise errors.ValidationError(
                "an enrichment commit may only touch its own persona", persona_id=self.persona_id
            )
        return self


class InsightCommit(Frozen):
    """A retried insight extraction, applied by the store in one transaction: the
    episode's insight text and ``insight_status`` (extracted) and, when there is one, the
    ``Insight`` it yielded. The store checks that the episode's insight is still pending
    (``ConflictError`` otherwise) and writes nothing if not."""

    persona_id: Identifier
    episode_id: Identifier
    insight: Insight | None

    @model_validator(mode="after")
    def _own_episode(self) -> Self:
        if self.insight is not None and (
            self.insight.persona_id,
            self.insight.episode_id,
        ) != (self.persona_id, self.episode_id):
            raise errors.ValidationError(
                "an insight commit may only touch its own episode", persona_id=self.persona_id
            )
        return self


class AppliedMigration(Frozen):
    version: int
    description: str
    checksum: str
    applied_at: datetime


class VectorIndexStatus(Frozen):
    """Neo4j's episode vector index: what the setting asks for, what the server has."""

    wanted: bool
    """``SONALITY_NEO4J_VECTOR_INDEX`` asks for it on this server (``auto``: on 2026.x)."""
    setting: str = "auto"
    """The setting itself: ``auto``, ``on`` or ``off``."""
    state: str | None = None
    """The server's state of the index (``ONLINE``, ``POPULATING``…); None: none exists."""
    scoped: bool = False
    """It filters by persona and user inside the index (Neo4j 2026.x)."""
    dimensions: int | None = None

    @property
    def matches(self) -> bool:
        """The server has the index exactly when the setting asks for it."""
        return self.wanted == (self.state is not None)


class SchemaStatus(Frozen):
    backend: str
    applied: tuple[AppliedMigration, ...]
    pending: tuple[str, ...]
    """Names of migration steps not yet applied, in order."""
    vector_index: VectorIndexStatus | None = None
    """Neo4j only (``sonality migrate`` makes it match the setting)."""

    @property
    def current(self) -> bool:
        return not self.pending


# reflection ------------------------------------------------------------------------------


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


# dual-process runtime (MIRROR) and affect (seed 002) ---------------------------------------


class ThinkerStatus(StrEnum):
    """Where the Thinker is with one responded turn."""

    PENDING = "pending"
    """Scheduled (or running); not committed yet."""
    DONE = "done"
    """Thought about and committed (or nothing to think about: baseline without affect)."""
    FAILED = "failed"
    """A step failed; nothing was written; the retry job (or the next turn) retries it."""
    ABANDONED = "abandoned"
    """Given up after too many invalid replies; later turns go on without it."""


class ThinkerTurn(Frozen):
    """The Thinker's bookkeeping for one turn answered by ``respond``."""

    persona_id: Identifier
    episode_id: Identifier
    conversation_id: Identifier
    user_id: Identifier
    turn: int = Field(ge=1)
    mode: RuntimeMode
    affect: AffectPlacement = AffectPlacement.OFF
    status: ThinkerStatus = ThinkerStatus.PENDING
    attempts: int = Field(default=0, ge=0)
    error: str | None = None
    narrative_version_used: int = Field(default=0, ge=0)
    """The committed narrative version the Talker answered with (0: none yet)."""
    created_at: datetime
    updated_at: datetime


class OldestPending(Frozen):
    """The heads of a persona's two queues of model work, as the store holds them: when
    the episode enrichment takes next was recorded, and when the oldest turn the Thinker
    has not thought about was answered (None: that queue is empty)."""

    persona_id: str
    episode_at: datetime | None = None
    """``created_at`` of the pending episode of lowest ``seq`` (enrichment goes in order)."""
    turn_at: datetime | None = None
    """``created_at`` of the oldest ``pending`` Thinker turn, any conversation."""


class Lag(Frozen):
    """How far behind a persona's background work is: the age of each queue's head."""

    persona_id: str
    episode_seconds: float = Field(ge=0)
    """Age of the oldest pending episode (0: none pending)."""
    turn_seconds: float = Field(ge=0)
    """Age of the oldest unthought Thinker turn (0: none pending)."""

    @classmethod
    def at(cls, oldest: OldestPending, now: datetime) -> Lag:
        """The lag of ``oldest`` as of ``now`` (an age never goes below 0)."""

        def age(then: datetime | None) -> float:
            return 0.0 if then is None else max(0.0, (now - then).total_seconds())

        return cls(
            persona_id=oldest.persona_id,
            episode_seconds=age(oldest.episode_at),
            turn_seconds=age(oldest.turn_at),
        )

    @property
    def seconds(self) -> float:
        """The larger of the two ages."""
        return max(self.episode_seconds, self.turn_seconds)


class PendingWork(Frozen):
    """Background work the store still holds as pending, whichever process will do it."""

    episodes: int = Field(ge=0)
    """The persona's episodes not enriched yet (``pending``; ``failed`` ones not counted)."""
    turns: int = Field(ge=0)
    """Thinker turns not thought about yet (``pending``), of the conversation asked about
    or of the whole persona."""

    @property
    def none(self) -> bool:
        return self.episodes == 0 and self.turns == 0


class Narrative(Frozen):
    """One version of a conversation's internal narrative (the cognitive controller's
    first-person state, regenerated after each thought-about turn)."""

    persona_id: Identifier
    conversation_id: Identifier
    user_id: Identifier
    version: int = Field(ge=1)
    text: str
    turn: int = Field(ge=1)
    """The turn after which this version was regenerated."""
    episode_id: Identifier
    tokens: int = Field(ge=0)
    created_at: datetime


class MonologueEntry(Frozen):
    """One inner-monologue entry: the three threads thought after one turn."""

    persona_id: Identifier
    conversation_id: Identifier
    user_id: Identifier
    turn: int = Field(ge=1)
    episode_id: Identifier
    reasoning: str
    memory: str
    goal: str
    tokens: int = Field(ge=0)
    """Tokens of the entry as it is shown back to the monologue (its history cost)."""
    created_at: datetime


class ConversationMind(Frozen):
    """The Thinker's state of one conversation: current narrative, last thought-about
    turn, and the bounded monologue history (oldest first)."""

    persona_id: Identifier
    conversation_id: Identifier
    narrative: Narrative | None = None
    thought_turn: int = 0
    """The last turn whose thought was committed (0: none)."""
    monologue: tuple[MonologueEntry, ...] = ()

    @property
    def narrative_version(self) -> int:
        return self.narrative.version if self.narrative is not None else 0

    @property
    def monologue_tokens(self) -> int:
        return sum(entry.tokens for entry in self.monologue)


class GoalStatus(StrEnum):
    PENDING = "pending"
    """A hard goal of a later level, not pursued yet."""
    ACTIVE = "active"
    COMPLETED = "completed"
    FAILED = "failed"


class HardGoal(Frozen):
    """A concrete, binary objective; level N+1 opens only when level N is all completed
    or failed (``sonality.core.goals``)."""

    level: int = Field(ge=1)
    text: str
    status: GoalStatus = GoalStatus.PENDING


class SoftGoal(Frozen):
    """A continuous relational directive; it never completes, its progress is a note."""

    text: str
    progress: str = ""


class AffectState(Frozen):
    """The persona's affective state towards one user, in natural language (seed 002)."""

    persona_id: Identifier
    user_id: Identifier
    version: int = Field(default=0, ge=0)
    """Compare-and-swap token: a write stores ``version`` = stored version + 1."""
    emotional_state: str
    relationship: str
    hard_goals: tuple[HardGoal, ...] = ()
    soft_goals: tuple[SoftGoal, ...] = ()
    interpretation: str | None = None
    """The last user message as understood: first person, objective."""
    appraisal: str | None = None
    """The last visceral, private reaction (felt before planning)."""
    plan: str | None = None
    """What the persona means to do next, bound by the appraisal."""
    episode_id: Identifier | None = None
    """The episode that last changed this state."""
    updated_at: datetime


class ThoughtCommit(Frozen):
    """Everything one Thinker turn writes, applied by the store in one transaction.

    The store checks that the conversation's ``thought_turn`` and narrative version are
    still the expected ones, that the turn is not done already and (when ``affect`` is
    set) that the stored affect version is ``affect.version - 1``; otherwise it raises
    ``ConflictError`` and writes nothing. A late Thinker never overwrites newer state.
    """

    persona_id: Identifier
    conversation_id: Identifier
    user_id: Identifier
    episode_id: Identifier
    turn: int = Field(ge=1)
    expected_thought_turn: int = Field(ge=0)
    expected_narrative_version: int = Field(ge=0)
    monologue: MonologueEntry | None = None
    drop_monologue_turns: tuple[int, ...] = ()
    """Older entries the history bound drops, deleted in the same transaction."""
    narrative: Narrative | None = None
    """The new version (``expected_narrative_version + 1``), or None to keep the current."""
    keep_narratives: int = Field(default=50, ge=1)
    """Narrative versions kept per conversation (older ones are pruned)."""
    affect: AffectState | None = None
    committed_at: datetime

    @model_validator(mode="after")
    def _one_turn(self) -> Self:
        key = (self.persona_id, self.conversation_id, self.episode_id, self.turn)
        parts = [x for x in (self.monologue, self.narrative) if x is not None]
        if any((x.persona_id, x.conversation_id, x.episode_id, x.turn) != key for x in parts) or (
            self.affect is not None and self.affect.persona_id != self.persona_id
        ):
            raise errors.ValidationError("a thought commit mixes turns", persona_id=self.persona_id)
        if (
            self.narrative is not None
            and self.narrative.version != self.expected_narrative_version + 1
        ):
            raise errors.ValidationError(
                "the new narrative must be version current + 1",
                persona_id=self.persona_id,
                version=self.narrative.version,
            )
        return self


class TurnUsage(Frozen):
    """Model usage of one turn by one component (talker, monologue, controller,
    enrichment, affect)."""

    persona_id: Identifier
    conversation_id: Identifier
    episode_id: Identifier
    turn: int = Field(ge=1)
    component: str
    calls: int = Field(default=0, ge=0)
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cost_usd: float = Field(default=0.0, ge=0)
    unpriced_calls: int = Field(default=0, ge=0)


class ComponentUsage(Frozen):
    """Model usage of one component before the turn it belongs to is known."""

    component: str
    calls: int = Field(default=0, ge=0)
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cost_usd: float = Field(default=0.0, ge=0)
    unpriced_calls: int = Field(default=0, ge=0)


class TurnStart(Frozen):
    """The Thinker's bookkeeping for a turn ``respond`` registers with its exchange
    (``RuntimeStore.append_turn``): ids and turn number are those of the stored episode."""

    mode: RuntimeMode
    affect: AffectPlacement = AffectPlacement.OFF
    status: ThinkerStatus = ThinkerStatus.PENDING
    narrative_version_used: int = Field(default=0, ge=0)
    created_at: datetime
    usage: tuple[ComponentUsage, ...] = ()
    """The Talker's usage by component, booked on the turn."""

    def turn_of(self, episode: Episode) -> ThinkerTurn:
        return ThinkerTurn(
            persona_id=episode.persona_id,
            episode_id=episode.id,
            conversation_id=episode.conversation_id,
            user_id=episode.user_id,
            turn=episode.turn,
            mode=self.mode,
            affect=self.affect,
            status=self.status,
            narrative_version_used=self.narrative_version_used,
            created_at=self.created_at,
            updated_at=self.created_at,
        )

    def usage_of(self, episode: Episode) -> list[TurnUsage]:
        return [
            TurnUsage(
                persona_id=episode.persona_id,
                conversation_id=episode.conversation_id,
                episode_id=episode.id,
                turn=episode.turn,
                **u.model_dump(),
            )
            for u in self.usage
        ]


class KeyScope(StrEnum):
    """What an API key may do, each scope including the ones before it: ``read`` the
    persona's memory, ``write`` to it (record, respond, reflect, facts), ``admin`` manage
    personas and keys. ``metrics`` stands apart: it reads the server's ``/metrics`` and
    nothing else (a scraper's key), and names no personas."""

    READ = "read"
    WRITE = "write"
    ADMIN = "admin"
    METRICS = "metrics"

    def allows(self, needed: KeyScope) -> bool:
        if KeyScope.METRICS in (self, needed):
            return self is needed or self is KeyScope.ADMIN
        order = (KeyScope.READ, KeyScope.WRITE, KeyScope.ADMIN)
        return order.index(self) >= order.index(needed)


class ApiKey(Frozen):
    """An API key as stored: its public id and the SHA-256 of its secret, never the
    secret. ``persona_ids`` are the personas it sees; empty means every persona, which
    only an admin key may have."""

    id: Identifier
    secret_hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    scope: KeyScope
    persona_ids: tuple[Identifier, ...] = ()
    name: str = ""
    created_at: datetime
    revoked_at: datetime | None = None
    incarnations: tuple[str, ...] = ()
    """The incarnation (``Persona.incarnation``) of each of ``persona_ids`` when the grant
    was made, in the same order: a persona of that id made later is not granted."""

    @model_validator(mode="after")
    def _only_admin_is_global(self) -> Self:
        if self.scope is KeyScope.METRICS and self.persona_ids:
            raise errors.ValidationError("a metrics key names no personas", scope="metrics")
        if not self.persona_ids and self.scope not in (KeyScope.ADMIN, KeyScope.METRICS):
            raise errors.ValidationError(
                "a read or write key names its personas", scope=self.scope.value
            )
        if self.incarnations and len(self.incarnations) != len(self.persona_ids):
            raise errors.ValidationError("a key names one incarnation per persona", key_id=self.id)
        return self

    def sees(self, persona_id: str) -> bool:
        """Whether the key may touch ``persona_id`` at all."""
        return not self.persona_ids or persona_id in self.persona_ids

    def grants(self, persona: Persona) -> bool:
        """Whether the key may touch this very ``persona`` (its incarnation, not only its
        id): a global admin key any, a persona-bound key only the incarnations it names."""
        if not self.persona_ids:
            return True
        bound = dict(zip(self.persona_ids, self.incarnations, strict=False))
        return bound.get(persona.id) == persona.incarnation != ""


# erasure: forgetting a user or an exchange, and undoing its effect ------------------------


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


# archive: one persona as data, for export, import and copy --------------------------------


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
        ]
        if any(getattr(part, "persona_id", pid) != pid for part in parts):
            raise errors.ValidationError("an archive holds one persona's data", persona_id=pid)
        return self
