"""The Thinker (MIRROR's System 2): deliberation about one answered turn, after it.

Per turn, by mode (``RuntimeMode``):

- inner monologue (``threads``, ``full``): one structured call (``prompts/monologue.md``)
  returning three first-person threads — reasoning, memory, goal. As in MIRROR, the model
  talks to itself: its earlier entries (the stored history, bounded to 10k tokens: past
  90% it drops the oldest back to 80%, ``core.budget.truncate_history``) reach it as its
  own previous assistant turns, each the JSON it wrote (``render_entry``), followed by one
  user message with the latest exchanges and the "keep thinking" nudge, which is never
  stored.
- cognitive controller (``controller``, ``full``): one plain-text call
  (``prompts/controller.md``) regenerating the conversation narrative (at most 3k tokens,
  first person: the most important facts, the central question ahead, a response
  strategy, pitfalls) from the threads — or, in ``controller`` mode, from the turn's
  enrichment — and the previous narrative only.
- affect (persona option, Thinker placement): ``mind.affect``'s three calls.

Everything the turn produced is written by one compare-and-swap ``commit_thought``. No
error chaining: a failed call, an invalid reply (the port re-asks once, then raises) or a
lost race writes nothing — the previous narrative and monologue stay untouched, the turn
is marked ``failed`` and retried later (or ``abandoned`` after ``max_attempts`` invalid
replies). Malformed threads therefore never reach the controller.

Budget: the monologue's prompt is sized so that, with the controller's and the affect
stages' worst case reserved, the turn's extra input stays within MIRROR's 13k tokens. The
output is bounded by the prompts' ``max_tokens`` (MIRROR's generation settings, in their
front matter), which the LLM port enforces per call, re-ask included; the Thinker refuses
to start (``ConfigError``) unless the monologue, the controller and the affect stages'
``max_tokens`` add up to at most the turn's output bound (MIRROR's 6k).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, field_validator

from sonality.core.budget import clip_text, fit_items, truncate_history
from sonality.errors import ConfigError, ConflictError, LLMError, LLMUnavailable, SonalityError
from sonality.llm.prompts import Prompt
from sonality.llm.usage import UsageMeter, metering
from sonality.mind.accounting import book_usage, component_usage, log_usage, usage_rows
from sonality.mind.affect import AffectStages, initial_state
from sonality.mind.enrich_lanes import EnrichLanes
from sonality.models import (
    AffectPlacement,
    AffectState,
    ConversationMind,
    EnrichmentStatus,
    Episode,
    MonologueEntry,
    Narrative,
    Persona,
    RuntimeMode,
    ThinkerStatus,
    ThinkerTurn,
    ThoughtCommit,
)
from sonality.observability import get_logger
from sonality.ports import LLM, Clock, PromptSource, Store

__all__ = ["TURN_OUTPUT_PROMPTS", "MonologueReply", "Thinker", "ThinkerBudget", "render_entry"]

log = get_logger("sonality.thinker")

_EXCERPT_TURNS = 10
"""Exchanges of the conversation the monologue may see (newest first, as many as fit)."""
_CONFLICT_RETRIES = 3
_MARGIN = 100
"""Tokens kept free in each budget for what the static estimate cannot see."""
_IDENTITY_TOKENS = {Prompt.MONOLOGUE: 300, Prompt.CONTROLLER: 200}
"""The core identity, clipped, as the monologue and the controller see it."""
_MESSAGE_TOKENS = 4
"""What each earlier entry costs beyond its text, as a message of its own."""
TURN_OUTPUT_PROMPTS = (
    Prompt.MONOLOGUE,
    Prompt.CONTROLLER,
    Prompt.AFFECT_UPDATE,
    Prompt.AFFECT_APPRAISE,
    Prompt.AFFECT_PLAN,
)
"""The prompts whose output counts toward a turn's output bound: MIRROR's 6k for the
monologue (3k) and the controller (3k), plus seed 002's affect stages (1.5k)."""


