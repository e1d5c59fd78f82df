"""Issues 15.4 and 25.1: every fact of a reply is kept, facts are deduplicated per user by
meaning (with their provenance merged), every constraint is in every context whatever the
budget, and the preferences' section is bounded and never drops facts silently. On both
stores."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from sonality.mind.context import COMPACT_CONSTRAINT_TOKENS
from sonality.mind.parts import Limits
from sonality.service import Sonality
from sonality.testing import ScriptedLLM

NEUTRAL = {
    "score": 0.5,
    "reasoning_type": "none",
    "source_reliability": 0.5,
    "internal_consistency": 0.5,
    "novelty": 0.5,
    "topics": [],
    "direction": "neutral",
}


def fact(n: int, *, kind: str = "preference", severity: int = 2) -> dict[str, Any]:
    return {
        "kind": kind,
        "text": f"The user collects stamp series number {n}.",
        "severity": severity,
    }


def replying(*facts_per_turn: list[dict[str, Any]]) -> ScriptedLLM:
    llm = ScriptedLLM()
    llm.on(
        "assess_evidence",
        *({"evidence": NEUTRAL, "facts": facts, "importance": 3} for facts in facts_per_turn),
    )
    llm.default("extract_insight", {"insight": None})
    return llm


async def talk(app: Sonality, turns: int, user: str = "u1") -> None:
    await app.create_persona("ada", name="Ada", core_identity="I am Ada.")
    for n in range(turns):
        await app.record("ada", user_id=user, conversation_id="c", message=f"m{n}", response="r")


async def test_one_reply_keeps_every_fact(make_app: Callable[..., Sonality], store: Any) -> None:
    """A reply with 60 facts stores all 60 (no per-reply cap drops any), and nothing is
    marked defaulted."""
    flood = [fact(n, severity=1 + n % 4) for n in range(59)]
    flood.append(fact(999, kind="constraint", severity=1))
    await talk(make_app(replying(flood)), 1)
    stored = await store.list_facts("ada", "u1")
    assert len(stored) == 60
    assert sorted(f.text for f in stored) == sorted(f["text"] for f in flood)
    (episode,) = await store.list_episodes("ada")
    assert "facts" not in episode.defaulted


ALLERGENS = [f"allergen number {n}" for n in range(60)]


def allergy(n: int) -> dict[str, Any]:
    return {
        "kind": "constraint",
        "text": f"The user is severely allergic to {ALLERGENS[n]}.",
        "severity": 5,
    }


async def test_sixty_constraints_are_all_in_every_context_whatever_the_budget(
    make_app: Callable[..., Sonality],
) -> None:
    """60 allergies disclosed over 6 messages: a context for a food question carries all
    60, with a facts budget that holds two lines and a total budget of 50 tokens, and
    says nothing was left out."""
    replies = [[allergy(t * 10 + n) for n in range(10)] for t in range(6)]
    limits = Limits(context_fact_tokens=40, context_token_budget=50)
    app = make_app(replying(*replies), limits=limits)
    await talk(app, 6)
    context = await app.context("ada", user_id="u1", message="What should I cook tonight?")
    assert len(context.facts) == 60
    assert context.facts_omitted == 0
    prompt = context.as_prompt()
    assert all(name + "." in prompt for name in ALLERGENS)
    assert "not shown" not in prompt


async def test_constraints_past_the_hard_cap_are_shown_compactly_and_all(
    make_app: Callable[..., Sonality],
) -> None:
    """Constraints whose lines pass COMPACT_CONSTRAINT_TOKENS are rendered in one compact
    line: still every one of them."""
    long = "x" * 480  # facts are cut at 500 characters
    replies = [
        [
            {"kind": "constraint", "text": f"The user must avoid hazard {n} {long}", "severity": 5}
            for n in range(t * 5, t * 5 + 5)
        ]
        for t in range(8)
    ]
    assert COMPACT_CONSTRAINT_TOKENS < 40 * 480 // 4
    app = make_app(replying(*replies))
    await talk(app, 8)
    context = await app.context("ada", user_id="u1", message="hello")
    assert context.compact_constraints
    prompt = context.as_prompt()
    assert "[constraints, all 40]" in prompt
    assert all(f"hazard {n} " in prompt for n in range(40))


PARAPHRASES = [
    "The user has a severe peanut allergy.",
    "The user is severely allergic to peanuts.",
    "Peanuts could kill the user; they carry an epinephrine pen.",
    "The user cannot eat anything with peanuts in it.",
    "The user goes into anaphylaxis from peanuts.",
]


def restating(rendered: Any, variables: Mapping[str, Any]) -> dict[str, Any]:
    """A model that extracts the message's fact and, when a known fact is about peanuts,
    names its number as the one the message says again."""
    turn = int(str(variables["user_message"]).removeprefix("m"))
    known = re.search(r"^(\d+)\. .*peanut", str(variables["known_facts"]), re.M | re.I)
    item = {"kind": "constraint", "text": PARAPHRASES[turn % 5], "severity": 4 + turn % 2}
    item["same_as"] = int(known.group(1)) if known else None
    return {"evidence": NEUTRAL, "facts": [item], "importance": 5}


async def test_one_allergy_said_five_ways_is_one_fact_backed_by_every_exchange(
    make_app: Callable[..., Sonality], store: Any
) -> None:
    """The same allergy disclosed 5 times in different words leaves 1 fact: the later
    ones merge into it (the model named it, ``same_as``), it keeps the highest severity,
    and every exchange that disclosed it backs it, so erasing the first keeps the fact."""
    llm = ScriptedLLM()
    llm.default("assess_evidence", restating)
    llm.default("extract_insight", {"insight": None})
    app = make_app(llm)
    await talk(app, 5)
    (stored,) = await store.list_facts("ada", "u1")
    assert stored.text == PARAPHRASES[0]
    assert stored.severity == 5
    episodes = await store.list_episodes("ada")
    sources = {stored.episode_id, *stored.also_from}
    assert sources == {e.id for e in episodes}
    # the prompt listed the known fact for the model to point at
    asked = llm.calls_to("assess_evidence")
    assert "1. [constraint] The user has a severe peanut allergy." in asked[1].rendered.user
    await app.delete_episode("ada", episode_id=stored.episode_id)  # the first disclosure
    (kept,) = await store.list_facts("ada", "u1")
    assert kept.id == stored.id and stored.episode_id not in {kept.episode_id, *kept.also_from}


async def test_a_same_as_naming_no_known_fact_makes_a_new_fact(
    make_app: Callable[..., Sonality], store: Any
) -> None:
    """A ``same_as`` number the prompt did not list is ignored: the fact is stored as new
    (a wrong merge would lose a constraint; a duplicate only costs a line)."""
    wrong = {**allergy(1), "same_as": 7}
    await talk(make_app(replying([allergy(0)], [wrong])), 2)
    assert len(await store.list_facts("ada", "u1")) == 2


async def test_facts_are_deduplicated_per_user_after_normalising(
    make_app: Callable[..., Sonality], store: Any
) -> None:
    """The same fact told again (other case, spacing, punctuation) is stored once per
    user; another user telling it gets their own copy."""
    spellings = [
        [fact(1)],
        [{**fact(1), "text": "the user  COLLECTS stamp series number 1"}],
        [fact(1), fact(1)],
    ]
    app = make_app(replying(*spellings, [fact(1)]))
    await talk(app, 3)
    await app.record("ada", user_id="u2", conversation_id="c2", message="m", response="r")
    assert len(await store.list_facts("ada", "u1")) == 1
    assert len(await store.list_facts("ada", "u2")) == 1


async def test_the_preferences_section_is_bounded_and_says_what_it_left_out(
    make_app: Callable[..., Sonality],
) -> None:
    """200 facts over 10 replies (10 constraints): the context shows every constraint,
    fits the preferences in their budget (the ones sharing a word with the message
    first), and states how many preferences were left out (none dropped silently)."""
    replies = [
        [fact(t * 20 + n, kind="constraint" if n == 0 else "preference") for n in range(20)]
        for t in range(10)
    ]
    app = make_app(replying(*replies))
    await talk(app, 10)
    assert len(await app.facts("ada", user_id="u1")) == 200
    context = await app.context("ada", user_id="u1", message="hello")
    shown = len(context.facts)
    assert 10 < shown < 200
    assert context.facts_omitted == 200 - shown
    assert [f.kind.value for f in context.facts[:10]] == ["constraint"] * 10
    prompt = context.as_prompt()
    assert f"{context.facts_omitted} more preferences or facts" in prompt
    assert len(prompt) < 12_000
