"""``drain`` across service instances on one store: without ``everywhere`` it covers the
calling instance's own background work; with it, it waits until the store holds none
pending, whichever instance does the work, and ``pending`` says what is left."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from sonality.errors import ValidationError
from sonality.models import PendingWork
from sonality.service import Sonality
from sonality.testing import ScriptedLLM
from tests.pipeline import scripts
from tests.pipeline.conftest import IDENTITY


async def test_drain_everywhere_waits_for_another_instance(
    make_app: Callable[..., Sonality], llm: ScriptedLLM
) -> None:
    """Episodes another instance stored for later leave this instance's drain True (none
    of its own work) but counted as pending; ``everywhere`` runs out of time while they
    wait, and returns True once the other instance has enriched them."""
    writer, reader = make_app(llm), make_app(llm)
    await writer.create_persona("ada", name="Ada", core_identity=IDENTITY)
    for i in (1, 2):
        script = scripts.turn(i)
        await writer.record(
            "ada",
            user_id="u1",
            conversation_id="c1",
            message=script.message,
            response=script.response,
            enrich="off",
        )
    assert await reader.drain("ada") is True
    assert await reader.pending("ada") == PendingWork(episodes=2, turns=0)
    assert await reader.drain("ada", everywhere=True, max_seconds=0.3) is False
    waiting = asyncio.create_task(reader.drain("ada", everywhere=True, max_seconds=30))
    await asyncio.sleep(0.3)
    assert not waiting.done()
    await writer.enrich_pending("ada")
    assert await waiting is True
    assert (await reader.pending("ada")).none
    await writer.close()
    await reader.close()


async def test_drain_and_pending_check_their_arguments(app: Sonality) -> None:
    """A non-boolean ``everywhere``, a bad conversation id and an unknown persona are
    one error each."""
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    with pytest.raises(ValidationError):
        await app.drain("ada", everywhere="yes")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        await app.pending("ada", conversation_id="c 1")
    with pytest.raises(ValidationError):
        await app.pending("bad id")
    assert await app.pending("ada", conversation_id="c1") == PendingWork(episodes=0, turns=0)
