"""The ports: what the mind needs from the outside world, as structural Protocols.

Adapters (``storage.neo4j.store.Neo4jStore``, ``storage.sqlite.store.SqliteStore``,
``llm.litellm_llm.LiteLLM``, ``testing.ScriptedLLM`` …) satisfy them without inheriting.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from sonality.models import (
    AffectPlacement,
    AffectState,
    ApiKey,
    Belief,
    ContextReads,
    ConversationMind,
    EnrichmentBacklog,
    EnrichmentCommit,
    EnrichmentState,
    Episode,
    EpisodeDraft,
    Erasure,
    ErasureCommit,
    ErasureState,
    Generation,
    Insight,
    InsightCommit,
    InsightState,
    InsightStatus,
    Narrative,
    OldestPending,
    Persona,
    PersonaArchive,
    ProvenanceEdge,
    Reflection,
    ReflectionCommit,
    ReflectionLease,
    RuntimeMode,
    SchemaStatus,
    Snapshot,
    StagedUpdate,
    TalkerReads,
    ThinkerTurn,
    ThoughtCommit,
    TurnStart,
    TurnUsage,
    UserFact,
    UserInfluence,
)

__all__ = [
    "LLM",
    "ArchiveStore",
    "Clock",
    "ContextStore",
    "Embedder",
    "EnrichmentStore",
    "EpisodeStore",
    "ErasureStore",
    "KeyStore",
    "PersonaStore",
    "PromptSource",
    "ReflectionStore",
    "RuntimeStore",
    "SchemaStore",
    "Store",
    "StreamingLLM",
    "UsageSink",
]

T = TypeVar("T", bound=BaseModel)


@runtime_checkable
class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware (UTC)."""
        ...


@runtime_checkable
class Embedder(Protocol):
    dimensions: int
    local: bool
    """True when embedding needs no network (it may run before the episode is durable)."""

    async def embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        """One unit-length vector of ``dimensions`` floats per text."""
        ...


@runtime_checkable
class PromptSource(Protocol):
    """The prompt files an LLM adapter renders (``sonality.llm.prompts.PromptLibrary``)."""

    def fixed_text(self, name: str) -> str:
        """Prompt ``name``'s own text with its placeholders unfilled: what a token budget
        reserves for the prompt before any variable is added."""
        ...

    def generation(self, name: str) -> Generation:
        """How the model generates for prompt ``name`` (temperature, ``max_tokens``): what
        the adapter sends with every call of it, and what output budgets add up."""
        ...


@runtime_checkable
class UsageSink(Protocol):
    """Where an LLM adapter counts every model reply (``sonality.llm.usage.UsageMeter``).

    A ``UsageMeter`` also books each reply on the turn being metered
    (``sonality.llm.usage.metering``), which is how ``respond`` accounts per turn and
    component; another sink keeps its own totals and leaves per-turn usage empty."""

    def record(
        self,
        component: str,
        *,
        input_tokens: int,
        output_tokens: int,
        cost_usd: float | None,
        latency_ms: float,
    ) -> None:
        """Count one reply of ``component`` (``cost_usd=None``: price unknown)."""
        ...


@runtime_checkable
class LLM(Protocol):
    """A model behind prompt files: structured (validated) and plain-text calls.

    ``prompts`` are the files it renders (the runtime sizes its budgets from them) and
    ``usage`` counts every reply it receives, per component. Every call of a prompt is made
    with that prompt's generation settings (``prompts.generation(name)``): its temperature,
    and ``max_tokens`` as a bound on everything the call makes the model write — a
    structured call's re-ask included."""

    model: str | None

    @property
    def prompts(self) -> PromptSource: ...
    @property
    def usage(self) -> UsageSink: ...

    async def structured(
        self,
        prompt: str,
        variables: Mapping[str, Any],
        schema: type[T],
        *,
        component: str,
        history: Sequence[str] = (),
    ) -> T:
        """Render prompt file ``prompt`` with ``variables``, ask for JSON matching ``schema``,
        validate (re-asking once with the validation error) and return the parsed object.
        ``history`` is the model's own earlier replies, oldest first, sent as its previous
        (assistant) turns between the system message and the prompt's user message (the
        inner monologue talks to itself this way). Raises ``LLMUnavailable`` or
        ``LLMResponseInvalid`` (also when the bound left no room for the re-ask)."""
        ...

    async def text(self, prompt: str, variables: Mapping[str, Any], *, component: str) -> str:
        """Render prompt file ``prompt`` and return the model's plain-text reply."""
        ...


