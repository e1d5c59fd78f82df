"""A backlog enriched in chunks (one state read, one commit transaction per chunk) ends
exactly where one-by-one enrichment ends, on both stores, and keeps the failure rules."""

from __future__ import annotations

import re
from typing import Any

from sonality.core.opinion import OpinionParams
from sonality.errors import LLMConfigError, LLMResponseInvalid, LLMUnavailable
from sonality.llm.prompts import RenderedPrompt
from sonality.mind.enrichment import Enricher
from sonality.models import EnrichmentStatus
from sonality.ports import Store
from sonality.service import Exchange, Sonality
from sonality.testing import FrozenClock, ScriptedLLM
from tests.pipeline import scripts
from tests.pipeline.conftest import IDENTITY

USERS = 3
BACKLOG = 75
_RANDOM = re.compile(r"_[0-9a-f]{16}$")


def _exchanges(persona: str) -> list[Exchange]:
    """75 exchanges of three users: turns 1-15 five times, so each user repeats a message
    every 15 interactions (the repetition rule) and spends influence budgets."""
    out = []
    for k in range(BACKLOG):
        t = scripts.turn(k % 15 + 1)
        out.append(Exchange(f"u{k % USERS}", f"c{k % 5}", t.message, t.response, f"{persona}-{k}"))
    return out


def _same(value: Any, persona: str) -> Any:
    """``value`` with what legitimately differs between the two personas taken out: the
    persona id, the episode ids' persona prefix and the random tail of generated ids."""
    if isinstance(value, dict):
        return {k: _same(v, persona) for k, v in value.items() if k != "persona_id"}
    if isinstance(value, list | tuple):
        return [_same(v, persona) for v in value]
    if isinstance(value, str):
        return _RANDOM.sub("", value.replace(f"{persona}-", "E-"))
    return value


async def _outcome(store: Store, persona: str) -> dict[str, Any]:
    """Everything enrichment writes, as comparable data."""
    p = await store.get_persona(persona)
    beliefs = await store.list_beliefs(persona, include_retired=True)
    evidence = {}
    for b in beliefs:
        edges = await store.belief_evidence(persona, b.topic)
        evidence[b.topic] = [(edge.model_dump(), episode.id) for edge, episode in edges]
    influence = {}
    for u in range(USERS):
        rows = await store.recent_influence(persona, f"u{u}", since_interaction=0)
        influence[u] = [row.model_dump() for row in rows]
    episodes = await store.list_episodes(persona, limit=1000)
    same = _same(
        {
            "persona": p.model_dump(
                include={"interaction_count", "disagreement_window", "shift_since_reflection"}
            ),
            "beliefs": [b.model_dump() for b in beliefs],
            "evidence": evidence,
            "staged": [s.model_dump() for s in await store.list_staged(persona)],
            "insights": [i.model_dump() for i in await store.list_insights(persona)],
            "facts": {
                u: [f.model_dump() for f in await store.list_facts(persona, f"u{u}")]
                for u in range(USERS)
            },
            "influence": influence,
            "episodes": sorted(
                (e.model_dump(exclude={"embedding", "seq", "created_at"}) for e in episodes),
                key=lambda e: str(e["id"]),
            ),
        },
        persona,
    )
    # rows of one interaction are ordered by their ids' random tails: compare as sets
    for key in ("staged", "insights"):
        same[key] = sorted(same[key], key=repr)
    for key in ("evidence", "facts", "influence"):
        same[key] = {k: sorted(v, key=repr) for k, v in same[key].items()}
    return same


def _enricher(store: Store, llm: ScriptedLLM, clock: FrozenClock, chunk: int) -> Enricher:
    params = OpinionParams(cooling_period=3)
    return Enricher(store=store, llm=llm, clock=clock, params=params, chunk_size=chunk)


