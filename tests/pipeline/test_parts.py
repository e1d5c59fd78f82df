"""A ``Sonality`` is made of parts: ``wiring`` builds them from settings, ``assemble``
completes what a direct call leaves out, and ``Sonality(**parts)`` uses them as given."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sonality.config import Settings
from sonality.core.reflection import ReflectionParams
from sonality.errors import ConfigError, StoreUnavailable
from sonality.llm.embedders import HashEmbedder
from sonality.mind.parts import Limits, Parts, assemble
from sonality.mind.reflection import Reflector
from sonality.service import Sonality
from sonality.testing import FrozenClock, ScriptedLLM
from sonality.wiring import open_parts
from tests.conftest import EMBEDDING_DIMENSIONS
from tests.pipeline.conftest import IDENTITY

DERIVED = ("recorder", "enricher", "reflector", "context_builder")


async def test_sonality_from_parts_uses_exactly_those_parts(
    store: Any, llm: ScriptedLLM, clock: FrozenClock
) -> None:
    """``Sonality(**parts)`` keeps every part it is given (nothing rebuilt), and its
    record goes through the given recorder into the given store."""
    parts = assemble(store=store, llm=llm, embedder=HashEmbedder(EMBEDDING_DIMENSIONS), clock=clock)
    app = Sonality(**parts)
    for name in (*DERIVED, "store", "llm", "embedder", "clock", "limits", "runtime"):
        assert getattr(app, name) is getattr(parts, name), name
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    recorded = await app.record(
        "ada", user_id="u1", conversation_id="c1", message="[turn 1] hi", response="hello"
    )
    assert await store.get_episode("ada", recorded.episode.id) == recorded.episode
    assert recorded.status == "enriched"


async def test_a_direct_call_assembles_the_missing_parts_over_its_adapters(
    store: Any, llm: ScriptedLLM, clock: FrozenClock
) -> None:
    """``Sonality(store=…, llm=…, embedder=…, clock=…)`` builds the derived parts over
    the very adapters it was given, with the given limits and default params."""
    embedder = HashEmbedder(EMBEDDING_DIMENSIONS)
    app = Sonality(
        store=store, llm=llm, embedder=embedder, clock=clock, limits=Limits(context_episodes=2)
    )
    assert app.reflector.params == ReflectionParams()
    assert app.context_builder.max_episodes == 2
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    episode, created = await app.recorder.append(
        "ada", user_id="u1", conversation_id="c1", message="[turn 1] hi", response="hello"
    )
    assert created and episode.created_at == clock.now()
    [vector] = await embedder.embed(["[turn 1] hi"])
    [(similar, _)] = await store.similar_episodes("ada", "u1", vector, k=1)
    assert similar.id == episode.id
    assert await store.get_episode("ada", episode.id) == episode
    report = await app.enricher.enrich_pending("ada")
    assert report.enriched == 1 and [c.prompt for c in llm.calls] == [
        "assess_evidence",
        "extract_insight",
    ]
    assert app.count_tokens("hello world") > 0


async def test_a_given_reflector_must_agree_with_the_params_beside_it(
    store: Any, llm: ScriptedLLM, clock: FrozenClock
) -> None:
    """A reflector passed in brings its own params and lease owner: other ones beside it
    are a configuration error, the same ones are fine."""
    reflector = Reflector(store=store, llm=llm, clock=clock, owner="w1")
    with pytest.raises(ConfigError, match="reflector"):
        Sonality(store=store, reflector=reflector, owner="w2")
    with pytest.raises(ConfigError, match="reflector"):
        Sonality(store=store, reflector=reflector, reflection=ReflectionParams(max_shifts=1))
    app = Sonality(store=store, reflector=reflector, owner="w1", reflection=ReflectionParams())
    assert app.reflector is reflector


async def test_wiring_opens_migrated_parts_that_own_their_store(tmp_path: Path) -> None:
    """``open_parts`` over a SQLite file: migrated, tunables from the settings, and the
    ``Sonality`` built from them closes the store it owns."""
    settings = Settings(
        store=f"sqlite:///{tmp_path / 's.db'}",
        embedding_dimensions=EMBEDDING_DIMENSIONS,
        context_episodes=3,
        reflection_every=8,
    )
    parts = await open_parts(settings, owner="worker-7")
    assert isinstance(parts, Parts) and parts.owns_store and parts.llm is None
    assert (await parts.store.schema_status()).pending == ()
    assert parts.limits.context_episodes == parts.context_builder.max_episodes == 3
    assert parts.reflection.triggers.reflection_every == 8
    assert parts.reflector.owner == "worker-7"
    app = Sonality(**parts)
    await app.close()
    with pytest.raises(StoreUnavailable):
        await parts.store.ping()


async def test_wiring_refuses_what_is_not_settings() -> None:
    """``open_parts`` (and so ``Sonality.open``) takes a ``Settings`` object only."""
    with pytest.raises(ConfigError, match="Settings"):
        await open_parts({"store": "sqlite:///x.db"})
