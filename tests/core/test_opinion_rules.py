"""Opinion dynamics: magnitude, resistance, staging, cooling, netting, caps and clamps."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sonality.core.opinion import (
    CommitResult,
    OpinionParams,
    Shift,
    commit_due,
    confidence_for,
    effective_delta,
    is_disagreement,
    magnitude,
    opposes_stance,
    push_window,
    stage,
)
from sonality.models import (
    Belief,
    BeliefStatus,
    Direction,
    EvidenceAssessment,
    StagedUpdate,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
T1 = datetime(2026, 1, 2, tzinfo=UTC)

unit = st.floats(min_value=0.0, max_value=1.0)
directions = st.sampled_from([Direction.SUPPORTS, Direction.OPPOSES, Direction.NEUTRAL])
positions = st.floats(min_value=-1.0, max_value=1.0)


def make_belief(
    position: float = 0.0,
    evidence_count: int = 0,
    *,
    topic: str = "nuclear_power",
    confidence: float | None = None,
    status: BeliefStatus = BeliefStatus.ACTIVE,
    last_reinforced_at: int = 0,
) -> Belief:
    conf = confidence_for(evidence_count) if confidence is None else confidence
    return Belief(
        persona_id="p1",
        topic=topic,
        position=position,
        confidence=conf,
        evidence_count=evidence_count,
        uncertainty=1.0 - conf,
        last_reinforced_at=last_reinforced_at,
        status=status,
        created_at=T0,
        updated_at=T0,
    )


def make_staged(
    delta: float,
    *,
    due_at: int = 4,
    topic: str = "nuclear_power",
    sid: str | None = None,
    episode_id: str = "e1",
    committed_at: int | None = None,
) -> StagedUpdate:
    return StagedUpdate(
        id=sid or f"s-{delta}-{due_at}",
        persona_id="p1",
        topic=topic,
        signed_delta=delta,
        staged_at=due_at - 3,
        due_at=due_at,
        episode_id=episode_id,
        committed_at=committed_at,
    )


def id_factory() -> Callable[[], str]:
    numbers = itertools.count(1)
    return lambda: f"s{next(numbers)}"


def evidence(
    direction: Direction = Direction.SUPPORTS,
    score: float = 0.8,
    novelty: float = 0.5,
    topics: tuple[str, ...] = ("nuclear_power",),
) -> EvidenceAssessment:
    return EvidenceAssessment(score=score, novelty=novelty, direction=direction, topics=topics)


# --- worked example -----------------------------------------------------------------------


def test_worked_example_by_hand() -> None:
    """Hand-computed: score 0.8, novelty 0.5, 4th interaction, belief at 0.5 with 3 pieces."""
    # magnitude = 0.1 × 0.8 × 0.5 × 0.5 (bootstrap) = 0.02
    assert magnitude(0.8, 0.5, 4) == pytest.approx(0.02)
    # confidence = log2(3 + 1) / log2(20) = 2 / 4.321928 = 0.462756
    assert confidence_for(3) == pytest.approx(0.462756, abs=1e-6)
    belief = make_belief(0.5, 3)
    # opposing: 0.02 / (0.462756 + 1 + 0.5) = 0.02 / 1.962756 = 0.0101898
    assert effective_delta(0.02, belief, Direction.OPPOSES) == pytest.approx(-0.0101898, abs=1e-7)
    # supporting: no stance penalty, 0.02 / 1.462756 = 0.0136728
    assert effective_delta(0.02, belief, Direction.SUPPORTS) == pytest.approx(0.0136728, abs=1e-7)
    # after bootstrap and with stale evidence: 0.1 × 0.8 × max(0.02, 0.1) × 1 = 0.008
    assert magnitude(0.8, 0.02, 10) == pytest.approx(0.008)


# --- confidence and magnitude ---------------------------------------------------------------


@given(st.integers(min_value=0, max_value=10_000))
def test_confidence_follows_log_curve(n: int) -> None:
    """Confidence is log2(n + 1) / log2(20), capped at 1."""
    assert confidence_for(n) == pytest.approx(min(1.0, math.log2(n + 1) / math.log2(20)))
    assert 0.0 <= confidence_for(n) <= 1.0


def test_confidence_saturates_at_nineteen_pieces() -> None:
    """Nineteen pieces of evidence give full confidence; none give zero."""
    assert confidence_for(0) == 0.0
    assert confidence_for(18) < 1.0
    assert confidence_for(19) == 1.0


def test_confidence_rejects_negative_counts() -> None:
    """A negative evidence count is a programming error."""
    with pytest.raises(ValueError, match="evidence_count"):
        confidence_for(-1)


def test_bootstrap_damping_ends_at_ten() -> None:
    """Magnitudes are halved while fewer than 10 interactions came before this one."""
    assert magnitude(1.0, 1.0, 9) == pytest.approx(0.05)
    assert magnitude(1.0, 1.0, 10) == pytest.approx(0.1)


def test_novelty_floor() -> None:
    """Novelty below 0.1 counts as 0.1."""
    assert magnitude(1.0, 0.0, 50) == pytest.approx(magnitude(1.0, 0.1, 50))


@pytest.mark.parametrize(("score", "novelty"), [(-0.1, 0.5), (1.1, 0.5), (0.5, 2.0), (math.nan, 0)])
def test_magnitude_rejects_out_of_range_inputs(score: float, novelty: float) -> None:
    """Score and novelty must lie in [0, 1]."""
    with pytest.raises(ValueError, match="must be in"):
        magnitude(score, novelty, 0)


# --- stance and resistance ------------------------------------------------------------------


@given(positions, directions)
def test_opposes_stance_is_sign_product(position: float, direction: Direction) -> None:
    """Evidence opposes a stance exactly when position × sign < 0."""
    assert opposes_stance(position, direction) is (position * direction.sign < 0)


def test_neutral_evidence_never_moves_anything() -> None:
    """Neutral evidence has a zero effective delta."""
    assert effective_delta(0.05, make_belief(0.9, 5), Direction.NEUTRAL) == 0.0


def test_no_belief_means_no_resistance_but_one() -> None:
    """Without a belief, the delta is ± magnitude / 1."""
    assert effective_delta(0.04, None, Direction.OPPOSES) == pytest.approx(-0.04)


def test_decayed_confidence_lowers_resistance() -> None:
    """The belief's stored confidence is used, so decay makes it easier to move."""
    fresh = make_belief(0.0, 10)
    decayed = make_belief(0.0, 10, confidence=0.1)
    moved_fresh = effective_delta(0.05, fresh, Direction.SUPPORTS)
    moved_decayed = effective_delta(0.05, decayed, Direction.SUPPORTS)
    assert abs(moved_decayed) > abs(moved_fresh)


