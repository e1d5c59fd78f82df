"""When enrichment runs: the persona lanes behind ``record``, ``record_batch`` and the Thinker.

``record`` reads straight down this module, as ``respond`` reads down ``mind.runtime``: the
facade validates, then :meth:`EnrichLanes.record` appends the exchange with the
``EpisodeRecorder`` and schedules its enrichment as the :class:`EnrichMode` says:

- ``inline``: on the persona's lane while the caller waits, at most
  ``Limits.record_deadline_seconds``; never somebody else's backlog (when an older episode
  is pending, the lane takes it all and the caller gets ``pending`` at once). With the lane
  idle the backlog read rides in the append's unit of work;
- ``background``: a pass queued on the persona's lane, the caller gets ``pending``;
- ``off``: nothing (the worker, ``sonality enrich`` or ``enrich_pending`` do it).

One lane per persona (``mind.lanes``): a pass is one ``Enricher`` pass over everything
pending, which asks the model about many episodes at once and commits in order; one pass
queued behind the running one is enough. The Thinker hands its episodes to the lane too
(:meth:`EnrichLanes.later`, or :meth:`EnrichLanes.through` when its controller needs the
enrichment first) instead of enriching under the persona's lock, so conversations think
in parallel. Episodes ``respond`` answered (:meth:`EnrichLanes.book_usage`) get their
enrichment's model usage booked on their turn, whichever pass enriched them.

A model that refuses the configuration (``LLMConfigError``) is not an outage: the pass
that met it keeps it, and an inline ``record`` raises it (its episode stored ``pending``)
until a pass gets through.

Closing (:meth:`EnrichLanes.close`): no new pass, no new model call; the calls in flight
finish and commit in order within the bound, then whatever still runs is cancelled; every
episode not committed stays ``pending`` for the next process or the worker.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, NoReturn

from sonality.errors import ConfigError, SonalityError, StoreError, ValidationError
from sonality.llm.usage import Usage
from sonality.mind.accounting import book_usage, usage_rows
from sonality.mind.enrichment import Enricher
from sonality.mind.inputs import check_choice
from sonality.mind.lanes import Lanes
from sonality.mind.recording import EpisodeRecorder
from sonality.mind.reflection import DueNotifier
from sonality.models import (
    EnrichmentBacklog,
    EnrichmentStatus,
    EnrichMode,
    EnrichReport,
    Episode,
    Exchange,
)
from sonality.observability import get_logger
from sonality.ports import Store

__all__ = ["EnrichLanes", "EnrichMode", "enrich_mode"]

log = get_logger("sonality")

_BOOKED_MAX = 100_000
"""Episodes awaiting their usage booking kept at most (another process may enrich some)."""


def enrich_mode(value: object, default: EnrichMode) -> EnrichMode:
    """``record``'s ``enrich`` argument as a mode: None is ``default``, True inline, False
    off, else a mode or its name (``ValidationError`` otherwise)."""
    if value is None:
        return default
    if isinstance(value, bool):
        return EnrichMode.INLINE if value else EnrichMode.OFF
    return check_choice(value, EnrichMode, field="enrich")


@dataclass(frozen=True, slots=True)
class _Pass:
    """What a lane job did: its report, and the inline caller's episode as it left it."""

    report: EnrichReport
    episode: Episode | None = None


def _key(persona_id: str) -> tuple[str, str]:
    return ("enrich", persona_id)


