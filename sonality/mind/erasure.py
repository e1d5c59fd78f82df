"""Forgetting and correcting: erase a user, an exchange or a persona, and undo the effect.

:class:`Eraser` is the shell around the pure planner (``core.erasure.plan_erasure``):

1. take the persona's reflection lease (owner ``erasure:…``), so no reflection reads the
   evidence being erased or commits decay planned from it meanwhile;
2. read the erasure state in one transaction, plan the commit (the replay of the opinion
   rules over the remaining evidence, with the decay-review advice that did not depend on
   what goes, and the revert of every snapshot version that may quote it) and apply it in
   one transaction; if an enrichment or a snapshot committed in between
   (``ConflictError``), read and replay again;
3. release the lease.

So when ``forget_user`` returns, nothing the store serves or sends holds the user: their
episodes, facts, insights, affect, monologue and narratives are gone, beliefs and counters
are what a persona that never met them would hold, and CURRENT is a snapshot version
written before their first enriched exchange was reflected on (or the core identity).

The audit record (:class:`~sonality.models.Erasure`) is written in the same transaction.
It names no user and holds no text (its subject is keyed with the store's secret), and
nothing is logged with the erased ids either: log events carry the audit record's id and
a prefix of its subject.

:meth:`Eraser.forget_everywhere` forgets a user in every persona, one persona per
transaction: a run cut short is finished by running it again (a persona done before
reports ``erased_before``).

Facts are corrected in place (kind, text, severity; the correction makes the fact active
again) or retracted; both keep the fact's source episode. A correction that would leave
the user two active facts saying the same merges into the one already there.
"""

from __future__ import annotations

import asyncio
import uuid

from sonality.core.decay import DecayParams
from sonality.core.erasure import erasure_subject, plan_erasure
from sonality.core.opinion import OpinionParams
from sonality.errors import ConflictError, NotFoundError, PersonaNotFound, ValidationError
from sonality.mind.enrichment import interaction_ids
from sonality.mind.inputs import check_text
from sonality.mind.leases import take_lease
from sonality.mind.parts import Parts
from sonality.models import (
    Erasure,
    ErasureKind,
    FactKind,
    UserErasure,
    UserErasureStatus,
    UserFact,
)
from sonality.observability import get_logger
from sonality.ports import Clock, Store

__all__ = ["MAX_FACT_CHARS", "Eraser", "eraser"]

log = get_logger("sonality.erasure")

MAX_FACT_CHARS = 2_000
"""Longest fact text a correction may set."""

_ATTEMPTS = 5
_LEASE_WAIT_SECONDS = 0.2


