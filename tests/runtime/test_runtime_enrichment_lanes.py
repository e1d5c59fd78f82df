"""The Thinker hands enrichment to the persona's lane and never waits on it (except the
controller, which reads it); the Talker's calls go first in the process's call budget;
closing finishes the calls in flight within its bound and leaves the rest pending."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

from sonality.llm.budget import CallBudget, Priority
from sonality.llm.litellm_llm import LiteLLM
from sonality.mind.parts import EnrichMode, Limits, RuntimeSettings
from sonality.models import EnrichmentStatus, ThinkerStatus
from sonality.service import Sonality
from sonality.testing import ScriptedLLM
from sonality.testing.openai_server import ChatRequest, FakeOpenAI
from tests.runtime import script
from tests.runtime.conftest import IDENTITY


async def _eventually(check: Callable[[], Any], seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not await check():
        assert time.monotonic() < deadline, "never happened"
        await asyncio.sleep(0.02)


async def test_conversations_think_while_enrichment_hangs(
    make_app: Callable[..., Sonality],
) -> None:
    """The evidence calls hang: every turn of two conversations is still thought about
    (the Thinker handed the episodes to the lane and went on), and once the model answers
    the lane enriches them all."""
    release = asyncio.Event()
    llm = script.scripted()

    async def hung_evidence(rendered: Any, variables: Any) -> Any:
        await release.wait()
        return {"evidence": None, "facts": [], "importance": 3}

    llm.default("assess_evidence", hung_evidence)
    app = make_app(llm)
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    for turn in range(1, 4):
        for conversation in ("c1", "c2"):
            await app.respond(
                "ada", user_id="u1", conversation_id=conversation, message=script.message(turn)
            )

    async def thought() -> bool:
        turns = [t for c in ("c1", "c2") for t in await app.thinker_turns("ada", conversation_id=c)]
        return len(turns) == 6 and all(t.status is ThinkerStatus.DONE for t in turns)

    await _eventually(thought)
    assert (await app.pending("ada")).episodes == 6  # nothing enriched yet
    release.set()
    assert await app.drain("ada", max_seconds=30)
    assert (await app.pending("ada")).episodes == 0
    await app.close()


class _Admissions(CallBudget):
    """The process's call budget, recording the order in which it admits calls: for each
    call, its priority, and which calls were still waiting when it asked."""

    def __init__(self, limit: int) -> None:
        super().__init__(limit)
        self._tickets = itertools.count()
        self.asked: dict[int, tuple[int, frozenset[int]]] = {}
        """ticket → (priority, the tickets waiting when it asked)."""
        self.admitted: list[int] = []
        self._waiting: set[int] = set()

    async def _acquire(self, priority: int) -> None:
        ticket = next(self._tickets)
        self.asked[ticket] = (priority, frozenset(self._waiting))
        self._waiting.add(ticket)
        try:
            await super()._acquire(priority)
        finally:
            self._waiting.discard(ticket)
        self.admitted.append(ticket)


async def test_the_talker_goes_first_past_a_full_budget(make_app: Callable[..., Sonality]) -> None:
    """4 model calls in flight at most; 6 personas' backlogs enriching (a lane each, one
    call at a time) whose model calls are held (they answer once the test lets them):
    background calls hold the 3 slots they may and the others wait. respond's Talker call
    is admitted before every background call that was waiting when it asked (it answers
    while they are all still held), and the budget never holds more than 4. Order, not
    wall-clock time (speed is for benchmarks)."""
    held = threading.Event()

    def answers(request: ChatRequest) -> Any:
        if request.schema is not None:  # enrichment's structured calls wait; the Talker's not
            held.wait(60)
        return None  # the fake synthesises a valid reply from the schema

    with FakeOpenAI(answer=answers) as fake:
        budget = _Admissions(4)
        model = LiteLLM("openai/fake-model", api_base=fake.url, api_key="k", budget=budget)
        app = make_app(model, limits=Limits(record_enrich=EnrichMode.BACKGROUND))
        try:
            personas = ["ada", "p1", "p2", "p3", "p4", "p5"]
            for persona in personas:
                await app.create_persona(persona, name=persona, core_identity=IDENTITY)
                await app.set_runtime(persona, mode="baseline")
                for i in range(2):
                    await app.record(
                        persona, user_id="u0", conversation_id="b", message=f"{i}.", response="."
                    )
            await _eventually(lambda: _asyncify(budget.in_flight == 3 and budget.waiting > 0))
            reply = await app.respond("ada", user_id="u1", conversation_id="c1", message="Hello?")
            assert reply.text and not held.is_set()
            talker = [t for t, (rank, _) in budget.asked.items() if rank == Priority.FOREGROUND]
            assert len(talker) == 1
            first, queued = budget.admitted.index(talker[0]), budget.asked[talker[0]][1]
            assert queued  # background calls were waiting when the Talker asked
        finally:
            held.set()
        for persona in personas:
            assert await app.drain(persona, max_seconds=60)
        assert all(budget.admitted.index(t) > first for t in queued), (first, queued)
        assert budget.peak <= 4
        await app.close()


async def _asyncify(value: bool) -> bool:
    return value


async def test_close_finishes_calls_in_flight_and_leaves_the_rest_pending(
    make_app: Callable[..., Sonality],
) -> None:
    """40 episodes waiting, each model call 0.3 s: close() stops asking, lets the calls in
    flight finish and commit in order, returns well within its bound and leaves every
    other episode pending (none half-written)."""
    llm = ScriptedLLM()
    llm.default("assess_evidence", lambda r, v: {"evidence": None, "facts": [], "importance": 2})
    llm.default("extract_insight", lambda r, v: {"insight": None})
    llm.on_call = _slow
    app = make_app(
        llm,
        limits=Limits(record_enrich=EnrichMode.BACKGROUND),
        runtime=RuntimeSettings(shutdown_seconds=5.0),
    )
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    for i in range(40):
        await app.record("ada", user_id="u1", conversation_id="c1", message=f"m{i}", response=".")
    await _eventually(lambda: _enriched_some(app))
    started = time.monotonic()
    await app.close()
    took = time.monotonic() - started
    counts = await app.store.count_episodes("ada")
    assert took < 2.0, took
    assert counts["enriched"] + counts["pending"] == 40 and counts["pending"] > 0
    persona = await app.store.get_persona("ada")
    assert persona.interaction_count == counts["enriched"]
    episodes = await app.store.list_episodes("ada", limit=100)
    enriched = sorted(e.seq for e in episodes if e.enrichment_status is EnrichmentStatus.ENRICHED)
    assert enriched == sorted(e.seq for e in episodes)[: len(enriched)]  # a prefix, in order


async def _slow(call: Any) -> None:
    await asyncio.sleep(0.3)


async def _enriched_some(app: Sonality) -> bool:
    return (await app.store.get_persona("ada")).interaction_count > 0


async def test_close_is_bounded_on_a_hung_model(make_app: Callable[..., Sonality]) -> None:
    """Every call hangs: close() gives up after its bound (0.5 s here) and the backlog
    stays pending, nothing written."""
    hang = asyncio.Event()
    llm = ScriptedLLM(on_call=lambda call: hang.wait())
    llm.default("assess_evidence", lambda r, v: {"evidence": None, "facts": [], "importance": 2})
    llm.default("extract_insight", lambda r, v: {"insight": None})
    app = make_app(
        llm,
        limits=Limits(record_enrich=EnrichMode.BACKGROUND),
        runtime=RuntimeSettings(shutdown_seconds=0.5),
    )
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    for i in range(5):
        await app.record("ada", user_id="u1", conversation_id="c1", message=f"m{i}", response=".")
    await _eventually(lambda: _asyncify(bool(llm.calls)))
    started = time.monotonic()
    await app.close()
    assert time.monotonic() - started < 2.0
    assert (await app.store.count_episodes("ada"))["pending"] == 5
