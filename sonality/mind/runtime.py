"""The dual-process runtime (MIRROR): ``respond`` answers at once, the Thinker follows.

``respond``: Talker call (``mind.talker``) → the exchange is recorded durably by the same
``EpisodeRecorder`` as ``record`` (enrichment deferred) → the turn is registered for the
Thinker together with the Talker's usage → a catch-up job is queued on the conversation's
lane (``mind.lanes``) → the reply returns. The Talker never waits for the Thinker, unless
``max_wait_seconds`` (default 0) allows it to wait a little for the conversation's lane.

Deadline: everything up to the answer (the persona read, the wait, context, affect, the
Talker's call with its retries) is cut at ``deadline_seconds``. Then the user's message is
stored as an exchange without a response (pending enrichment: what the user said is kept)
and ``AnswerTimeout`` names it; a ``respond`` with that ``episode_id`` answers it (the
Talker again, the response filled in with ``Store.answer_episode``, the turn registered),
as a client's retry does. The writes that keep the exchange (the answered one, or the late
message) are waited for until :data:`WRITE_GRACE` seconds past the deadline, no longer: a
write still running then goes on in the background (``close`` waits for it within its
bound) and ``AnswerTimeout`` names the episode id it writes (``stored: unconfirmed``), so
the call never outlasts its deadline by more than the grace, whatever the store's own
bound, and a retry with that id answers from what landed. The episode id is chosen before
the Talker is asked, so every outcome can name it.

Ordering: a conversation's lane runs one job at a time, in submission order. A job
"catches up": it thinks about every open turn of the conversation up to its own, oldest
first, and stops at the first one that fails (later turns wait behind it, so turns are
always thought about in order). When a turn's Thinker is still running as the next
message arrives, the Talker answers with the latest *committed* narrative (MIRROR's
production note) and the next job catches up afterwards. A failed turn is retried by the
next job of its conversation or by ``retry`` (the worker's retry job), which also picks up
turns left ``pending`` by a process that died. Races across processes are settled by the
store's compare-and-swap (``commit_thought``): a late Thinker never overwrites newer state.

Enrichment is memory, not deliberation: in every mode, baseline included, a conversation's
job hands its turns' episodes to the persona's enrichment lane (``mind.enrich_lanes``)
after thinking, and does not wait for it — except in ``controller`` mode, where the
controller waits for the lane's pass because the enrichment feeds it. The Thinker never
enriches under the persona's lock itself, so the conversations of a persona think in
parallel. The lane books each turn's enrichment usage on the turn and tells the reflection
side's ``DueNotifier`` what it enriched, as for ``record``.

The Talker's model calls are foreground (``llm.budget.foreground``): a user waiting on
``respond`` never queues behind background work for a slot of the process's call budget.

``DualProcess`` receives the parts it uses (store, model, clock, token counter, recorder,
enrichment lanes, context builder), never the facade: the caller validates input.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from functools import partial
from typing import Any, TypeVar

from sonality.errors import (
    AnswerCut,
    AnswerTimeout,
    ConflictError,
    LLMResponseInvalid,
    LLMUnavailable,
    NotFoundError,
    StoreError,
)
from sonality.llm.budget import foreground
from sonality.llm.prompts import Prompt
from sonality.llm.usage import metering
from sonality.mind.accounting import component_usage
from sonality.mind.affect import AffectStages
from sonality.mind.biography import BiographyRecall
from sonality.mind.context import ContextBuilder
from sonality.mind.enrich_lanes import EnrichLanes
from sonality.mind.lanes import Lanes
from sonality.mind.parts import Parts, RuntimeSettings  # defined there, light for reads
from sonality.mind.recording import EpisodeRecorder
from sonality.mind.talker import Talker
from sonality.mind.thinker import Thinker
from sonality.models import (
    AffectPlacement,
    AffectState,
    ComponentUsage,
    Episode,
    Exchange,
    Reply,
    RuntimeMode,
    ThinkerStatus,
    TurnStart,
)
from sonality.observability import get_logger
from sonality.ports import LLM, Clock, Store
from sonality.storage import checks

__all__ = ["WRITE_GRACE", "DualProcess", "RuntimeSettings", "dual_process"]

log = get_logger("sonality.runtime")

_RETRY_AFTER_SECONDS = 5
"""When a caller whose answer was late should try again (HTTP ``Retry-After``)."""

WRITE_GRACE = 0.5
"""Seconds past ``respond``'s deadline it waits for the write that keeps the exchange
before it answers ``AnswerTimeout`` with the write still going (see the module docstring)."""

T = TypeVar("T")


class DualProcess:
    """Talker, Thinker and their lanes over one deployment's parts (the facade builds it
    on the first ``respond``)."""

    def __init__(
        self,
        *,
        store: Store,
        llm: LLM | None,
        clock: Clock,
        count_tokens: Callable[[str], int],
        recorder: EpisodeRecorder,
        lanes: EnrichLanes,
        contexts: ContextBuilder,
        settings: RuntimeSettings,
        max_response_chars: int,
        deadline_seconds: float = 30.0,
        biography_entries: int = 200,
    ) -> None:
        if llm is None:
            raise LLMUnavailable("no model configured", setting="SONALITY_MODEL")
        self._store = store
        self._clock = clock
        self._recorder = recorder
        self._enrich = lanes
        self._closing = False
        self._settings = settings
        self._max_response_chars = max_response_chars
        self._deadline_seconds = deadline_seconds
        self._writes: set[asyncio.Future[Any]] = set()
        """Writes that keep an exchange and outlived their call's deadline (``close``
        waits for them)."""
        affect = AffectStages(
            llm=llm,
            count=count_tokens,
            field_tokens=settings.affect_field_tokens,
            contexts=contexts,
            biography=BiographyRecall(
                store=store, count=count_tokens, max_entries=biography_entries
            ),
        )
        self.lanes = Lanes()
        self.talker = Talker(
            store=store,
            llm=llm,
            clock=clock,
            count=count_tokens,
            contexts=contexts,
            affect=affect,
            window_tokens=settings.window_tokens,
            prompts=llm.prompts,
        )
        self.thinker = Thinker(
            store=store,
            llm=llm,
            clock=clock,
            count=count_tokens,
            lanes=lanes,
            affect=affect,
            budget=settings.budget(),
            prompts=llm.prompts,
        )

    # respond ------------------------------------------------------------------------------

    async def respond(
        self,
        persona_id: str,
        *,
        user_id: str,
        conversation_id: str,
        message: str,
        episode_id: str | None,
        mode: RuntimeMode | None,
        affect: AffectPlacement | None,
        on_text: Callable[[str], None] | None = None,
        started: float | None = None,
    ) -> Reply:
        """Answer, record, hand the turn to the Thinker (see the module docstring). The
        caller has validated ids and the message; ``on_text`` gets the Talker's reply as it
        is written (never a replayed one's); ``started``: the loop time the caller's
        request began, which the deadline counts from (a server's request has read the
        store before: ``/v1/chat/completions`` looks its conversation up)."""
        called = time.perf_counter()
        now = asyncio.get_running_loop().time()
        deadline = (now if started is None else min(started, now)) + self._deadline_seconds
        kept_id = episode_id or f"ep_{uuid.uuid4().hex}"
        unanswered: Episode | None = None
        limit = asyncio.timeout_at(deadline)
        key = (persona_id, conversation_id)
        try:
            async with limit:
                if episode_id is not None:
                    replay = await self._replay(
                        persona_id, episode_id, user_id, conversation_id, message
                    )
                    if isinstance(replay, Reply):
                        return replay.model_copy(update={"latency_ms": _ms(called)})
                    unanswered = replay
                if self._settings.max_wait_seconds > 0:
                    await self.lanes.wait_idle(key, self._settings.max_wait_seconds)
                heard = await self.talker.read(
                    persona_id, user_id=user_id, conversation_id=conversation_id, message=message
                )
                persona = heard.reads.context.persona
                mode = RuntimeMode(mode) if mode is not None else persona.runtime_mode
                placement = AffectPlacement(affect) if affect is not None else persona.affect
                with metering() as meter, foreground():
                    spoken = await self.talker.speak(
                        heard,
                        user_id=user_id,
                        message=message,
                        mode=mode,
                        placement=placement,
                        before_turn=None if unanswered is None else unanswered.turn,
                        on_text=on_text,
                    )
        except TimeoutError:
            if not limit.expired():
                raise
            raise await self._late(
                persona_id, user_id, conversation_id, message, kept_id, unanswered, deadline
            ) from None
        except asyncio.CancelledError as cut:
            raise self._cut(
                persona_id, user_id, conversation_id, message, kept_id, unanswered
            ) from cut
        text = spoken.text[: self._max_response_chars]
        if "\x00" in text:  # stored text never holds NUL (``record`` refuses it too)
            raise LLMResponseInvalid(
                "the model's reply contains a NUL character",
                prompt=Prompt.TALK.value,
                component="talker",
                errors="NUL character",
            )
        start = self._start(mode, placement, spoken.narrative_version, component_usage(meter))
        keeping = self._keep(
            persona_id,
            user_id,
            conversation_id,
            message,
            episode_id,
            kept_id,
            unanswered,
            text,
            start,
            spoken.affect,
            heard.vector,
        )
        then = partial(self._hand_over, persona_id, conversation_id)
        kept = await self._in_time(keeping, deadline, persona_id, kept_id, "answered", then)
        if isinstance(kept, Reply):
            return kept.model_copy(update={"latency_ms": _ms(called)})
        episode, created = kept
        talker = [u for u in start.usage if u.component == "talker"]
        reply = Reply(
            text=text,
            persona_id=persona_id,
            user_id=user_id,
            conversation_id=conversation_id,
            episode_id=episode.id,
            turn=episode.turn,
            mode=mode,
            affect=placement,
            narrative_version_used=spoken.narrative_version,
            latency_ms=_ms(called),
            talker_ms=spoken.talker_ms,
            created=created,
            talker_input_tokens=sum(u.input_tokens for u in talker),
            talker_output_tokens=sum(u.output_tokens for u in talker),
        )
        log.info(
            "talker_replied",
            persona_id=persona_id,
            conversation_id=conversation_id,
            turn=episode.turn,
            mode=mode.value,
            affect=placement.value,
            narrative_version=spoken.narrative_version,
            latency_ms=reply.latency_ms,
            talker_ms=reply.talker_ms,
        )
        then(kept)
        return reply

    async def _keep(
        self,
        persona_id: str,
        user_id: str,
        conversation_id: str,
        message: str,
        episode_id: str | None,
        kept_id: str,
        unanswered: Episode | None,
        text: str,
        start: TurnStart,
        affect: AffectState | None,
        vector: Sequence[float],
    ) -> tuple[Episode, bool] | Reply:
        """The writes that keep an answered exchange, then its turn handed to the Thinker's
        lane: the stored episode and whether this call created it, or the reply a
        concurrent ``respond`` with the same id stored first."""
        if unanswered is not None:
            self._enrich.book_usage(unanswered.id)
            episode = await self._store.answer_episode(persona_id, unanswered.id, text)
            created = False
            await self._stored(
                self._store.begin_turn(start.turn_of(episode), start.usage_of(episode)), episode
            )
        else:
            exchange = Exchange(user_id, conversation_id, message, text, kept_id, embedding=vector)
            # before the write: the lane may enrich the episode as soon as it is committed
            self._enrich.book_usage(kept_id)
            try:
                episode, created, _ = await self._recorder.append_turn(persona_id, exchange, start)
            except ConflictError:
                # a concurrent respond with the same episode_id stored its answer first
                replay = None
                if episode_id is not None:
                    replay = await self._replay(
                        persona_id, episode_id, user_id, conversation_id, message
                    )
                if not isinstance(replay, Reply):
                    raise
                return replay
        if affect is not None:
            try:
                await self._stored(
                    self._store.put_affect(affect.model_copy(update={"episode_id": episode.id})),
                    episode,
                )
            except ConflictError:  # another conversation with this user moved it first
                log.warning("affect_update_lost", persona_id=persona_id, episode_id=episode.id)
        return episode, created

    def _hand_over(self, persona_id: str, conversation_id: str, kept: object) -> None:
        """Queue the Thinker's catch-up for a kept exchange (the last step of ``respond``,
        with no await after it: the lane's job starts once respond has returned)."""
        if isinstance(kept, tuple):
            episode = kept[0]
            self.lanes.submit(
                (persona_id, conversation_id),
                partial(self.catch_up, persona_id, conversation_id, episode.turn),
            )

    async def _in_time(
        self,
        write: Awaitable[T],
        deadline: float,
        persona_id: str,
        kept_id: str,
        what: str,
        then: Callable[[T], None] | None = None,
    ) -> T:
        """``write``'s result, waited for until :data:`WRITE_GRACE` past ``deadline``; past
        that the write goes on in the background (``then`` gets its result once it lands)
        and ``AnswerTimeout`` names the episode id it writes (``what`` it keeps: the
        answered exchange or the late message)."""
        task: asyncio.Future[T] = asyncio.ensure_future(write)
        try:
            async with asyncio.timeout_at(deadline + WRITE_GRACE):
                return await asyncio.shield(task)
        except TimeoutError:
            if task.done():  # it finished (or failed) as the time ran out
                return task.result()
        except asyncio.CancelledError as cut:  # cut from outside: the write goes on
            self._behind(task, persona_id, kept_id, then)
            raise AnswerCut(kept_id, "unconfirmed") from cut
        self._behind(task, persona_id, kept_id, then)
        log.warning(
            "answer_write_late",
            persona_id=persona_id,
            episode_id=kept_id,
            deadline_seconds=self._deadline_seconds,
        )
        raise AnswerTimeout(
            f"no {what} exchange stored within {self._deadline_seconds:g} s; its write goes "
            "on: call again with its episode_id for the answer",
            persona_id=persona_id,
            episode_id=kept_id,
            stored="unconfirmed",
            retry_after_seconds=_RETRY_AFTER_SECONDS,
        )

    def _behind(
        self,
        task: asyncio.Future[Any],
        persona_id: str,
        kept_id: str,
        then: Callable[[Any], None] | None,
    ) -> None:
        """Let a write that keeps an exchange go on after its call ended (``close`` waits
        for it within its bound)."""
        self._writes.add(task)
        task.add_done_callback(partial(self._written, persona_id, kept_id, then))

    def _cut(
        self,
        persona_id: str,
        user_id: str,
        conversation_id: str,
        message: str,
        kept_id: str,
        unanswered: Episode | None,
    ) -> AnswerCut:
        """``respond`` was cancelled from outside before the answer (a server's shutdown
        cut its request): the user's message is kept (pending, without a response) by a
        write that goes on in the background, and the cancellation names its id."""
        log.warning("answer_cut", persona_id=persona_id, episode_id=kept_id)
        if unanswered is not None:
            return AnswerCut(kept_id, "pending")
        write = self._keep_message(persona_id, user_id, conversation_id, message, kept_id)
        self._behind(asyncio.ensure_future(write), persona_id, kept_id, None)
        return AnswerCut(kept_id, "unconfirmed")

    def _keep_message(
        self, persona_id: str, user_id: str, conversation_id: str, message: str, kept_id: str
    ) -> Awaitable[tuple[Episode, bool]]:
        """The write that keeps a user's message without a response (pending)."""
        return self._recorder.append(
            persona_id,
            user_id=user_id,
            conversation_id=conversation_id,
            message=message,
            response="",
            episode_id=kept_id,
        )

    def _written(
        self,
        persona_id: str,
        kept_id: str,
        then: Callable[[Any], None] | None,
        task: asyncio.Future[Any],
    ) -> None:
        """A write that outlived its call finished: say how (and hand its result on)."""
        self._writes.discard(task)
        error = None if task.cancelled() else task.exception()
        if task.cancelled() or error is not None:
            log.warning(
                "answer_write_failed",
                persona_id=persona_id,
                episode_id=kept_id,
                error="cancelled" if error is None else type(error).__name__,
            )
        else:
            log.info("answer_write_landed", persona_id=persona_id, episode_id=kept_id)
            if then is not None and not self._closing:
                then(task.result())

    @staticmethod
    async def _stored(write: Awaitable[object], episode: Episode) -> None:
        """A write that follows the stored answer: a store error from it names the stored
        episode (``stored: answered``), so that a retry with that id is safe."""
        try:
            await write
        except StoreError as exc:
            raise type(exc)(
                exc.message, **{**exc.context, "episode_id": episode.id, "stored": "answered"}
            ) from exc

    async def _late(
        self,
        persona_id: str,
        user_id: str,
        conversation_id: str,
        message: str,
        kept_id: str,
        unanswered: Episode | None,
        deadline: float,
    ) -> AnswerTimeout:
        """The deadline passed before the answer: the user's message stored without a
        response (unless it is already), and the error that names it (the write waited for
        within :data:`WRITE_GRACE`, see :meth:`_in_time`)."""
        if unanswered is not None:
            stored = unanswered
        else:
            stored, _ = await self._in_time(
                self._keep_message(persona_id, user_id, conversation_id, message, kept_id),
                deadline,
                persona_id,
                kept_id,
                "late",
            )
        log.warning(
            "answer_deadline_passed",
            persona_id=persona_id,
            episode_id=stored.id,
            deadline_seconds=self._deadline_seconds,
        )
        return AnswerTimeout(
            f"no answer within {self._deadline_seconds:g} s; the message is stored, "
            "call again with its episode_id for the answer",
            persona_id=persona_id,
            episode_id=stored.id,
            stored="pending",
            retry_after_seconds=_RETRY_AFTER_SECONDS,
        )

    def _start(
        self,
        mode: RuntimeMode,
        placement: AffectPlacement,
        narrative: int,
        usage: tuple[ComponentUsage, ...] = (),
    ) -> TurnStart:
        thinking = mode is not RuntimeMode.BASELINE or placement is AffectPlacement.THINKER
        return TurnStart(
            mode=mode,
            affect=placement,
            status=ThinkerStatus.PENDING if thinking else ThinkerStatus.DONE,
            narrative_version_used=narrative,
            created_at=self._clock.now(),
            usage=usage,
        )

    async def _replay(
        self,
        persona_id: str,
        episode_id: str,
        user_id: str,
        conversation_id: str,
        message: str,
    ) -> Reply | Episode | None:
        """A repeated ``respond`` with a known ``episode_id``: the stored reply, without a
        new model call (and the turn registered if a crash had lost that); the stored
        episode when it has no answer yet (a deadline passed: ``respond`` answers it);
        None when the id is new."""
        store = self._store
        try:
            episode = await store.get_episode(persona_id, episode_id)
        except NotFoundError:
            return None
        checks.same_episode_id(
            episode,
            persona_id=persona_id,
            user_id=user_id,
            conversation_id=conversation_id,
            message=message,
        )
        try:
            turn = await store.get_thinker_turn(persona_id, episode_id)
        except NotFoundError:
            if not episode.agent_response:
                return episode  # stored when the answer was late: answer it now
            persona = await store.get_persona(persona_id)
            start = self._start(persona.runtime_mode, persona.affect, 0)
            turn = await store.begin_turn(start.turn_of(episode), [])
            self.lanes.submit(
                (persona_id, conversation_id),
                partial(self.catch_up, persona_id, conversation_id, episode.turn),
            )
        return Reply(
            text=episode.agent_response,
            persona_id=persona_id,
            user_id=user_id,
            conversation_id=conversation_id,
            episode_id=episode.id,
            turn=episode.turn,
            mode=turn.mode,
            affect=turn.affect,
            narrative_version_used=turn.narrative_version_used,
            latency_ms=0.0,
            talker_ms=0.0,
            created=False,
        )

    # the Thinker's lane jobs ----------------------------------------------------------------

    async def catch_up(self, persona_id: str, conversation_id: str, up_to_turn: int | None) -> int:
        """Think about the conversation's open turns up to ``up_to_turn`` (all: None) in
        order, stopping at the first failure, then enrich. Returns how many turns were
        closed."""
        turns = await self._store.thinker_turns(
            persona_id, conversation_id, up_to_turn=up_to_turn, open_only=True
        )
        closed = 0
        for turn in turns:
            if self._closing:  # closing: the turns left stay pending for the next process
                break
            if not await self.thinker.think(turn):
                break
            closed += 1
        # memory, in every mode: the persona's lane enriches (in order, pipelined); the
        # conversation does not wait for it
        self._enrich.later(persona_id)
        return closed

    async def retry(self, persona_id: str) -> int:
        """Re-run failed turns (and pending ones whose process died), in order per
        conversation, on the conversations' lanes. Returns how many turns were closed."""
        stale_before = self._clock.now() - timedelta(seconds=self._settings.stale_pending_seconds)
        turns = await self._store.list_thinker_retries(persona_id, stale_before=stale_before)
        conversations = dict.fromkeys(t.conversation_id for t in turns)
        # the turns queued behind a failed one follow it, in order
        jobs = [
            self.lanes.submit(
                (persona_id, conversation_id),
                partial(self.catch_up, persona_id, conversation_id, None),
            )
            for conversation_id in conversations
        ]
        results = await asyncio.gather(*jobs)
        closed = sum(r or 0 for r in results)
        if turns:
            log.info(
                "thinker_retry_pass", persona_id=persona_id, candidates=len(turns), closed=closed
            )
        return closed

    async def drain(
        self, persona_id: str, conversation_id: str | None, max_seconds: float | None
    ) -> bool:
        """Wait for the writes of late answers, the conversation's (or the persona's)
        Thinker jobs, then for the enrichment they handed to the persona's lane."""
        loop = asyncio.get_running_loop()
        deadline = None if max_seconds is None else loop.time() + max_seconds

        def match(key: object) -> bool:
            assert isinstance(key, tuple)
            return key[0] == persona_id and (conversation_id is None or key[1] == conversation_id)

        writes = {w for w in self._writes if not w.done()}
        if writes and (await asyncio.wait(writes, timeout=max_seconds))[1]:
            return False  # a late exchange's write still runs
        left = None if deadline is None else max(0.0, deadline - loop.time())
        if not await self.lanes.drain(match, max_seconds=left):
            return False
        left = None if deadline is None else max(0.0, deadline - loop.time())
        return await self._enrich.drain(persona_id, left)

    def stop(self) -> None:
        """Take no more work: no turn is thought about after the ones in progress."""
        self._closing = True

    async def close(self, max_seconds: float | None = None) -> None:
        """:meth:`stop`, let the turns in progress finish for at most ``max_seconds``
        (``RuntimeSettings.shutdown_seconds`` by default), then cancel them: they stay
        pending and ``retry`` takes them up."""
        self.stop()
        bound = self._settings.shutdown_seconds if max_seconds is None else max_seconds
        loop = asyncio.get_running_loop()
        started = loop.time()
        if self._writes:  # the writes that keep an exchange whose call answered late
            await asyncio.wait(set(self._writes), timeout=bound)
        left = None if bound is None else max(0.0, bound - (loop.time() - started))
        await self.lanes.close(max_seconds=left)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


def dual_process(parts: Parts) -> DualProcess:
    """Talker and Thinker over a facade's parts (``LLMUnavailable`` without a model)."""
    return DualProcess(
        store=parts.store,
        llm=parts.llm,
        clock=parts.clock,
        count_tokens=parts.count_tokens,
        recorder=parts.recorder,
        lanes=parts.lanes,
        contexts=parts.context_builder,
        settings=parts.runtime,
        max_response_chars=parts.limits.max_response_chars,
        deadline_seconds=parts.limits.respond_deadline_seconds,
        biography_entries=parts.limits.max_biography_entries,
    )