@runtime_checkable
class StreamingLLM(Protocol):
    """An :class:`LLM` that can also stream a plain-text reply as the model writes it (the
    Talker streams through it when a caller asks; an adapter without it answers whole)."""

    def stream_text(
        self, prompt: str, variables: Mapping[str, Any], *, component: str
    ) -> AsyncIterator[str]:
        """Render prompt file ``prompt`` and yield the model's plain-text reply in pieces as
        they come; raises as :meth:`LLM.text` does (an empty reply at the end)."""
        ...


@runtime_checkable
class SchemaStore(Protocol):
    """The store as a whole: its backend, connection, schema and maintenance."""

    backend: str

    async def close(self) -> None: ...
    async def ping(self) -> None:
        """Raise ``StoreUnavailable`` when the store cannot be reached."""
        ...

    async def schema_status(self) -> SchemaStatus: ...
    async def migrate(self) -> list[str]:
        """Apply pending schema steps in order; return the names applied (empty if none).
        Raises ``MigrationChecksumMismatch`` when an applied step was edited."""
        ...

    async def delete_all(self) -> None:
        """Remove all data of every persona (schema stays). For tests."""
        ...


@runtime_checkable
class PersonaStore(Protocol):
    """Personas and their versioned snapshots."""

    async def create_persona(self, persona: Persona, snapshot: Snapshot) -> Persona:
        """Create the persona with its first snapshot. ``AlreadyExists`` if the id is taken."""
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


@runtime_checkable
class EpisodeStore(Protocol):
    """The raw exchanges: appended first, listed, searched by similarity."""

    async def append_episode(self, draft: EpisodeDraft) -> tuple[Episode, bool]:
        """Store the raw exchange (enrichment pending), chained by NEXT after the
        conversation's previous episode. Idempotent on ``draft.id``: a second call returns
        the stored episode and ``False``; an id already used by another persona, user or
        conversation raises ``ConflictError``."""
        ...

    async def append_episodes(self, drafts: Sequence[EpisodeDraft]) -> list[bool]:
        """Bulk load: store up to 10,000 drafts of one persona in one transaction, each
        as the next turn of its conversation in batch order (idempotent per id like
        :meth:`append_episode`). Returns, per draft, whether it was created."""
        ...

    async def set_episode_embedding(
        self, persona_id: str, episode_id: str, embedding: Sequence[float]
    ) -> None: ...

    async def answer_episode(self, persona_id: str, episode_id: str, response: str) -> Episode:
        """Give an exchange stored with an empty response its response, and return it
        (``checks.answered``: the same response again changes nothing, another one is a
        ``ConflictError``; ``NotFoundError`` when unknown)."""
        ...

    async def get_episode(self, persona_id: str, episode_id: str) -> Episode: ...

    async def conversation_chain(self, persona_id: str, conversation_id: str) -> list[str]:
        """Episode ids of a conversation in the order of its NEXT chain, from the first."""
        ...

    async def list_episodes(
        self,
        persona_id: str,
        *,
        user_id: str | None = None,
        conversation_id: str | None = None,
        limit: int = 20,
        since_interaction: int | None = None,
        before: int | None = None,
    ) -> list[Episode]:
        """Most recent first (by ``seq``). ``since_interaction`` keeps enriched episodes
        with ``interaction_index`` greater than it; ``before`` (a cursor: the ``seq`` of
        the last episode of the previous page) keeps those with a smaller ``seq``. Read
        through an index from the cursor on: a page costs its length, wherever it is."""
        ...

    async def list_pending_episodes(self, persona_id: str, *, limit: int = 100) -> list[Episode]:
        """Episodes still ``pending``, oldest first (by ``seq``)."""
        ...

    async def count_episodes(self, persona_id: str) -> dict[str, int]:
        """Counts by enrichment status (``pending``, ``enriched``, ``failed``)."""
        ...

    async def unembedded_episodes(self, persona_id: str, *, limit: int = 100) -> list[Episode]:
        """Episodes stored without an embedding (a remote embedder failed when they were
        recorded), oldest first (by ``seq``): what the backfill embeds."""
        ...

    async def count_unembedded(self, persona_id: str) -> int:
        """How many of the persona's episodes have no embedding."""
        ...

    async def oldest_pending(self, persona_ids: Sequence[str]) -> list[OldestPending]:
        """For each persona of ``persona_ids`` (in that order; an unknown one has empty
        queues), when its next pending episode and its oldest pending Thinker turn were
        recorded: one read, an index seek per persona and queue, whatever the backlog."""
        ...

    async def similar_episodes(
        self, persona_id: str, user_id: str, embedding: Sequence[float], *, k: int
    ) -> list[tuple[Episode, float]]:
        """Up to ``k`` of the user's episodes with cosine similarity, best first."""
        ...

    async def mark_enrichment_attempt(
        self, persona_id: str, episode_id: str, *, error: str, failed: bool, counted: bool = True
    ) -> None:
        """Record a failed enrichment attempt's error; count it unless ``counted`` is
        False (an outage costs no attempt). Status stays pending unless ``failed``."""
        ...

    async def list_failed_episodes(self, persona_id: str, *, limit: int = 20) -> list[Episode]:
        """Episodes marked ``failed``, oldest first (by ``seq``)."""
        ...

    async def requeue_failed(self, persona_id: str, *, below_attempts: int | None = None) -> int:
        """Put ``failed`` episodes back to ``pending`` — those with fewer counted attempts
        than ``below_attempts``, or all when None — keeping their attempt counts; return
        how many."""
        ...