@given(unit, positions, st.integers(min_value=0, max_value=40), directions)
def test_effective_delta_is_bounded_by_magnitude(
    size: float, position: float, count: int, direction: Direction
) -> None:
    """|effective| ≤ magnitude and its sign is the direction's."""
    delta = effective_delta(size, make_belief(position, count), direction)
    assert abs(delta) <= size
    if direction is Direction.NEUTRAL or size == 0:
        assert delta == 0.0
    else:
        assert math.copysign(1, delta) == direction.sign


# --- staging --------------------------------------------------------------------------------


def test_stage_one_update_per_distinct_topic() -> None:
    """One staged delta per normalised topic, due cooling_period after this interaction."""
    staged = stage(
        "p1",
        "e7",
        ["Nuclear Power", "nuclear_power", "Climate"],
        evidence(),
        {},
        interaction_count_before=12,
        id_factory=id_factory(),
    )
    assert [s.topic for s in staged] == ["nuclear_power", "climate"]
    assert [s.id for s in staged] == ["s1", "s2"]
    assert all(s.staged_at == 13 and s.due_at == 16 for s in staged)
    assert all(s.episode_id == "e7" and s.committed_at is None for s in staged)
    assert staged[0].signed_delta == pytest.approx(0.1 * 0.8 * 0.5)


def test_stage_uses_each_topic_belief() -> None:
    """Each topic's delta is resisted by its own belief."""
    beliefs = {"firm": make_belief(-0.8, 19, topic="firm")}
    staged = stage(
        "p1",
        "e1",
        ["firm", "open"],
        evidence(),
        beliefs,
        interaction_count_before=20,
        id_factory=id_factory(),
    )
    by_topic = {s.topic: s.signed_delta for s in staged}
    assert by_topic["firm"] == pytest.approx(0.04 / (1.0 + 1.0 + 0.8))
    assert by_topic["open"] == pytest.approx(0.04)


@pytest.mark.parametrize(
    "assessment", [evidence(Direction.NEUTRAL), evidence(score=0.0)], ids=["neutral", "zero"]
)
def test_stage_nothing_for_neutral_or_zero(assessment: EvidenceAssessment) -> None:
    """Neutral evidence and zero-strength evidence stage nothing."""
    staged = stage(
        "p1",
        "e1",
        ["x"],
        assessment,
        {},
        interaction_count_before=3,
        id_factory=id_factory(),
    )
    assert staged == ()


# --- committing -----------------------------------------------------------------------------


