"""The background worker: reflections and enrichment retries on APScheduler 3.x (asyncio).

This is the only module that imports APScheduler. ``Worker`` is shaped like starlette's
lifespan: ``async with Worker(app, params): ...`` runs it beside an application in the
same event loop; ``sonality worker`` runs it on its own until SIGTERM/SIGINT.

Jobs, and why their scheduling options are what they are:

- ``scan`` (every ``scan_seconds``): asks the store which personas are due
  (``Sonality.due_personas``, triggers computed from stored state, so it sees what other
  processes recorded) and requests a reflection for each. ``coalesce=True`` and
  ``max_instances=1``: after a stall, several missed scans collapse into one, and a slow
  scan never runs twice at once. ``misfire_grace_time=scan_seconds``: a scan later than
  one interval is dropped, the next one is already on its way. Each scan fires up to a
  quarter of ``scan_seconds`` late, at random (APScheduler's ``jitter``): workers started
  together scan in the same phase, and the one a few milliseconds ahead would otherwise
  win every lease while the others only ever find it held; with the jitter they take
  turns, and a due persona waits at most one and a quarter intervals. A scan that reached
  the store touches ``heartbeat_file`` when one is set (a container health check reads its
  age).
- ``enrich-retry`` (every ``retry_seconds``): enriches personas with pending episodes,
  pending insight parts, or episodes a remote embedder failed on (``Sonality.enrich_pending``
  backfills those). A persona whose pass stops on an unavailable or invalid model backs off
  exponentially (``retry_seconds × 2^(failures-1)``, capped at ``retry_max_seconds``) and is
  retried at once when the model answers again; a model that refuses the configuration
  (``LLMConfigError``) is logged as an error and backed off the same way, with nothing
  marked. Episodes and insight parts marked ``failed`` are put back to pending with the same
  backoff, for ``retry_rounds`` rounds (counted durably: their attempts keep counting, so a
  restart does not reset the cap); beyond that they wait for ``sonality enrich
  --retry-failed``, and the worker logs ``enrichment_failed_exhausted`` once. Same
  coalescing and misfire options as the scan.
- ``reflect:<persona>`` (one-shot, run now): the reflection itself. ``replace_existing``
  coalesces requests that arrive before it starts; a request that arrives while it runs is
  remembered and re-checked once it finishes (triggers usually say "cooldown" then).
  ``misfire_grace_time=None``: a requested reflection runs however late the loop is.
- ``idle-scan`` (optional, ``idle_seconds``): a persona with pending insights and no new
  episode for ``idle_seconds`` gets an ``idle`` reflection (the cooldown still applies).

The event path: the worker registers itself with ``Sonality.add_due_listener``, so a
``record`` in the same process that makes a persona due requests its reflection at once,
without waiting for a scan.

One reflection per persona at a time: in this process through the per-persona job (and the
reflector's lock); across processes through the store's lease (``Reflector``).

Stopping (``stop`` / SIGTERM / SIGINT): no new job starts and no new model call of
enrichment (a running pass commits what its calls in flight bring, in order, and leaves
the rest pending); running jobs get ``grace_seconds`` (10 s) to finish, then are
cancelled. A cancelled reflection writes nothing partial (its commit is one transaction)
and releases its lease on the way out; a lease left behind by a killed process expires
after ``lease_seconds``.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger
from pydantic import BaseModel, ConfigDict, Field

from sonality.errors import ConfigError, SonalityError
from sonality.models import EnrichmentStatus, InsightState, InsightStatus
from sonality.observability import get_logger
from sonality.service import Sonality

__all__ = ["Worker", "WorkerParams"]

log = get_logger("sonality.worker")

_BACKOFF_STOPS = frozenset({"llm_unavailable", "llm_invalid", "conflict", "misconfigured"})


class WorkerParams(BaseModel):
    """How often the worker looks, retries and waits."""

    model_config = ConfigDict(frozen=True)

    scan_seconds: float = Field(default=30.0, gt=0)
    retry_seconds: float = Field(default=60.0, gt=0)
    retry_max_seconds: float = Field(default=3600.0, gt=0)
    idle_seconds: float | None = Field(default=None, gt=0)
    """Reflect a quiet persona with pending insights after this long; None: never."""
    retry_rounds: int = Field(default=3, ge=0)
    """Rounds of automatic retries a failed episode or insight part gets (each round is
    ``enrichment_max_attempts`` attempts); 0: only ``sonality enrich --retry-failed``."""
    grace_seconds: float = Field(default=10.0, ge=0)
    """How long a stop waits for running jobs before cancelling them."""
    heartbeat_file: Path | None = None
    """Touched after every scan that reached the store; None: no heartbeat."""


class Worker:
    """Schedules reflections and enrichment retries for every persona of one app."""

    def __init__(self, app: Sonality, params: WorkerParams | None = None) -> None:
        self.app = app
        self.params = params or WorkerParams()
        self._scheduler = AsyncIOScheduler(timezone=UTC)
        self._running: dict[str, asyncio.Task[Any]] = {}
        self._again: set[str] = set()
        self._jobs: set[asyncio.Task[Any]] = set()
        self._backoff: dict[str, tuple[int, float]] = {}
        self._failed_backoff: dict[str, tuple[int, float]] = {}
        self._exhausted: set[str] = set()
        self._stopping = False
        self._started = False
        self.reflections: list[dict[str, Any]] = []
        """Outcomes of the reflections this worker ran (bounded to the last 1000)."""

    # lifecycle ----------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def start(self) -> None:
        """Add the jobs and start the scheduler on the running loop."""
        if self._started:
            return
        p = self.params
        now = datetime.now(UTC)
        self._scheduler.add_job(
            self._tracked(self._scan),
            IntervalTrigger(seconds=p.scan_seconds, jitter=p.scan_seconds / 4),
            id="scan",
            coalesce=True,
            max_instances=1,
            misfire_grace_time=max(1, round(p.scan_seconds)),
            next_run_time=now,
        )
        if self.app.llm is not None:
            self._scheduler.add_job(
                self._tracked(self._retry_enrichment),
                IntervalTrigger(seconds=p.retry_seconds),
                id="enrich-retry",
                coalesce=True,
                max_instances=1,
                misfire_grace_time=max(1, round(p.retry_seconds)),
                next_run_time=now + timedelta(seconds=min(p.retry_seconds, p.scan_seconds)),
            )
        if p.idle_seconds is not None:
            every = min(p.idle_seconds, p.scan_seconds)
            self._scheduler.add_job(
                self._tracked(self._idle_scan),
                IntervalTrigger(seconds=every),
                id="idle-scan",
                coalesce=True,
                max_instances=1,
                misfire_grace_time=max(1, round(every)),
            )
        self._scheduler.start()
        self.app.add_due_listener(self.request)
        self._started = True
        log.info(
            "worker_started",
            owner=self.app.reflector.owner,
            scan_seconds=p.scan_seconds,
            retry_seconds=p.retry_seconds,
            idle_seconds=p.idle_seconds,
        )

    async def stop(self) -> None:
        """Stop taking work, let running jobs finish for ``grace_seconds``, cancel the rest."""
        if not self._started or self._stopping:
            return
        self._stopping = True
        self.app.remove_due_listener(self.request)
        self._scheduler.pause()
        self.app.enricher.stop_asking()  # a pass in progress ends with its calls in flight
        running = [t for t in self._jobs if not t.done()]
        if running:
            log.info("worker_draining", jobs=len(running), grace_seconds=self.params.grace_seconds)
            _, late = await asyncio.wait(running, timeout=self.params.grace_seconds or None)
            for task in late:
                task.cancel()
            if late:
                await asyncio.gather(*late, return_exceptions=True)
                log.warning("worker_jobs_abandoned", jobs=len(late))
        self._scheduler.shutdown(wait=False)
        await asyncio.sleep(0)  # the scheduler shuts down on the loop's next turn
        self.app.enricher.resume_asking()  # the app is the caller's again (close stops it)
        log.info("worker_stopped", owner=self.app.reflector.owner)

    async def run_forever(self, *, handle_signals: bool = True) -> None:
        """Run until SIGTERM or SIGINT (or the task is cancelled), then stop gracefully."""
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        installed: list[signal.Signals] = []
        if handle_signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.add_signal_handler(sig, stop.set)
                    installed.append(sig)
        try:
            await self.start()
            await stop.wait()
            log.info("worker_signal", owner=self.app.reflector.owner)
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)
            await self.stop()

    async def run_once(self) -> list[dict[str, Any]]:
        """One pass without the scheduler: retry enrichment, then reflect every due
        persona (in turn). Returns the reflection outcomes."""
        if self.app.llm is not None:
            await self._retry_enrichment()
        outcomes = []
        for persona_id in await self.app.due_personas():
            outcomes.append(await self._reflect(persona_id, None))
        return outcomes

    # requests and jobs -------------------------------------------------------------------

    def request(self, persona_id: str, trigger: str | None = None) -> None:
        """Ask for a reflection of ``persona_id`` now (never blocks). Coalesced: one job
        per persona; a request during a running reflection is re-checked after it."""
        if self._stopping or not self._started:
            return
        if persona_id in self._running:
            self._again.add(persona_id)
            return
        self._scheduler.add_job(
            self._tracked(self._reflect),
            "date",
            args=[persona_id, trigger],
            id=f"reflect:{persona_id}",
            replace_existing=True,
            coalesce=True,
            max_instances=1,
            misfire_grace_time=None,
        )

    def _tracked(self, job: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        """``job`` as a coroutine function whose task the worker can wait for or cancel."""

        async def run(*args: Any) -> Any:
            task = asyncio.current_task()
            assert task is not None
            self._jobs.add(task)
            try:
                return await job(*args)
            except asyncio.CancelledError:
                if not self._stopping:
                    raise
                return None  # abandoned on purpose; nothing partial was written
            finally:
                self._jobs.discard(task)

        run.__name__ = getattr(job, "__name__", "job")
        run.__qualname__ = run.__name__
        return run

    async def _reflect(self, persona_id: str, trigger: str | None) -> dict[str, Any]:
        task = asyncio.current_task()
        assert task is not None
        self._running[persona_id] = task
        started = time.perf_counter()
        outcome: dict[str, Any] = {"persona_id": persona_id, "outcome": "error"}
        try:
            report = await self.app.reflect(persona_id, trigger=trigger)
            outcome = {
                "persona_id": persona_id,
                "outcome": report.outcome,
                "trigger": report.trigger,
                "reason": report.reason,
                "snapshot_version": report.snapshot_version,
            }
            log.info(
                "worker_reflection",
                **outcome,
                duration_ms=round((time.perf_counter() - started) * 1000, 1),
            )
        except asyncio.CancelledError:
            log.warning("worker_reflection_abandoned", persona_id=persona_id)
            raise
        except SonalityError as exc:
            log.warning(
                "worker_reflection_error",
                persona_id=persona_id,
                error=type(exc).__name__,
                detail=str(exc),
            )
        finally:
            self._running.pop(persona_id, None)
            self.reflections = [*self.reflections[-999:], outcome]
            if persona_id in self._again:
                self._again.discard(persona_id)
                self.request(persona_id)
        return outcome

    async def _scan(self) -> None:
        started = time.perf_counter()
        try:
            due = await self.app.due_personas()
        except SonalityError as exc:
            log.warning("worker_scan_failed", error=type(exc).__name__, detail=str(exc))
            return
        for persona_id in due:
            self.request(persona_id)
        if self.params.heartbeat_file is not None:
            await asyncio.to_thread(self.params.heartbeat_file.touch)
        log.info(
            "worker_scan",
            due=due,
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
        )

    async def _retry_enrichment(self) -> None:
        store = self.app.store
        try:
            personas = await store.list_personas()
        except SonalityError as exc:
            log.warning("worker_retry_failed", error=type(exc).__name__, detail=str(exc))
            return
        now = time.monotonic()
        started = time.perf_counter()
        tried = enriched = 0
        for persona in personas:
            pid = persona.id
            with contextlib.suppress(SonalityError):  # the Thinker's failed turns (respond)
                await self.app.retry_thinking(pid)
            try:
                if not await self._has_work(pid, now):
                    self._backoff.pop(pid, None)
                    continue
                failures, next_at = self._backoff.get(pid, (0, 0.0))
                if now < next_at:
                    continue
                tried += 1
                report = await self.app.enrich_pending(pid)
                enriched += report.enriched
                stopped_by = report.stopped_by
            except ConfigError as exc:
                # not an outage: say so loudly, mark nothing, and back off like one
                log.error("enrichment_misconfigured", persona_id=pid, detail=str(exc))
                stopped_by = "misconfigured"
                report = None
            except SonalityError as exc:
                log.warning(
                    "worker_retry_failed", persona_id=pid, error=type(exc).__name__, detail=str(exc)
                )
                continue
            if stopped_by in _BACKOFF_STOPS:
                failures += 1
                delay = self._delay(failures)
                self._backoff[pid] = (failures, now + delay)
                log.info(
                    "enrichment_retry_backoff",
                    persona_id=pid,
                    failures=failures,
                    next_in_seconds=delay,
                    stopped_by=stopped_by,
                )
            else:
                self._backoff.pop(pid, None)
            if report is not None and report.enriched and not self._stopping:
                with contextlib.suppress(SonalityError):
                    if (await self.app.reflection_due(pid)).due:
                        self.request(pid)
        log.info(
            "worker_enrichment_retry",
            personas=len(personas),
            retried=tried,
            enriched=enriched,
            backing_off=sorted(self._backoff),
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
        )

    def _delay(self, failures: int) -> float:
        p = self.params
        return float(min(p.retry_seconds * 2 ** (failures - 1), p.retry_max_seconds))

    async def _has_work(self, pid: str, now: float) -> bool:
        """Whether the persona has pending episodes or insight parts, after putting
        failed ones whose retry is due back to pending (within ``retry_rounds``)."""
        store = self.app.store
        counts = await store.count_episodes(pid)
        insights = await store.count_insight_retries(pid)
        failed = counts[EnrichmentStatus.FAILED.value] + insights[InsightState.FAILED.value]
        entry = self._failed_backoff.get(pid)
        if failed and entry is None:  # first seen: the first round waits one interval too
            self._failed_backoff[pid] = (0, now + self._delay(1))
        elif failed and entry is not None:
            rounds, due_at = entry
            if now >= due_at:
                cap = self.app.enricher.max_attempts * (1 + self.params.retry_rounds)
                requeued = await store.requeue_failed(pid, below_attempts=cap)
                requeued += await store.requeue_failed_insights(pid, below_attempts=cap)
                if requeued:
                    rounds += 1
                    self._failed_backoff[pid] = (rounds, now + self._delay(rounds + 1))
                    log.info("enrichment_failed_retry", persona_id=pid, requeued=requeued)
                    return True
                if pid not in self._exhausted:
                    self._exhausted.add(pid)
                    log.warning(
                        "enrichment_failed_exhausted",
                        persona_id=pid,
                        failed=failed,
                        hint="fix the cause, then run `sonality enrich --retry-failed`",
                    )
        else:
            self._failed_backoff.pop(pid, None)
            self._exhausted.discard(pid)
        if counts[EnrichmentStatus.PENDING.value] or insights[InsightState.PENDING.value]:
            return True
        return await store.count_unembedded(pid) > 0

    async def _idle_scan(self) -> None:
        idle = self.params.idle_seconds
        assert idle is not None
        cutoff = self.app.clock.now() - timedelta(seconds=idle)
        try:
            for persona in await self.app.personas():
                pid = persona.id
                if not await self.app.insights(pid, status=InsightStatus.PENDING):
                    continue
                latest = await self.app.episodes(pid, limit=1)
                if latest and latest[0].created_at <= cutoff:
                    log.info("worker_idle_request", persona_id=pid)
                    self.request(pid, "idle")
        except SonalityError as exc:
            log.warning("worker_idle_scan_failed", error=type(exc).__name__, detail=str(exc))