@runtime_checkable
class EnrichmentStore(Protocol):
    """What enrichment commits, and the reads of it: beliefs and their provenance,
    staged updates, insights, user facts."""

    async def commit_enrichment(self, commit: EnrichmentCommit) -> None:
        """Apply everything one interaction changed, in one transaction."""
        ...

    async def commit_enrichments(self, commits: Sequence[EnrichmentCommit]) -> list[Episode]:
        """Apply consecutive enrichment commits of one persona (a backlog chunk, planned
        in order from one ``enrichment_state``) in one transaction, each checked as
        ``commit_enrichment`` checks it; a refusal of any (``ConflictError`` …) rolls them
        all back. Returns the enriched episodes as stored, in the commits' order."""
        ...

    async def enrichment_backlog(
        self, persona_id: str, *, limit: int, influence_window: int, count: bool = False
    ) -> EnrichmentBacklog:
        """In one read: the persona's oldest ``limit`` pending episodes (by ``seq``), the
        state their commits are planned from (``enrichment_state`` for their users, since
        the persona's next interaction minus ``influence_window``, but no belief: planning
        reads those by topic, ``enrichment_beliefs``) and with ``count`` how many are
        pending in all. ``PersonaNotFound`` when unknown."""
        ...

    async def append_episode_with_backlog(
        self, draft: EpisodeDraft, *, influence_window: int
    ) -> tuple[Episode, bool, EnrichmentBacklog]:
        """``append_episode`` and then, in the same transaction, ``enrichment_backlog``
        of the persona for one episode with the pending count: what an inline ``record``
        needs before it asks the model, in one unit of work instead of two."""
        ...

    async def enrichment_beliefs(self, persona_id: str, topics: Sequence[str]) -> list[Belief]:
        """The persona's beliefs (retired ones too) of ``topics``, by topic: what planning
        a piece of a backlog reads besides its ``enrichment_backlog`` (a topic without a
        belief is simply absent)."""
        ...

    async def enrichment_state(
        self, persona_id: str, user_ids: Sequence[str], *, since_interaction: int
    ) -> EnrichmentState:
        """In one read: the persona, every belief (retired too), the uncommitted staged
        deltas, the active facts of ``user_ids`` and the staged deltas of their episodes
        staged after ``since_interaction`` (what a backlog chunk plans from)."""
        ...

    async def commit_insight(self, commit: InsightCommit) -> None:
        """Apply a retried insight extraction in one transaction: the episode's insight
        text and status, and the ``Insight`` it yielded. ``ConflictError`` (nothing
        written) when the episode's insight part is not pending."""
        ...

    async def list_insight_retries(
        self, persona_id: str, *, status: InsightState = InsightState.PENDING, limit: int = 50
    ) -> list[Episode]:
        """Enriched episodes whose insight part is ``status``, oldest first (by ``seq``)."""
        ...

    async def count_insight_retries(self, persona_id: str) -> dict[str, int]:
        """How many insight parts are ``pending`` and ``failed``."""
        ...

    async def mark_insight_attempt(
        self, persona_id: str, episode_id: str, *, error: str, failed: bool
    ) -> None:
        """Count a failed insight retry; ``failed`` gives the insight part up."""
        ...

    async def requeue_failed_insights(
        self, persona_id: str, *, below_attempts: int | None = None
    ) -> int:
        """Put ``failed`` insight parts back to ``pending`` (as ``requeue_failed``)."""
        ...

    async def recent_influence(
        self, persona_id: str, user_id: str, *, since_interaction: int
    ) -> list[UserInfluence]:
        """The staged deltas of the user's episodes with ``staged_at`` after
        ``since_interaction``, with each episode's message, by staged order."""
        ...

    async def upsert_beliefs(self, beliefs: Sequence[Belief]) -> None: ...
    async def list_beliefs(self, persona_id: str, *, include_retired: bool = False) -> list[Belief]:
        """Ordered by topic."""
        ...

    async def belief_evidence(
        self, persona_id: str, topic: str
    ) -> list[tuple[ProvenanceEdge, Episode]]:
        """The provenance edges into a belief with their episodes, oldest first."""
        ...

    async def list_staged(
        self, persona_id: str, *, due_by: int | None = None
    ) -> list[StagedUpdate]:
        """Uncommitted staged updates (all, or those with ``due_at <= due_by``), by
        (due_at, staged order)."""
        ...

    async def list_insights(
        self, persona_id: str, *, status: InsightStatus | None = None
    ) -> list[Insight]:
        """Oldest first."""
        ...

    async def list_facts(self, persona_id: str, user_id: str) -> list[UserFact]:
        """Active (not retracted) facts of one user, oldest first."""
        ...

    async def retract_fact(self, persona_id: str, user_id: str, fact_id: str) -> None: ...


