"""The store rules both backends enforce, once.

Pure functions over models and the few stored values a unit of work reads under its lock;
each raises the :mod:`sonality.errors` type the ``Store`` port promises (which rolls the
backend's transaction back) or returns the value to write. A backend reads, calls the rule,
writes: it never restates one. Rules about one commit object alone (every part scoped to its
persona, versions that follow) are validators on the models (``sonality.models``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from sonality.core.influence import claim_key
from sonality.core.retrieval import cosine
from sonality.errors import (
    ConflictError,
    LeaseHeld,
    NotFoundError,
    PersonaNotFound,
    ValidationError,
)
from sonality.models import (
    ApiKey,
    BiographyEntry,
    EnrichmentCommit,
    EnrichmentStatus,
    Episode,
    EpisodeDraft,
    ErasureCommit,
    InsightCommit,
    InsightState,
    Persona,
    Reflection,
    ReflectionCommit,
    ReflectionOutcome,
    Snapshot,
    ThinkerStatus,
    ThinkerTurn,
    ThoughtCommit,
    TurnUsage,
    UserFact,
)

__all__ = [
    "BIOGRAPHY_DUPLICATE",
    "ERROR_MAX_CHARS",
    "FLOAT32_MAX",
    "NO_CURSOR",
    "PING_SECONDS",
    "absorb",
    "active_key",
    "answered",
    "biography_key",
    "biography_room",
    "biography_to_write",
    "corrected_fact",
    "cursor",
    "embedding",
    "enrichment_chunk",
    "enrichment_may_commit",
    "episode_counts",
    "episode_not_found",
    "erasure_may_commit",
    "erasure_target",
    "fact_not_found",
    "fact_source",
    "facts_after_erasure",
    "failed_attempt",
    "first_snapshot",
    "grants_live",
    "held_biography",
    "held_fact",
    "insight_counts",
    "insight_may_commit",
    "insights_consumed",
    "lease_is_free",
    "limit",
    "next_version",
    "reflection_may_commit",
    "same_episode_id",
    "same_exchange",
    "staged_committed",
    "stored_error",
    "thought_is_new",
    "thought_may_commit",
    "turn_matches_episode",
    "unsuccessful_attempt",
    "usage_of_persona",
    "usage_of_turn",
    "user_not_found",
    "without_persona",
    "wrote_all",
]

PING_SECONDS = 0.75
"""The longest a store's ``ping`` waits (``/readyz``, ``sonality doctor``): a readiness
check answers fast, on a connection of its own, without retries. Below a second so that
``/readyz`` answers within one with the request's own handling on a loaded machine: at
1.0 s a down Neo4j's ``/readyz`` took 1.02-1.27 s at load average 3-12 (the ping's
budget plus closing its connection and the HTTP round trip)."""

ERROR_MAX_CHARS = 500
"""Enrichment and Thinker errors are stored cut to this many characters."""


def stored_error(error: str) -> str:
    """An error message as stored: at most :data:`ERROR_MAX_CHARS` characters."""
    return error[:ERROR_MAX_CHARS]


def limit(value: int) -> int:
    """A list ``limit`` as queried: negative means none."""
    return max(value, 0)


NO_CURSOR = (1 << 63) - 1
"""The ``seq`` bound of a listing without a cursor (above every ``seq``)."""


def cursor(before: int | None) -> int:
    """A listing's ``before`` cursor as queried: the bound itself, :data:`NO_CURSOR` when
    there is none (a range on ``seq`` either way, so the index seeks to it)."""
    return NO_CURSOR if before is None else before


def episode_not_found(persona_id: str, episode_id: str) -> NotFoundError:
    return NotFoundError("no such episode", persona_id=persona_id, episode_id=episode_id)


def user_not_found(persona_id: str, user_id: str) -> NotFoundError:
    return NotFoundError("no such user", persona_id=persona_id, user_id=user_id)


def fact_not_found(persona_id: str, fact_id: str) -> NotFoundError:
    return NotFoundError("no such fact", persona_id=persona_id, fact_id=fact_id)


def fact_source(fact: UserFact, episode_user_id: str | None) -> None:
    """A fact hangs off an exchange of its own user (``episode_user_id``: the user of the
    stored episode ``fact.episode_id``, None when there is none)."""
    if episode_user_id != fact.user_id:
        raise NotFoundError(
            "no such episode of this user",
            persona_id=fact.persona_id,
            episode_id=fact.episode_id,
        )


def held_fact(known: Iterable[UserFact], text: str) -> UserFact | None:
    """The fact of ``known`` (a user's active facts) that says what ``text`` says, by
    :func:`~sonality.core.enrichment.fact_key`, or None: a user never holds one fact twice."""
    from sonality.core.enrichment import fact_key  # the opinion rules load with it: not on reads

    key = fact_key(text)
    return next((f for f in known if fact_key(f.text) == key), None)


def active_key(fact: UserFact) -> str | None:
    """What an active fact is unique by among its user's active facts (the stores keep it
    with the fact, under a unique index or constraint); None while retracted."""
    from sonality.core.enrichment import fact_key

    return None if fact.retracted else fact_key(fact.text)


def corrected_fact(
    stored: UserFact, correction: UserFact, active: Iterable[UserFact]
) -> tuple[UserFact, UserFact | None]:
    """How correcting ``stored`` to ``correction`` is written, given its user's
    ``active`` facts: ``(fact to write, fact merged away or None)``.

    A correction keeps the fact's user and episode (``ConflictError`` otherwise). When
    another active fact of the user already says what the corrected text says (whatever
    made it so: a new text, or an un-retraction of a text added again meanwhile), the
    correction merges into that one instead of making a second: it takes the corrected
    text and kind, the higher severity, and every exchange either was drawn from; the
    corrected fact goes."""
    if (stored.user_id, stored.episode_id) != (correction.user_id, correction.episode_id):
        raise ConflictError("a correction keeps the fact's user and episode", fact_id=stored.id)
    fixed = correction.model_copy(update={"also_from": stored.also_from})
    held = held_fact((f for f in active if f.id != stored.id), fixed.text)
    if held is None or fixed.retracted:
        return fixed, None
    merged = absorb(held, fixed).model_copy(update={"text": fixed.text, "kind": fixed.kind})
    return merged, stored


def absorb(into: UserFact, other: UserFact) -> UserFact:
    """``into`` once it stands for ``other`` too (two facts of a user that say the same):
    backed by every exchange of both, with the higher severity."""
    sources = (other.episode_id, *into.also_from, *other.also_from)
    return into.model_copy(
        update={
            "severity": max(into.severity, other.severity),
            "also_from": tuple(dict.fromkeys(s for s in sources if s != into.episode_id)),
        }
    )


def facts_after_erasure(
    facts: Iterable[UserFact], erased: set[str]
) -> tuple[list[UserFact], list[str]]:
    """What erasing the episodes ``erased`` does to ``facts`` (any that name one of them):
    ``(facts still backed by another exchange, re-pointed to it; ids of facts left with no
    exchange, which go)``."""
    kept: list[UserFact] = []
    gone: list[str] = []
    for fact in facts:
        sources = [s for s in (fact.episode_id, *fact.also_from) if s not in erased]
        if not sources:
            gone.append(fact.id)
        elif len(sources) != 1 + len(fact.also_from):
            kept.append(
                fact.model_copy(update={"episode_id": sources[0], "also_from": tuple(sources[1:])})
            )
    return kept, gone


# API keys ---------------------------------------------------------------------------------


def grants_live(key: ApiKey, live: Mapping[str, str]) -> ApiKey:
    """A new key as stored: it names personas that exist, in the incarnations it names
    (``live``: the stored incarnation of each persona id found), else ``PersonaNotFound``
    (a persona deleted, or deleted and made again, since the key's grants were read); a
    key that names no incarnation is bound to the live ones."""
    bound = dict(zip(key.persona_ids, key.incarnations, strict=False))
    for persona_id in key.persona_ids:
        if persona_id not in live or bound.get(persona_id, live[persona_id]) != live[persona_id]:
            raise PersonaNotFound("no such persona", persona_id=persona_id)
    return key.model_copy(update={"incarnations": tuple(live[p] for p in key.persona_ids)})


def without_persona(key: ApiKey, persona_id: str, at: datetime) -> ApiKey:
    """``key`` once ``persona_id`` is deleted: the grant goes; a key left with no persona
    is revoked at ``at`` instead (keeping its list, so it never reads as a global key)."""
    if persona_id not in key.persona_ids:
        return key
    if set(key.persona_ids) == {persona_id}:
        return key.model_copy(update={"revoked_at": key.revoked_at or at})
    bound = key.incarnations or ("",) * len(key.persona_ids)
    pairs = list(zip(key.persona_ids, bound, strict=True))
    kept = [(p, i) for p, i in pairs if p != persona_id]
    return key.model_copy(
        update={
            "persona_ids": tuple(p for p, _ in kept),
            "incarnations": tuple(i for _, i in kept) if key.incarnations else (),
        }
    )


# personas and snapshots -----------------------------------------------------------------


def first_snapshot(persona: Persona, snapshot: Snapshot) -> None:
    """A persona starts with version 1 of its own snapshot."""
    if snapshot.persona_id != persona.id or snapshot.version != 1:
        raise ValidationError(
            "the first snapshot must be version 1 of the same persona",
            persona_id=persona.id,
            snapshot_persona_id=snapshot.persona_id,
            version=snapshot.version,
        )


def next_version(kind: str, persona_id: str, version: int, current: int) -> None:
    """Compare-and-swap of a versioned object (snapshot, affect state): ``version`` must be
    the stored ``current`` + 1, else ``ConflictError``."""
    if version != current + 1:
        raise ConflictError(
            f"{kind} version is not current + 1",
            persona_id=persona_id,
            version=version,
            current=current,
        )


# episodes ---------------------------------------------------------------------------------


def same_exchange(stored: Episode, draft: EpisodeDraft) -> Episode:
    """Idempotent append: an id used again for the same exchange returns the stored
    episode; for another exchange it is a ``ConflictError``."""
    return same_episode_id(
        stored,
        persona_id=draft.persona_id,
        user_id=draft.user_id,
        conversation_id=draft.conversation_id,
        message=draft.user_message,
        response=draft.agent_response,
    )


def same_episode_id(
    stored: Episode,
    *,
    persona_id: str,
    user_id: str,
    conversation_id: str,
    message: str,
    response: str | None = None,
) -> Episode:
    """An episode id used again names the same exchange: the same user, conversation and
    message (and reply, when the caller has one; a repeated ``respond`` has not written
    its reply yet), else ``ConflictError``. Returns the stored episode."""
    asked = (user_id, conversation_id, message)
    if (stored.user_id, stored.conversation_id, stored.user_message) != asked or (
        response is not None and stored.agent_response != response
    ):
        raise ConflictError(
            "episode id already used for another exchange",
            persona_id=persona_id,
            episode_id=stored.id,
        )
    return stored


def answered(stored: Episode, response: str) -> Episode:
    """``answer_episode``'s rule: an exchange stored without a response (a ``respond``
    whose answer did not come in time) takes one; one that has this response already is
    answered (a retry); one with another response is a ``ConflictError``."""
    if stored.agent_response not in ("", response):
        raise ConflictError(
            "the exchange has another response already",
            persona_id=stored.persona_id,
            episode_id=stored.id,
        )
    return stored


MAX_BATCH = 10_000
"""The most episodes one ``append_episodes`` call takes."""


def episode_batch(drafts: Sequence[EpisodeDraft]) -> list[EpisodeDraft]:
    """A bulk append's drafts with repeated ids dropped (the first stays): one persona,
    at most :data:`MAX_BATCH`, and a repeated id must repeat the same exchange; else
    ``ValidationError``/``ConflictError`` before anything is written."""
    if len(drafts) > MAX_BATCH:
        raise ValidationError(f"at most {MAX_BATCH} episodes per batch", size=len(drafts))
    if len({d.persona_id for d in drafts}) > 1:
        raise ValidationError("a batch holds the episodes of one persona")
    first: dict[str, EpisodeDraft] = {}
    for draft in drafts:
        seen = first.get(draft.id)
        if seen is None:
            first[draft.id] = draft
        elif (seen.user_id, seen.conversation_id, seen.user_message, seen.agent_response) != (
            draft.user_id,
            draft.conversation_id,
            draft.user_message,
            draft.agent_response,
        ):
            raise ConflictError(
                "episode id used twice in the batch for different exchanges",
                persona_id=draft.persona_id,
                episode_id=draft.id,
            )
    return list(first.values())


def batch_created(
    drafts: Sequence[EpisodeDraft], batch: Sequence[EpisodeDraft], created: Sequence[bool]
) -> list[bool]:
    """Per original draft, whether this call created it: a repeat within the batch was
    not created (its first occurrence may have been)."""
    fresh = {d.id for d, new in zip(batch, created, strict=True) if new}
    answer = []
    for draft in drafts:
        answer.append(draft.id in fresh)
        fresh.discard(draft.id)
    return answer


FLOAT32_MAX = 3.4028234663852886e38
"""Both stores keep embeddings as float32 vectors."""


def embedding(values: Sequence[float], dimensions: int) -> list[float]:
    """The embedding as floats: exactly ``dimensions`` values, each finite as a float32,
    else ``ValidationError``."""
    vector = list(map(float, values))
    if len(vector) != dimensions:
        raise ValidationError(
            "embedding has the wrong number of dimensions",
            dimensions=len(vector),
            expected=dimensions,
        )
    # two passes in C instead of a generator per value (a bulk load checks 256 floats an
    # episode): the sum is NaN or infinite when any value is, once each is within float32
    try:
        finite = max(map(abs, vector), default=0.0) <= FLOAT32_MAX and math.isfinite(
            math.fsum(vector)
        )
    except OverflowError:
        finite = False
    if not finite:
        raise ValidationError("embedding contains NaN or infinite values")
    return vector


def episode_counts(rows: Iterable[tuple[str, int]]) -> dict[str, int]:
    """Counts by enrichment status, every status present (0 when none)."""
    counts = {status.value: 0 for status in EnrichmentStatus}
    counts.update({str(status): int(n) for status, n in rows})
    return counts


# enrichment -------------------------------------------------------------------------------


def enrichment_chunk(commits: Sequence[EnrichmentCommit]) -> str:
    """The one persona a chunk of enrichment commits belongs to (``ValidationError`` when
    they mix personas or there are none)."""
    personas = {c.persona_id for c in commits}
    if len(personas) != 1:
        raise ValidationError("an enrichment chunk mixes personas", personas=len(personas))
    return personas.pop()


def enrichment_may_commit(
    commit: EnrichmentCommit, interaction_count: int, status: str | None, reflection_at: int
) -> None:
    """The persona is still at the count the enrichment started from and has not
    reflected since it was read (``reflection_at``: its ``last_reflection_at``), and the
    episode is still pending (``status`` None: unknown episode); else ``ConflictError``."""
    if interaction_count != commit.expected_interaction_count:
        raise ConflictError(
            "the persona moved on since this enrichment started",
            persona_id=commit.persona_id,
            expected=commit.expected_interaction_count,
            found=interaction_count,
        )
    if commit.expected_reflection_at not in (None, reflection_at):
        raise ConflictError(
            "the persona reflected since this enrichment read its beliefs",
            persona_id=commit.persona_id,
            expected=commit.expected_reflection_at,
            found=reflection_at,
        )
    if status != EnrichmentStatus.PENDING.value:
        raise ConflictError(
            "the episode is not pending enrichment",
            persona_id=commit.persona_id,
            episode_id=commit.episode_id,
            status=status,
        )


def insight_counts(rows: Iterable[tuple[str, int]]) -> dict[str, int]:
    """Counts of insight parts to retry: ``pending`` and ``failed`` (0 when none)."""
    counts = {InsightState.PENDING.value: 0, InsightState.FAILED.value: 0}
    counts.update({str(status): int(n) for status, n in rows if str(status) in counts})
    return counts


def insight_may_commit(commit: InsightCommit, status: str | None) -> None:
    """A retried insight commits only onto an episode whose insight part is pending
    (``status`` None: unknown episode, ``NotFoundError``; ``"none"``: not enriched yet);
    else ``ConflictError``."""
    if status is None:
        raise episode_not_found(commit.persona_id, commit.episode_id)
    if status != InsightState.PENDING.value:
        raise ConflictError(
            "the episode's insight is not pending",
            persona_id=commit.persona_id,
            episode_id=commit.episode_id,
            status=status,
        )


def wrote_all(
    what: str, persona_id: str, expected: int, written: int, *, conflict: bool = False
) -> None:
    """A batch write touched every row it was given. Fewer: the rows named something
    unknown (``ValidationError``) or, with ``conflict``, something another writer changed
    first (``ConflictError``)."""
    if written == expected:
        return
    error = ConflictError if conflict else ValidationError
    raise error(f"{what}", persona_id=persona_id, expected=expected, found=written)


def staged_committed(persona_id: str, expected: int, committed: int) -> None:
    """Every due staged delta was still uncommitted; else ``ConflictError``."""
    wrote_all(
        "a staged update to commit is unknown or committed already",
        persona_id,
        expected,
        committed,
        conflict=True,
    )


# erasure ----------------------------------------------------------------------------------


def erasure_may_commit(
    commit: ErasureCommit, interaction_count: int, snapshot_version: int | None
) -> None:
    """The persona is still at the count the erasure replayed from and its CURRENT
    snapshot is the version the erasure judged; else ``ConflictError`` (an interaction was
    enriched, or a snapshot written, meanwhile: read and plan again)."""
    expected = commit.expected_snapshot_version
    if interaction_count != commit.expected_interaction_count or (
        expected is not None and snapshot_version != expected
    ):
        raise ConflictError(
            "the persona moved on since this erasure read it",
            persona_id=commit.persona_id,
            expected=commit.expected_interaction_count,
            found=interaction_count,
        )


# reflection -------------------------------------------------------------------------------


def lease_is_free(
    holder: str | None, expires_at: datetime | None, owner: str, now: datetime
) -> bool:
    """``owner`` may take the lease: nobody holds it, it expired, or it is ``owner``'s."""
    return holder is None or holder == owner or expires_at is None or expires_at <= now


