"""Pipelined enrichment (many episodes asked about at once, commits in seq order in small
pieces) ends exactly where the one-by-one path ends, on both stores, with answers that
arrive out of order, with a failure in the middle of a concurrent window and with an
outage; and it keeps the failure rules (nothing after the first failed episode commits,
an outage asks nothing more)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from sonality.core.opinion import OpinionParams
from sonality.errors import LLMResponseInvalid, LLMUnavailable
from sonality.llm.prompts import RenderedPrompt
from sonality.mind.enrichment import Enricher
from sonality.models import EnrichmentStatus
from sonality.ports import Store
from sonality.service import Sonality
from sonality.testing import FrozenClock, ScriptedLLM
from tests.pipeline import scripts
from tests.pipeline.test_chunked_enrichment import BACKLOG, _exchanges, _outcome

Reply = Callable[[RenderedPrompt, dict[str, Any]], Awaitable[dict[str, Any]]]


def _late_first(reply: Callable[..., dict[str, Any]], spread: float = 0.002) -> Reply:
    """``reply`` answered after a delay that shrinks with the turn, so within a window the
    later episodes' answers arrive first (commits in arrival order would be out of seq)."""

    async def answer(prompt: RenderedPrompt, variables: dict[str, Any]) -> dict[str, Any]:
        index = scripts.turn_of(variables).index
        await asyncio.sleep(spread * (16 - index % 16))
        return reply(prompt, variables)

    return answer


def _model(evidence: Reply | None = None) -> ScriptedLLM:
    llm = ScriptedLLM()
    llm.default("assess_evidence", evidence or _late_first(scripts.evidence_reply))
    llm.default("extract_insight", _late_first(scripts.insight_reply))
    return llm


def _enricher(store: Store, llm: ScriptedLLM, clock: FrozenClock, *, pipelined: bool) -> Enricher:
    params = OpinionParams(cooling_period=3)
    if pipelined:
        return Enricher(
            store=store,
            llm=llm,
            clock=clock,
            params=params,
            chunk_size=50,
            concurrency=8,
            commit_size=3,
        )
    return Enricher(store=store, llm=llm, clock=clock, params=params, chunk_size=1, concurrency=1)


async def _two_personas(app: Sonality) -> None:
    for persona in ("piped", "single"):
        await app.create_persona(persona, name="Ada", core_identity="I am Ada.")
        await app.record_batch(persona, _exchanges(persona))


class Commits:
    """The sizes of the commit transactions and the interaction counts they carried."""

    def __init__(self, store: Store) -> None:
        self.sizes: list[int] = []
        self.counts: list[int] = []
        self._commit = store.commit_enrichments

    async def __call__(self, commits: Any) -> Any:
        self.sizes.append(len(commits))
        self.counts += [c.interaction_count for c in commits]
        return await self._commit(commits)


async def test_out_of_order_answers_commit_in_order_to_the_one_by_one_state(
    app: Sonality, store: Store, clock: FrozenClock, monkeypatch: Any
) -> None:
    """75 episodes of three users asked about 8 at a time, the later ones of each window
    answered first: the commits go in seq order, in pieces of at most 3, and every
    belief, provenance edge, staged delta, insight, fact, influence row, status and
    counter equals the one-by-one path's."""
    await _two_personas(app)
    commits = Commits(store)
    monkeypatch.setattr(store, "commit_enrichments", commits)
    piped = await _enricher(store, _model(), clock, pipelined=True).enrich_pending("piped")
    monkeypatch.undo()
    single = await _enricher(store, _model(), clock, pipelined=False).enrich_pending("single")
    assert (piped.enriched, single.enriched) == (BACKLOG, BACKLOG)
    assert commits.counts == list(range(1, BACKLOG + 1))  # seq order, none refused
    assert max(commits.sizes) <= 3 and len(commits.sizes) >= BACKLOG // 3
    one = await _outcome(store, "single")
    assert one["staged"] and one["facts"][1] and one["insights"] and one["evidence"]
    assert await _outcome(store, "piped") == one


def _failing_once(turn: int, exc: Exception) -> Callable[..., Awaitable[dict[str, Any]]]:
    """Evidence that fails the first time ``turn`` is asked (at once, while the episodes
    around it are still in flight), then answers."""
    failed: set[str] = set()
    late = _late_first(scripts.evidence_reply)

    async def reply(prompt: RenderedPrompt, variables: dict[str, Any]) -> dict[str, Any]:
        key = variables["user_message"]
        if scripts.turn_of(variables).index == turn and key not in failed:
            failed.add(key)
            raise exc
        return await late(prompt, variables)

    return reply