@runtime_checkable
class ReflectionStore(Protocol):
    """The reflection's lease, its one-transaction commit, attempts and reads
    (``mind/reflection.py``)."""

    async def acquire_lease(
        self, persona_id: str, owner: str, *, now: datetime, ttl_seconds: float
    ) -> bool:
        """Take (or renew) the persona's reflection lease for ``owner`` until
        ``now + ttl_seconds``, atomically. True when ``owner`` holds it afterwards: it was
        free, expired (taken over), or already ``owner``'s. ``PersonaNotFound`` if unknown."""
        ...

    async def release_lease(self, persona_id: str, owner: str) -> None:
        """Give the lease up if ``owner`` still holds it (otherwise do nothing)."""
        ...

    async def get_lease(self, persona_id: str) -> ReflectionLease | None:
        """The persona's lease as stored (expired or not), or None when nobody holds it."""
        ...

    async def commit_reflection(self, commit: ReflectionCommit) -> None:
        """Apply a successful reflection in one transaction (see ``ReflectionCommit``):
        new snapshot, ``Reflection`` record linked to the insights it consumed and the
        snapshot it produced, decayed beliefs, the persona's reflection markers, snapshot
        retention. ``LeaseHeld`` / ``ConflictError`` (nothing written) when the lease or
        the CURRENT version moved."""
        ...

    async def record_reflection(self, reflection: Reflection, *, attempt_at: int) -> None:
        """Store a rejected or failed attempt and set the persona's
        ``last_reflection_attempt_at`` to ``attempt_at``; nothing else changes."""
        ...

    async def list_reflections(self, persona_id: str, *, limit: int = 20) -> list[Reflection]:
        """The persona's reflections, newest first (by ``started_at``)."""
        ...

    async def list_shifts(
        self, persona_id: str, *, since_interaction: int, limit: int = 20
    ) -> list[ProvenanceEdge]:
        """Provenance edges committed after interaction ``since_interaction``, newest
        first (the persona's recent opinion shifts)."""
        ...

    async def episodes_since(
        self, persona_id: str, *, since_interaction: int, limit: int = 10
    ) -> list[Episode]:
        """Enriched episodes with ``interaction_index > since_interaction``, newest first
        (by interaction index); an index lookup however long the history is."""
        ...


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
        self, persona_id: str, conversation_id: str, *, up_to_turn: int | None = None
    ) -> list[ThinkerTurn]:
        """The conversation's registered turns (all, or up to ``up_to_turn``), by turn."""
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
        """What the Talker reads, in one read transaction: ``context_reads`` (same
        arguments), the conversation's ``conversation_mind``, its ``window`` newest
        episodes led by its first one, and the persona's affect state towards the user.
        ``PersonaNotFound`` when the persona is unknown."""
        ...

    async def conversation_mind(self, persona_id: str, conversation_id: str) -> ConversationMind:
        """Current narrative, last thought-about turn and monologue history (oldest first);
        empty for a conversation the Thinker has not touched."""
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