def reflection_may_commit(commit: ReflectionCommit, lease_owner: str | None, current: int) -> None:
    """The worker still holds the lease (``LeaseHeld``) and the CURRENT snapshot is the
    one the reflection read (``ConflictError``)."""
    pid = commit.reflection.persona_id
    if lease_owner != commit.lease_owner:
        raise LeaseHeld(
            "the reflection lease is no longer held by this worker",
            persona_id=pid,
            owner=commit.lease_owner,
        )
    if current != commit.expected_snapshot_version:
        raise ConflictError(
            "the snapshot moved on since this reflection started",
            persona_id=pid,
            expected=commit.expected_snapshot_version,
            current=current,
        )


def insights_consumed(persona_id: str, expected: int, consumed: int) -> None:
    """Every insight the reflection read was still pending; else ``ConflictError``."""
    wrote_all(
        "an insight to consume is unknown or consumed already",
        persona_id,
        expected,
        consumed,
        conflict=True,
    )


def unsuccessful_attempt(reflection: Reflection) -> None:
    """``record_reflection`` stores rejected and failed attempts only."""
    if reflection.outcome is ReflectionOutcome.COMMITTED:
        raise ValidationError(
            "a committed reflection goes through commit_reflection",
            persona_id=reflection.persona_id,
        )


