"""The parts one deployment is made of, and the one function that completes them.

A :class:`Parts` is what ``Sonality(**parts)`` is built from: the adapters (store, model,
embedder, clock), the tunables (limits, opinion, reflection and runtime settings), the
token counter, and the parts derived from those (recorder, enricher, reflector, context
builder). :func:`assemble` builds whatever is missing from what is given, with the same
defaults for every caller: ``wiring`` (from settings) and ``Sonality(store=…, llm=…)``
(tests, applications) both go through it, so there is one way to put a deployment
together. A derived part that is passed in is used as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any, Required, TypedDict, Unpack

from pydantic import BaseModel, ConfigDict, Field

from sonality.core.opinion import OpinionParams
from sonality.core.reflection import ReflectionParams
from sonality.errors import ConfigError
from sonality.llm.embedders import HashEmbedder
from sonality.llm.tokens import approximate_tokens
from sonality.llm.tokens import count_tokens as model_tokens
from sonality.mind.context import ContextBuilder
from sonality.mind.enrich_lanes import EnrichLanes
from sonality.mind.enrichment import Enricher
from sonality.mind.recording import EpisodeRecorder
from sonality.mind.reflection import Reflector
from sonality.models import EnrichMode
from sonality.ports import LLM, Clock, Embedder, Store

if TYPE_CHECKING:
    from sonality.mind.thinker import ThinkerBudget

__all__ = [
    "EnrichMode",
    "Given",
    "Limits",
    "Parts",
    "RuntimeSettings",
    "SystemClock",
    "assemble",
]


class SystemClock:
    """The real clock (UTC)."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class Limits(BaseModel):
    """Boundary limits and tunables of the interaction pipeline."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    max_message_chars: int = Field(default=20_000, ge=1)
    max_response_chars: int = Field(default=20_000, ge=1)
    max_name_chars: int = 200
    max_identity_chars: int = 20_000
    context_token_budget: int = 2_000
    context_episodes: int = 5
    context_fact_tokens: int = Field(default=1_000, ge=1)
    """Tokens for the preferences and neutral facts in ``context`` (constraints are always
    all there); what does not fit is counted there."""
    enrichment_max_attempts: int = 5
    disagreement_window: int = 50
    record_enrich: EnrichMode = EnrichMode.INLINE
    """What ``record`` does about enrichment when the call does not say (see
    :class:`EnrichMode`)."""
    record_deadline_seconds: float = Field(default=10.0, gt=0)
    """The longest an inline ``record`` waits for its enrichment (the model calls and the
    commit); past it the episode is returned ``pending`` and enriched in the background."""
    respond_deadline_seconds: float = Field(default=30.0, gt=0)
    """The longest ``respond`` waits for the answer (context, affect, the Talker); past it
    the user's message is stored, pending, and ``AnswerTimeout`` names it."""
    enrich_concurrency: int = Field(default=16, ge=1)
    """Episodes of one persona asked about at once (``Enricher``'s ``concurrency``)."""
    max_biography_entries: int = Field(default=200, ge=1, le=10_000)
    """Biography entries a persona holds at most (recall scores them all)."""
    max_biography_chars: int = Field(default=2_000, ge=1)
    """Characters of one biography entry at most."""


