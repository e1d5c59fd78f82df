"""What an application injects into its own prompt before it answers a user.

``build_context`` gathers, scoped to the persona (and to the user for facts and
episodes): the core identity, the current snapshot, the user's active facts, the beliefs
most relevant to the message, and the best past episodes by ``0.5·similarity +
0.3·recency + 0.2·importance``. Snapshot, narrative, beliefs and episodes share the token
budget.

Facts: **every constraint of the user is in every context**, whatever any budget says —
first, by severity, then oldest first. No count of them is capped at read time; what keeps
their number bounded is deduplication by meaning at write time (``core.enrichment``).
Should the constraints' lines alone pass :data:`COMPACT_CONSTRAINT_TOKENS`, they are
rendered compactly (their texts only, one line), still all of them, and a
``constraints_compact`` warning names the user (someone should look at their facts).
Preferences and neutral facts share their own ``fact_tokens`` budget, ranked by relevance
to the message (a shared word), then severity, then age; those that do not fit are counted
in the block (``facts_omitted``) — never silently.

The beliefs are read bounded by what the block shows (``Store.context_reads``): those
whose topic embedding is most similar to the message, the strongest few, and those whose
topic is not embedded yet, never every belief of the persona. A topic met for the first
time is embedded here, in one embedder call, and stored (``set_topic_embeddings``), so a
belief is found by relevance from the next call on; a store that cannot take it now only
logs it (the next call tries again).

:class:`ContextBuilder` is the part the facade and the Talker share: ``build_context`` over
one store, embedder, clock and token counter, with the deployment's default budget.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from sonality.core.budget import fit_items, remembered
from sonality.core.retrieval import cosine, rank_episodes
from sonality.errors import StoreError
from sonality.models import (
    Belief,
    ConstraintLoad,
    Context,
    ContextReads,
    FactKind,
    ScoredEpisode,
    UserFact,
)
from sonality.models.context import _belief_line, _episode_line, _fact_line
from sonality.observability import get_logger
from sonality.ports import Clock, Embedder, Store

__all__ = [
    "COMPACT_CONSTRAINT_TOKENS",
    "MAX_BELIEFS",
    "RELEVANT_SIMILARITY",
    "ContextBuilder",
    "build_context",
    "constraint_tokens",
    "order_facts",
    "oversized_constraints",
    "pin_facts",
    "relevant_beliefs",
]

T = TypeVar("T")

log = get_logger(__name__)

_WORD = re.compile(r"[a-z0-9]+")

COMPACT_CONSTRAINT_TOKENS = 4_000
"""Above this many tokens of constraint lines, a context renders the constraints compactly
(all of them, texts only) and logs ``constraints_compact``: a user whose constraints alone
crowd the model's prompt needs someone to look at their facts."""

MAX_BELIEFS = 8
"""Beliefs a context shows at most (and what it reads of each kind: the most similar, the
strongest, the not yet embedded)."""

RELEVANT_SIMILARITY = 0.3
"""A belief whose topic embedding has at least this cosine with the message counts as
relevant to it (as does one whose topic shares a word with it)."""


def _block_tokens(context: Context, count: Callable[[str], int]) -> int:
    """Tokens of ``context.as_prompt()``, counted line by line (a blank line between
    sections as one token; a line break merges with its line): the lines come back call
    after call, so a remembering counter counts few of them."""
    sections = context.sections()
    return sum(count(line) for lines in sections for line in lines) + len(sections) - 1


def order_facts(facts: Sequence[UserFact]) -> tuple[UserFact, ...]:
    """Constraints first, then by severity (highest first), then oldest first."""
    return tuple(
        sorted(
            facts,
            key=lambda f: (f.kind is not FactKind.CONSTRAINT, -f.severity, f.created_at),
        )
    )


def _words(text: str) -> set[str]:
    return {w.rstrip("s") for w in _WORD.findall(text.lower()) if len(w) > 2}


def relevant_beliefs(
    beliefs: Sequence[Belief], message: str, similarity: Mapping[str, float] | None = None
) -> list[Belief]:
    """Beliefs relevant to the message first — their topic shares a word with it, or its
    embedding's cosine with the message's (``similarity``, by topic) is at least
    :data:`RELEVANT_SIMILARITY` — the most similar first, then the strongest
    (|position| × confidence); at most :data:`MAX_BELIEFS`."""
    words = _words(message)
    scores = similarity or {}

    def key(b: Belief) -> tuple[bool, float, float, str]:
        score = scores.get(b.topic, 0.0)
        hit = score >= RELEVANT_SIMILARITY or bool(_words(b.topic.replace("_", " ")) & words)
        return (not hit, -score if hit else 0.0, -abs(b.position) * b.confidence, b.topic)

    return sorted(beliefs, key=key)[:MAX_BELIEFS]


