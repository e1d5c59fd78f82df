"""MIRROR's bounds over long conversations with long messages, counted with litellm's token
counter: the narrative never passes 3k tokens, the monologue history never passes 10k,
and the Thinker's extra input and output per turn stay within 13k (counting everything the
model receives: system, the monologue's own history, user part) and 7.5k (MIRROR's 6k for
monologue and controller, plus 1.5k for the affect stages). The fake model
is verbose on purpose: its controller tries to write up to ~7k tokens in one reply, more
than the whole 6k turn bound, so the output check fails unless the LLM port holds every
call to its prompt's ``max_tokens``.

The 200-turn conversation runs on SQLite; Neo4j runs the same checks over 30 turns (the
store plays no part in the bounds, and the dev server makes 200 turns slow)."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from sonality.llm.embedders import HashEmbedder
from sonality.llm.prompts import RenderedPrompt
from sonality.llm.tokens import count_tokens
from sonality.mind.runtime import RuntimeSettings
from sonality.mind.thinker import render_entry
from sonality.service import Sonality
from sonality.testing import FrozenClock, ScriptedCall, ScriptedLLM
from tests.conftest import EMBEDDING_DIMENSIONS
from tests.runtime import script
from tests.runtime.conftest import IDENTITY

EXTRA = ("monologue", "controller", "affect_update", "affect_appraise", "affect_plan")
WORDS = (
    "evidence",
    "reactor",
    "winter",
    "allergy",
    "mountain",
    "budget",
    "sister",
    "promise",
    "ferry",
    "garden",
    "theory",
    "protein",
    "village",
    "harbour",
    "ledger",
    "violin",
    "asthma",
    "runway",
    "orchard",
    "quarrel",
    "marathon",
)


def prose(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) + ("." if rng.random() < 0.08 else "") for _ in range(words))


def long_model(seed: int = 7) -> ScriptedLLM:
    """Long user-facing replies, long threads (some over the 400-token thread cap) and
    controller replies that often try to pass its 3k ``max_tokens`` — some by far, ~7k
    tokens — which the scripted model cuts at the bound as a real one stops there. Tokens
    are counted by litellm's counter, the same one the checks use."""
    rng = random.Random(seed)
    llm = script.scripted(count_tokens=count_tokens)

    def talk(rendered: RenderedPrompt, variables: Mapping[str, Any]) -> str:
        return script.talk(rendered, variables) + " " + prose(rng, rng.randint(150, 500))

    def monologue(rendered: RenderedPrompt, variables: Mapping[str, Any]) -> dict[str, str]:
        return {k: prose(rng, rng.randint(60, 400)) for k in ("reasoning", "memory", "goal")}

    def controller(rendered: RenderedPrompt, variables: Mapping[str, Any]) -> str:
        roll = rng.random()
        size = 6_000 if roll < 0.15 else 2_700 if roll < 0.35 else rng.randint(300, 1_500)
        return script.controller(rendered, variables) + " " + prose(rng, size)

    llm.default("talk", talk)
    llm.default("monologue", monologue)
    llm.default("controller", controller)
    return llm


def _turn_of(call: ScriptedCall) -> int:
    if "turn" in call.variables:
        return int(call.variables["turn"])
    return script.turn_in(str(call.variables["message"]))


def extra_tokens(calls: list[ScriptedCall]) -> dict[int, tuple[int, int]]:
    """Per turn: (input, output) tokens of the Thinker's calls (and the affect stages),
    counted on the rendered prompts and the replies."""
    totals: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for call in calls:
        if call.prompt in EXTRA:
            # everything the model receives: system, its own earlier replies, the user part
            sent = "\n".join([call.rendered.system or "", *call.history, call.rendered.user])
            totals[_turn_of(call)][0] += count_tokens(sent)
            totals[_turn_of(call)][1] += count_tokens(call.reply or "")
    return {t: (i, o) for t, (i, o) in totals.items()}


async def run_long_conversation(
    app: Sonality, turns: int, *, seed: int = 11, check: Callable[[int], Any] | None = None
) -> None:
    rng = random.Random(seed)
    for i in range(1, turns + 1):
        size = 1_800 if i % 25 == 0 else rng.randint(40, 900)
        await app.respond(
            "ada",
            user_id="u1",
            conversation_id="c1",
            message=script.message(i, " " + prose(rng, size)),
        )
        await app.drain("ada")
        if check is not None:
            await check(i)


