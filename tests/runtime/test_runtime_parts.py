"""The dual-process runtime runs on parts, never on the facade: it records through the
``EpisodeRecorder``, builds context through the ``ContextBuilder`` and announces what its
enrichment made due through the reflection side's ``DueNotifier``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sonality.core.reflection import ReflectionParams
from sonality.core.triggers import TriggerParams
from sonality.errors import LLMResponseInvalid
from sonality.llm.embedders import HashEmbedder
from sonality.mind.parts import assemble
from sonality.mind.runtime import dual_process
from sonality.models import Persona, Snapshot, ThinkerStatus
from sonality.service import Sonality
from sonality.testing import FrozenClock, ScriptedLLM
from tests.conftest import EMBEDDING_DIMENSIONS
from tests.runtime import script
from tests.runtime.conftest import IDENTITY


async def test_the_runtime_answers_and_thinks_on_parts_alone(
    store: Any, llm: ScriptedLLM, clock: FrozenClock
) -> None:
    """A ``DualProcess`` built from ``assemble``'s parts (``dual_process``), with no
    ``Sonality`` anywhere, answers, records the exchange and thinks about the turn."""
    parts = assemble(
        store=store,
        llm=llm,
        embedder=HashEmbedder(EMBEDDING_DIMENSIONS),
        clock=clock,
        count_tokens=lambda text: max(1, len(text) // 4),
    )
    now = clock.now()
    await store.create_persona(
        Persona(id="ada", name="Ada", core_identity=IDENTITY, created_at=now),
        Snapshot(persona_id="ada", version=1, text=IDENTITY, created_at=now),
    )
    runtime = dual_process(parts)
    reply = await runtime.respond(
        "ada",
        user_id="u1",
        conversation_id="c1",
        message=script.message(1),
        episode_id=None,
        mode=None,
        affect=None,
    )
    assert reply.text == "Reply to turn 1 (narrative v0)." and reply.created
    assert await runtime.drain("ada", "c1", 30)
    episode = await store.get_episode("ada", reply.episode_id)
    assert (episode.agent_response, episode.enrichment_status.value) == (reply.text, "enriched")
    [turn] = await store.thinker_turns("ada", "c1")
    assert turn.status is ThinkerStatus.DONE
    await runtime.close()


async def test_respond_announces_what_its_enrichment_made_due(
    make_app: Callable[..., Sonality], llm: ScriptedLLM
) -> None:
    """The Thinker's enrichment feeds the due-listeners as ``record`` does: once the
    persona is due after a turn, the listener hears of it; removed, it hears no more."""
    app = make_app(llm, reflection=ReflectionParams(triggers=TriggerParams(reflection_every=4)))
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    seen: list[str] = []
    app.add_due_listener(seen.append)
    due_after = 0
    for i in range(1, 7):
        await app.respond("ada", user_id="u1", conversation_id="c1", message=script.message(i))
        assert await app.drain("ada")
        due_after += (await app.reflection_due("ada")).due
    assert due_after > 0 and seen == ["ada"] * due_after
    app.remove_due_listener(seen.append)
    await app.respond("ada", user_id="u1", conversation_id="c1", message=script.message(7))
    assert await app.drain("ada")
    assert (await app.reflection_due("ada")).due and len(seen) == due_after
    await app.close()


async def test_a_talker_reply_with_a_nul_records_nothing(app: Sonality, llm: ScriptedLLM) -> None:
    """A reply stored text may not hold (a NUL character) is the model's failure:
    ``LLMResponseInvalid``, and neither the exchange nor a turn is stored."""
    llm.on("talk", "I am\x00 broken.")
    with pytest.raises(LLMResponseInvalid, match="NUL"):
        await app.respond("ada", user_id="u1", conversation_id="c1", message=script.message(1))
    assert await app.episodes("ada") == []
    assert await app.thinker_turns("ada", conversation_id="c1") == []


def test_the_parts_are_named_once_for_every_constructor() -> None:
    """``Parts`` (what a Sonality is made of) and ``Given`` (the keywords ``Sonality(...)``
    and ``assemble`` take) name the same parts, ``Given`` adding only the lease ``owner``;
    the facade's constructor takes exactly ``Given``."""
    import inspect
    from dataclasses import fields

    from sonality.mind.parts import Given, Parts

    assert set(Given.__annotations__) == {f.name for f in fields(Parts)} | {"owner"}
    parameters = inspect.signature(Sonality.__init__).parameters
    assert [p.kind for p in parameters.values()][1:] == [inspect.Parameter.VAR_KEYWORD]