@runtime_checkable
class KeyStore(Protocol):
    """API keys of the HTTP server, stored hashed (never the secret)."""

    async def create_key(self, key: ApiKey) -> ApiKey:
        """Store a new key (``AlreadyExists`` if its id is taken), in one transaction with
        the check that every persona it names exists in the incarnation it names
        (``PersonaNotFound`` otherwise)."""
        ...

    async def get_key(self, key_id: str) -> ApiKey:
        """``NotFoundError`` when unknown (revoked keys are returned, with ``revoked_at``)."""
        ...

    async def list_keys(self) -> list[ApiKey]:
        """Every key, revoked ones too, by creation time."""
        ...

    async def revoke_key(self, key_id: str, at: datetime) -> ApiKey:
        """Mark the key revoked at ``at`` (idempotent: the first time stays);
        ``NotFoundError`` when unknown."""


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


@runtime_checkable
class ContextStore(Protocol):
    """What ``context`` reads, in one unit of work."""

    async def context_reads(
        self,
        persona_id: str,
        user_id: str,
        embedding: Sequence[float] | None,
        *,
        similar_k: int,
        recent: int,
        beliefs: int = 8,
    ) -> ContextReads:
        """Persona, CURRENT snapshot, the user's active facts, the beliefs to show (the
        ``beliefs`` active ones whose topic is most similar to ``embedding``, the
        ``beliefs`` strongest, and up to ``beliefs`` whose topic is not embedded yet, each
        through an index: never every belief of the persona), the user's ``similar_k``
        episodes most similar to ``embedding`` (none when it is ``None`` or ``similar_k``
        is 0) and their ``recent`` latest, all in one read transaction.
        ``PersonaNotFound`` when the persona is unknown."""
        ...

    async def set_topic_embeddings(
        self, persona_id: str, embeddings: Mapping[str, Sequence[float]]
    ) -> int:
        """Store the embeddings of the persona's belief topics (topic -> vector of the
        store's dimension; ``ValidationError`` otherwise); a topic with no belief is
        skipped. Returns how many beliefs took one."""
        ...


@runtime_checkable
class Store(
    SchemaStore,
    PersonaStore,
    EpisodeStore,
    EnrichmentStore,
    ReflectionStore,
    RuntimeStore,
    KeyStore,
    ErasureStore,
    ArchiveStore,
    ContextStore,
    Protocol,
):
    """Persistence of one Sonality deployment: every part above. Every method is scoped
    by persona (and by user where the data is a user's); every write is one transaction.
    A consumer that needs one aggregate depends on its part alone."""