@settings(deadline=None)
@given(
    st.integers(min_value=0, max_value=200),
    st.integers(min_value=0, max_value=10),
    st.sampled_from([Direction.SUPPORTS, Direction.OPPOSES]),
)
def test_cooling_delays_exactly_n_interactions(
    before: int, cooling: int, direction: Direction
) -> None:
    """A delta staged at interaction i commits at i + N, not one interaction earlier."""
    params = OpinionParams(cooling_period=cooling)
    (staged,) = stage(
        "p1",
        "e1",
        ["t"],
        evidence(direction),
        {},
        interaction_count_before=before,
        id_factory=id_factory(),
        params=params,
    )
    i = before + 1
    for now_index in range(i, i + cooling):
        result = commit_due("p1", [staged], {}, now_index=now_index, now=T1, params=params)
        assert result.committed_ids == ()
    result = commit_due("p1", [staged], {}, now_index=i + cooling, now=T1, params=params)
    assert result.committed_ids == (staged.id,)


def test_commit_skips_items_not_due_or_already_committed() -> None:
    """Only uncommitted items with due_at <= now_index commit."""
    items = [
        make_staged(0.05, due_at=4, sid="due"),
        make_staged(0.05, due_at=5, sid="later"),
        make_staged(0.05, due_at=2, sid="done", committed_at=2),
    ]
    result = commit_due("p1", items, {}, now_index=4, now=T1)
    assert result.committed_ids == ("due",)
    assert result.beliefs[0].evidence_count == 1


@given(st.floats(min_value=-0.5, max_value=0.5), positions, st.integers(0, 30))
def test_opposing_deltas_net_to_nothing(x: float, position: float, count: int) -> None:
    """A +x and a -x due together leave the position unchanged but count as evidence."""
    belief = make_belief(position, count)
    items = [make_staged(x, sid="a", episode_id="e1"), make_staged(-x, sid="b", episode_id="e2")]
    result = commit_due("p1", items, {"nuclear_power": belief}, now_index=4, now=T1)
    (new,) = result.beliefs
    assert new.position == position
    assert new.evidence_count == count + 2
    assert result.shift_total == 0.0
    assert [(e.episode_id, e.delta) for e in result.provenance] == [("e1", x), ("e2", -x)]


@given(st.lists(st.floats(min_value=-1.0, max_value=1.0), min_size=1, max_size=20), positions)
def test_commit_cap_and_clamp(deltas: list[float], position: float) -> None:
    """One commit moves a position by at most 0.25 and keeps it within [-1, 1]."""
    items = [make_staged(d, sid=f"s{i}") for i, d in enumerate(deltas)]
    belief = make_belief(position, 2)
    result = commit_due("p1", items, {"nuclear_power": belief}, now_index=10, now=T1)
    (new,) = result.beliefs
    assert -1.0 <= new.position <= 1.0
    assert abs(new.position - position) <= 0.25 + 1e-12
    assert result.shift_total == pytest.approx(abs(new.position - position))


def test_commit_nets_per_topic_and_caps_the_net() -> None:
    """Deltas of one topic are summed first, then the sum is capped."""
    items = [make_staged(0.2, sid="a"), make_staged(0.2, sid="b"), make_staged(-0.1, sid="c")]
    result = commit_due("p1", items, {}, now_index=4, now=T1)
    (new,) = result.beliefs
    assert new.position == pytest.approx(0.25)  # net 0.3, capped
    assert new.evidence_count == 3
    assert len(result.provenance) == 3
    assert [e.kind for e in result.provenance] == ["SUPPORTS", "SUPPORTS", "CONTRADICTS"]
    assert all(e.committed_at == 4 for e in result.provenance)


def test_commit_creates_new_beliefs_with_now() -> None:
    """A topic without a belief starts at 0 and is created at ``now``."""
    result = commit_due("p1", [make_staged(-0.05, topic="tea")], {}, now_index=4, now=T1)
    (new,) = result.beliefs
    assert (new.topic, new.position, new.created_at, new.updated_at) == ("tea", -0.05, T1, T1)
    assert new.confidence == pytest.approx(confidence_for(1))
    assert new.uncertainty == pytest.approx(1.0 - new.confidence)
    assert new.last_reinforced_at == 4
    assert result.shifts == (Shift(topic="tea", old_position=0.0, new_position=-0.05),)
    assert result.shifts[0].delta == pytest.approx(-0.05)


def test_commit_keeps_created_at_and_revives_retired() -> None:
    """An existing belief keeps created_at; a retired one that gets evidence is active."""
    old = make_belief(0.3, 4, confidence=0.01, status=BeliefStatus.RETIRED)
    result = commit_due("p1", [make_staged(0.05)], {"nuclear_power": old}, now_index=9, now=T1)
    (new,) = result.beliefs
    assert new.status is BeliefStatus.ACTIVE
    assert new.created_at == T0
    assert new.updated_at == T1
    assert new.evidence_count == 5
    assert new.confidence == pytest.approx(confidence_for(5))