async def _embed_topics(
    store: Store,
    embedder: Embedder,
    persona_id: str,
    topics: Sequence[str],
    message_vector: Sequence[float],
) -> dict[str, float]:
    """Embed the topics not embedded yet (one embedder call), store them, and return each
    one's cosine with the message. An embedder or store that fails leaves them for the
    next call (logged), never the context."""
    try:
        vectors = await embedder.embed([t.replace("_", " ") for t in topics])
    except Exception as exc:  # an embedder outage must not cost the user the context
        log.warning("topic_embedding_deferred", persona_id=persona_id, error=type(exc).__name__)
        return {}
    try:
        await store.set_topic_embeddings(persona_id, dict(zip(topics, vectors, strict=True)))
    except StoreError as exc:
        log.warning("topic_embedding_not_stored", persona_id=persona_id, error=exc.message)
    return {t: cosine(v, message_vector) for t, v in zip(topics, vectors, strict=True)}


def _fit(
    items: Sequence[T], render: Callable[[T], str], budget: int, count: Callable[[str], int]
) -> list[T]:
    """The items whose rendered lines ``fit_items`` keeps within ``budget``, in order."""
    lines = [render(item) for item in items]
    kept = fit_items(lines, max(budget, 0), count)
    out: list[T] = []
    cursor = 0
    for line in kept:  # fit_items keeps order and only skips, so a forward walk matches
        while lines[cursor] is not line:
            cursor += 1
        out.append(items[cursor])
        cursor += 1
    return out


def pin_facts(
    facts: Sequence[UserFact], message: str, budget: int, count: Callable[[str], int]
) -> tuple[tuple[UserFact, ...], int, bool]:
    """The facts a context shows: every constraint (in ``order_facts`` order), then the
    preferences and neutral facts that fit ``budget`` tokens, ranked by relevance to
    ``message`` (they share a word), then severity, then age. Returns them, how many of
    the others were left out, and whether the constraints are shown compactly."""
    ordered = order_facts(facts)
    constraints = [f for f in ordered if f.kind is FactKind.CONSTRAINT]
    others = [f for f in ordered if f.kind is not FactKind.CONSTRAINT]
    compact = constraint_tokens(constraints, count) > COMPACT_CONSTRAINT_TOKENS
    words = _words(message)
    ranked = sorted(others, key=lambda f: (not (_words(f.text) & words), -f.severity, f.created_at))
    kept = _fit(ranked, _fact_line, budget, count)
    return (*constraints, *kept), len(others) - len(kept), compact


def constraint_tokens(facts: Sequence[UserFact], count: Callable[[str], int]) -> int:
    """Tokens the constraints of ``facts`` take in a context, one line each (what
    :data:`COMPACT_CONSTRAINT_TOKENS` bounds)."""
    return sum(count(_fact_line(f)) for f in facts if f.kind is FactKind.CONSTRAINT)


_LINE_CHARS = len("- [constraint, severity 5] ")
"""What a constraint's line in a context adds to its text, in characters."""


async def oversized_constraints(
    store: Store, persona_id: str, count: Callable[[str], int], *, limit: int = 20
) -> list[ConstraintLoad]:
    """The persona's users (at most ``limit``, the longest first) whose active constraints
    pass :data:`COMPACT_CONSTRAINT_TOKENS`, their tokens counted: the users every context
    shows the constraints of compactly (``doctor`` warns about them). The store picks the
    candidates by characters (a token spans at least one character of English text), and
    only theirs are counted in tokens."""
    loads = await store.heavy_constraints(
        persona_id, min_chars=COMPACT_CONSTRAINT_TOKENS, line_chars=_LINE_CHARS, limit=limit
    )
    out = []
    for load in loads:
        tokens = constraint_tokens(await store.list_facts(persona_id, load.user_id), count)
        if tokens > COMPACT_CONSTRAINT_TOKENS:
            out.append(load.model_copy(update={"tokens": tokens}))
    return out


async def build_context(
    *,
    store: Store,
    embedder: Embedder,
    clock: Clock,
    count_tokens: Callable[[str], int],
    persona_id: str,
    user_id: str,
    message: str,
    token_budget: int,
    max_episodes: int,
    narrative: str | None = None,
    fact_tokens: int = 1_000,
    vector: Sequence[float] | None = None,
) -> Context:
    """Assemble the context for ``message`` (see the module docstring). The store reads
    everything in one unit of work (``Store.context_reads``). ``vector``: the message's
    embedding when the caller has it already."""
    if vector is None:
        vector = (await embedder.embed([message]))[0]
    reads = await store.context_reads(persona_id, user_id, vector, **read_sizes(max_episodes))
    return await assemble(
        reads,
        store=store,
        embedder=embedder,
        clock=clock,
        count_tokens=count_tokens,
        user_id=user_id,
        message=message,
        vector=vector,
        token_budget=token_budget,
        max_episodes=max_episodes,
        narrative=narrative,
        fact_tokens=fact_tokens,
    )


def read_sizes(max_episodes: int) -> dict[str, int]:
    """What ``context`` asks ``Store.context_reads`` for, showing ``max_episodes``."""
    return {"similar_k": max_episodes * 4, "recent": max_episodes * 2, "beliefs": MAX_BELIEFS}


