"""The reflection pipeline on both stores: triggers from stored state, one transaction on
success, nothing but a record on rejection or failure, exactly the insights it read."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from sonality.core.decay import decay_floor, decayed_confidence
from sonality.errors import LLMUnavailable, NotFoundError, ValidationError
from sonality.mind.reflection import ReflectionParams
from sonality.models import BeliefStatus, InsightStatus, ReflectionOutcome
from sonality.service import Sonality
from sonality.testing import FrozenClock, ScriptedLLM
from tests.contract.factories import dump
from tests.reflection.conftest import IDENTITY, SNAPSHOT, create, record_turns
from tests.reflection.fake_models import grown_snapshot, scripted_llm


async def _pending_ids(app: Sonality) -> list[str]:
    return [i.id for i in await app.insights("ada", status=InsightStatus.PENDING)]


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("Too short.", "too_short"),
        (SNAPSHOT[: int(len(SNAPSHOT) * 0.5)], "shrunk"),
        ("I am Ada. " * 900, "too_long"),
    ],
    ids=["too_short", "shrunk", "too_long"],
)
async def test_rejected_snapshot_changes_nothing_but_the_record(
    app: Sonality, llm: ScriptedLLM, store: Any, reply: str, reason: str
) -> None:
    """A too-short, too-shrunk or too-long rewrite: snapshot kept, insights pending, beliefs
    untouched, and a Reflection with outcome rejected and the reason."""
    await create(app)
    await record_turns(app, 1, 22)
    llm.on("reflect", {"snapshot": reply})
    before = await dump(store, "ada", users=("u1",))

    report = await app.reflect("ada")

    assert (report.outcome, report.reason, report.trigger) == ("rejected", reason, "periodic")
    after = await dump(store, "ada", users=("u1",))
    assert after["persona"].last_reflection_attempt_at == 21
    assert after["persona"].last_reflection_at == 0
    after["persona"] = after["persona"].model_copy(update={"last_reflection_attempt_at": 0})
    assert after == before  # snapshot, insights (still pending), beliefs: all as they were
    [stored] = await app.reflections("ada")
    assert (stored.outcome, stored.reason) == (ReflectionOutcome.REJECTED, reason)
    assert stored.detail and stored.snapshot_version is None and stored.previous_version == 1
    assert stored.interaction_count == 21 and stored.llm_calls == 1


async def test_model_failure_is_recorded_as_failed(app: Sonality, llm: ScriptedLLM) -> None:
    """An unavailable model: outcome failed (llm_unavailable), snapshot and insights kept."""
    await create(app)
    await record_turns(app, 1, 22)
    pending = await _pending_ids(app)
    llm.on("reflect", LLMUnavailable("down"))
    report = await app.reflect("ada")
    assert (report.outcome, report.reason) == ("failed", "llm_unavailable")
    assert (await app.snapshot("ada")).version == 1
    assert await _pending_ids(app) == pending
    [stored] = await app.reflections("ada")
    assert stored.outcome is ReflectionOutcome.FAILED and stored.reason == "llm_unavailable"


async def test_a_rejected_attempt_starts_a_cooldown(app: Sonality, llm: ScriptedLLM) -> None:
    """After a rejected attempt at 21 nothing is due before 31; at 31 periodic fires again."""
    await create(app)
    await record_turns(app, 1, 22)
    llm.on("reflect", {"snapshot": "Too short."})
    assert (await app.reflect("ada")).outcome == "rejected"
    for i in range(22, 31):
        await record_turns(app, i, i + 1)
        decision = await app.reflection_due("ada")
        assert (decision.due, decision.kind.value) == (False, "cooldown"), i
    await record_turns(app, 31, 32)
    assert (await app.reflection_due("ada")).kind.value == "periodic"
    assert len(llm.calls_to("reflect")) == 1


async def test_committed_reflection_writes_everything(app: Sonality, llm: ScriptedLLM) -> None:
    """Periodic at 20: new version from the model's text, insights consumed, markers moved,
    a committed Reflection with its counts."""
    await create(app)
    await record_turns(app, 1, 21)
    pending = await _pending_ids(app)
    assert pending
    report = await app.reflect("ada")

    assert (report.outcome, report.trigger, report.snapshot_version) == ("committed", "periodic", 2)
    assert report.rewrote and report.insights_consumed == len(pending)
    snapshot = await app.snapshot("ada")
    assert snapshot.reason == "reflection" and snapshot.text == report.new_snapshot
    assert snapshot.text.startswith(SNAPSHOT)
    assert await _pending_ids(app) == []
    persona = await app.persona("ada")
    assert (persona.last_reflection_at, persona.last_reflection_attempt_at) == (20, 20)
    assert persona.shift_since_reflection == 0.0
    [stored] = await app.reflections("ada")
    assert stored.outcome is ReflectionOutcome.COMMITTED
    assert (stored.snapshot_version, stored.previous_version) == (2, 1)
    assert (stored.episodes_read, stored.llm_calls, stored.insights_consumed) == (
        10,
        1,
        len(pending),
    )
    [call] = llm.calls_to("reflect")
    for ins in pending:
        assert ins in call.rendered.user  # pending insights are shown by id
    assert "#20 user: [turn 20]" in call.rendered.user and "#10 user" not in call.rendered.user


async def test_insights_recorded_during_a_reflection_stay_pending(
    app: Sonality, llm: ScriptedLLM
) -> None:
    """Interactions committed while the model thinks: their insights stay pending and their
    shifts still count toward the next reflection."""
    await create(app)
    await record_turns(app, 1, 21)
    read = await _pending_ids(app)

    async def reply_after_more_turns(_: Any, variables: Mapping[str, Any]) -> dict[str, Any]:
        await record_turns(app, 21, 31)  # turns 21, 24, 27, 30 carry insights
        return {"snapshot": grown_snapshot(variables)}

    llm.on("reflect", reply_after_more_turns)
    mid = None

    async def remember_shift(call: Any) -> None:
        nonlocal mid
        if call.prompt == "reflect":
            mid = (await app.persona("ada")).shift_since_reflection

    llm.on_call = remember_shift
    report = await app.reflect("ada")
    assert report.outcome == "committed"

    consumed = {i.id for i in await app.insights("ada", status=InsightStatus.CONSUMED)}
    assert consumed == set(read)
    later = await _pending_ids(app)
    assert len(later) == 4 and not set(later) & set(read)
    persona = await app.persona("ada")
    assert persona.last_reflection_at == 20 and persona.interaction_count == 30
    assert mid is not None
    assert persona.shift_since_reflection > 0.0  # shifts of turns 21-30 kept


async def test_dry_run_writes_nothing(app: Sonality, llm: ScriptedLLM, store: Any) -> None:
    """--dry-run asks the model and validates, but the store is byte-for-byte unchanged."""
    await create(app)
    await record_turns(app, 1, 21)
    before = await dump(store, "ada", users=("u1",))
    report = await app.reflect("ada", dry_run=True)
    assert (report.outcome, report.dry_run, report.reflection_id) == ("accepted", True, None)
    assert report.new_snapshot and report.snapshot_version == 1
    assert await dump(store, "ada", users=("u1",)) == before
    assert await app.reflections("ada") == []


async def test_not_due_is_skipped_without_a_model_call(app: Sonality, llm: ScriptedLLM) -> None:
    """Inside the cooldown nothing runs unless forced; force runs it as manual."""
    await create(app)
    await record_turns(app, 1, 5)
    report = await app.reflect("ada")
    assert (report.outcome, report.trigger) == ("skipped", "cooldown")
    assert llm.calls_to("reflect") == []
    forced = await app.reflect("ada", force=True)
    assert (forced.outcome, forced.trigger) == ("committed", "manual")
    assert (await app.reflect("ada")).trigger == "cooldown"


async def test_idle_reflection_still_respects_the_cooldown(
    make_app: Callable[..., Sonality],
) -> None:
    """trigger=idle passes periodic and event rules, never the cooldown."""
    from tests.reflection.test_stream import stream_llm

    app = make_app(stream_llm(0.3))  # modest shifts: no event trigger at 11
    await create(app)
    await record_turns(app, 1, 5)
    assert (await app.reflect("ada", trigger="idle")).trigger == "cooldown"
    await record_turns(app, 5, 12)
    assert not (await app.reflection_due("ada")).due
    report = await app.reflect("ada", trigger="idle")
    assert (report.outcome, report.trigger) == ("committed", "idle")
    with pytest.raises(ValidationError):
        await app.reflect("ada", trigger="periodic")


async def test_decay_is_applied_only_by_a_committed_reflection(
    app: Sonality, llm: ScriptedLLM, store: Any
) -> None:
    """A stale belief decays by (1+gap)^-0.15 in the committed reflection only: not on a
    rejection, not again on a forced re-run without new interactions."""
    await create(app)
    await record_turns(app, 1, 21)
    stale = (await store.list_beliefs("ada"))[0]
    stale = stale.model_copy(
        update={"last_reinforced_at": 2, "confidence": 0.5, "reinforced_confidence": 0.5}
    )
    await store.upsert_beliefs([stale])

    llm.on("reflect", {"snapshot": "Too short."})
    assert (await app.reflect("ada", force=True)).outcome == "rejected"
    assert _belief(await store.list_beliefs("ada"), stale.topic).confidence == 0.5

    report = await app.reflect("ada", force=True)
    assert report.outcome == "committed" and stale.topic in report.beliefs_decayed
    expected = max(0.5 * (1 + 18) ** -0.15, min(decay_floor(stale.evidence_count), 0.5))
    after = _belief(await store.list_beliefs("ada"), stale.topic)
    assert after.confidence == pytest.approx(expected)
    assert after.uncertainty == pytest.approx(1 - expected)

    again = await app.reflect("ada", force=True)
    assert again.outcome == "committed" and again.beliefs_decayed == ()
    assert _belief(await store.list_beliefs("ada"), stale.topic).confidence == after.confidence


async def test_decay_over_committed_reflections_counts_the_gap_once(
    app: Sonality, store: Any
) -> None:
    """A belief nobody reinforces, decayed by four committed reflections at irregular
    intervals, ends at the formula for the whole gap since its reinforcement — what one
    reflection at the end would leave — not compounded at each one."""
    await create(app)
    await record_turns(app, 1, 21)
    seed = (await store.list_beliefs("ada"))[0]
    quiet = seed.model_copy(
        update={
            "topic": "beekeeping",
            "position": 0.4,
            "confidence": 0.6,
            "reinforced_confidence": 0.6,
            "evidence_count": 1,
            "last_reinforced_at": 2,
        }
    )
    await store.upsert_beliefs([quiet])
    seen = []
    for start, stop in ((21, 21), (21, 33), (33, 48), (48, 59)):
        await record_turns(app, start, stop)
        report = await app.reflect("ada", force=True)
        assert report.outcome == "committed"
        now = (await app.persona("ada")).interaction_count
        belief = _belief(await store.list_beliefs("ada"), "beekeeping")
        assert belief.confidence == pytest.approx(decayed_confidence(0.6, 1, now - 2), rel=1e-12)
        assert belief.reinforced_confidence == 0.6
        seen.append(now)
    assert len(set(seen)) == 4


async def test_a_faded_belief_is_retired_not_deleted(app: Sonality, store: Any) -> None:
    """Below 0.05 a belief leaves the active set but keeps its node and evidence."""
    await create(app)
    await record_turns(app, 1, 21)
    belief = (await store.list_beliefs("ada"))[0]
    evidence = await app.evidence("ada", belief.topic)
    faded = belief.model_copy(
        update={
            "last_reinforced_at": 1,
            "confidence": 0.055,
            "reinforced_confidence": 0.055,
            "evidence_count": 1,
        }
    )
    await store.upsert_beliefs([faded])
    report = await app.reflect("ada", force=True)
    assert belief.topic in report.beliefs_retired
    assert belief.topic not in {b.topic for b in await app.beliefs("ada")}
    kept = _belief(await app.beliefs("ada", include_retired=True), belief.topic)
    assert kept.status is BeliefStatus.RETIRED
    assert await app.evidence("ada", belief.topic) == evidence
    [stored] = await app.reflections("ada")
    assert stored.beliefs_retired == 1


async def test_lease_held_elsewhere_skips_without_a_model_call(
    app: Sonality, llm: ScriptedLLM, store: Any, clock: FrozenClock
) -> None:
    """Another worker's valid lease: skipped, no model call, nothing written."""
    await create(app)
    await record_turns(app, 1, 21)
    assert await store.acquire_lease("ada", "someone-else", now=clock.now(), ttl_seconds=60)
    report = await app.reflect("ada")
    assert report.outcome == "skipped" and "another worker" in (report.reason or "")
    assert llm.calls_to("reflect") == [] and await app.reflections("ada") == []
    clock.advance(seconds=61)  # the other worker died: its lease runs out
    assert (await app.reflect("ada")).outcome == "committed"