# dual-process runtime ---------------------------------------------------------------------


def failed_attempt(turn: ThinkerTurn, give_up: bool) -> ThinkerStatus | None:
    """The status a failed Thinker attempt leaves a turn in: ``abandoned`` when the caller
    gives up, else ``failed``; None for a turn already ``done``, which stays done (a late
    failure of a turn another process finished changes nothing)."""
    if turn.status is ThinkerStatus.DONE:
        return None
    return ThinkerStatus.ABANDONED if give_up else ThinkerStatus.FAILED


def erasure_target(user_id: str | None, episode_id: str | None) -> None:
    """An erasure names exactly one of a user or an episode."""
    if (user_id is None) == (episode_id is None):
        raise ValueError("name a user or an episode")


def turn_matches_episode(turn: ThinkerTurn, conversation_id: str, user_id: str, n: int) -> None:
    """A registered turn names its episode's conversation, user and turn number."""
    if (conversation_id, user_id, n) != (turn.conversation_id, turn.user_id, turn.turn):
        raise ValidationError(
            "the turn does not match its episode",
            persona_id=turn.persona_id,
            episode_id=turn.episode_id,
        )


def usage_of_turn(turn: ThinkerTurn, usage: Sequence[TurnUsage]) -> None:
    """The usage registered with a turn is that turn's."""
    if any((u.persona_id, u.episode_id) != (turn.persona_id, turn.episode_id) for u in usage):
        raise ValidationError("usage belongs to another turn", episode_id=turn.episode_id)