async def _through_a_failure(
    app: Sonality, store: Store, clock: FrozenClock, exc: Exception
) -> tuple[list[int], list[int]]:
    """Both personas through a failure at turn 6 and a second pass: the episodes each
    first pass committed (by interaction) for both paths."""
    await _two_personas(app)
    firsts = []
    for persona, pipelined in (("piped", True), ("single", False)):
        llm = _model(_failing_once(6, exc))
        enricher = _enricher(store, llm, clock, pipelined=pipelined)
        first = await enricher.enrich_pending(persona)
        firsts.append(first.enriched)
        again = await enricher.enrich_pending(persona)
        assert first.enriched + again.enriched == BACKLOG
    return firsts, [(await store.get_persona(p)).interaction_count for p in ("piped", "single")]


async def test_a_failed_reply_mid_window_ends_where_one_by_one_ends(
    app: Sonality, store: Store, clock: FrozenClock
) -> None:
    """An invalid reply for the 6th episode while the 7th-13th are in flight: both paths
    commit 5 in their first pass, count one attempt on the 6th, and after the second
    pass hold the same state."""
    firsts, counts = await _through_a_failure(app, store, clock, LLMResponseInvalid("bad"))
    assert firsts == [5, 5] and counts == [BACKLOG, BACKLOG]
    sixth = [await store.get_episode(p, f"{p}-5") for p in ("piped", "single")]
    assert [e.enrichment_attempts for e in sixth] == [1, 1]
    assert await _outcome(store, "piped") == await _outcome(store, "single")


async def test_an_outage_mid_window_ends_where_one_by_one_ends(
    app: Sonality, store: Store, clock: FrozenClock
) -> None:
    """An outage at the 6th episode: 5 commit on both paths, no attempt is counted, and
    after the model is back both end in the same state."""
    firsts, counts = await _through_a_failure(app, store, clock, LLMUnavailable("down"))
    assert firsts == [5, 5] and counts == [BACKLOG, BACKLOG]
    sixth = [await store.get_episode(p, f"{p}-5") for p in ("piped", "single")]
    assert [e.enrichment_attempts for e in sixth] == [0, 0]
    assert await _outcome(store, "piped") == await _outcome(store, "single")


async def test_nothing_after_the_failed_episode_commits_and_an_outage_asks_no_more(
    app: Sonality, store: Store, clock: FrozenClock
) -> None:
    """12 pending, 4 asked at a time: an outage answered at once for the 3rd while the 2nd,
    4th and 5th are in flight. The 2nd commits, nothing after the 3rd does (their
    answers are dropped), and no episode after the 5th is ever asked about."""
    await app.create_persona("ada", name="Ada", core_identity="I am Ada.")
    await app.record_batch("ada", _exchanges("ada")[:12])
    late = _late_first(scripts.evidence_reply, spread=0.01)

    async def evidence(prompt: RenderedPrompt, variables: dict[str, Any]) -> dict[str, Any]:
        if scripts.turn_of(variables).index == 3:
            raise LLMUnavailable("connection refused")
        return await late(prompt, variables)

    llm = _model(evidence)
    enricher = Enricher(
        store=store, llm=llm, clock=clock, params=OpinionParams(), concurrency=4, commit_size=8
    )
    report = await enricher.enrich_pending("ada")
    assert (report.enriched, report.stopped_by) == (2, "llm_unavailable")
    asked = {scripts.turn_of(c.variables).index for c in llm.calls_to("assess_evidence")}
    assert asked == {1, 2, 3, 4, 5}  # e1 alone (a probe), then e2-e5 at once, then none
    statuses = {e.id: e.enrichment_status for e in await store.list_episodes("ada", limit=20)}
    assert [statuses[f"ada-{k}"] for k in range(12)] == [EnrichmentStatus.ENRICHED] * 2 + [
        EnrichmentStatus.PENDING
    ] * 10


async def test_an_episode_shows_enriched_while_a_later_one_is_still_asked(
    app: Sonality, store: Store, clock: FrozenClock
) -> None:
    """The 9th episode's model call hangs: the 8 before it are committed (and read back
    enriched) while it is still in flight, not after the whole window."""
    await app.create_persona("ada", name="Ada", core_identity="I am Ada.")
    await app.record_batch("ada", _exchanges("ada")[:12])
    hold = asyncio.Event()

    async def evidence(prompt: RenderedPrompt, variables: dict[str, Any]) -> dict[str, Any]:
        if scripts.turn_of(variables).index == 9:
            await hold.wait()
        return scripts.evidence_reply(prompt, variables)

    enricher = Enricher(store=store, llm=_model(evidence), clock=clock, params=OpinionParams())
    running = asyncio.create_task(enricher.enrich_pending("ada"))
    for _ in range(500):
        if (await store.get_persona("ada")).interaction_count == 8:
            break
        await asyncio.sleep(0.01)
    assert (await store.get_persona("ada")).interaction_count == 8
    assert (await store.get_episode("ada", "ada-7")).enrichment_status is EnrichmentStatus.ENRICHED
    assert not running.done()
    hold.set()
    assert (await running).enriched == 12