async def test_two_facades_on_one_store_reflect_once(
    make_app: Callable[..., Sonality], store: Any
) -> None:
    """Two workers (own owners, own locks) racing on one due persona: one reflection."""
    slow = scripted_llm(reflect_delay=0.3)
    a = make_app(slow, owner="a")
    b = make_app(slow, owner="b")
    await create(a)
    await record_turns(a, 1, 21)
    reports = await asyncio.gather(a.reflect("ada"), b.reflect("ada"))
    assert sorted(r.outcome for r in reports) == ["committed", "skipped"]
    assert len(slow.calls_to("reflect")) == 1
    assert [r.outcome for r in await a.reflections("ada")] == [ReflectionOutcome.COMMITTED]


async def test_concurrent_calls_in_one_process_are_coalesced(
    make_app: Callable[..., Sonality],
) -> None:
    """Three reflect calls for one persona at once: one runs, the others see the cooldown."""
    slow = scripted_llm(reflect_delay=0.2)
    app = make_app(slow)
    await create(app)
    await record_turns(app, 1, 21)
    reports = await asyncio.gather(*(app.reflect("ada") for _ in range(3)))
    assert sorted(r.outcome for r in reports) == ["committed", "skipped", "skipped"]
    assert len(slow.calls_to("reflect")) == 1


