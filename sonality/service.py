"""The public async facade: ``Sonality``.

    async with Sonality.from_settings(Settings()) as s:
        await s.create_persona("ada", name="Ada", core_identity="…")
        episode = await s.record("ada", user_id="u1", conversation_id="c1",
                                 message="…", response="…")
        ctx = await s.context("ada", user_id="u1", message="…")

Library code takes explicit objects (``Sonality(store=…, llm=…, embedder=…, clock=…)``);
only ``from_settings`` reads configuration. Either way a ``Sonality`` is made of
:class:`~sonality.mind.parts.Parts`: ``open`` gets them from ``sonality.wiring`` and calls
``Sonality(**parts)``; a direct call passes some and ``mind.parts.assemble`` builds the
rest. The facade validates input and delegates to the parts.

``record`` writes the raw episode durably before any model call, then enriches pending
episodes in order; with no model, or a failing one, the episode stays ``pending`` and
nothing else changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from types import TracebackType
from typing import Self

from pydantic import BaseModel, ConfigDict

from sonality.core.opinion import OpinionParams
from sonality.core.triggers import TriggerDecision
from sonality.errors import SonalityError, ValidationError
from sonality.mind.archive import Imported, export_lines, import_archives, parse_archive
from sonality.mind.context import Context, ContextBuilder
from sonality.mind.enrichment import Enricher, EnrichReport
from sonality.mind.erasure import Eraser
from sonality.mind.parts import Limits, SystemClock, assemble
from sonality.mind.recording import EpisodeRecorder
from sonality.mind.reflection import ReflectionParams, ReflectionReport, Reflector
from sonality.mind.runtime import DualProcess, RuntimeSettings
from sonality.mind.talker import Reply
from sonality.models import (
    AffectPlacement,
    AffectState,
    ApiKey,
    Belief,
    Episode,
    Erasure,
    FactKind,
    HardGoal,
    Insight,
    InsightStatus,
    KeyScope,
    MonologueEntry,
    Narrative,
    Persona,
    ProvenanceEdge,
    Reflection,
    RuntimeMode,
    ScoredEpisode,
    Snapshot,
    SoftGoal,
    ThinkerTurn,
    TurnUsage,
    UserFact,
    validate_identifier,
)
from sonality.observability import get_logger
from sonality.ports import LLM, Clock, Embedder, Store

__all__ = ["Limits", "Recorded", "Sonality", "SystemClock"]

log = get_logger("sonality")


class Recorded(BaseModel):
    """What ``record`` returns: the stored episode (re-read after enrichment) and whether
    this call created it."""

    model_config = ConfigDict(frozen=True)

    episode: Episode
    created: bool
    enrichment: EnrichReport | None = None

    @property
    def status(self) -> str:
        return self.episode.enrichment_status.value


def _check_text(value: str, *, field: str, limit: int, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"{field} must be text", field=field)
    if not allow_empty and not value.strip():
        raise ValidationError(f"{field} must not be empty", field=field)
    if len(value) > limit:
        raise ValidationError(
            f"{field} is too long: {len(value)} characters, the limit is {limit}",
            field=field,
            length=len(value),
            limit=limit,
        )
    if "\x00" in value:
        raise ValidationError(f"{field} contains a NUL character", field=field)
    return value


def _check_id(value: str, kind: str) -> str:
    try:
        return validate_identifier(value, kind=kind)
    except ValueError as exc:
        raise ValidationError(str(exc), field=kind) from None


class Sonality:
    """Personality and memory for one deployment (any number of personas)."""

    def __init__(
        self,
        *,
        store: Store,
        llm: LLM | None = None,
        embedder: Embedder | None = None,
        clock: Clock | None = None,
        opinion: OpinionParams | None = None,
        limits: Limits | None = None,
        count_tokens: Callable[[str], int] | None = None,
        owns_store: bool = False,
        reflection: ReflectionParams | None = None,
        owner: str | None = None,
        runtime: RuntimeSettings | None = None,
        recorder: EpisodeRecorder | None = None,
        enricher: Enricher | None = None,
        reflector: Reflector | None = None,
        context_builder: ContextBuilder | None = None,
    ) -> None:
        """Build from parts (``Sonality(**parts)``) or from some of them: what is missing
        is assembled with the defaults by ``sonality.mind.parts.assemble``."""
        parts = assemble(
            store=store,
            llm=llm,
            embedder=embedder,
            clock=clock,
            opinion=opinion,
            limits=limits,
            count_tokens=count_tokens,
            owns_store=owns_store,
            reflection=reflection,
            owner=owner,
            runtime=runtime,
            recorder=recorder,
            enricher=enricher,
            reflector=reflector,
            context_builder=context_builder,
        )
        self.store = parts.store
        self.llm = parts.llm
        self.embedder = parts.embedder
        self.clock = parts.clock
        self.opinion = parts.opinion
        self.limits = parts.limits
        self.runtime = parts.runtime
        self.recorder = parts.recorder
        self.enricher = parts.enricher
        self.reflector = parts.reflector
        self.context_builder = parts.context_builder
        self._count_tokens = parts.count_tokens
        self._owns_store = parts.owns_store
        self._dual: DualProcess | None = None
        self.eraser = Eraser(
            store=self.store,
            clock=self.clock,
            params=self.opinion,
            window_size=self.limits.disagreement_window,
            lease_seconds=self.reflector.params.lease_seconds,
        )

    # lifecycle ----------------------------------------------------------------------
    @classmethod
    async def open(
        cls,
        settings: object,
        *,
        migrate: bool | None = None,
        llm: LLM | None = None,
        owner: str | None = None,
    ) -> Sonality:
        """Build from :class:`sonality.config.Settings`. ``migrate`` applies pending schema
        steps first; by default it does so for the embedded SQLite file (the application
        owns it) and not for Neo4j (run ``sonality migrate``). ``llm`` replaces the model
        the settings name; ``owner`` names this process's reflection leases."""
        from sonality.wiring import open_parts

        parts = await open_parts(settings, migrate=migrate, llm=llm, owner=owner)
        try:
            return cls(**parts)
        except BaseException:
            await parts.store.close()
            raise

    @classmethod
    def from_settings(cls, settings: object, *, migrate: bool | None = None) -> _Opening:
        """``async with Sonality.from_settings(Settings()) as s: …``"""
        return _Opening(settings, migrate)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        if self._dual is not None:  # background thinking first, while the store is open
            await self._dual.close()
        if self._owns_store:
            await self.store.close()

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` by the counter every budget of this deployment uses."""
        return self._count_tokens(text)

    # personas -------------------------------------------------------------------------
    async def create_persona(
        self, persona_id: str, *, name: str, core_identity: str, snapshot: str | None = None
    ) -> Persona:
        """Create a persona. Its first snapshot is ``snapshot`` or the core identity."""
        _check_id(persona_id, "persona_id")
        _check_text(name, field="name", limit=self.limits.max_name_chars)
        _check_text(core_identity, field="core_identity", limit=self.limits.max_identity_chars)
        now = self.clock.now()
        persona = Persona(id=persona_id, name=name, core_identity=core_identity, created_at=now)
        first = Snapshot(
            persona_id=persona_id, version=1, text=snapshot or core_identity, created_at=now
        )
        created = await self.store.create_persona(persona, first)
        log.info("persona_created", persona_id=persona_id)
        return created

    async def persona(self, persona_id: str) -> Persona:
        return await self.store.get_persona(_check_id(persona_id, "persona_id"))

    async def personas(self) -> list[Persona]:
        return await self.store.list_personas()

    # API keys (the HTTP server's) ------------------------------------------------------
    async def create_key(
        self,
        *,
        scope: KeyScope | str,
        persona_ids: Sequence[str] = (),
        name: str = "",
    ) -> tuple[ApiKey, str]:
        """Make an API key; returns the stored key and the token, which is shown once
        (only its hash is stored). A read or write key names its personas; an admin key
        without personas sees every persona. The personas must exist."""
        from sonality.core.keys import hash_secret, mint

        try:
            level = KeyScope(scope)
        except ValueError:
            raise ValidationError("scope must be read, write or admin", field="scope") from None
        ids = tuple(dict.fromkeys(_check_id(p, "persona_id") for p in persona_ids))
        _check_text(name, field="name", limit=self.limits.max_name_chars, allow_empty=True)
        for persona_id in ids:
            await self.store.get_persona(persona_id)
        key_id, secret, token = mint()
        key = ApiKey(
            id=key_id,
            secret_hash=hash_secret(secret),
            scope=level,
            persona_ids=ids,
            name=name,
            created_at=self.clock.now(),
        )
        created = await self.store.create_key(key)
        log.info("api_key_created", key_id=key_id, scope=level.value, personas=len(ids))
        return created, token

    async def key(self, key_id: str) -> ApiKey:
        """The stored key (``NotFoundError`` when unknown)."""
        return await self.store.get_key(_check_id(key_id, "key_id"))

    async def keys(self) -> list[ApiKey]:
        """Every API key, revoked ones too (hashes only, never secrets)."""
        return await self.store.list_keys()

    async def revoke_key(self, key_id: str) -> ApiKey:
        """Revoke a key now; it stops working at once in every server process."""
        revoked = await self.store.revoke_key(_check_id(key_id, "key_id"), self.clock.now())
        log.info("api_key_revoked", key_id=key_id)
        return revoked

    # the interaction pipeline ----------------------------------------------------------
    async def record(
        self,
        persona_id: str,
        *,
        user_id: str,
        conversation_id: str,
        message: str,
        response: str,
        episode_id: str | None = None,
        enrich: bool | None = None,
    ) -> Recorded:
        """Store one exchange durably, then enrich (unless ``enrich=False``).

        Idempotent on ``episode_id``: a retried call returns the stored episode and never
        duplicates it. Raises ``ValidationError`` for bad input (nothing written) and
        ``PersonaNotFound`` for an unknown persona.
        """
        _check_id(persona_id, "persona_id")
        _check_id(user_id, "user_id")
        _check_id(conversation_id, "conversation_id")
        if episode_id is not None:
            _check_id(episode_id, "episode_id")
        _check_text(message, field="message", limit=self.limits.max_message_chars)
        _check_text(
            response, field="response", limit=self.limits.max_response_chars, allow_empty=True
        )
        episode, created = await self.recorder.append(
            persona_id,
            user_id=user_id,
            conversation_id=conversation_id,
            message=message,
            response=response,
            episode_id=episode_id,
        )
        report = None
        if enrich if enrich is not None else self.limits.enrich_on_record:
            try:
                report = await self.enricher.enrich_pending(persona_id)
                episode = await self.store.get_episode(persona_id, episode.id)
            except SonalityError as exc:
                # the episode is durable; a failure past that point leaves it pending for
                # `enrich_pending` (or the worker) instead of failing the caller's turn
                log.warning(
                    "enrichment_interrupted",
                    persona_id=persona_id,
                    episode_id=episode.id,
                    error=type(exc).__name__,
                )
        if report is not None and report.enriched:
            await self.reflector.notifier.notify(persona_id)
        return Recorded(episode=episode, created=created, enrichment=report)

    async def enrich_pending(self, persona_id: str, *, limit: int | None = None) -> EnrichReport:
        """Enrich the persona's pending episodes, oldest first; stops (keeping order) when
        the model is unavailable."""
        await self.store.get_persona(_check_id(persona_id, "persona_id"))
        return await self.enricher.enrich_pending(persona_id, limit=limit)

    async def context(
        self,
        persona_id: str,
        *,
        user_id: str,
        message: str,
        narrative: str | None = None,
        token_budget: int | None = None,
    ) -> Context:
        """The context block an application puts in its prompt before answering."""
        _check_id(persona_id, "persona_id")
        _check_id(user_id, "user_id")
        _check_text(message, field="message", limit=self.limits.max_message_chars)
        return await self.context_builder.build(
            persona_id,
            user_id=user_id,
            message=message,
            narrative=narrative,
            token_budget=token_budget,
        )

    async def search(
        self, persona_id: str, *, user_id: str, query: str, limit: int = 10
    ) -> list[ScoredEpisode]:
        """The user's episodes most like ``query``, scored by similarity, recency and
        importance as the context ranks them, best first."""
        from sonality.core.retrieval import rank_episodes

        _check_id(persona_id, "persona_id")
        _check_id(user_id, "user_id")
        _check_text(query, field="query", limit=self.limits.max_message_chars)
        if not 1 <= limit <= 100:
            raise ValidationError("limit must be 1-100", field="limit", limit=limit)
        await self.store.get_persona(persona_id)
        [vector] = await self.embedder.embed([query])
        similar = await self.store.similar_episodes(persona_id, user_id, vector, k=limit)
        return rank_episodes(similar, self.clock.now(), limit)

    # reads ----------------------------------------------------------------------------
    async def _known(self, persona_id: str) -> str:
        """``persona_id`` once checked and found: every read of a persona's data raises
        ``PersonaNotFound`` (exit 4) for an unknown persona rather than answering empty."""
        await self.store.get_persona(_check_id(persona_id, "persona_id"))
        return persona_id

    async def beliefs(self, persona_id: str, *, include_retired: bool = False) -> list[Belief]:
        return await self.store.list_beliefs(
            await self._known(persona_id), include_retired=include_retired
        )

    async def evidence(self, persona_id: str, topic: str) -> list[tuple[ProvenanceEdge, Episode]]:
        """The episodes that moved a belief, with their deltas, oldest first."""
        from sonality.models import normalise_topic

        return await self.store.belief_evidence(
            await self._known(persona_id), normalise_topic(topic)
        )

    async def facts(self, persona_id: str, *, user_id: str) -> list[UserFact]:
        from sonality.mind.context import order_facts

        facts = await self.store.list_facts(
            await self._known(persona_id), _check_id(user_id, "user_id")
        )
        return list(order_facts(facts))

    async def episodes(
        self,
        persona_id: str,
        *,
        user_id: str | None = None,
        conversation_id: str | None = None,
        limit: int = 20,
    ) -> list[Episode]:
        await self._known(persona_id)
        if user_id is not None:
            _check_id(user_id, "user_id")
        if conversation_id is not None:
            _check_id(conversation_id, "conversation_id")
        return await self.store.list_episodes(
            persona_id, user_id=user_id, conversation_id=conversation_id, limit=limit
        )

    async def insights(
        self, persona_id: str, *, status: InsightStatus | None = None
    ) -> list[Insight]:
        return await self.store.list_insights(await self._known(persona_id), status=status)

    async def snapshot(self, persona_id: str) -> Snapshot:
        return await self.store.current_snapshot(_check_id(persona_id, "persona_id"))

    async def snapshots(self, persona_id: str) -> Sequence[Snapshot]:
        return await self.store.snapshot_history(await self._known(persona_id))

    # forgetting and correcting (mind/erasure.py) ----------------------------------------
    async def forget_user(self, persona_id: str, *, user_id: str) -> Erasure:
        """Erase the user from the persona: its conversations, episodes, facts, insights,
        affect state, monologue, narratives and usage, in one transaction, and recompute
        every belief its episodes moved by replaying the opinion rules over the remaining
        evidence in order. Snapshot versions that may quote it are flagged: the next
        reflection rewrites the snapshot without them and purges them. Returns the audit
        record (no user text). ``NotFoundError`` for an unknown user."""
        return await self.eraser.forget_user(
            _check_id(persona_id, "persona_id"), _check_id(user_id, "user_id")
        )

    async def delete_episode(self, persona_id: str, *, episode_id: str) -> Erasure:
        """Erase one exchange as ``forget_user`` erases a user's: what hangs off it goes,
        its conversation's NEXT chain is relinked around it, beliefs are replayed."""
        return await self.eraser.delete_episode(
            _check_id(persona_id, "persona_id"), _check_id(episode_id, "episode_id")
        )

    async def delete_persona(self, persona_id: str) -> Erasure:
        """Erase the persona and everything it owns; only the audit records stay."""
        return await self.eraser.delete_persona(_check_id(persona_id, "persona_id"))

    async def retract_fact(self, persona_id: str, *, fact_id: str) -> UserFact:
        """Retract a user fact: it stays stored but leaves every context."""
        return await self.eraser.retract_fact(
            _check_id(persona_id, "persona_id"), _check_id(fact_id, "fact_id")
        )

    async def correct_fact(
        self,
        persona_id: str,
        *,
        fact_id: str,
        text: str,
        kind: FactKind | str | None = None,
        severity: int | None = None,
    ) -> UserFact:
        """Correct a wrongly extracted fact in place (text, and optionally kind or
        severity); a corrected fact is active."""
        return await self.eraser.correct_fact(
            _check_id(persona_id, "persona_id"),
            _check_id(fact_id, "fact_id"),
            text=text,
            kind=kind,
            severity=severity,
        )

    async def erasures(self, persona_id: str) -> list[Erasure]:
        """The persona's erasure audit records, oldest first (also after its deletion)."""
        return await self.store.list_erasures(_check_id(persona_id, "persona_id"))

    # moving personas (mind/archive.py) -------------------------------------------------
    async def export(self, persona_id: str | Sequence[str]) -> str:
        """The persona (or personas, in order) as canonical JSON lines, every node kind with
        its id: ``import_`` into any store gives it back, and exporting it there gives the
        same bytes. ``PersonaNotFound`` for an unknown persona."""
        ids = [persona_id] if isinstance(persona_id, str) else list(persona_id)
        lines = await export_lines(self.store, [_check_id(p, "persona_id") for p in ids])
        return "".join(f"{line}\n" for line in lines)

    async def import_(self, archive: str | Iterable[str]) -> list[Imported]:
        """Import an export (its text, or its lines): ids and counters preserved, each
        persona in one transaction. Idempotent: a persona already held with the same data
        is ``unchanged``; one held with other data is a ``ConflictError`` and nothing of
        the file is written. A bad line is a ``ValidationError`` naming it."""
        lines = archive.splitlines() if isinstance(archive, str) else archive
        return await import_archives(self.store, parse_archive(lines))

    # reflection (mind/reflection.py) ---------------------------------------------------
    async def reflect(
        self,
        persona_id: str,
        *,
        force: bool = False,
        dry_run: bool = False,
        trigger: str | None = None,
    ) -> ReflectionReport:
        """Reflect now if a trigger holds (or ``force``); ``dry_run`` writes nothing.
        ``trigger="idle"`` asks past the periodic and event rules, never past the cooldown."""
        if trigger not in (None, "idle"):
            raise ValidationError("trigger must be None or 'idle'", field="trigger")
        return await self.reflector.reflect(
            _check_id(persona_id, "persona_id"), force=force, dry_run=dry_run, trigger=trigger
        )

    async def reflection_due(self, persona_id: str) -> TriggerDecision:
        """The trigger decision for ``persona_id`` from its stored state."""
        return await self.reflector.due(_check_id(persona_id, "persona_id"))

    async def due_personas(self) -> list[str]:
        """Every persona a reflection is due for (what the worker's scan runs)."""
        return await self.reflector.due_personas()

    async def reflections(self, persona_id: str, *, limit: int = 20) -> list[Reflection]:
        """Reflection attempts, newest first."""
        return await self.store.list_reflections(await self._known(persona_id), limit=limit)

    async def rollback_snapshot(self, persona_id: str, to_version: int) -> Snapshot:
        """Make version ``to_version``'s text CURRENT again, as a new version recorded
        as ``rollback:<N>`` (history is never rewritten)."""
        from sonality.errors import NotFoundError

        history = await self.store.snapshot_history(_check_id(persona_id, "persona_id"))
        target = next((s for s in history if s.version == to_version), None)
        if target is None:
            raise NotFoundError(
                "no such snapshot version", persona_id=persona_id, version=to_version
            )
        snapshot = Snapshot(
            persona_id=persona_id,
            version=history[0].version + 1,
            text=target.text,
            reason=f"rollback:{to_version}",
            created_at=self.clock.now(),
        )
        created = await self.store.append_snapshot(snapshot)
        log.info(
            "snapshot_rolled_back",
            persona_id=persona_id,
            to_version=to_version,
            version=created.version,
        )
        return created

    def add_due_listener(self, listener: Callable[[str], object]) -> None:
        """Call ``listener(persona_id)`` when a ``record`` in this process makes a persona
        due for reflection (the worker's event path), or ``respond``'s background
        enrichment does. It must not block. (The reflector's ``notifier`` keeps them.)"""
        self.reflector.notifier.add(listener)

    def remove_due_listener(self, listener: Callable[[str], object]) -> None:
        self.reflector.notifier.remove(listener)

    # dual-process runtime (mind/runtime.py) -------------------------------------------
    def _dual_process(self) -> DualProcess:
        if self._dual is None:
            self._dual = DualProcess(
                store=self.store,
                llm=self.llm,
                clock=self.clock,
                count_tokens=self._count_tokens,
                recorder=self.recorder,
                enricher=self.enricher,
                contexts=self.context_builder,
                notifier=self.reflector.notifier,
                settings=self.runtime,
                max_response_chars=self.limits.max_response_chars,
            )
        return self._dual

    async def respond(
        self,
        persona_id: str,
        *,
        user_id: str,
        conversation_id: str,
        message: str,
        episode_id: str | None = None,
        mode: RuntimeMode | str | None = None,
        affect: AffectPlacement | str | None = None,
    ) -> Reply:
        """Answer ``message`` now (the Talker), record the exchange durably, and leave the
        deliberation to the Thinker in the background. ``mode``/``affect`` override the
        persona's settings for this call; a repeated ``episode_id`` returns the stored
        reply. Raises ``LLMError`` when the Talker's own call fails (nothing recorded)."""
        _check_id(persona_id, "persona_id")
        _check_id(user_id, "user_id")
        _check_id(conversation_id, "conversation_id")
        if episode_id is not None:
            _check_id(episode_id, "episode_id")
        _check_text(message, field="message", limit=self.limits.max_message_chars)
        try:
            run_mode = None if mode is None else RuntimeMode(mode)
            placement = None if affect is None else AffectPlacement(affect)
        except ValueError as exc:
            raise ValidationError(str(exc), field="mode" if mode else "affect") from None
        return await self._dual_process().respond(
            persona_id,
            user_id=user_id,
            conversation_id=conversation_id,
            message=message,
            episode_id=episode_id,
            mode=run_mode,
            affect=placement,
        )

    async def drain(
        self,
        persona_id: str,
        *,
        conversation_id: str | None = None,
        max_seconds: float | None = None,
    ) -> bool:
        """Wait for the background thinking of a conversation (or of every conversation
        of the persona) to finish; False if ``max_seconds`` ran out first."""
        if self._dual is None:
            return True
        return await self._dual.drain(persona_id, conversation_id, max_seconds)

    async def retry_thinking(self, persona_id: str) -> int:
        """Re-run failed Thinker turns (and turns a dead process left pending), in order
        per conversation; returns how many were closed (0 without a model)."""
        await self.store.get_persona(_check_id(persona_id, "persona_id"))
        if self.llm is None:
            return 0
        return await self._dual_process().retry(persona_id)

    async def narrative(self, persona_id: str, *, conversation_id: str) -> Narrative | None:
        """The conversation's latest committed narrative, or None."""
        mind = await self.store.conversation_mind(
            await self._known(persona_id), _check_id(conversation_id, "conversation_id")
        )
        return mind.narrative

    async def narratives(self, persona_id: str, *, conversation_id: str) -> list[Narrative]:
        """The stored narrative versions, newest first."""
        return await self.store.narrative_history(
            await self._known(persona_id), _check_id(conversation_id, "conversation_id")
        )

    async def monologue(self, persona_id: str, *, conversation_id: str) -> list[MonologueEntry]:
        """The conversation's bounded inner-monologue history, oldest first."""
        mind = await self.store.conversation_mind(
            await self._known(persona_id), _check_id(conversation_id, "conversation_id")
        )
        return list(mind.monologue)

    async def thinker_turns(self, persona_id: str, *, conversation_id: str) -> list[ThinkerTurn]:
        """Where the Thinker is with each turn of the conversation."""
        return await self.store.thinker_turns(
            await self._known(persona_id), _check_id(conversation_id, "conversation_id")
        )

    async def turn_usage(self, persona_id: str, *, conversation_id: str) -> list[TurnUsage]:
        """Model calls, tokens and cost per turn and component (talker, monologue,
        controller, enrichment, affect)."""
        return await self.store.turn_usage(
            await self._known(persona_id), _check_id(conversation_id, "conversation_id")
        )

    async def affect_state(self, persona_id: str, *, user_id: str) -> AffectState | None:
        """The persona's affective state towards the user (None before any)."""
        return await self.store.get_affect(
            await self._known(persona_id), _check_id(user_id, "user_id")
        )

    async def set_affect(
        self,
        persona_id: str,
        *,
        user_id: str,
        emotional_state: str | None = None,
        relationship: str | None = None,
        hard_goals: Sequence[HardGoal | str] | None = None,
        soft_goals: Sequence[SoftGoal | str] | None = None,
    ) -> AffectState:
        """Seed or change the affect state towards a user (goals, mood, relationship);
        strings as hard goals are one level each, in order."""
        from sonality.mind.affect import configure, initial_state

        _check_id(persona_id, "persona_id")
        _check_id(user_id, "user_id")
        now = self.clock.now()
        current = await self.store.get_affect(persona_id, user_id)
        state = configure(
            current or initial_state(persona_id, user_id, now),
            now=now,
            emotional_state=emotional_state,
            relationship=relationship,
            hard_goals=hard_goals,
            soft_goals=soft_goals,
        )
        return await self.store.put_affect(state)

    async def set_runtime(
        self,
        persona_id: str,
        *,
        mode: RuntimeMode | str | None = None,
        affect: AffectPlacement | str | None = None,
    ) -> Persona:
        """Set the persona's default runtime mode and affect placement for ``respond``."""
        current = await self.store.get_persona(_check_id(persona_id, "persona_id"))
        try:
            run_mode = current.runtime_mode if mode is None else RuntimeMode(mode)
            placement = current.affect if affect is None else AffectPlacement(affect)
        except ValueError as exc:
            raise ValidationError(str(exc), field="mode" if mode else "affect") from None
        return await self.store.set_persona_runtime(
            persona_id, runtime_mode=run_mode, affect=placement
        )


class _Opening:
    """Awaitable and async context manager returned by ``Sonality.from_settings``."""

    def __init__(self, settings: object, migrate: bool | None) -> None:
        self._settings = settings
        self._migrate = migrate
        self._app: Sonality | None = None

    def __await__(self):  # type: ignore[no-untyped-def]
        return Sonality.open(self._settings, migrate=self._migrate).__await__()

    async def __aenter__(self) -> Sonality:
        self._app = await Sonality.open(self._settings, migrate=self._migrate)
        return self._app

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._app is not None:
            await self._app.close()