async def test_chunked_backlog_ends_where_one_by_one_ends(
    app: Sonality, store: Store, llm: ScriptedLLM, clock: FrozenClock
) -> None:
    """The same backlog enriched in chunks of 20 and one episode at a time gives identical
    beliefs, provenance, staged deltas, insights, facts, influence, statuses and counters."""
    for persona in ("chunked", "single"):
        await app.create_persona(persona, name="Ada", core_identity=IDENTITY)
        await app.record_batch(persona, _exchanges(persona))
    chunked = await _enricher(store, llm, clock, 20).enrich_pending("chunked")
    single = await _enricher(store, llm, clock, 1).enrich_pending("single")
    assert (chunked.enriched, single.enriched) == (BACKLOG, BACKLOG)
    one = await _outcome(store, "single")
    assert one["staged"] and one["facts"][1] and one["insights"] and one["evidence"]
    assert await _outcome(store, "chunked") == one


def _failing_at(turn: int, exc: Exception) -> Any:
    def reply(prompt: RenderedPrompt, variables: dict[str, Any]) -> dict[str, Any]:
        if scripts.turn_of(variables).index == turn:
            raise exc
        return scripts.evidence_reply(prompt, variables)

    return reply


async def _backlog(app: Sonality, n: int = 12) -> None:
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    await app.record_batch(
        "ada",
        [
            Exchange("u1", "c1", scripts.turn(i).message, scripts.turn(i).response, f"e{i}")
            for i in range(1, n + 1)
        ],
    )


async def test_an_invalid_reply_mid_chunk_commits_the_episodes_before_it(
    app: Sonality, store: Store, clock: FrozenClock
) -> None:
    """A counted model failure at the 6th episode of a chunk: the 5 before it commit, the
    6th keeps one counted attempt and stays pending, nothing after it is touched."""
    llm = ScriptedLLM()
    llm.default("assess_evidence", _failing_at(6, LLMResponseInvalid("bad reply")))
    llm.default("extract_insight", scripts.insight_reply)
    await _backlog(app)
    report = await _enricher(store, llm, clock, 10).enrich_pending("ada")
    assert (report.enriched, report.stopped_by) == (5, "llm_invalid")
    assert (await store.get_persona("ada")).interaction_count == 5
    by_id = {e.id: e for e in await store.list_episodes("ada", limit=100)}
    assert [by_id[f"e{i}"].enrichment_status for i in range(1, 8)] == [
        EnrichmentStatus.ENRICHED
    ] * 5 + [EnrichmentStatus.PENDING] * 2
    assert (by_id["e6"].enrichment_attempts, by_id["e7"].enrichment_attempts) == (1, 0)


async def test_an_outage_mid_chunk_counts_nothing_and_resumes_in_order(
    app: Sonality, store: Store, clock: FrozenClock
) -> None:
    """An outage at the 4th episode: 3 commit, no attempt is counted, and the next pass
    with the model back enriches the rest in order to the same count."""
    llm = ScriptedLLM()
    llm.default("assess_evidence", _failing_at(4, LLMUnavailable("connection refused")))
    llm.default("extract_insight", scripts.insight_reply)
    await _backlog(app)
    report = await _enricher(store, llm, clock, 10).enrich_pending("ada")
    assert (report.enriched, report.stopped_by) == (3, "llm_unavailable")
    assert (await store.get_episode("ada", "e4")).enrichment_attempts == 0
    llm.default("assess_evidence", scripts.evidence_reply)
    again = await _enricher(store, llm, clock, 10).enrich_pending("ada")
    assert (again.enriched, again.remaining) == (9, 0)
    assert (await store.get_persona("ada")).interaction_count == 12


async def test_a_refused_configuration_mid_chunk_propagates_after_committing_before_it(
    app: Sonality, store: Store, clock: FrozenClock
) -> None:
    """A refused model configuration at the 3rd episode propagates; the 2 before it are
    committed, the 3rd is neither marked nor counted."""
    llm = ScriptedLLM()
    llm.default("assess_evidence", _failing_at(3, LLMConfigError("unknown model")))
    llm.default("extract_insight", scripts.insight_reply)
    await _backlog(app)
    enricher = _enricher(store, llm, clock, 10)
    try:
        await enricher.enrich_pending("ada")
    except LLMConfigError:
        pass
    else:
        raise AssertionError("LLMConfigError was swallowed")
    assert (await store.get_persona("ada")).interaction_count == 2
    third = await store.get_episode("ada", "e3")
    assert (third.enrichment_status, third.enrichment_attempts) == (EnrichmentStatus.PENDING, 0)