async def test_unchanged_text_commits_without_a_new_version(
    app: Sonality, llm: ScriptedLLM
) -> None:
    """The model returns the same text: committed, insights consumed, no new version."""
    await create(app)
    await record_turns(app, 1, 21)
    llm.on("reflect", {"snapshot": SNAPSHOT})
    report = await app.reflect("ada")
    assert report.outcome == "committed" and not report.rewrote
    assert (await app.snapshot("ada")).version == 1 and await _pending_ids(app) == []


async def test_health_warnings_are_stored_and_reported(app: Sonality, llm: ScriptedLLM) -> None:
    """A repetitive snapshot commits (health never blocks) with vocabulary_collapse stored."""
    await create(app)
    await record_turns(app, 1, 21)
    llm.on("reflect", {"snapshot": "I agree, I agree, I agree. " * 12})
    report = await app.reflect("ada")
    assert report.outcome == "committed"
    codes = {w.code.value for w in report.health}
    assert "vocabulary_collapse" in codes
    [stored] = await app.reflections("ada")
    assert set(stored.health) == codes and stored.unique_ratio is not None


async def test_rollback_appends_the_old_text_as_a_new_version(app: Sonality) -> None:
    """rollback --to 1 makes v1's text current as v3 (rollback:1); history is kept."""
    await create(app)
    await record_turns(app, 1, 21)
    await app.reflect("ada")
    rolled = await app.rollback_snapshot("ada", 1)
    assert (rolled.version, rolled.reason, rolled.text) == (3, "rollback:1", SNAPSHOT)
    assert [s.version for s in await app.snapshots("ada")] == [3, 2, 1]
    with pytest.raises(NotFoundError):
        await app.rollback_snapshot("ada", 9)


