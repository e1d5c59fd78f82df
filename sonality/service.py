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

``record`` validates, then hands the exchange to the enrichment lanes
(``mind.enrich_lanes``): the raw episode is written durably before any model call, then
enriched as the ``enrich`` mode says, in the persona's order; with no model, or a failing
one, the episode stays ``pending`` and nothing else changes. A model that refuses the
configuration (``LLMConfigError``) is not an outage: ``record`` raises it, after the
episode is stored as ``pending`` with no attempt counted, so fixing the settings and
calling ``enrich_pending`` catches up.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from functools import cached_property, partial
from types import TracebackType
from typing import TYPE_CHECKING, Self, Unpack

from sonality.core.triggers import TriggerDecision
from sonality.errors import ValidationError
from sonality.mind.drain import Opening
from sonality.mind.inputs import (
    MAX_LIMIT,
    check_bool,
    check_choices,
    check_exchange,
    check_id,
    check_ids,
    check_int,
    check_number,
    check_text,
)
from sonality.mind.parts import Given, Limits, SystemClock, assemble
from sonality.mind.personas import create_persona
from sonality.mind.reads import Reads
from sonality.models import (
    AffectPlacement,
    AffectState,
    ApiKey,
    BiographyDraft,
    BiographyEntry,
    BiographySource,
    Context,
    EnrichMode,
    EnrichReport,
    Erasure,
    ErasureKind,
    Exchange,
    FactKind,
    HardGoal,
    KeyScope,
    Lag,
    Persona,
    Recorded,
    ReflectionReport,
    RuntimeMode,
    ScoredEpisode,
    SelfModel,
    Snapshot,
    SoftGoal,
    UserErasure,
    UserFact,
)
from sonality.observability import get_logger
from sonality.ports import LLM

if TYPE_CHECKING:  # imported where first used, so a read loads none of them
    from sonality.mind.erasure import Eraser
    from sonality.mind.runtime import DualProcess
    from sonality.models import Imported, Reply

__all__ = ["EnrichMode", "Exchange", "Limits", "Recorded", "Sonality", "SystemClock"]

log = get_logger("sonality")

_MAX_NARRATIVE_CHARS = 100_000
_MAX_TOKEN_BUDGET = 1_000_000
_MAX_WAIT_SECONDS = 86_400.0


