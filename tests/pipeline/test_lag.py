"""``Sonality.lag`` on both stores: per persona, the age by the deployment's clock of the
oldest pending episode and of the oldest unthought Thinker turn, 0 once the work is done."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from sonality.errors import ValidationError
from sonality.models import Lag, RuntimeMode, ThinkerTurn
from sonality.service import Sonality
from sonality.testing import FrozenClock, ScriptedLLM
from tests.pipeline.conftest import IDENTITY


async def test_lag_ages_the_heads_of_the_queues_by_the_clock(
    make_app: Callable[..., Sonality], llm: ScriptedLLM, clock: FrozenClock
) -> None:
    """Episodes recorded without enrichment age with the clock from the first of them; a
    pending turn ages from when it was answered; enriching, and thinking, bring both to 0;
    a persona with nothing pending is at 0 throughout."""
    app = make_app(llm)
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    await app.create_persona("bo", name="Bo", core_identity=IDENTITY)
    for i in range(2):
        await app.record(
            "ada",
            user_id="u1",
            conversation_id="c1",
            message=f"[turn {i + 1}] hello",
            response="r",
            enrich="off",
        )
        clock.advance(seconds=30)
    [episode, _] = await app.episodes("ada", limit=2)
    turn_at = clock.advance(seconds=15)
    await app.store.begin_turn(
        ThinkerTurn(
            persona_id="ada",
            episode_id=episode.id,
            conversation_id="c1",
            user_id="u1",
            turn=episode.turn,
            mode=RuntimeMode.FULL,
            created_at=turn_at,
            updated_at=turn_at,
        ),
        [],
    )
    clock.advance(seconds=45)
    assert await app.lag() == [
        Lag(persona_id="ada", episode_seconds=120, turn_seconds=45),
        Lag(persona_id="bo", episode_seconds=0, turn_seconds=0),
    ]
    await app.enrich_pending("ada")
    await app.store.mark_thinker_failed(
        "ada", episode.id, error="gave up", give_up=True, at=clock.now()
    )
    assert await app.lag(["ada"]) == [Lag(persona_id="ada", episode_seconds=0, turn_seconds=0)]


async def test_lag_checks_the_ids_it_is_given(make_app: Callable[..., Sonality]) -> None:
    """Each id is checked (a malformed one is a ValidationError, a bare string is not a
    list); an id no persona has reads as nothing pending."""
    app = make_app(None)
    with pytest.raises(ValidationError):
        await app.lag(["bad id"])
    with pytest.raises(ValidationError):
        await app.lag("ada")
    assert await app.lag(["nobody", "nobody"]) == [
        Lag(persona_id="nobody", episode_seconds=0, turn_seconds=0)
    ]


def test_an_age_is_never_negative() -> None:
    """A head stamped after ``now`` (another process's clock ahead) reads as 0, not less."""
    from datetime import UTC, datetime

    from sonality.models import OldestPending

    now = datetime(2026, 1, 1, tzinfo=UTC)
    ahead = OldestPending(persona_id="p", episode_at=now + timedelta(seconds=5), turn_at=now)
    assert Lag.at(ahead, now) == Lag(persona_id="p", episode_seconds=0, turn_seconds=0)