async def test_snapshot_retention_keeps_the_newest_versions(
    make_app: Callable[..., Sonality], llm: ScriptedLLM
) -> None:
    """snapshot_retention=2: after three rewrites only the two newest versions remain."""
    app = make_app(llm, reflection=ReflectionParams(snapshot_retention=2))
    await create(app)
    for start in (1, 11, 21):
        await record_turns(app, start, start + 10)
        assert (await app.reflect("ada", force=True)).rewrote
    assert [s.version for s in await app.snapshots("ada")] == [4, 3]


async def test_record_notifies_due_listeners(app: Sonality) -> None:
    """The event path: each record after which the persona is due calls the listeners;
    records inside the cooldown never do."""
    seen: list[str] = []
    app.add_due_listener(seen.append)
    await create(app)
    await record_turns(app, 1, 10)
    assert seen == []
    due_after = 0
    for i in range(10, 21):
        await record_turns(app, i, i + 1)
        due_after += (await app.reflection_due("ada")).due
    assert due_after > 0 and seen == ["ada"] * due_after
    app.remove_due_listener(seen.append)
    await app.reflect("ada")
    await record_turns(app, 21, 41)
    assert len(seen) == due_after


def _belief(beliefs: list[Any], topic: str) -> Any:
    return next(b for b in beliefs if b.topic == topic)