class Sonality(Reads):
    """Personality and memory for one deployment (any number of personas). The reads
    that only list or look up (``beliefs``, ``episodes``, ``export`` …) are inherited from
    :class:`~sonality.mind.reads.Reads`."""

    def __init__(self, **given: Unpack[Given]) -> None:
        """Build from parts (``Sonality(**parts)``) or from some of them (``store=…,
        llm=…``): what is missing is assembled with the defaults by
        ``sonality.mind.parts.assemble``."""
        parts = self._parts = assemble(**given)
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
        self.lanes = parts.lanes
        """When enrichment runs: the persona lanes (``mind.enrich_lanes``)."""
        self._count_tokens = parts.count_tokens
        self._owns_store = parts.owns_store
        self._dual: DualProcess | None = None
        self.key_epoch = 0
        """Moves whenever this process revokes a key or deletes a persona (which takes the
        persona from every key): a server's key cache drops what it verified before."""

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
    def from_settings(cls, settings: object, *, migrate: bool | None = None) -> Opening[Sonality]:
        """``async with Sonality.from_settings(Settings()) as s: …``"""
        return Opening(partial(cls.open, settings, migrate=migrate))

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
        """Stop taking background work (no new Thinker turn, enrichment pass or model
        call), let the calls in flight finish and commit in order for at most
        ``RuntimeSettings.shutdown_seconds`` in all, cancel what still runs, then close
        the store if this facade opened it. Nothing is lost: every episode and turn not
        done stays pending for the next process or the worker."""
        from sonality.mind.drain import shut_down

        await shut_down(self.runtime.shutdown_seconds, dual=self._dual, lanes=self.lanes)
        aclose = getattr(self.llm, "aclose", None)
        if aclose is not None:
            await aclose()
        if self._owns_store:
            await self.store.close()

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` by the counter every budget of this deployment uses."""
        return self._count_tokens(text)

    # personas -------------------------------------------------------------------------
    async def create_persona(
        self,
        persona_id: str,
        *,
        name: str,
        core_identity: str,
        snapshot: str | None = None,
        self_model: SelfModel | None = None,
        biography: Sequence[BiographyDraft | str] = (),
    ) -> Persona:
        """Create a persona. Its first snapshot is ``snapshot`` or the core identity;
        ``self_model`` (traits, values, goals) is fixed with the core identity;
        ``biography`` (texts or drafts) is its own past, stored in the same transaction
        (see ``add_biography``)."""
        created = await create_persona(
            self.store,
            self.embedder,
            persona_id,
            name=name,
            core_identity=core_identity,
            snapshot=snapshot,
            self_model=self_model,
            biography=biography,
            limits=self.limits,
            now=self.clock.now(),
        )
        log.info("persona_created", persona_id=persona_id, biography=len(biography))
        return created

    async def add_biography(
        self,
        persona_id: str,
        text: str,
        *,
        importance: int = 5,
        source: BiographySource | str = BiographySource.AUTHORED,
    ) -> BiographyEntry:
        """Add an entry to the persona's own past: backstory (``authored``) or something
        the persona said about itself that the application keeps (``statement``);
        ``importance`` 1-10. It is embedded and stored once: an entry that restates a held
        one (same words, or nearly the same embedding) returns that one. A persona holds
        at most ``Limits.max_biography_entries`` (``ValidationError`` past it). The affect
        stages recall entries by 0.7 x similarity + 0.3 x importance, never by age."""
        from sonality.mind.biography import add_entry

        entry, written = await add_entry(
            self.store,
            self.embedder,
            check_id(persona_id, "persona_id"),
            text,
            importance=importance,
            source=source,
            max_chars=self.limits.max_biography_chars,
            max_entries=self.limits.max_biography_entries,
            now=self.clock.now(),
        )
        log.info("biography_added", persona_id=persona_id, entry_id=entry.id, written=written)
        return entry

    async def remove_biography(self, persona_id: str, *, entry_id: str) -> BiographyEntry:
        """Remove one entry of the persona's past (``NotFoundError`` when it has none of
        that id); returns it."""
        removed = await self.store.remove_biography(
            check_id(persona_id, "persona_id"), check_id(entry_id, "entry_id")
        )
        log.info("biography_removed", persona_id=persona_id, entry_id=entry_id)
        return removed

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
        from sonality.mind.keys import create_key

        return await create_key(
            self.store,
            self.clock.now(),
            scope=scope,
            persona_ids=persona_ids,
            name=name,
            max_name_chars=self.limits.max_name_chars,
        )

    async def key(self, key_id: str) -> ApiKey:
        """The stored key (``NotFoundError`` when unknown)."""
        return await self.store.get_key(check_id(key_id, "key_id"))

    async def keys(self) -> list[ApiKey]:
        """Every API key, revoked ones too (hashes only, never secrets)."""
        return await self.store.list_keys()

    async def revoke_key(self, key_id: str) -> ApiKey:
        """Revoke a key now. A server in this process refuses it at once; one in another
        process once its cached check runs out (``SONALITY_KEY_CACHE_SECONDS``, 5 s by
        default)."""
        revoked = await self.store.revoke_key(check_id(key_id, "key_id"), self.clock.now())
        self.key_epoch += 1
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
        enrich: bool | EnrichMode | str | None = None,
    ) -> Recorded:
        """Store one exchange durably, then enrich it as ``enrich`` says (an
        :class:`EnrichMode`; True is inline, False off, None the configured
        ``Limits.record_enrich``). Inline waits at most ``Limits.record_deadline_seconds``
        and never enriches older pending episodes on the caller's time: either way past
        that the episode comes back ``pending`` and the persona's lane finishes it.

        Idempotent on ``episode_id``: a retried call returns the stored episode and never
        duplicates it. Raises ``ValidationError`` for bad input (nothing written),
        ``PersonaNotFound`` for an unknown persona, and ``LLMConfigError`` when the model
        refuses the configuration (the episode is stored, ``pending``, its id in the
        error's ``episode_id``). An outage leaves the episode ``pending`` silently.
        """
        mode = self.lanes.mode(enrich)
        check_id(persona_id, "persona_id")
        exchange = Exchange(user_id, conversation_id, message, response, episode_id)
        self.check_exchange(exchange)
        episode, created, report = await self.lanes.record(persona_id, exchange, mode)
        return Recorded(episode=episode, created=created, enrichment=report)

    def check_exchange(self, exchange: Exchange) -> None:
        """``ValidationError`` when ``record_batch`` would refuse this exchange (ids,
        message and response against the limits), so a caller can report bad items one
        by one and batch the rest."""
        check_exchange(
            exchange,
            message_chars=self.limits.max_message_chars,
            response_chars=self.limits.max_response_chars,
        )

    async def record_batch(
        self,
        persona_id: str,
        exchanges: Sequence[Exchange],
        *,
        enrich: bool | EnrichMode | str = EnrichMode.OFF,
    ) -> list[bool]:
        """Bulk load: store up to 10,000 exchanges of one persona in one transaction
        (turns follow the batch order per conversation); per exchange, whether it was
        created (False: its ``episode_id`` was stored before, same exchange). Enrichment
        is deferred: ``off`` (default) leaves it to the worker or ``enrich_pending``;
        ``background`` starts the persona's lane. Every exchange is checked first: one bad
        exchange raises ``ValidationError`` and nothing is written."""
        check_id(persona_id, "persona_id")
        mode = self.lanes.mode(enrich)
        for x in exchanges:
            self.check_exchange(x)
        return await self.lanes.record_batch(persona_id, exchanges, mode)

    async def enrich_pending(
        self, persona_id: str, *, limit: int | None = None, retry_failed: bool = False
    ) -> EnrichReport:
        """Embed the persona's episodes a remote embedder failed on (up to 100, oldest
        first: ``embedded``), then enrich its pending episodes, oldest first, then extract
        the insights still pending; stops (keeping order) when the model is unavailable.

        ``retry_failed`` first puts every ``failed`` episode and insight back to
        ``pending`` (after fixing what made them fail). Raises ``LLMConfigError`` when the
        model refuses the configuration (nothing is marked)."""
        await self.store.get_persona(check_id(persona_id, "persona_id"))
        if limit is not None:
            check_int(limit, field="limit", low=1, high=MAX_LIMIT)
        check_bool(retry_failed, field="retry_failed")
        return await self.lanes.enrich_pending(persona_id, limit=limit, retry_failed=retry_failed)

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
        check_ids(persona_id=persona_id, user_id=user_id)
        check_text(message, field="message", limit=self.limits.max_message_chars)
        if narrative is not None:
            check_text(narrative, field="narrative", limit=_MAX_NARRATIVE_CHARS, allow_empty=True)
        if token_budget is not None:
            check_int(token_budget, field="token_budget", low=1, high=_MAX_TOKEN_BUDGET)
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
        check_ids(persona_id=persona_id, user_id=user_id)
        check_text(query, field="query", limit=self.limits.max_message_chars)
        check_int(limit, field="limit", low=1, high=100)
        return await self.context_builder.search(persona_id, user_id, query, limit)

    # forgetting and correcting (mind/erasure.py) ----------------------------------------
    @cached_property
    def eraser(self) -> Eraser:
        """The erasure pipeline, built on first use (a read never loads it)."""
        from sonality.mind.erasure import eraser

        return eraser(self._parts)

    async def forget_user(self, persona_id: str, *, user_id: str) -> Erasure:
        """Erase the user from the persona: its conversations, episodes, facts, insights,
        affect state, monologue, narratives and usage, in one transaction, and recompute
        every belief its episodes moved by replaying the opinion rules (and the decay
        reviews' advice that did not depend on them) over the remaining evidence in
        order. Snapshot versions that may quote the user are removed in the same
        transaction: CURRENT reverts to the newest clean version, or the core identity.
        Returns the audit record (no user text). ``NotFoundError`` for an unknown user."""
        return await self.eraser.forget_user(
            check_id(persona_id, "persona_id"), check_id(user_id, "user_id")
        )

    async def forget_everywhere(self, *, user_id: str) -> list[UserErasure]:
        """Forget the user in every persona (``forget_user`` in each, one transaction per
        persona): what happened in each, by persona id. Running it again after an
        interruption finishes the rest (done personas report ``erased_before``)."""
        return await self.eraser.forget_everywhere(check_id(user_id, "user_id"))

    async def erasure_subject(
        self, persona_id: str, *, kind: ErasureKind | str, subject_id: str
    ) -> str:
        """The audit subject this store records for erasing ``subject_id`` (a user, an
        episode or the persona itself) from the persona: compare it with ``erasures``."""
        try:
            erased = ErasureKind(kind)
        except ValueError:
            raise ValidationError("kind must be user, episode or persona", field="kind") from None
        return await self.eraser.subject(
            check_id(persona_id, "persona_id"), erased, check_id(subject_id, "subject_id")
        )

    async def delete_episode(self, persona_id: str, *, episode_id: str) -> Erasure:
        """Erase one exchange as ``forget_user`` erases a user's: what hangs off it goes,
        its conversation's NEXT chain is relinked around it, beliefs are replayed."""
        return await self.eraser.delete_episode(
            check_id(persona_id, "persona_id"), check_id(episode_id, "episode_id")
        )

    async def delete_persona(self, persona_id: str) -> Erasure:
        """Erase the persona and everything it owns; only the audit records stay. In the
        same transaction every API key loses its grant of the persona (a key left with
        none is revoked), so a persona made later under the id is not open to them."""
        erased = await self.eraser.delete_persona(check_id(persona_id, "persona_id"))
        self.key_epoch += 1
        return erased

    async def retract_fact(self, persona_id: str, *, fact_id: str) -> UserFact:
        """Retract a user fact: it stays stored but leaves every context."""
        return await self.eraser.retract_fact(
            check_id(persona_id, "persona_id"), check_id(fact_id, "fact_id")
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
            check_id(persona_id, "persona_id"),
            check_id(fact_id, "fact_id"),
            text=text,
            kind=kind,
            severity=severity,
        )

    async def add_fact(
        self,
        persona_id: str,
        *,
        user_id: str,
        episode_id: str,
        text: str,
        kind: FactKind | str = FactKind.FACT,
        severity: int = 1,
    ) -> UserFact:
        """Store a fact about the user that the model did not extract (kind and severity
        1-5 as an extracted fact has), backed by ``episode_id``, one of the user's
        exchanges: erasing that exchange erases the fact. A user never holds one fact
        twice: when an active fact already says the same (same words, case-folded), that
        fact is returned and nothing is written. ``NotFoundError`` when the episode is not
        the user's."""
        return await self.eraser.add_fact(
            await self._known(persona_id),
            check_id(user_id, "user_id"),
            check_id(episode_id, "episode_id"),
            text=text,
            kind=kind,
            severity=severity,
        )

    # moving personas (mind/archive.py) -------------------------------------------------
    async def import_(self, archive: str | Iterable[str]) -> list[Imported]:
        """Import an export (its text, or its lines): ids and counters preserved, each
        persona in one transaction. Idempotent: a persona already held with the same data
        is ``unchanged``; one held with other data is a ``ConflictError`` and nothing of
        the file is written. A bad line is a ``ValidationError`` naming it."""
        from sonality.mind.archive import import_archives, parse_archive

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
        check_bool(force, field="force")
        check_bool(dry_run, field="dry_run")
        return await self.reflector.reflect(
            check_id(persona_id, "persona_id"), force=force, dry_run=dry_run, trigger=trigger
        )

    async def reflection_due(self, persona_id: str) -> TriggerDecision:
        """The trigger decision for ``persona_id`` from its stored state."""
        return await self.reflector.due(check_id(persona_id, "persona_id"))

    async def due_personas(self) -> list[str]:
        """Every persona a reflection is due for (what the worker's scan runs)."""
        return await self.reflector.due_personas()

    async def rollback_snapshot(self, persona_id: str, to_version: int) -> Snapshot:
        """Make version ``to_version``'s text CURRENT again, as a new version recorded
        as ``rollback:<N>`` (history is never rewritten)."""
        return await self.reflector.rollback(
            check_id(persona_id, "persona_id"),
            check_int(to_version, field="to_version", low=1, high=2**62),
        )

    def add_due_listener(self, listener: Callable[[str], object]) -> None:
        """Call ``listener(persona_id)`` when a ``record`` in this process makes a persona
        due for reflection (the worker's event path), or ``respond``'s background
        enrichment does. It must not block. (The reflector's ``notifier`` keeps them.)"""
        if not callable(listener):
            raise ValidationError("a due listener must be callable", field="listener")
        self.reflector.notifier.add(listener)

    def remove_due_listener(self, listener: Callable[[str], object]) -> None:
        self.reflector.notifier.remove(listener)

    # dual-process runtime (mind/runtime.py) -------------------------------------------
    def _dual_process(self) -> DualProcess:
        if self._dual is None:
            from sonality.mind.runtime import dual_process

            self._dual = dual_process(self._parts)
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
        on_text: Callable[[str], None] | None = None,
        started: float | None = None,
    ) -> Reply:
        """Answer ``message`` now (the Talker), record the exchange durably, and leave the
        deliberation to the Thinker in the background. ``mode``/``affect`` override the
        persona's settings for this call; a repeated ``episode_id`` returns the stored
        reply. ``on_text`` gets the reply in pieces as the model writes it (the stored
        reply is their join, stripped; a replayed reply is not passed). Raises
        ``LLMError`` when the Talker's own call fails (nothing recorded), and
        ``AnswerTimeout`` when the answer does not come within
        ``Limits.respond_deadline_seconds``: the message is then stored (pending, without
        a response) under the error's ``episode_id``, and a call with that id answers it.
        ``started``: the event loop's time the caller's request began (the deadline counts
        from it; default now)."""
        check_ids(persona_id=persona_id, user_id=user_id, conversation_id=conversation_id)
        check_ids(episode_id=episode_id, optional=True)
        check_text(message, field="message", limit=self.limits.max_message_chars)
        run_mode, placement = check_choices(
            mode=(mode, RuntimeMode), affect=(affect, AffectPlacement)
        )
        return await self._dual_process().respond(
            persona_id,
            user_id=user_id,
            conversation_id=conversation_id,
            message=message,
            episode_id=episode_id,
            mode=run_mode,
            affect=placement,
            on_text=on_text,
            started=started,
        )

    async def drain(
        self,
        persona_id: str,
        *,
        conversation_id: str | None = None,
        max_seconds: float | None = None,
        everywhere: bool = False,
    ) -> bool:
        """Wait for the background work this process started: the Thinker of a
        conversation (or of every conversation of the persona) and the persona's
        background enrichment; False if ``max_seconds`` ran out first.

        That covers this process only: work another process (a second server, a worker)
        holds is not waited for. With ``everywhere``, then also wait until the store
        holds none of it (``pending``: no pending episode of the persona and no pending
        Thinker turn of the conversation, or of the persona), reading the store every
        0.2 s for at most ``max_seconds`` in all (30 s when not given). A turn whose
        process died stays pending until ``retry_thinking`` closes it, and episodes
        stay pending without a model: ``drain`` then returns False, and ``pending``
        says what is left."""
        from sonality.mind.drain import drain

        check_id(persona_id, "persona_id")
        check_ids(conversation_id=conversation_id, optional=True)
        if max_seconds is not None:
            check_number(max_seconds, field="max_seconds", low=0, high=_MAX_WAIT_SECONDS)
        return await drain(
            persona_id,
            conversation_id=conversation_id,
            max_seconds=max_seconds,
            everywhere=check_bool(everywhere, field="everywhere"),
            dual=self._dual,
            lanes=self.lanes,
            pending=self.pending,
        )

    async def lag(
        self, persona_ids: Sequence[str] | None = None, *, now: datetime | None = None
    ) -> list[Lag]:
        """See :meth:`Reads.lag`; ``now`` is this deployment's clock by default."""
        return await super().lag(persona_ids, now=now or self.clock.now())

    async def retry_thinking(self, persona_id: str) -> int:
        """Re-run failed Thinker turns (and turns a dead process left pending), in order
        per conversation; returns how many were closed (0 without a model)."""
        await self.store.get_persona(check_id(persona_id, "persona_id"))
        if self.llm is None:
            return 0
        return await self._dual_process().retry(persona_id)

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
        from sonality.mind.personas import set_affect

        return await set_affect(
            self.store,
            check_id(persona_id, "persona_id"),
            check_id(user_id, "user_id"),
            now=self.clock.now(),
            limit=self.limits.max_identity_chars,
            emotional_state=emotional_state,
            relationship=relationship,
            hard_goals=hard_goals,
            soft_goals=soft_goals,
        )

    async def set_runtime(
        self,
        persona_id: str,
        *,
        mode: RuntimeMode | str | None = None,
        affect: AffectPlacement | str | None = None,
    ) -> Persona:
        """Set the persona's default runtime mode and affect placement for ``respond``."""
        from sonality.mind.personas import set_runtime

        return await set_runtime(self.store, check_id(persona_id, "persona_id"), mode, affect)