class MonologueReply(BaseModel):
    """Schema of the monologue call: three non-blank first-person threads."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    reasoning: str
    memory: str
    goal: str

    @field_validator("reasoning", "memory", "goal")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("a thread must not be blank")
        return value


@dataclass(frozen=True, slots=True)
class ThinkerBudget:
    """Token limits of the Thinker (MIRROR's constants by default)."""

    history_tokens: int = 10_000
    monologue_input_tokens: int = 10_000
    extra_input_tokens: int = 13_000
    narrative_tokens: int = 3_000
    excerpt_tokens: int = 10_000
    thread_tokens: int = 400
    keep_narratives: int = 50
    max_attempts: int = 3
    output_tokens: int = 7_500


def render_entry(entry: MonologueEntry) -> str:
    """A monologue entry as the monologue sees it again — the JSON it wrote, as its own
    earlier reply — and as its history is counted."""
    threads = {"reasoning": entry.reasoning, "memory": entry.memory, "goal": entry.goal}
    return json.dumps(threads, ensure_ascii=False)


def _exchange(episode: Episode) -> str:
    return f"[turn {episode.turn}]\nUser: {episode.user_message}\nMe: {episode.agent_response}"


def turn_output_bound(prompts: PromptSource, limit: int) -> int:
    """The most the turn's output prompts (:data:`TURN_OUTPUT_PROMPTS`) may write together:
    the sum of their ``max_tokens``. ``ConfigError`` when one has none or the sum passes
    ``limit``: the per-turn output bound would not hold."""
    total = 0
    for prompt in TURN_OUTPUT_PROMPTS:
        bound = prompts.generation(prompt).max_tokens
        if bound is None:
            raise ConfigError(
                "a prompt of the Thinker sets no max_tokens, so the turn's output is unbounded",
                prompt=prompt.value,
            )
        total += bound
    if total > limit:
        raise ConfigError(
            "the Thinker's prompts may write more than the turn's output bound",
            max_tokens=total,
            bound=limit,
        )
    return total


class _NotReady(LLMUnavailable):
    """A prerequisite (the episode's enrichment) is not there yet; retry later."""


class Thinker:
    """Thinks about answered turns, one at a time (the caller keeps the order)."""

    def __init__(
        self,
        *,
        store: Store,
        llm: LLM,
        clock: Clock,
        count: Callable[[str], int],
        lanes: EnrichLanes,
        affect: AffectStages,
        budget: ThinkerBudget,
        prompts: PromptSource,
    ) -> None:
        self._store = store
        self._llm = llm
        self._clock = clock
        self._count = count
        self._lanes = lanes
        self._affect = affect
        self._budget = budget
        self._prompts = prompts
        self._static: dict[str, int] = {}
        self.output_bound = turn_output_bound(prompts, budget.output_tokens)
        """The most output tokens one turn's monologue, controller and affect may write."""

    # the turn ---------------------------------------------------------------------------

    async def think(self, turn: ThinkerTurn) -> bool:
        """Think about ``turn`` and commit it. True when the turn is closed afterwards
        (done, here or by another process, or abandoned); False when it failed and waits
        for a retry (later turns of the conversation must wait too)."""
        for _ in range(_CONFLICT_RETRIES):
            started = time.perf_counter()
            booked = False
            with metering() as meter:
                try:
                    commit = await self._deliberate(turn)
                    # the turn's usage rides in the commit: one write less per turn
                    commit = commit.model_copy(update={"usage": component_usage(meter)})
                    await self._store.commit_thought(commit)
                    booked = True
                    log_usage(commit.usage_rows())
                except ConflictError:
                    current = await self._store.get_thinker_turn(turn.persona_id, turn.episode_id)
                    if current.status in (ThinkerStatus.DONE, ThinkerStatus.ABANDONED):
                        return True
                    turn = current
                    continue
                except LLMError as exc:
                    unavailable = isinstance(exc, LLMUnavailable)
                    return await self._failed(turn, exc, give_up=not unavailable)
                except SonalityError as exc:
                    return await self._failed(turn, exc, give_up=False)
                except Exception as exc:  # a bug must not stop the conversation's lane
                    log.exception("thinker_crashed", episode_id=turn.episode_id)
                    return await self._failed(turn, exc, give_up=True)
                finally:
                    if not booked:  # a thought not committed: its calls are booked alone
                        await self._save_usage(turn, meter)
            log.info(
                "thought_committed",
                persona_id=turn.persona_id,
                conversation_id=turn.conversation_id,
                turn=turn.turn,
                mode=turn.mode.value,
                narrative_version=commit.narrative.version if commit.narrative else None,
                monologue_dropped=len(commit.drop_monologue_turns),
                duration_ms=round((time.perf_counter() - started) * 1000, 1),
            )
            return True
        return False

    async def _failed(self, turn: ThinkerTurn, exc: BaseException, *, give_up: bool) -> bool:
        error = exc.message if isinstance(exc, SonalityError) else type(exc).__name__
        give_up = give_up and turn.attempts + 1 >= self._budget.max_attempts
        try:
            await self._store.mark_thinker_failed(
                turn.persona_id, turn.episode_id, error=error, give_up=give_up, at=self._clock.now()
            )
        except SonalityError as mark_error:
            log.warning("thinker_mark_failed", episode_id=turn.episode_id, error=mark_error.message)
        log.warning(
            "thinker_failed",
            persona_id=turn.persona_id,
            conversation_id=turn.conversation_id,
            turn=turn.turn,
            error=type(exc).__name__,
            attempts=turn.attempts + 1,
            gave_up=give_up,
        )
        return give_up

    async def _save_usage(self, turn: ThinkerTurn, meter: UsageMeter) -> None:
        rows = usage_rows(
            meter,
            persona_id=turn.persona_id,
            conversation_id=turn.conversation_id,
            episode_id=turn.episode_id,
            turn=turn.turn,
        )
        await book_usage(self._store, rows)

    async def _deliberate(self, turn: ThinkerTurn) -> ThoughtCommit:
        # one read unit of work for all of it (on Neo4j one statement where it was four);
        # the excerpt's earlier episodes only for a mode that writes a monologue
        reads = await self._store.thinker_reads(
            turn.persona_id,
            turn.conversation_id,
            turn.episode_id,
            excerpt=_EXCERPT_TURNS - 1 if turn.mode.monologue else 0,
        )
        persona, episode, mind = reads.persona, reads.episode, reads.mind
        mode = turn.mode
        entry: MonologueEntry | None = None
        dropped: tuple[int, ...] = ()
        narrative: Narrative | None = None
        affect: AffectState | None = None
        if mode.monologue:
            entry, dropped = await self._monologue(persona, turn, episode, reads.before, mind)
        if mode.controller:
            if entry is not None:
                source = "\n\n".join(
                    f"=== {name} ===\n{text}"
                    for name, text in (
                        ("Reasoning", entry.reasoning),
                        ("Memory", entry.memory),
                        ("Goal", entry.goal),
                    )
                )
            else:
                source = await self._digest(persona, episode)
            narrative = await self._controller(persona, turn, mind, source)
        if turn.affect is AffectPlacement.THINKER:
            affect = await self._feel(persona, episode)
        return ThoughtCommit(
            persona_id=turn.persona_id,
            conversation_id=turn.conversation_id,
            user_id=turn.user_id,
            episode_id=turn.episode_id,
            turn=turn.turn,
            expected_thought_turn=mind.thought_turn,
            expected_narrative_version=mind.narrative_version,
            monologue=entry,
            drop_monologue_turns=dropped,
            narrative=narrative,
            keep_narratives=self._budget.keep_narratives,
            affect=affect,
            committed_at=self._clock.now(),
        )

    # budgets ----------------------------------------------------------------------------

    def _static_tokens(self, prompt: Prompt) -> int:
        """Tokens of a prompt file's fixed text (placeholders excluded)."""
        if prompt not in self._static:
            self._static[prompt] = self._count(self._prompts.fixed_text(prompt))
        return self._static[prompt]

    def monologue_cap(self, mode: RuntimeMode, affect: AffectPlacement, narrative: int) -> int:
        """Input tokens the monologue call may use this turn, so that the controller's
        (with a ``narrative``-token previous narrative) and the affect stages' worst case
        still fit in the per-turn extra input budget."""
        b = self._budget
        reserve = 0
        if mode.controller:
            reserve += self._static_tokens(Prompt.CONTROLLER) + narrative + 3 * b.thread_tokens
            reserve += _IDENTITY_TOKENS[Prompt.CONTROLLER] + 2 * _MARGIN
        if affect is not AffectPlacement.OFF:  # in the Talker or here, it is this turn's
            reserve += self._static_tokens(Prompt.AFFECT_UPDATE)
            reserve += self._static_tokens(Prompt.AFFECT_APPRAISE)
            reserve += self._static_tokens(Prompt.AFFECT_PLAN)
            reserve += self._affect.input_tokens() + 2 * _MARGIN
        return min(b.monologue_input_tokens, b.extra_input_tokens - reserve)

    # the inner monologue ------------------------------------------------------------------

    def _excerpt(self, last: Episode, before: Sequence[Episode], budget: int) -> str:
        """The latest exchanges up to the turn (its episode ``last``, the conversation's
        episodes ``before`` it newest first; newest first to fit, shown oldest first); the
        turn itself always, clipped if it must be."""
        episodes = [*reversed(before), last]
        newest = clip_text(_exchange(episodes[-1]), max(budget, 50), self._count)
        older = fit_items(
            [_exchange(e) for e in reversed(episodes[:-1])],
            budget - self._count(newest),
            self._count,
        )
        return "\n\n".join([*reversed(older), newest])

    async def _monologue(
        self,
        persona: Persona,
        turn: ThinkerTurn,
        episode: Episode,
        before: Sequence[Episode],
        mind: ConversationMind,
    ) -> tuple[MonologueEntry, tuple[int, ...]]:
        b = self._budget
        narrative_tokens = mind.narrative.tokens if mind.narrative is not None else 0
        cap = self.monologue_cap(turn.mode, turn.affect, narrative_tokens)
        identity = clip_text(persona.core_identity, _IDENTITY_TOKENS[Prompt.MONOLOGUE], self._count)
        room = cap - self._static_tokens(Prompt.MONOLOGUE) - self._count(identity) - _MARGIN
        # the conversation and the monologue's own history share MIRROR's 10k input: the
        # conversation up to half of it, the history the rest
        excerpt = self._excerpt(episode, before, min(b.excerpt_tokens, max(room // 2, 100)))
        room -= self._count(excerpt)
        view: list[MonologueEntry] = []
        for earlier in reversed(mind.monologue):
            if earlier.tokens + _MESSAGE_TOKENS > room:
                break
            view.append(earlier)
            room -= earlier.tokens + _MESSAGE_TOKENS
        reply = await self._llm.structured(
            Prompt.MONOLOGUE,
            {
                "persona_name": persona.name,
                "core_identity": identity,
                "excerpt": excerpt,
                "turn": turn.turn,
            },
            MonologueReply,
            component="monologue",
            history=[render_entry(e) for e in reversed(view)],
        )
        clip = self._clip_thread
        entry = MonologueEntry(
            persona_id=turn.persona_id,
            conversation_id=turn.conversation_id,
            user_id=turn.user_id,
            turn=turn.turn,
            episode_id=turn.episode_id,
            reasoning=clip(reply.reasoning),
            memory=clip(reply.memory),
            goal=clip(reply.goal),
            tokens=0,
            created_at=self._clock.now(),
        )
        entry = entry.model_copy(update={"tokens": self._count(render_entry(entry))})
        entries = [*mind.monologue, entry]
        rendered = [render_entry(e) for e in entries]
        cost = {r: e.tokens for r, e in zip(rendered, entries, strict=True)}
        kept = truncate_history(rendered, count=lambda r: cost[r], budget=b.history_tokens)
        dropped = tuple(e.turn for e in entries[: len(entries) - len(kept)])
        return entry, dropped

    def _clip_thread(self, text: str) -> str:
        return clip_text(text, self._budget.thread_tokens, self._count)

    # the cognitive controller -------------------------------------------------------------

    async def _digest(self, persona: Persona, episode: Episode) -> str:
        """What the controller sees in ``controller`` mode: the turn's enrichment (by the
        persona's enrichment lane, waited for) and the exchange itself, clipped; never the
        raw history."""
        if episode.enrichment_status is EnrichmentStatus.PENDING:
            await self._lanes.through(persona.id)
            episode = await self._store.get_episode(persona.id, episode.id)
        if episode.enrichment_status is EnrichmentStatus.PENDING:
            raise _NotReady("the episode is not enriched yet", episode_id=episode.id)
        facts = [
            f
            for f in await self._store.list_facts(persona.id, episode.user_id)
            if f.episode_id == episode.id
        ]
        lines = [f"Turn {episode.turn}."]
        if episode.enrichment_status is EnrichmentStatus.ENRICHED:
            ev = episode.evidence
            if ev is not None and ev.topics:
                lines.append(
                    f"Topics: {', '.join(ev.topics)}; the user's stance: {ev.direction.value}; "
                    f"evidence strength {ev.score:.2f} ({ev.reasoning_type.value})."
                )
            lines.append(f"Importance (1-10): {episode.importance}.")
            if episode.insight:
                lines.append(f"What it showed about me: {episode.insight}")
        else:
            lines.append("(The analysis of this turn failed; only the exchange is known.)")
        if facts:
            lines.append("The user disclosed:")
            lines.extend(f"- [{f.kind.value}, severity {f.severity}] {f.text}" for f in facts)
        user = clip_text(episode.user_message, 300, self._count)
        mine = clip_text(episode.agent_response, 300, self._count)
        lines.append(f"The exchange, in short: User: {user}\nMe: {mine}")
        return clip_text("\n".join(lines), 3 * self._budget.thread_tokens, self._count)

    async def _controller(
        self, persona: Persona, turn: ThinkerTurn, mind: ConversationMind, source: str
    ) -> Narrative:
        previous = mind.narrative.text if mind.narrative is not None else ""
        text = await self._llm.text(
            Prompt.CONTROLLER,
            {
                "persona_name": persona.name,
                "core_identity": clip_text(
                    persona.core_identity, _IDENTITY_TOKENS[Prompt.CONTROLLER], self._count
                ),
                "previous_narrative": previous or "(None yet: this is the start.)",
                "streams": source,
                "turn": turn.turn,
            },
            component="controller",
        )
        text = clip_text(text.strip(), self._budget.narrative_tokens, self._count)
        if not text:
            raise _NotReady("the controller returned nothing usable", episode_id=turn.episode_id)
        return Narrative(
            persona_id=turn.persona_id,
            conversation_id=turn.conversation_id,
            user_id=turn.user_id,
            version=mind.narrative_version + 1,
            text=text,
            turn=turn.turn,
            episode_id=turn.episode_id,
            tokens=self._count(text),
            created_at=self._clock.now(),
        )

    # affect --------------------------------------------------------------------------------

    async def _feel(self, persona: Persona, episode: Episode) -> AffectState:
        stored = await self._store.get_affect(persona.id, episode.user_id)
        state = stored or initial_state(persona.id, episode.user_id, self._clock.now())
        facts = await self._store.list_facts(persona.id, episode.user_id)
        felt = await self._affect.run(
            persona,
            state,
            message=episode.user_message,
            reply=episode.agent_response,
            previous_reply=None,
            facts=facts,
            now=self._clock.now(),
            episode_id=episode.id,
        )
        return felt.state