async def assemble(
    reads: ContextReads,
    *,
    store: Store,
    embedder: Embedder,
    clock: Clock,
    count_tokens: Callable[[str], int],
    user_id: str,
    message: str,
    vector: Sequence[float],
    token_budget: int,
    max_episodes: int,
    narrative: str | None = None,
    fact_tokens: int = 1_000,
) -> Context:
    """The context block made of what the store read (``vector``: the message's
    embedding the reads were made with)."""
    persona, snapshot = reads.persona, reads.snapshot
    persona_id = persona.id
    facts, left_out, compact = pin_facts(reads.facts, message, fact_tokens, count_tokens)
    if compact:
        log.warning("constraints_compact", persona_id=persona_id, user_id=user_id)
    similarity = dict(reads.belief_similarity)
    if reads.unembedded:
        similarity |= await _embed_topics(store, embedder, persona_id, reads.unembedded, vector)
    beliefs = relevant_beliefs(reads.beliefs, message, similarity)

    scored: list[ScoredEpisode] = []
    if max_episodes:
        seen = {e.id for e, _ in reads.similar}
        candidates = [*reads.similar, *((e, 0.0) for e in reads.recent if e.id not in seen)]
        scored = rank_episodes(candidates, clock.now(), len(candidates))

    # the budget covers snapshot, narrative, beliefs and episodes; identity and facts are
    # always present whatever it costs
    repeated = snapshot.text.strip() == persona.core_identity.strip()  # shown once
    snapshot_cost = 0 if repeated else count_tokens(snapshot.text)
    remaining = token_budget - snapshot_cost - count_tokens(narrative or "")
    kept_beliefs = _fit(beliefs, _belief_line, remaining, count_tokens)
    remaining -= sum(count_tokens(_belief_line(b)) for b in kept_beliefs)
    kept_episodes = _fit(
        scored[:max_episodes], lambda s: _episode_line(s.episode), remaining, count_tokens
    )
    context = Context(
        persona_id=persona_id,
        user_id=user_id,
        persona_name=persona.name,
        core_identity=persona.core_identity,
        snapshot=snapshot.text,
        snapshot_version=snapshot.version,
        facts=facts,
        facts_omitted=left_out,
        compact_constraints=compact,
        beliefs=tuple(kept_beliefs),
        episodes=tuple(kept_episodes),
        narrative=narrative,
        token_budget=token_budget,
        tokens=0,
        dropped=(len(beliefs) - len(kept_beliefs))
        + (min(len(scored), max_episodes) - len(kept_episodes)),
    )
    return context.model_copy(update={"tokens": _block_tokens(context, count_tokens)})


class ContextBuilder:
    """Builds contexts over one store with fixed defaults (see ``build_context``)."""

    def __init__(
        self,
        *,
        store: Store,
        embedder: Embedder,
        clock: Clock,
        count_tokens: Callable[[str], int],
        token_budget: int,
        max_episodes: int,
        fact_tokens: int = 1_000,
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._clock = clock
        self._count = remembered(count_tokens)  # the same lines come back call after call
        self.token_budget = token_budget
        self.max_episodes = max_episodes
        self.fact_tokens = fact_tokens

    async def embed(self, message: str) -> Sequence[float]:
        """The message's embedding, as ``build`` reads with it."""
        return (await self._embedder.embed([message]))[0]

    def read_sizes(self) -> dict[str, int]:
        """The sizes ``build`` passes to ``Store.context_reads``."""
        return read_sizes(self.max_episodes)

    async def assemble(
        self, reads: ContextReads, *, user_id: str, message: str, vector: Sequence[float]
    ) -> Context:
        """The context of reads made with :meth:`read_sizes` and ``vector`` (``build``
        without its read)."""
        return await assemble(
            reads,
            store=self._store,
            embedder=self._embedder,
            clock=self._clock,
            count_tokens=self._count,
            user_id=user_id,
            message=message,
            vector=vector,
            token_budget=self.token_budget,
            max_episodes=self.max_episodes,
            fact_tokens=self.fact_tokens,
        )

    async def search(
        self, persona_id: str, user_id: str, query: str, limit: int
    ) -> list[ScoredEpisode]:
        """The user's episodes most like ``query``, scored as the context ranks them
        (similarity, recency, importance), best first."""
        await self._store.get_persona(persona_id)
        [vector] = await self._embedder.embed([query])
        similar = await self._store.similar_episodes(persona_id, user_id, vector, k=limit)
        return rank_episodes(similar, self._clock.now(), limit)

    async def build(
        self,
        persona_id: str,
        *,
        user_id: str,
        message: str,
        narrative: str | None = None,
        token_budget: int | None = None,
        vector: Sequence[float] | None = None,
    ) -> Context:
        """The context for ``message`` (``token_budget`` overrides the default; ``vector``:
        the message's embedding, when the caller made it already)."""
        return await build_context(
            store=self._store,
            embedder=self._embedder,
            clock=self._clock,
            count_tokens=self._count,
            persona_id=persona_id,
            user_id=user_id,
            message=message,
            token_budget=token_budget or self.token_budget,
            max_episodes=self.max_episodes,
            narrative=narrative,
            fact_tokens=self.fact_tokens,
            vector=vector,
        )