class Eraser:
    """Erasures and corrections over one store (see the module docstring)."""

    def __init__(
        self,
        *,
        store: Store,
        clock: Clock,
        params: OpinionParams,
        window_size: int = 50,
        lease_seconds: float = 300.0,
        decay: DecayParams | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self._params = params
        self._window = window_size
        self._lease_seconds = lease_seconds
        self._decay = decay or DecayParams()

    async def forget_user(self, persona_id: str, user_id: str) -> Erasure:
        """Remove the user and everything it owns; replay the remaining evidence."""
        return await self._erase(persona_id, ErasureKind.USER, user_id, user_id=user_id)

    async def forget_everywhere(self, user_id: str) -> list[UserErasure]:
        """Forget ``user_id`` in every persona of the store, one persona at a time (each
        in its own transaction), by persona id; what happened in each."""
        done = []
        key = await self._store.audit_key()
        for persona in await self._store.list_personas():
            try:
                record = await self.forget_user(persona.id, user_id)
            except PersonaNotFound:
                continue  # deleted meanwhile: nothing of the user is left there
            except NotFoundError:
                subject = erasure_subject(key, persona.id, ErasureKind.USER, user_id)
                before = any(
                    r.subject == subject for r in await self._store.list_erasures(persona.id)
                )
                status = UserErasureStatus.ERASED_BEFORE if before else UserErasureStatus.ABSENT
                done.append(UserErasure(persona_id=persona.id, status=status))
                continue
            done.append(
                UserErasure(persona_id=persona.id, status=UserErasureStatus.ERASED, erasure=record)
            )
        log.info(
            "user_erased_everywhere",
            personas=len(done),
            erased=sum(d.status is UserErasureStatus.ERASED for d in done),
        )
        return done

    async def subject(self, persona_id: str, kind: ErasureKind, subject_id: str) -> str:
        """The audit subject an erasure of ``subject_id`` records in this store."""
        return erasure_subject(await self._store.audit_key(), persona_id, kind, subject_id)

    async def delete_episode(self, persona_id: str, episode_id: str) -> Erasure:
        """Remove one exchange and what hangs off it; replay the remaining evidence."""
        return await self._erase(persona_id, ErasureKind.EPISODE, episode_id, episode_id=episode_id)

    async def delete_persona(self, persona_id: str) -> Erasure:
        """Remove the persona and everything it owns, keeping the audit records."""
        await self._store.get_persona(persona_id)
        record = Erasure(
            id=_erasure_id(),
            persona_id=persona_id,
            kind=ErasureKind.PERSONA,
            subject=await self.subject(persona_id, ErasureKind.PERSONA, persona_id),
            created_at=self._clock.now(),
        )
        owner = await self._lease(persona_id)
        try:
            await self._store.delete_persona(persona_id, record)
        except BaseException:
            await self._release(persona_id, owner)
            raise
        log.info("persona_deleted", persona_id=persona_id, erasure_id=record.id)
        return record

    async def _erase(
        self,
        persona_id: str,
        kind: ErasureKind,
        subject_id: str,
        *,
        user_id: str | None = None,
        episode_id: str | None = None,
    ) -> Erasure:
        await self._store.get_persona(persona_id)
        key = await self._store.audit_key()
        owner = await self._lease(persona_id)
        try:
            for _ in range(_ATTEMPTS):
                state = await self._store.erasure_state(
                    persona_id, user_id=user_id, episode_id=episode_id
                )
                commit = plan_erasure(
                    state,
                    kind=kind,
                    subject_id=subject_id,
                    user_id=user_id,
                    record_id=_erasure_id(),
                    now=self._clock.now(),
                    params=self._params,
                    window_size=self._window,
                    new_id=interaction_ids,
                    key=key,
                    decay=self._decay,
                )
                try:
                    await self._store.commit_erasure(commit)
                except ConflictError:
                    continue  # an interaction or a snapshot came meanwhile: plan again
                record = commit.record
                log.info(
                    f"{kind.value}_erased",
                    persona_id=persona_id,
                    erasure_id=record.id,
                    subject=record.subject[:12],
                    episodes=record.episodes,
                    facts=record.facts,
                    insights=record.insights,
                    beliefs_changed=record.beliefs_changed,
                    beliefs_removed=record.beliefs_removed,
                    review_from_version=record.review_from_version,
                )
                return record
            raise ConflictError("the persona kept changing during the erasure; retry")
        finally:
            await self._release(persona_id, owner)

    async def _lease(self, persona_id: str) -> str:
        """Take the persona's reflection lease, waiting a little for a running reflection."""
        owner = f"erasure:{uuid.uuid4().hex[:12]}"
        for attempt in range(_ATTEMPTS * 5):
            taken = await take_lease(
                self._store,
                persona_id,
                owner,
                now=self._clock.now(),
                ttl_seconds=self._lease_seconds,
            )
            if taken:
                return owner
            await asyncio.sleep(_LEASE_WAIT_SECONDS * min(attempt + 1, 5))
        raise ConflictError("a reflection of this persona is running; retry", persona_id=persona_id)

    async def _release(self, persona_id: str, owner: str) -> None:
        await asyncio.shield(self._store.release_lease(persona_id, owner))

    # facts ------------------------------------------------------------------------------

    async def retract_fact(self, persona_id: str, fact_id: str) -> UserFact:
        """Retract a fact: it stays stored, out of every context."""
        fact = await self._store.get_fact(persona_id, fact_id)
        await self._store.retract_fact(persona_id, fact.user_id, fact_id)
        log.info("fact_retracted", persona_id=persona_id, fact_id=fact_id)
        return await self._store.get_fact(persona_id, fact_id)

    async def correct_fact(
        self,
        persona_id: str,
        fact_id: str,
        *,
        text: str,
        kind: FactKind | str | None = None,
        severity: int | None = None,
    ) -> UserFact:
        """Replace a fact's text (and kind or severity); the corrected fact is active."""
        text, new_kind = _fact_text(text), _fact_kind(kind)
        _check_severity(severity)
        fact = await self._store.get_fact(persona_id, fact_id)
        corrected = fact.model_copy(
            update={
                "text": text,
                "kind": new_kind or fact.kind,
                "severity": severity if severity is not None else fact.severity,
                "retracted": False,
            }
        )
        stored = await self._store.correct_fact(corrected)
        log.info("fact_corrected", persona_id=persona_id, fact_id=fact_id, merged_into=stored.id)
        return stored

    async def add_fact(
        self,
        persona_id: str,
        user_id: str,
        episode_id: str,
        *,
        text: str,
        kind: FactKind | str = FactKind.FACT,
        severity: int = 1,
    ) -> UserFact:
        """Store a fact the caller knows about the user, backed by one of the user's
        exchanges; the fact the user already holds when it says the same."""
        fact_kind = _fact_kind(kind)
        _check_severity(severity, optional=False)
        if fact_kind is None:
            raise ValidationError("kind must be constraint, preference or fact", field="kind")
        fact = UserFact(
            id=f"fact_{uuid.uuid4().hex}",
            persona_id=persona_id,
            user_id=user_id,
            kind=fact_kind,
            text=_fact_text(text),
            severity=severity,
            episode_id=episode_id,
            created_at=self._clock.now(),
        )
        stored = await self._store.add_fact(fact)
        log.info(
            "fact_added", persona_id=persona_id, fact_id=stored.id, created=stored.id == fact.id
        )
        return stored


def _fact_text(text: object) -> str:
    """A fact's text as stored: stripped, not empty, bounded, without NUL (each refusal
    says which, as every text argument's does)."""
    if not isinstance(text, str) or not text.strip():
        raise ValidationError("a fact needs text", field="text")
    return check_text(text, field="text", limit=MAX_FACT_CHARS).strip()


def _fact_kind(kind: FactKind | str | None) -> FactKind | None:
    try:
        return None if kind is None else FactKind(kind)
    except ValueError:
        raise ValidationError("kind must be constraint, preference or fact", field="kind") from None


def _check_severity(severity: object, *, optional: bool = True) -> None:
    if optional and severity is None:
        return
    if not isinstance(severity, int) or isinstance(severity, bool) or severity not in range(1, 6):
        raise ValidationError("severity must be 1-5", field="severity")


def _erasure_id() -> str:
    return f"era_{uuid.uuid4().hex[:20]}"


def eraser(parts: Parts) -> Eraser:
    """The erasure pipeline over a facade's parts."""
    return Eraser(
        store=parts.store,
        clock=parts.clock,
        params=parts.opinion,
        window_size=parts.limits.disagreement_window,
        lease_seconds=parts.reflector.params.lease_seconds,
        decay=parts.reflector.params.decay,
    )