class EnrichLanes:
    """The persona lanes of one deployment (see the module docstring)."""

    def __init__(
        self,
        *,
        store: Store,
        recorder: EpisodeRecorder,
        enricher: Enricher,
        notifier: DueNotifier,
        default_mode: EnrichMode,
        deadline_seconds: float,
        influence_window: int,
        has_model: bool,
    ) -> None:
        self._store = store
        self._recorder = recorder
        self._enricher = enricher
        self._notifier = notifier
        self._default = default_mode
        self._deadline = deadline_seconds
        self._window = influence_window
        self._has_model = has_model
        self._lanes = Lanes()
        self._tail: dict[str, asyncio.Future[Any]] = {}
        self._refused: dict[str, ConfigError] = {}
        """Per persona, the configuration error its last pass met (cleared by a pass that
        gets through): an inline ``record`` behind a backlog raises it."""
        self._booked: OrderedDict[str, None] = OrderedDict()
        self._closing = False
        enricher.add_usage_listener(self._book)

    # record -------------------------------------------------------------------------------

    def mode(self, enrich: object) -> EnrichMode:
        """``enrich`` as a mode, the configured ``Limits.record_enrich`` for None."""
        return enrich_mode(enrich, self._default)

    async def record(
        self, persona_id: str, exchange: Exchange, mode: EnrichMode
    ) -> tuple[Episode, bool, EnrichReport | None]:
        """Append ``exchange`` (validated by the caller) and enrich it as ``mode`` says;
        returns the episode as stored (re-read after an inline enrichment), whether this
        call created it, and the inline pass's report."""
        backlog: EnrichmentBacklog | None = None
        passes = 0
        # the deadline counts from the call: the append's time is part of it
        deadline = asyncio.get_running_loop().time() + self._deadline
        inline = mode is EnrichMode.INLINE and not self._closing
        if inline and self._has_model and not self.busy(persona_id):
            # the lane is idle: the backlog read the enrichment starts from rides in the
            # append's unit of work (two for the whole record, not three)
            passes = self._enricher.passes(persona_id)
            episode, created, backlog = await self._recorder.append_with_backlog(
                persona_id, exchange, influence_window=self._window
            )
        else:
            episode, created = await self._recorder.append_exchange(persona_id, exchange)
        report: EnrichReport | None = None
        pending = episode.enrichment_status is EnrichmentStatus.PENDING
        try:
            if inline and not self._has_model:
                report = await self._enricher.enrich_pending(persona_id)  # says: no model
            elif mode is EnrichMode.BACKGROUND and pending and self._has_model:
                self.later(persona_id)
            elif inline and pending:
                report, stored = await self._inline(episode, backlog, passes, deadline)
                episode = stored or await self._store.get_episode(persona_id, episode.id)
        except StoreError as exc:
            # the exchange is stored: a read after it that fails never makes the record
            # look failed; the episode comes back as stored (pending), the lane or the
            # worker enriches it once the store answers
            log.warning(
                "record_enrichment_skipped",
                persona_id=persona_id,
                episode_id=episode.id,
                error=type(exc).__name__,
            )
            return episode, created, None
        return episode, created, report

    async def record_batch(
        self, persona_id: str, exchanges: Sequence[Exchange], mode: EnrichMode
    ) -> list[bool]:
        """Append ``exchanges`` (each validated by the caller) in one unit of work; per
        exchange, whether it was created. ``background`` then queues the persona's lane;
        ``inline`` is refused (a batch never waits for the model)."""
        if mode is EnrichMode.INLINE:
            raise ValidationError("a batch is never enriched inline", field="enrich")
        if not exchanges:
            return []
        created = await self._recorder.append_many(persona_id, exchanges)
        if mode is EnrichMode.BACKGROUND and any(created):
            self.later(persona_id)
        return created

    def later(self, persona_id: str) -> asyncio.Future[Any]:
        """Queue a pass over the persona's pending episodes on its lane (one pass queued
        behind the running one is enough: a pass runs until none is left). Closing: none
        (the future is done at once)."""
        key = _key(persona_id)
        if self._closing or not self._has_model:
            done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            done.set_result(None)
            return done
        if self._lanes.queued(key) >= 2 and self._tail.get(persona_id):
            return self._tail[persona_id]
        future = self._lanes.submit(key, partial(self._pass, persona_id, None))
        self._tail[persona_id] = future
        return future

    async def through(self, persona_id: str) -> None:
        """Queue a pass (:meth:`later`) and wait for it: every episode pending now is
        enriched after it, unless the pass stopped (an outage, a failure, closing)."""
        await asyncio.shield(self.later(persona_id))

    def busy(self, persona_id: str) -> bool:
        """True while the persona's lane has a pass queued or running."""
        return self._lanes.busy(_key(persona_id))

    async def _pass(
        self,
        persona_id: str,
        limit: int | None,
        first: Episode | None = None,
        backlog: EnrichmentBacklog | None = None,
        passes: int = 0,
    ) -> _Pass | ConfigError | None:
        """One lane job: enrich in order (``first``: only that episode, and only if it is
        the oldest pending one, from ``backlog`` when it is still current, see
        ``Enricher.enrich_first``); a failure leaves the episodes pending."""
        stored: Episode | None = None
        try:
            if first is None:
                report = await self._enricher.enrich_pending(persona_id, limit=limit)
            else:
                report, stored = await self._enricher.enrich_first(
                    first, backlog=backlog, passes=passes
                )
        except ConfigError as exc:
            # not an outage: an inline caller must hear it (_inline raises it)
            log.warning("enrichment_refused", persona_id=persona_id, error=type(exc).__name__)
            self._refused[persona_id] = exc
            return exc
        except SonalityError as exc:
            log.warning("enrichment_interrupted", persona_id=persona_id, error=type(exc).__name__)
            return None
        if report.stopped_by != "backlog":
            self._refused.pop(persona_id, None)
        if report.enriched:
            await self._notifier.notify(persona_id)
        return _Pass(report, stored)

    async def _inline(
        self,
        episode: Episode,
        backlog: EnrichmentBacklog | None,
        passes: int,
        deadline: float,
    ) -> tuple[EnrichReport | None, Episode | None]:
        """Enrich ``episode`` on its persona's lane while the caller waits, until
        ``deadline`` (loop time: ``record_deadline_seconds`` after the call began);
        returns the report and the episode as the lane left it (None: read it back; past
        the deadline, the episode as appended, pending, without a read). Never somebody
        else's backlog: when an older episode is still pending, the lane takes it all and
        the caller gets ``pending`` at once.

        With the lane idle, one job checks that and enriches (from ``backlog``, read with
        the append while no pass ended since ``passes``, else one read; then the model and
        one commit); with the lane busy, the check is a read first, then the caller waits
        for the lane's pass if nothing older is pending."""
        pid = episode.persona_id
        try:
            async with asyncio.timeout_at(deadline):  # the read of a busy lane's check too
                if self.busy(pid):
                    oldest = await self._store.list_pending_episodes(pid, limit=1)
                    if oldest and oldest[0].id != episode.id:
                        return None, self._leave_to_lane(episode)
                    future = self.later(pid)  # the lane is at it already: wait, bounded
                else:
                    future = self._lanes.submit(  # the caller waits: not background work
                        _key(pid),
                        partial(self._pass, pid, 1, episode, backlog, passes),
                        behind=False,
                    )
                result: _Pass | ConfigError | None = await asyncio.shield(future)
        except TimeoutError:
            log.warning(
                "record_deadline_passed",
                persona_id=pid,
                episode_id=episode.id,
                deadline_seconds=self._deadline,
            )
            return None, episode
        if isinstance(result, ConfigError):
            _raise_refused(result, episode)  # not an outage: the caller must hear it
        if result is None:
            return None, None
        if result.report.stopped_by == "backlog":
            return None, self._leave_to_lane(episode)
        return result.report, result.episode

    def _leave_to_lane(self, episode: Episode) -> Episode:
        """An older episode is pending: the lane takes the whole backlog, ``episode``
        comes back pending (or the refused configuration the backlog waits on is raised)."""
        pid = episode.persona_id
        self.later(pid)
        log.info("enrichment_left_to_lane", persona_id=pid, episode_id=episode.id)
        refused = self._refused.get(pid)
        if refused is not None:  # the backlog waits on a refused configuration: say so
            _raise_refused(refused, episode)
        return episode

    # usage of respond's turns ---------------------------------------------------------------

    def book_usage(self, episode_id: str) -> None:
        """Book the model usage of ``episode_id``'s enrichment on its turn when a pass of
        this process enriches it (``respond`` calls this for every turn it answers)."""
        self._booked[episode_id] = None
        while len(self._booked) > _BOOKED_MAX:
            self._booked.popitem(last=False)

    async def _book(self, spent: Sequence[tuple[Episode, Mapping[str, Usage]]]) -> None:
        """The usage of a piece's answered turns, each turn in a call of its own: one call
        for all of them locks several episodes on Neo4j, and beside the Thinkers' commits
        (which lock theirs) it deadlocked."""
        for episode, usage in spent:
            if episode.id not in self._booked:
                continue  # recorded by ``record``, not answered by ``respond``
            del self._booked[episode.id]
            rows = usage_rows(
                usage,
                persona_id=episode.persona_id,
                conversation_id=episode.conversation_id,
                episode_id=episode.id,
                turn=episode.turn,
            )
            await book_usage(self._store, rows)

    # draining and closing ---------------------------------------------------------------------

    async def enrich_pending(
        self, persona_id: str, *, limit: int | None, retry_failed: bool
    ) -> EnrichReport:
        """A caller's pass over the persona's backlog: the embeddings a remote embedder
        failed on first (``embedded``), then the pending episodes in order, then the
        insights still pending."""
        embedded = await self._recorder.backfill(persona_id)
        report = await self._enricher.enrich_pending(
            persona_id, limit=limit, retry_failed=retry_failed, insights=True
        )
        return report.model_copy(update={"embedded": embedded}) if embedded else report

    async def drain(self, persona_id: str | None, max_seconds: float | None = None) -> bool:
        """Wait for the lane of ``persona_id`` (every lane: None), including passes queued
        meanwhile; False if ``max_seconds`` ran out first."""
        if persona_id is None:
            return await self._lanes.drain(max_seconds=max_seconds)
        key = _key(persona_id)
        return await self._lanes.drain(lambda k: k == key, max_seconds=max_seconds)

    def stop(self) -> None:
        """Take no more work: no pass is queued, no model call starts; passes in progress
        commit what their calls in flight bring, in order."""
        self._closing = True
        self._enricher.close()

    async def close(self, max_seconds: float | None) -> bool:
        """:meth:`stop`, let the calls in flight finish for at most ``max_seconds``, then
        cancel what still runs (it stays pending). True if nothing was cancelled."""
        self.stop()
        return await self._lanes.close(max_seconds=max_seconds)


def _raise_refused(error: ConfigError, episode: Episode) -> NoReturn:
    """``error`` again, naming ``episode`` (stored, waiting as pending)."""
    raise type(error)(
        error.message, **{**error.context, "episode_id": episode.id, "stored": "pending"}
    ) from error
