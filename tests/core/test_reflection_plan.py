"""``plan_reflection``: the pure tail of a reflection (validate, health, one commit)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sonality.core.decay import DecayResult
from sonality.core.reflection import (
    ReflectionParams,
    ReflectionPlan,
    ReflectionStart,
    plan_reflection,
    reflection_decay,
    unsuccessful_reflection,
)
from sonality.models import (
    Belief,
    BeliefStatus,
    HealthCode,
    Insight,
    Persona,
    ReflectionOutcome,
    Snapshot,
)

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
OLD = (
    "I am Ada. I follow evidence, not pressure, and I ask where a number comes from "
    "before I repeat it; I change my mind in small steps."
)
NEW = OLD + " Lately I have learnt to say plainly when a source is weak."
PARAMS = ReflectionParams(snapshot_retention=3)


def _belief(topic: str, confidence: float, reinforced: int) -> Belief:
    return Belief(
        persona_id="ada",
        topic=topic,
        position=0.4,
        confidence=confidence,
        evidence_count=4,
        uncertainty=0.3,
        last_reinforced_at=reinforced,
        created_at=T0,
        updated_at=T0,
    )


def _start(**persona: object) -> ReflectionStart:
    fields: dict[str, object] = {
        "id": "ada",
        "name": "Ada",
        "core_identity": "I am Ada.",
        "created_at": T0,
        "interaction_count": 30,
        "last_reflection_at": 10,
        "shift_since_reflection": 0.3,
    }
    return ReflectionStart(
        id="refl_1",
        persona=Persona.model_validate(fields | persona),
        trigger="periodic",
        owner="worker-1",
        started_at=T0,
        snapshot=Snapshot(persona_id="ada", version=4, text=OLD, created_at=T0),
        beliefs=(_belief("tea", 0.5, 29), _belief("coffee", 0.5, 2)),
        insights=tuple(
            Insight(id=f"ins_{i}", persona_id="ada", episode_id=f"ep_{i}", text="I", created_at=T0)
            for i in (1, 2)
        ),
        episodes_read=7,
    )


def _plan(start: ReflectionStart, text: str) -> ReflectionPlan:
    return plan_reflection(
        start,
        DecayResult(),
        text,
        params=PARAMS,
        finished_at=T0 + timedelta(seconds=2),
        duration_ms=2_000.0,
    )


def test_a_valid_snapshot_plans_one_commit_of_everything_read() -> None:
    """Committed: the next snapshot version, exactly the insights read consumed, the
    decayed beliefs, the reflection markers, the lease owner and the retention setting."""
    start = _start()
    decay = reflection_decay(start.persona, start.beliefs, now=T0)
    plan = plan_reflection(
        start, decay, NEW, params=PARAMS, finished_at=T0 + timedelta(seconds=2), duration_ms=5
    )
    commit = plan.commit
    assert commit is not None and commit.snapshot is not None
    assert (commit.snapshot.version, commit.snapshot.text) == (5, NEW)
    assert commit.snapshot.created_at == plan.reflection.finished_at
    assert commit.expected_snapshot_version == 4
    assert commit.consumed_insight_ids == ("ins_1", "ins_2")
    assert [b.topic for b in commit.beliefs] == ["coffee"]  # unreinforced for 28 interactions
    assert commit.last_reflection_at == 30 and commit.shift_consumed == 0.3
    assert (commit.lease_owner, commit.keep_snapshots) == ("worker-1", 3)
    r = plan.reflection
    assert (r.outcome, r.snapshot_version, r.previous_version) == (
        ReflectionOutcome.COMMITTED,
        5,
        4,
    )
    assert (r.insights_consumed, r.episodes_read, r.beliefs_decayed, r.duration_ms) == (2, 7, 1, 5)
    assert commit.reflection == r


def test_an_unchanged_text_commits_no_new_version() -> None:
    """The same text (up to surrounding blanks) commits the reflection but no snapshot."""
    plan = _plan(_start(), f"  {OLD}\n")
    assert plan.commit is not None and plan.commit.snapshot is None
    assert plan.reflection.snapshot_version is None


def test_a_text_that_fails_validation_plans_no_commit() -> None:
    """Rejected: no commit, the reason and ratio recorded, health of the kept snapshot
    over the beliefs as read (decay is not applied)."""
    start = _start(interaction_count=60, disagreement_window=(False,) * 50)
    decay = reflection_decay(start.persona, start.beliefs, now=T0)
    plan = plan_reflection(start, decay, "I am Ada.", params=PARAMS, finished_at=T0, duration_ms=1)
    assert plan.commit is None
    r = plan.reflection
    assert (r.outcome, r.reason, r.snapshot_version) == (
        ReflectionOutcome.REJECTED,
        "too_short",
        None,
    )
    assert r.retention_ratio is not None and r.retention_ratio < 0.6
    assert r.unique_ratio is not None and (r.beliefs_decayed, r.insights_consumed) == (0, 0)
    assert HealthCode.RARELY_CHALLENGED.value in r.health


def test_a_failed_attempt_is_recorded_without_a_commit() -> None:
    """A model failure gives a ``failed`` record with its reason and no commit; a valid
    text refused by the store keeps its vocabulary ratio."""
    start = _start()
    plan = unsuccessful_reflection(
        start,
        ReflectionOutcome.FAILED,
        "llm_unavailable",
        "down",
        params=PARAMS,
        finished_at=T0,
        duration_ms=1,
        llm_calls=1,
    )
    assert plan.commit is None
    r = plan.reflection
    assert (r.outcome, r.reason, r.detail, r.unique_ratio) == (
        ReflectionOutcome.FAILED,
        "llm_unavailable",
        "down",
        None,
    )
    refused = unsuccessful_reflection(
        start,
        ReflectionOutcome.FAILED,
        "conflict",
        "moved",
        params=PARAMS,
        finished_at=T0,
        duration_ms=1,
        llm_calls=1,
        new_text=NEW,
    )
    assert refused.reflection.unique_ratio is not None


def test_finished_is_never_before_started() -> None:
    """A clock that stepped back still records ``finished_at >= started_at``."""
    plan = plan_reflection(
        _start(),
        DecayResult(),
        NEW,
        params=PARAMS,
        finished_at=T0 - timedelta(hours=1),
        duration_ms=1,
    )
    assert plan.reflection.finished_at == T0


def test_no_decay_without_interactions_since_the_last_reflection() -> None:
    """A re-run right after a reflection decays nothing (decay never compounds)."""
    start = _start(interaction_count=10, last_reflection_at=10)
    assert reflection_decay(start.persona, start.beliefs, now=T0) == DecayResult()
    busy = _start()
    retired = reflection_decay(busy.persona, busy.beliefs, now=T0)
    assert all(b.status is BeliefStatus.ACTIVE for b in retired.decayed)
    assert [b.topic for b in retired.decayed] == ["coffee"]