class RuntimeSettings(BaseModel):
    """Tunables of the dual-process runtime (MIRROR's constants by default)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    max_wait_seconds: float = Field(default=0.0, ge=0)
    """How long the Talker may wait for the conversation's running Thinker (0: never)."""
    window_tokens: int = Field(default=20_000, ge=100)
    narrative_tokens: int = Field(default=3_000, ge=50)
    monologue_history_tokens: int = Field(default=10_000, ge=100)
    monologue_input_tokens: int = Field(default=10_000, ge=500)
    extra_input_tokens: int = Field(default=13_000, ge=1_000)
    """Per-turn bound on the Thinker's input tokens (MIRROR: 13k)."""
    extra_output_tokens: int = Field(default=7_500, ge=100)
    """Per-turn bound on the output tokens of the monologue, the controller and the affect
    stages: MIRROR's 6k (monologue 3k + controller 3k) plus the affect stages' 1.5k
    (700 + 500 + 300, seed 002's stages, which MIRROR does not have). Enforced: their
    prompts' ``max_tokens`` must add up to at most this (the Thinker refuses to start
    otherwise) and the LLM port holds each call to its prompt's ``max_tokens``, re-ask
    included."""
    excerpt_tokens: int = Field(default=10_000, ge=100)
    """Most tokens of conversation the monologue sees (MIRROR: up to 10k, shared with its
    own history: the conversation takes at most half of the monologue's input)."""
    thread_tokens: int = Field(default=400, ge=20)
    affect_field_tokens: int = Field(default=150, ge=20)
    max_attempts: int = Field(default=3, ge=1)
    """Invalid replies before a turn's Thinker is abandoned (outages never give up)."""
    stale_pending_seconds: float = Field(default=600.0, gt=0)
    """A turn pending longer than this is taken over by ``retry`` (its process died)."""
    keep_narratives: int = Field(default=50, ge=1)
    shutdown_seconds: float | None = Field(default=10.0, ge=0)
    """How long ``close`` lets the background work in flight (thinking, enrichment) finish
    before cancelling it; it starts nothing new meanwhile, and what is left stays pending
    for the next process or the worker (None: no bound)."""

    def budget(self) -> ThinkerBudget:
        from sonality.mind.thinker import ThinkerBudget

        return ThinkerBudget(
            history_tokens=self.monologue_history_tokens,
            monologue_input_tokens=self.monologue_input_tokens,
            extra_input_tokens=self.extra_input_tokens,
            narrative_tokens=self.narrative_tokens,
            excerpt_tokens=self.excerpt_tokens,
            thread_tokens=self.thread_tokens,
            keep_narratives=self.keep_narratives,
            max_attempts=self.max_attempts,
            output_tokens=self.extra_output_tokens,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Parts:
    """Everything a ``Sonality`` is made of. It unpacks as keywords:
    ``Sonality(**parts)``."""

    store: Store
    llm: LLM | None
    embedder: Embedder
    clock: Clock
    opinion: OpinionParams
    limits: Limits
    count_tokens: Callable[[str], int]
    owns_store: bool
    """True when closing the ``Sonality`` closes the store (it opened it)."""
    reflection: ReflectionParams
    runtime: RuntimeSettings
    recorder: EpisodeRecorder
    enricher: Enricher
    reflector: Reflector
    context_builder: ContextBuilder
    lanes: EnrichLanes
    """When enrichment runs: the persona lanes ``record`` and the Thinker hand it to."""

    def keys(self) -> Iterator[str]:
        """The part names (with ``__getitem__``, what ``**parts`` unpacks)."""
        return (f.name for f in fields(self))

    def __getitem__(self, name: str) -> Any:
        if name not in {f.name for f in fields(self)}:
            raise KeyError(name)
        return getattr(self, name)


class Given(TypedDict, total=False):
    """The keywords ``Sonality(...)`` and :func:`assemble` take: the store, and any other
    part (what is left out is built with the defaults), plus ``owner``, the reflector's
    lease owner. The names are the :class:`Parts` fields (``tests/runtime`` checks that
    the two lists agree)."""

    store: Required[Store]
    llm: LLM | None
    embedder: Embedder | None
    clock: Clock | None
    opinion: OpinionParams | None
    limits: Limits | None
    count_tokens: Callable[[str], int] | None
    owns_store: bool
    reflection: ReflectionParams | None
    owner: str | None
    runtime: RuntimeSettings | None
    recorder: EpisodeRecorder | None
    enricher: Enricher | None
    reflector: Reflector | None
    context_builder: ContextBuilder | None
    lanes: EnrichLanes | None


def assemble(**given: Unpack[Given]) -> Parts:
    """The complete parts: what is given, and the rest built with the defaults (hashed
    embedder, system clock, default tunables, the model's tokenizer, and the derived
    parts over them). ``owner`` names the reflector's leases (a process-unique id by
    default). A given ``reflector`` brings its own reflection params and owner: passing
    different ones beside it is a ``ConfigError``."""
    store, llm = given["store"], given.get("llm")
    embedder, clock = given.get("embedder"), given.get("clock")
    opinion, limits, runtime = given.get("opinion"), given.get("limits"), given.get("runtime")
    count_tokens, reflection, owner = (
        given.get("count_tokens"),
        given.get("reflection"),
        given.get("owner"),
    )
    recorder, enricher, reflector = (
        given.get("recorder"),
        given.get("enricher"),
        given.get("reflector"),
    )
    context_builder, lanes = given.get("context_builder"), given.get("lanes")
    owns_store = given.get("owns_store", False)
    embedder = embedder if embedder is not None else HashEmbedder()
    clock = clock if clock is not None else SystemClock()
    opinion = opinion if opinion is not None else OpinionParams()
    limits = limits if limits is not None else Limits()
    runtime = runtime if runtime is not None else RuntimeSettings()
    if count_tokens is None:
        # without a model nothing is sent: budgets are estimates (llm/tokens.py)
        count_tokens = (
            partial(model_tokens, model=llm.model) if llm is not None else approximate_tokens
        )
    if reflector is None:
        reflector = Reflector(store=store, llm=llm, clock=clock, params=reflection, owner=owner)
    elif (reflection is not None and reflection != reflector.params) or (
        owner is not None and owner != reflector.owner
    ):
        raise ConfigError("the reflector given has other reflection params or owner")
    if recorder is None:
        recorder = EpisodeRecorder(store=store, embedder=embedder, clock=clock)
    if enricher is None:
        enricher = Enricher(
            store=store,
            llm=llm,
            clock=clock,
            params=opinion,
            window_size=limits.disagreement_window,
            max_attempts=limits.enrichment_max_attempts,
            concurrency=limits.enrich_concurrency,
        )
    if lanes is None:
        lanes = EnrichLanes(
            store=store,
            recorder=recorder,
            enricher=enricher,
            notifier=reflector.notifier,
            default_mode=limits.record_enrich,
            deadline_seconds=limits.record_deadline_seconds,
            influence_window=opinion.influence_window,
            has_model=llm is not None,
        )
    return Parts(
        store=store,
        llm=llm,
        embedder=embedder,
        clock=clock,
        opinion=opinion,
        limits=limits,
        count_tokens=count_tokens,
        owns_store=owns_store,
        reflection=reflector.params,
        runtime=runtime,
        recorder=recorder,
        enricher=enricher,
        reflector=reflector,
        context_builder=context_builder
        if context_builder is not None
        else ContextBuilder(
            store=store,
            embedder=embedder,
            clock=clock,
            count_tokens=count_tokens,
            token_budget=limits.context_token_budget,
            max_episodes=limits.context_episodes,
            fact_tokens=limits.context_fact_tokens,
        ),
        lanes=lanes,
    )