async def test_a_reflection_shows_a_bounded_number_of_insights_and_keeps_the_rest(
    make_app: Callable[..., Sonality], clock: FrozenClock
) -> None:
    """60 pending insights (a bulk load): the reflect prompt shows the 40 most recent, the
    commit consumes exactly those, the 20 older stay pending and the next reflection
    consumes them: none is dropped."""
    from sonality.mind.reflection_prompt import MAX_PROMPT_INSIGHTS
    from sonality.service import Exchange
    from tests.pipeline import scripts

    llm = scripted_llm()
    llm.default("extract_insight", lambda r, v: {"insight": f"I weighed: {v['user_message']}"})
    app = make_app(llm)
    await create(app)
    await app.record_batch(
        "ada",
        [Exchange("u1", "c1", f"Point {i}. {scripts.turn(i % 30 + 1).message}") for i in range(60)],
    )
    await app.enrich_pending("ada")
    pending = await app.insights("ada", status=InsightStatus.PENDING)
    assert len(pending) == 60 and MAX_PROMPT_INSIGHTS == 40
    report = await app.reflect("ada", force=True)
    assert report.outcome == "committed" and report.insights_consumed == 40
    [call] = llm.calls_to("reflect")
    shown = [i for i in pending if i.id in call.rendered.user]
    assert [i.id for i in shown] == [i.id for i in pending[20:]]  # the newest 40, in order
    left = await app.insights("ada", status=InsightStatus.PENDING)
    assert [i.id for i in left] == [i.id for i in pending[:20]]
    clock.advance(minutes=1)
    again = await app.reflect("ada", force=True)
    assert again.insights_consumed == 20
    assert await app.insights("ada", status=InsightStatus.PENDING) == []


async def test_a_rewrite_that_drops_a_kept_trait_is_rejected(
    app: Sonality, llm: ScriptedLLM, store: Any
) -> None:
    """PRESERVE, checked: a persona whose fixed traits include "blunt about weak
    arguments" (said in its snapshot) gets a rewrite of the same length that leaves that
    trait out; validation refuses it (``dropped_trait``), naming the trait, and nothing
    but the record changes. The same rewrite keeping the phrase commits."""
    from sonality.models import SelfModel

    traits = SelfModel(traits=("blunt about weak arguments", "patient"), values=("evidence",))
    await app.create_persona(
        "ada", name="Ada", core_identity=IDENTITY, snapshot=SNAPSHOT, self_model=traits
    )
    await record_turns(app, 1, 22)
    dropped = SNAPSHOT.replace("blunt about weak arguments", "quick to praise a good one")
    assert len(dropped) >= len(SNAPSHOT)  # the length checks cannot see it
    llm.on("reflect", {"snapshot": dropped})
    before = await dump(store, "ada", users=("u1",))
    report = await app.reflect("ada")
    assert (report.outcome, report.reason) == ("rejected", "dropped_trait")
    [stored] = await app.reflections("ada")
    assert stored.detail is not None and "blunt about weak arguments" in stored.detail
    after = await dump(store, "ada", users=("u1",))
    after["persona"] = after["persona"].model_copy(update={"last_reflection_attempt_at": 0})
    assert after == before
    asked = llm.calls_to("reflect")[-1]
    assert "blunt about weak arguments; patient; evidence" in asked.rendered.system

    kept = SNAPSHOT + " Lately I notice I ask for sources more often."
    llm.on("reflect", {"snapshot": kept})
    assert (await app.reflect("ada", force=True)).outcome == "committed"


def test_the_reflection_prompt_orders_its_duties_preserve_first() -> None:
    """prompts/reflect.md lists the four duties in the seed's order — keep what is there,
    fold in the insights, name the patterns, stay specific — numbered 1 to 4, and says an
    earlier duty wins over a later one."""
    from sonality.llm.prompts import PromptLibrary

    template = PromptLibrary().get("reflect")
    assert template.system is not None
    text = template.system.template
    duties = ["1. KEEP WHAT IS THERE.", "2. FOLD IN", "3. NAME THE PATTERNS.", "4. STAY SPECIFIC."]
    at = [text.find(d) for d in duties]
    assert -1 not in at, at
    assert at == sorted(at)
    assert "strictly in this order; an\nearlier duty always wins over a later one" in text
    assert text.find("Dropping a\n   trait silently is the worst mistake") > at[0]