def usage_of_persona(persona_id: str, usage: Sequence[TurnUsage]) -> None:
    """One ``add_turn_usage`` call books one persona's usage."""
    if any(u.persona_id != persona_id for u in usage):
        raise ValidationError("usage of another persona", persona_id=persona_id)


def thought_is_new(commit: ThoughtCommit) -> None:
    """A thought is about a turn later than the last thought-about one (checked before
    anything is read); else ``ConflictError``."""
    if commit.turn <= commit.expected_thought_turn:
        raise ConflictError("the turn was thought about already", turn=commit.turn)


def thought_landed(commit: ThoughtCommit, status: ThinkerStatus, commit_id: str | None) -> bool:
    """Whether ``commit`` itself is stored already: its turn is done by a commit of its
    ``commit_id``. Neo4j's driver runs a transaction again when the connection drops after
    the server committed it; that second run finds its own thought and is answered as done,
    where it was refused as a conflict and the Thinker then booked the turn's usage a
    second time beside the copy the commit had carried."""
    return status is ThinkerStatus.DONE and commit_id == commit.commit_id


def thought_may_commit(
    commit: ThoughtCommit, status: ThinkerStatus, thought_turn: int, narrative_version: int
) -> None:
    """The turn is still open and the conversation's counters are what the Thinker read;
    else ``ConflictError``."""
    if status not in (ThinkerStatus.PENDING, ThinkerStatus.FAILED):
        raise ConflictError(
            "the turn is closed already", episode_id=commit.episode_id, status=status.value
        )
    if (thought_turn, narrative_version) != (
        commit.expected_thought_turn,
        commit.expected_narrative_version,
    ):
        raise ConflictError(
            "the conversation's Thinker state moved",
            conversation_id=commit.conversation_id,
            thought_turn=thought_turn,
            narrative_version=narrative_version,
        )