def test_commit_orders_results_by_topic() -> None:
    """Beliefs and shifts come out sorted by topic, in step with each other."""
    items = [make_staged(0.01, topic="b", sid="1"), make_staged(0.01, topic="a", sid="2")]
    result = commit_due("p1", items, {}, now_index=4, now=T1)
    assert [b.topic for b in result.beliefs] == ["a", "b"]
    assert [s.topic for s in result.shifts] == ["a", "b"]
    assert result.committed_ids == ("2", "1")


def test_commit_nothing_due_is_empty() -> None:
    """With nothing due the result is empty."""
    assert commit_due("p1", [], {}, now_index=4, now=T1) == CommitResult()


def test_commit_rejects_other_personas_items() -> None:
    """Staged items of another persona are a programming error."""
    item = make_staged(0.1).model_copy(update={"persona_id": "p2"})
    with pytest.raises(ValueError, match="belongs to persona"):
        commit_due("p1", [item], {}, now_index=4, now=T1)


evidence_stream = st.lists(
    st.tuples(unit, unit, directions, st.sampled_from(["a", "b"])), min_size=1, max_size=60
)


@settings(deadline=None, max_examples=60)
@given(
    evidence_stream,
    st.floats(min_value=0.01, max_value=10.0),
    st.floats(min_value=0.01, max_value=2.0),
    st.integers(min_value=0, max_value=4),
)
def test_positions_stay_in_range_for_any_evidence(
    stream: list[tuple[float, float, Direction, str]], step: float, cap: float, cooling: int
) -> None:
    """Whatever evidence arrives, and however large the steps, positions stay in [-1, 1]."""
    params = OpinionParams(step=step, max_commit_delta=cap, cooling_period=cooling)
    beliefs: dict[str, Belief] = {}
    pending: list[StagedUpdate] = []
    ids = id_factory()
    for count_before, (score, novelty, direction, topic) in enumerate(stream):
        now_index = count_before + 1
        assessment = EvidenceAssessment(score=score, novelty=novelty, direction=direction)
        pending += stage(
            "p1",
            f"e{now_index}",
            [topic],
            assessment,
            beliefs,
            interaction_count_before=count_before,
            id_factory=ids,
            params=params,
        )
        result = commit_due("p1", pending, beliefs, now_index=now_index, now=T1, params=params)
        done = set(result.committed_ids)
        pending = [s for s in pending if s.id not in done]
        beliefs.update({b.topic: b for b in result.beliefs})
        for belief in beliefs.values():
            assert -1.0 <= belief.position <= 1.0
            assert belief.confidence == pytest.approx(confidence_for(belief.evidence_count))


# --- disagreement ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("position", "direction", "expected"),
    [
        (0.5, Direction.OPPOSES, True),
        (-0.5, Direction.SUPPORTS, True),
        (0.5, Direction.SUPPORTS, False),
        (0.1, Direction.OPPOSES, False),
        (0.11, Direction.OPPOSES, True),
        (-0.9, Direction.NEUTRAL, False),
    ],
)
def test_is_disagreement(position: float, direction: Direction, expected: bool) -> None:
    """Disagreement needs a held stance (|position| > 0.1) and evidence against it."""
    assert is_disagreement(position, direction) is expected


@given(st.lists(st.booleans(), max_size=120), st.booleans(), st.integers(1, 60))
def test_push_window_keeps_newest(window: list[bool], value: bool, size: int) -> None:
    """The window keeps only the newest ``size`` values, ending with the new one."""
    pushed = push_window(tuple(window[-size:]), value, size)
    assert len(pushed) <= size
    assert pushed[-1] is value
    assert pushed == (*window[-size:], value)[-size:]


def test_push_window_default_size_is_fifty() -> None:
    """By default the disagreement window is 50 long."""
    window: tuple[bool, ...] = ()
    for i in range(70):
        window = push_window(window, i % 2 == 0)
    assert len(window) == 50


def test_push_window_rejects_empty_size() -> None:
    """A window must hold at least one value."""
    with pytest.raises(ValueError, match="size"):
        push_window((), True, 0)


def test_provenance_side_is_relative_to_the_stance() -> None:
    """An edge is for the stance when its delta pushes the way the belief leans, whatever
    the topic's pole: a negative delta into an opposed belief is for it."""
    from sonality.models import ProvenanceEdge

    against_topic = ProvenanceEdge(episode_id="e1", topic="t", delta=-0.1, committed_at=3)
    assert against_topic.kind == "CONTRADICTS"
    assert against_topic.side(-0.4) == "for"
    assert against_topic.side(0.4) == "against"
    assert against_topic.side(0.0) == "no stance"
    assert ProvenanceEdge(episode_id="e1", topic="t", delta=0.1, committed_at=3).side(0.2) == "for"