async def _bounded_run(store: Any, turns: int, affect: str) -> None:
    llm = long_model()
    app = Sonality(
        store=store,
        llm=llm,
        embedder=HashEmbedder(EMBEDDING_DIMENSIONS),
        clock=FrozenClock(),
        count_tokens=count_tokens,
    )
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    await app.set_runtime("ada", mode="full", affect=affect)
    peaks = {"narrative": 0, "history": 0}
    history_start = [0]

    async def check(i: int) -> None:
        narrative = await app.narrative("ada", conversation_id="c1")
        assert narrative is not None and narrative.turn == i
        assert count_tokens(narrative.text) == narrative.tokens <= 3_000
        history = await app.monologue("ada", conversation_id="c1")
        total = sum(count_tokens(render_entry(e)) for e in history)
        assert total <= 10_000
        assert history[-1].turn == i
        peaks["narrative"] = max(peaks["narrative"], narrative.tokens)
        peaks["history"] = max(peaks["history"], total)
        history_start[0] = history[0].turn

    try:
        await run_long_conversation(app, turns, check=check)
    finally:
        await app.close()
    assert 2_900 <= peaks["narrative"] <= 3_000  # the controller overflowed and was cut
    controller = [c for c in llm.calls if c.prompt == "controller"]
    assert any(c.truncated for c in controller)  # the fake did try to pass the bound
    assert 8_000 < peaks["history"] <= 9_000  # filled up; past 90% it drops back to 80%
    assert history_start[0] > 1  # the oldest entries went
    per_turn = extra_tokens(llm.calls)
    assert set(per_turn) == set(range(1, turns + 1))
    assert max(i for i, _ in per_turn.values()) <= RuntimeSettings().extra_input_tokens
    assert max(o for _, o in per_turn.values()) <= RuntimeSettings().extra_output_tokens
    booked: dict[int, set[str]] = defaultdict(set)
    for u in await app.turn_usage("ada", conversation_id="c1"):
        booked[u.turn].add(u.component)
    expected = {"talker", "monologue", "controller", "enrichment"}
    if affect != "off":
        expected.add("affect")
    assert all(components == expected for components in booked.values())


@pytest.mark.slow
async def test_two_hundred_long_turns_stay_within_mirror_bounds(sqlite_store: Any) -> None:
    """200 long turns on SQLite: narrative <= 3k, monologue history <= 10k, extra tokens
    per turn <= 13k in and 6k out (MIRROR's bound), by litellm's counter."""
    await _bounded_run(sqlite_store, 200, "off")


@pytest.mark.neo4j
async def test_long_turns_stay_within_mirror_bounds_on_neo4j(neo4j_store: Any) -> None:
    """The same bounds over 30 long turns on Neo4j."""
    await _bounded_run(neo4j_store, 30, "off")


async def test_the_bound_holds_with_the_affective_stages_too(sqlite_store: Any) -> None:
    """With the affect stages in the Thinker, the monologue gives way so that monologue,
    controller and affect together stay within 13k tokens in per turn."""
    await _bounded_run(sqlite_store, 60, "thinker")


def test_the_thinker_refuses_prompts_that_could_pass_the_output_bound(tmp_path: Any) -> None:
    """The shipped monologue and controller write at most MIRROR's 3k each (6k), the
    affect stages 1.5k more, 7.5k in all, the default bound; raising one past the bound,
    or dropping one, is a configuration error, not a silent overrun."""
    import shutil

    from sonality.errors import ConfigError
    from sonality.llm.prompts import PromptLibrary
    from sonality.mind.thinker import turn_output_bound

    shipped = PromptLibrary()
    assert turn_output_bound(shipped, RuntimeSettings().extra_output_tokens) == 7_500
    assert shipped.generation("monologue").max_tokens == 3_000
    assert shipped.generation("controller").max_tokens == 3_000
    folder = tmp_path / "prompts"
    shutil.copytree(shipped.directory, folder)
    controller = folder / "controller.md"
    text = controller.read_text("utf-8")
    controller.write_text(text.replace("max_tokens: 3000", "max_tokens: 5000"), "utf-8")
    with pytest.raises(ConfigError, match="output bound"):
        turn_output_bound(PromptLibrary(folder), 6_000)
    controller.write_text(text.replace("max_tokens: 3000\n", ""), "utf-8")
    with pytest.raises(ConfigError, match="no max_tokens"):
        turn_output_bound(PromptLibrary(folder), 6_000)