BIOGRAPHY_DUPLICATE = 0.95
"""Cosine at or above which a new biography entry restates one the persona has."""


def biography_key(text: str) -> str:
    """A biography entry as compared for duplicates (its words, NFKC, case-folded)."""
    return claim_key(text)


def held_biography(known: Iterable[BiographyEntry], entry: BiographyEntry) -> BiographyEntry | None:
    """The stored entry ``entry`` restates (same words, or a cosine of at least
    :data:`BIOGRAPHY_DUPLICATE`), else None: a persona never holds its past twice."""
    key = biography_key(entry.text)
    for held in known:
        if biography_key(held.text) == key:
            return held
        if (
            entry.vector
            and len(held.vector) == len(entry.vector)
            and cosine(held.vector, entry.vector) >= BIOGRAPHY_DUPLICATE
        ):
            return held
    return None


def biography_to_write(
    persona_id: str, held: Sequence[BiographyEntry], new: Sequence[BiographyEntry], cap: int
) -> tuple[list[tuple[BiographyEntry, bool]], list[BiographyEntry]]:
    """Of ``new``, what each call returns (the entry, or the held one it restates, with
    whether it is written) and the entries to write, in order; ``ValidationError`` when
    those would take the persona past ``cap``."""
    out: list[tuple[BiographyEntry, bool]] = []
    fresh: list[BiographyEntry] = []
    for entry in new:
        same = held_biography([*held, *fresh], entry)
        if same is None:
            fresh.append(entry)
        out.append((same or entry, same is None))
    biography_room(persona_id, len(held), len(fresh), cap)
    return out, fresh


def biography_room(persona_id: str, held: int, adding: int, cap: int) -> None:
    """``ValidationError`` when ``adding`` entries would take the persona past ``cap``."""
    if held + adding > cap:
        raise ValidationError(
            "the persona's biography is full: remove entries before adding more",
            persona_id=persona_id,
            held=held,
            cap=cap,
        )
